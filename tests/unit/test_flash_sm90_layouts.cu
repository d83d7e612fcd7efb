/* test_flash_sm90_layouts.cu — what the Hopper attention backward
 * (kernels/transformer/flash_attention_sm90.cu) takes on trust from CuTe's layout algebra,
 * checked on the host, without a GPU: the MN-major views of the smem tiles address the
 * same bytes as the K-major tiles TMA writes; a consumer's half of the own rows is the
 * tile layout; a wgmma accumulator holds the next product's A fragments in element order,
 * in column pairs, rows as the dQ kernel assumes; and the TMA descriptors and the
 * coordinates the loader asks for (the driver's encoder replaced by one that records its
 * arguments) are the boxes meant: 128-byte swizzle, (d, row, head, sequence) with the
 * strides of qkv and dout, lse's line at (sequence, head, row).
 *
 * Built by nvcc with the kernel file included (Makefile: CUDA builds only); prints the
 * unit tests' "N passed, N failed" line. */
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1 /* cute calls cuTensorMapEncodeTiled: the one below */
#include <cuda.h>
#include <stdio.h>

static struct encoded {
    int calls, dtype, rank, swizzle, oob;
    const void *addr;
    unsigned long long dims[5], strides[4];
    unsigned box[5];
} g_enc;

extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap *, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                                           const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                           const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle sw,
                                           CUtensorMapL2promotion, CUtensorMapFloatOOBfill oob)
{
    g_enc.calls++;
    g_enc.dtype = (int)dt, g_enc.rank = (int)rank, g_enc.swizzle = (int)sw, g_enc.oob = (int)oob, g_enc.addr = addr;
    for (unsigned i = 0; i < rank && i < 5; i++) g_enc.dims[i] = dims[i], g_enc.box[i] = box[i];
    for (unsigned i = 0; i + 1 < rank && i < 4; i++) g_enc.strides[i] = strides[i];
    return CUDA_SUCCESS;
}

#include "kernels/transformer/flash_attention_sm90.cu"

using namespace fa_sm90;
using Elt = cutlass::bfloat16_t;

static int g_passed, g_failed;

static void result(const char *name, int bad)
{
    printf("%s flash_sm90_layouts.%s\n", bad ? "FAIL" : "ok  ", name);
    bad ? g_failed++ : g_passed++;
}

#define EXPECT(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            printf("    FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
            bad++;                                                                          \
        }                                                                                   \
    } while (0)

static void mn_major_views_address_the_k_major_bytes(void)
{
    int bad = 0;
    typename Types<Elt>::SmemTiles k_major;
    typename Types<Elt>::SmemTilesT mn_major;
    for (int s = 0; s < kStages; s++)
        for (int r = 0; r < kTile; r++)
            for (int d = 0; d < kD; d++)
                if (k_major(r, d, s) != mn_major(d, r, s)) bad++;
    if (bad) printf("    FAILED: %d elements of (row, d) and (d, row) views differ\n", bad);
    result(__func__, bad);
}

static void a_consumers_half_of_the_own_rows_is_a_tile(void)
{
    int bad = 0;
    typename Types<Elt>::SmemOwn own;
    typename Types<Elt>::SmemTiles tile;
    for (int w = 0; w < kConsumers; w++)
        for (int r = 0; r < 64; r++)
            for (int d = 0; d < kD; d++)
                if (own(64 * w + r, d) != 64 * kD * w + tile(r, d, 0)) bad++;
    if (bad) printf("    FAILED: %d elements of the halves differ from the tile layout\n", bad);
    result(__func__, bad);
}

static void accumulators_hold_the_next_products_a_fragments_in_order(void)
{
    int bad = 0;
    typename Types<Elt>::MmaABt mma_s;
    typename Types<Elt>::MmaAB mma_o;
    auto ids = make_identity_tensor(ScoreShape{});
    EXPECT(size(partition_shape_A(mma_o, ScoreShape{})) == size(partition_shape_C(mma_s, ScoreShape{})));
    for (int t = 0; t < 128; t++) {
        auto c = mma_s.get_thread_slice(t).partition_C(ids);
        auto a = mma_o.get_thread_slice(t).partition_A(ids);
        const int warp = t / 32, g = (t % 32) / 4, q = t % 4;
        for (int i = 0; i < size(c); i++) {
            EXPECT(c(i) == a(i));
            /* the dQ kernel's rows: 16 warp + g + 8 ((i / 2) % 2); stores: columns in pairs */
            EXPECT(get<0>(c(i)) == 16 * warp + g + 8 * ((i >> 1) & 1));
            EXPECT(get<1>(c(i)) == 8 * (i / 4) + 2 * q + (i & 1));
        }
        auto o = mma_o.get_thread_slice(t).partition_C(make_identity_tensor(HalfShape{}));
        for (int i = 0; i < size(o); i += 2)
            EXPECT(get<0>(o(i)) == get<0>(o(i + 1)) && get<1>(o(i)) + 1 == get<1>(o(i + 1)));
        if (bad) break;
    }
    result(__func__, bad);
}

static void tma_boxes_are_the_tiles_meant(void)
{
    int bad = 0;
    const int B = 2, T = 1000, H = 3, C = H * 64, h = 2, b = 1;
    const int64_t ld = 3 * C;
    const Elt *q = (const Elt *)0x100000, *k = q + C;
    g_enc = {};
    auto own = tma_own<Elt>(k, T, H, B, ld);
    EXPECT(g_enc.calls == 1 && g_enc.rank == 4 && g_enc.addr == (const void *)k);
    EXPECT(g_enc.swizzle == CU_TENSOR_MAP_SWIZZLE_128B && g_enc.oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    EXPECT(g_enc.dims[0] == 64 && g_enc.dims[1] == (unsigned)T && g_enc.dims[2] == (unsigned)H && g_enc.dims[3] == (unsigned)B);
    EXPECT(g_enc.strides[0] == (unsigned long long)ld * 2 && g_enc.strides[1] == 128 &&
           g_enc.strides[2] == (unsigned long long)T * ld * 2);
    EXPECT(g_enc.box[0] == 64 && g_enc.box[1] == kBlock && g_enc.box[2] == 1 && g_enc.box[3] == 1);
    g_enc = {};
    auto tile = tma_tile<Elt>((const Elt *)0x200000, T, H, B, C); /* dout's rows */
    EXPECT(g_enc.calls == 1 && g_enc.strides[0] == (unsigned long long)C * 2 && g_enc.box[1] == kTile);
    EXPECT(g_enc.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
    g_enc = {};
    auto line = tma_line((const float *)0x300000, B * H * T);
    EXPECT(g_enc.calls == 1 && g_enc.rank == 1 && g_enc.dims[0] == (unsigned)(B * H * T) && g_enc.box[0] == kLineBox);
    EXPECT(g_enc.dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);

    /* the coordinates the loader's copies start at (TMA's order: d, row, head, sequence) */
    const auto gshape = make_shape(T, Int<kD>{}, H, B);
    Tensor gK = local_tile(own.get_tma_tensor(gshape)(_, _, h, b), OwnShape{}, make_coord(3, _0{}));
    Tensor sK = make_tensor(make_smem_ptr((Elt *)nullptr), typename Types<Elt>::SmemOwn{});
    auto ck = own.get_slice(0).partition_S(gK)(0);
    EXPECT(get<0>(ck) == 0 && get<1>(ck) == 3 * kBlock && get<2>(ck) == h && get<3>(ck) == b);
    EXPECT(size(own.get_slice(0).partition_D(sK)) == kBlock * kD);
    Tensor gQ = local_tile(tile.get_tma_tensor(gshape)(_, _, h, b), TileShape{}, make_coord(_, _0{}));
    auto cq = tile.get_slice(0).partition_S(gQ)(_, _, _, 5)(0);
    EXPECT(get<1>(cq) == 5 * kTile && get<2>(cq) == h && get<3>(cq) == b);
    g_enc = {};
    (void)tma_tile<Elt, kFwdTile>(k, T, H, B, ld); /* the forward's K and V tiles */
    EXPECT(g_enc.calls == 1 && g_enc.box[0] == 64 && g_enc.box[1] == kFwdTile && g_enc.strides[0] == (unsigned long long)ld * 2);
    result(__func__, bad);
}

/* lse and delta: a copy starts at a multiple of 4 floats (16 bytes: TMA's rule for the first
 * element; else an illegal instruction on the GPU), at or below the tile's first row, and the
 * tile's 64 rows lie in its box at the skew the consumers add, for every (sequence, head) of
 * lengths that are and are not multiples of 4 */
static void line_boxes_start_at_16_bytes_and_hold_the_tile(void)
{
    int bad = 0;
    const int Ts[] = {1, 80, 130, 1000, 1023};
    for (int ti = 0; ti < 5 && !bad; ti++) {
        const int T = Ts[ti], B = 3, H = 5, lines = B * H * T;
        auto line = tma_line((const float *)0x300000, lines);
        Tensor gall = line.get_tma_tensor(make_shape(lines));
        for (int bh = 0; bh < B * H && !bad; bh++)
            for (int qt = 0; qt * kTile < T; qt++) {
                const int line0 = bh * T, first = line0 + qt * kTile, a = first & ~3, skew = line0 & 3;
                Tensor gL = local_tile(domain_offset(make_coord(a), gall), Shape<Int<kLineBox>>{}, make_coord(0));
                const int start = get<0>(line.get_slice(0).partition_S(gL)(0));
                EXPECT(start == a && start % 4 == 0 && start + skew == first && skew + kTile <= kLineBox);
            }
    }
    EXPECT(kLineStage >= kLineBox && (kLineStage * 4) % 128 == 0);
    result(__func__, bad);
}

int main(void)
{
    mn_major_views_address_the_k_major_bytes();
    a_consumers_half_of_the_own_rows_is_a_tile();
    accumulators_hold_the_next_products_a_fragments_in_order();
    tma_boxes_are_the_tiles_meant();
    line_boxes_start_at_16_bytes_and_hold_the_tile();
    printf("flash_sm90_layouts: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
