/* flash_attention_sm90.cu — the fused attention's forward and backward for Hopper
 * (sm_90a), head dimension 64, bf16 / fp16: FlashAttention-3's machinery (warpgroup MMA,
 * TMA loads into mbarrier pipelines, a producer warp beside consumer warpgroups); the
 * backward deterministic, in two schemes (below). flash_attention.cu picks them
 * (flash_attention_sm90.h). The forward (its own section below): blocks of 128 queries,
 * tiles of 128 keys, the online softmax of flash_attention.cu's (lse in the log2 domain),
 * each consumer's next S = Q K^T in flight beside its P V. What follows is the backward.
 *
 * All three kernels are persistent grids (a block an SM taking row blocks in turn, the
 * loader fetching the next one's rows while the consumers work: unit_at), carry the mask's
 * compares only on the tiles that need them (tile_needs_mask) and keep the next tile's
 * products in flight behind this one's; the dQ kernel is launched as the dK dV kernel's
 * programmatic dependent (it reads nothing that one writes), so its blocks take the SMs as
 * the dK dV grid's last ones finish. On an H200 at GPT-2 small's shape
 * (results/h200x1-attention-persistent): forward 0.108 ms (239 TFLOP/s), backward 0.304
 * (212); from 0.168 and 0.385 before those three (results/h200x1-kernel-profile says why).
 *
 * The backward has two schemes, both giving the same bits on every run, as the FA2
 * kernels (DPSCALE_FLASH_DQ picks: flash_attention_sm90.h). FlashAttention-3 adds each key
 * block's dQ into an fp32 buffer with atomics, whose order varies from run to run.
 * "separate" (the default): dK dV come from one kernel (a block per 128 keys, looping
 * over tiles of 64 queries) and dQ from another (a block per 128 queries, looping over
 * tiles of 64 keys), each output written once. That costs S = QK^T and dP = dO V^T a
 * second time (7 products of 64 x 64 x 64 per pair of tiles instead of 5).
 * "accumulate": one kernel, the dK dV one, also computes each tile's share of dQ from
 * the dS^T it has (dQ^T = K^T dS^T, both operands in shared memory) and one thread of
 * the loader warpgroup adds it into an fp32 workspace with bulk (TMA) reduce-adds; what
 * keeps that deterministic is the order: a semaphore per (sequence, head, query tile)
 * lets the tile's contributors add one after another in a fixed order
 * (attention_dq_order.h, which also says why it neither deadlocks nor, in lockstep,
 * waits), and a small kernel converts the sums to 16 bits. 5 products and one 16 KiB
 * fp32 reduction per pair of tiles. Right (dQ within 3e-3 of FA2's, dK dV FA2's bits where
 * causal, the same bits three times) but slower on an H200 (results/h200x1-attention-dq):
 * 0.390 against 0.379 ms at GPT-2 small's causal shape, 0.530 against 0.442 full at T = 1024,
 * 0.230 against 0.205 at BERT-Large's; the fused kernel alone takes 430 µs where dK dV took
 * 253 (Nsight Compute): each tile's chain S, dP, dS, the dS^T store, the barrier and three
 * more products runs one after another, nothing of the next tile in flight. Hence opt-in;
 * it is neither persistent nor pipelined (0.346 against the two kernels' 0.304 since).
 *
 * A block: warpgroup 0 loads (one thread issues every TMA copy, its registers given to
 * the others by setmaxnreg), warpgroups 1 and 2 compute, each on 64 of the block's 128
 * rows. The block's own rows (K, V or Q, dO) come once; the tiles it loops over (Q, dO
 * with lse and delta, or K, V) come through kStages buffers, each with a "full" mbarrier
 * (TMA's bytes landed) and an "empty" one (all 256 consumer threads are past the MMAs
 * that read it). Products, all wgmma m64n64k16 with A from registers (RS):
 *   dK dV:  S^T = K Q^T, dP^T = V dO^T (K, V in registers, Q, dO K-major in smem),
 *           P^T = exp2(S^T sl2 - lse), dS^T = P^T (dP^T - delta),
 *           dV += P^T dO, dK += dS^T Q   (P^T, dS^T as they lie in the accumulators;
 *                                        Q, dO read MN-major from the same smem)
 *   dQ:     S = Q K^T, dP = dO V^T, dS = P (dP - delta), dQ += dS K.
 * Keys (queries) in the tile this warpgroup sees as rows come straight from the
 * accumulators as A operands: an m64nN accumulator holds, thread by thread, the m64k16
 * A fragments of N / 16 k-steps in order (tests/unit/test_flash_sm90_layouts.cu checks
 * this, the smem views and the TMA descriptors on the host).
 *
 * Shared memory per block: 2 x 128 x 64 (own rows) + 2 x kStages x 64 x 64 (tiles) 16-bit
 * elements, 128-byte swizzled as wgmma and TMA want them, + lse and delta stages: 83 KiB;
 * the one-kernel scheme's adds two dS^T buffers (16 KiB each) and two fp32 staging
 * buffers of a tile's dQ partial (16 KiB each): 148 KiB.
 * One block an SM (384 threads; 24 registers for the loaders, 240 for the consumers).
 *
 * Tails: the TMA tensors are (row, d, head, sequence), so rows past T read as zeros; the
 * products there are masked (P = 0) or never stored. CuTe (CUTLASS's headers) builds the
 * smem layouts, TMA descriptors and wgmma descriptors, which are easy to get subtly
 * wrong by hand; the barriers are CUTLASS's thin mbarrier wrappers, the pipeline's phase
 * logic is written out here. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <cute/tensor.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

#include "kernels/dependent_launch.cuh"
#include "kernels/transformer/attention_dq_order.h"
#include "kernels/transformer/attention_math.cuh"
#include "kernels/transformer/flash_attention_sm90.h"

namespace fa_sm90 {
using namespace cute;

constexpr int kD = 64;       /* head dimension */
constexpr int kBlock = 128;  /* rows a block owns: keys (dK dV) or queries (dQ), 64 a consumer warpgroup */
constexpr int kTile = 64;    /* rows of the tiles it loops over */
constexpr int kStages = 3;   /* tiles in flight */
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kLoaderRegs = 24, kConsumerRegs = 240; /* 128 x 24 + 256 x 240 <= 65536 */
/* lse, delta: a TMA copy's first element must lie at a 16-byte boundary (a coordinate that
 * is no multiple of 4 floats is an illegal instruction), so a tile's box starts at the
 * multiple of 4 at or below its first row and holds 4 floats more; the consumers skip
 * line0 & 3 of them (line0 = (b H + h) T; q0 is a multiple of 64) */
constexpr int kLineBox = kTile + 4;   /* 272 bytes, a multiple of 16 */
constexpr int kLineStage = 96;        /* floats a stage: 384 bytes, every stage at a 128-byte boundary */

using OwnShape = Shape<Int<kBlock>, Int<kD>>;
using TileShape = Shape<Int<kTile>, Int<kD>>;
using HalfShape = Shape<Int<64>, Int<kD>>;   /* a consumer's share of the own rows */
using ScoreShape = Shape<Int<64>, Int<kTile>>; /* S, dP of a consumer and a tile */

/* Tile: rows of the tiles a block loops over (kTile in the backward, kFwdTile in the forward) */
template <typename E, int Tile = kTile> struct Types {
    using TileRows = Shape<Int<Tile>, Int<kD>>;
    /* K-major (d contiguous) 128-byte swizzled rows, as TMA writes them */
    using SmemOwn = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<E>{}, OwnShape{}));
    using SmemTiles = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<E>{}, Shape<Int<Tile>, Int<kD>, Int<kStages>>{}));
    /* the same bytes seen as (d, row): the B operand of P^T dO, dS^T Q, dS K, P V */
    using SmemTilesT = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<E>{}, Shape<Int<kD>, Int<Tile>, Int<kStages>>{}));
    /* C = A B^T (B's rows K-major in smem) and C = A B (B MN-major), A from registers */
    using MmaABt = decltype(make_tiled_mma(
        GMMA::rs_op_selector<E, E, float, Shape<_64, Int<Tile>, _16>, GMMA::Major::K, GMMA::Major::K>()));
    using MmaAB = decltype(make_tiled_mma(
        GMMA::rs_op_selector<E, E, float, Shape<_64, Int<kD>, _16>, GMMA::Major::K, GMMA::Major::MN>()));
    /* the one-kernel scheme's dQ^T = K^T dS^T, both from smem: K^T the block's own K rows
     * seen as (d, key), dS^T a warpgroup's half of the tile's queries as (query, key), both
     * MN-major (d, query contiguous); 64-byte swizzle, as a half holds 32 queries */
    using SmemOwnT = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<E>{}, Shape<Int<kD>, Int<kBlock>>{}));
    using SmemDsHalf = decltype(tile_to_shape(GMMA::Layout_MN_SW64_Atom<E>{}, Shape<_32, Int<kBlock>>{}));
    using MmaDq = decltype(make_tiled_mma(
        GMMA::ss_op_selector<E, E, float, Shape<_64, _32, _16>, GMMA::Major::MN, GMMA::Major::MN>()));
    /* one of Q, K, V, dO in memory: (row, d, head, sequence) */
    using GRows = decltype(make_tensor(make_gmem_ptr(static_cast<E const *>(nullptr)),
                                       make_layout(make_shape(int(), Int<kD>{}, int(), int()),
                                                   make_stride(int64_t(), _1{}, int64_t(), int64_t()))));
    /* lse or delta, all (sequence, head, row) in one line */
    using GLine = decltype(make_tensor(make_gmem_ptr(static_cast<float const *>(nullptr)),
                                       make_layout(make_shape(int()), make_stride(_1{}))));
    using TmaOwn = decltype(make_tma_copy(SM90_TMA_LOAD{}, GRows{}, SmemOwn{}, OwnShape{}, _1{}));
    using TmaTile = decltype(make_tma_copy(SM90_TMA_LOAD{}, GRows{}, take<0, 2>(SmemTiles{}), TileRows{}, _1{}));
    using TmaLine = decltype(make_tma_copy(SM90_TMA_LOAD{}, GLine{}, Layout<Shape<Int<kLineBox>>>{}, Shape<Int<kLineBox>>{}, _1{}));
};

/* dK dV: own = K, V, tiles = Q, dO (+ lse, delta). dQ: own = Q, dO, tiles = K, V. */
template <typename E> struct Params {
    typename Types<E>::TmaOwn own0, own1;
    typename Types<E>::TmaTile tile0, tile1;
    typename Types<E>::TmaLine lse, delta; /* dK dV only */
    const float *lse_ptr, *delta_ptr;      /* dQ only: a thread's two rows, read once */
    E *dqkv;
    int T, H, C, B;
    float sl2, scale;
    float *dq_accum; /* the one-kernel scheme: fp32 dQ sums [B, H, T, 64], */
    int *dq_sem;     /* a semaphore per (sequence, head, query tile), 0 at the start, */
    dq_order order;  /* and the order they add in (attention_dq_order.h) */
};

template <typename E> struct Smem {
    alignas(1024) E own[2][kBlock * kD];
    alignas(1024) E tile[2][kStages * kTile * kD];
    alignas(128) float lse[kStages][kLineStage]; /* TMA writes shared memory at 128-byte boundaries */
    alignas(128) float delta[kStages][kLineStage];
    alignas(8) uint64_t own_full, own_empty, full[kStages], empty[kStages];
};
template <typename E> constexpr size_t smem_bytes() { return sizeof(Smem<E>) + 1024; /* alignment slack */ }

/* the one-kernel scheme's: dS^T of a tile (two buffers x the two warpgroups' halves of its
 * queries, every key of the block) and the fp32 dQ partial of a tile, [query][d] as it lies
 * in dq_accum (two buffers, each "full" once the consumers wrote it, "empty" once the bulk
 * reduction has read it) */
template <typename E> struct SmemDq {
    Smem<E> pipe;
    alignas(1024) E ds[2][kConsumers][32 * kBlock];
    alignas(128) float stage[2][kTile * kD];
    alignas(8) uint64_t stage_full[2], stage_empty[2];
};
template <typename E> constexpr size_t dq_smem_bytes() { return sizeof(SmemDq<E>) + 1024; }

constexpr uint32_t kOwnBytes = 2u * kBlock * kD * 2u;
constexpr uint32_t kTileBytes = 2u * kTile * kD * 2u;
constexpr uint32_t kLineBytes = 2u * kLineBox * 4u;

/* ---- helpers ---------------------------------------------------------------------------- */

template <typename E> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<cutlass::bfloat16_t>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<cutlass::half_t>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* the block's shared storage, at a 1024-byte boundary (128-byte swizzle's period) */
template <class S> __device__ __forceinline__ S &shared_storage()
{
    extern __shared__ char smem_raw[];
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(smem_raw);
    return *reinterpret_cast<S *>(smem_raw + ((1024u - (a & 1023u)) & 1023u));
}

/* c (=|+=) a b over the k-steps of a (registers) and b (smem descriptors); one batch, not
 * waited: the caller fences c again after its warpgroup_wait, before reading it */
template <bool Zero, class Mma, class TA, class TB, class TC>
__device__ __forceinline__ void mma_rs(Mma &mma, TA &a, TB const &b, TC &c)
{
    warpgroup_fence_operand(a);
    warpgroup_fence_operand(c);
    warpgroup_arrive();
    mma.accumulate_ = Zero ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(a); k++) {
        cute::gemm(mma, a(_, _, k), b(_, _, k), c);
        mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(c);
    warpgroup_fence_operand(a);
}

/* c = a b, both operands smem descriptors; one batch, not waited, as mma_rs */
template <class Mma, class TA, class TB, class TC>
__device__ __forceinline__ void mma_ss(Mma &mma, TA const &a, TB const &b, TC &c)
{
    warpgroup_fence_operand(c);
    warpgroup_arrive();
    mma.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(a); k++) {
        cute::gemm(mma, a(_, _, k), b(_, _, k), c);
        mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(c);
}

/* an accumulator [64 x 64] rounded to 16 bits as the A operand of the next product
 * (same element order: see the header) */
template <typename E, class TAcc, class TA> __device__ __forceinline__ void acc_to_a(TA &a, TAcc const &acc)
{
    static_assert(decltype(size(a))::value == decltype(size(acc))::value, "A fragment and accumulator differ in size");
    Tensor a32 = recast<uint32_t>(a);
    CUTE_UNROLL
    for (int i = 0; i < size(a32); i++) a32(i) = pack2<E>(acc(2 * i), acc(2 * i + 1));
}

/* the block's barriers (the pipeline's, and those `extra` makes), before any role starts */
template <class S, class Extra> __device__ __forceinline__ void init_barriers(S &sm, Extra extra)
{
    if (threadIdx.x == 0) {
        cutlass::arch::ClusterTransactionBarrier::init(&sm.own_full, 1);
        cutlass::arch::ClusterBarrier::init(&sm.own_empty, kConsumers * 128);
        for (int s = 0; s < kStages; s++) {
            cutlass::arch::ClusterTransactionBarrier::init(&sm.full[s], 1);
            cutlass::arch::ClusterBarrier::init(&sm.empty[s], kConsumers * 128);
        }
        extra();
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();
}
template <class S> __device__ __forceinline__ void init_barriers(S &sm) { init_barriers(sm, [] {}); }

/* mbarrier waits and arrivals that also keep the compiler's loads and stores on their
 * side (CUTLASS's asm has no memory clobber; the lse and K loads are plain C++) */
__device__ __forceinline__ void wait_barrier(uint64_t &bar, uint32_t parity)
{
    cutlass::arch::ClusterBarrier::wait(&bar, parity);
    asm volatile("" ::: "memory");
}
__device__ __forceinline__ void arrive_barrier(uint64_t &bar)
{
    asm volatile("" ::: "memory");
    cutlass::arch::ClusterBarrier::arrive(&bar);
}

/* the 256 consumer threads meet (named barrier 1; 0 is __syncthreads') */
__device__ __forceinline__ void consumers_sync()
{
    asm volatile("bar.sync 1, %0;" ::"n"(kConsumers * 128) : "memory");
}

/* The one-kernel scheme's global side, all from one thread: a bulk copy (store) or an fp32
 * reduce-add of `bytes` from shared memory into global memory, committed as a bulk group;
 * waits for the groups to have read their source or to be complete; the semaphores. */
__device__ __forceinline__ void bulk_store(float *g, const float *sh, uint32_t bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                 "cp.async.bulk.commit_group;" ::"l"(g), "r"((uint32_t)__cvta_generic_to_shared(sh)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_add(float *g, const float *sh, uint32_t bytes)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n"
                 "cp.async.bulk.commit_group;" ::"l"(g), "r"((uint32_t)__cvta_generic_to_shared(sh)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_done() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
/* orders this thread's generic accesses to global memory with its bulk (async proxy) ones */
__device__ __forceinline__ void fence_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }
__device__ __forceinline__ int load_acquire(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void increment_release(int *p)
{
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
}

/* Tile j of the loop goes to stage j % kStages; its buffers are free again once the
 * empty barrier has completed its (j / kStages)-th phase, which the producer waits for
 * from the second round on. Parities: full[s] completes once a round, empty[s] too. */
__device__ __forceinline__ int stage_of(int j) { return j % kStages; }
__device__ __forceinline__ uint32_t round_parity(int j) { return (uint32_t)(j / kStages) & 1u; }

/* The loader's loop over n tiles of two tensors (K and V, for dQ and the forward): tile j
 * into stage j % kStages once that stage is free, both copies completing its full barrier. */
template <class Tma0, class Tma1, class G0, class S0, class G1, class S1>
__device__ __forceinline__ void load_tile_pairs(const Tma0 &t0, const G0 &g0, S0 &s0, const Tma1 &t1, const G1 &g1,
                                                S1 &s1, uint64_t *full, uint64_t *empty, int n, uint32_t bytes,
                                                int j_base)
{
    for (int i = 0; i < n; i++) {
        const int j = j_base + i, s = stage_of(j);
        if (j >= kStages) wait_barrier(empty[s], round_parity(j) ^ 1u);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&full[s], bytes);
        copy(t0.with(full[s]), g0(_, _, _, i), s0(_, _, _, s));
        copy(t1.with(full[s]), g1(_, _, _, i), s1(_, _, _, s));
    }
}

/* The persistent kernels' work: a block an SM, taking units blockIdx.x, + gridDim.x, ...;
 * unit u is row block u / (B H) of sequence and head u % (B H), or (heavy_last) the row
 * blocks counted from the last, so that causal attention hands out the blocks with the most
 * tiles first and the lightest last (each block's share is then within a light unit of the
 * others'). A unit's own rows go into registers as it starts, so one buffer of them serves:
 * the loader fills it for unit k + 1 once the consumers have read unit k's (own_empty). */
struct unit_rc {
    int blk, h, b;
};
__device__ __forceinline__ unit_rc unit_at(int u, int nblk, int H, int B, bool heavy_last)
{
    const int bh = u % (B * H), r = u / (B * H);
    return {heavy_last ? nblk - 1 - r : r, bh % H, bh / H};
}
/* the loader: unit k's own rows into their buffer once unit k - 1's have been read */
__device__ __forceinline__ void own_acquire(uint64_t &own_empty, int k)
{
    if (k > 0) wait_barrier(own_empty, (uint32_t)(k - 1) & 1u);
}

/* Whether a tile of 64 queries from q0 and 64 keys from k0 needs a mask: a row past T, or
 * (causal) a key after a query. The tiles that do not (all but the diagonal's and the last
 * ones) run a copy of the loop's body without the mask's 32 compares a thread: computed
 * alongside, they were a third of the body's instructions, and the body is issue-bound
 * (results/h200x1-kernel-profile). */
template <bool Causal> __device__ __forceinline__ bool tile_needs_mask(int q0, int k0, int T)
{
    return q0 + kTile > T || k0 + 64 > T || (Causal && q0 < k0 + 63);
}

/* A consumer's tile in the dK dV loop: S^T = K Q^T and dP^T = V dO^T, then in accS
 * P^T = exp2(S^T sl2 - lse) and in accP dS^T = P^T (dP^T - delta); Masked (see
 * tile_needs_mask), P = 0 for queries or keys past T and, causal, for keys after the query
 * (keys past T read K as zeros, but a dS^T that the one-kernel scheme shares must not hold
 * garbage there). L, Dl: the tile's lse and delta in shared memory. */
template <class Mma, class TA, class TB, class TAcc>
__device__ __forceinline__ void tile_s_dp(Mma &mma_s, TA &rK, TA &rV, TB const &q, TB const &o, TAcc &accS, TAcc &accP)
{
    mma_rs<true>(mma_s, rK, q, accS);
    mma_rs<true>(mma_s, rV, o, accP);
}
/* what follows tile_s_dp: the last batch in flight is dP^T, the one before S^T (any before
 * those complete too) */
template <bool Causal, bool Masked, class TAcc, class TC>
__device__ __forceinline__ void tile_p_ds_after(TAcc &accS, TAcc &accP, TC const &cS, const float *L, const float *Dl,
                                                int q0, int k0w, int T, float sl2)
{
    warpgroup_wait<1>(); /* S done, dP in flight */
    warpgroup_fence_operand(accS);
    CUTE_UNROLL
    for (int i = 0; i < size(accS); i++) {
        const int c = get<1>(cS(i));
        float pv = fast_exp2(fmaf(accS(i), sl2, -L[c]));
        if constexpr (Masked) {
            const int key = k0w + get<0>(cS(i)), q = q0 + c;
            if (q >= T || key >= T || (Causal && key > q)) pv = 0.0f;
        }
        accS(i) = pv;
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(accP);
    CUTE_UNROLL
    for (int i = 0; i < size(accP); i++) accP(i) = accS(i) * (accP(i) - Dl[get<1>(cS(i))]);
}
template <bool Causal, bool Masked, class Mma, class TA, class TB, class TAcc, class TC>
__device__ __forceinline__ void tile_p_ds(Mma &mma_s, TA &rK, TA &rV, TB const &q, TB const &o, TAcc &accS,
                                          TAcc &accP, TC const &cS, const float *L, const float *Dl, int q0, int k0w,
                                          int T, float sl2)
{
    tile_s_dp(mma_s, rK, rV, q, o, accS, accP);
    tile_p_ds_after<Causal, Masked>(accS, accP, cS, L, Dl, q0, k0w, T, sl2);
}

/* dK = scale dS^T Q, dV = P^T dO of a consumer's 64 keys from k0w into dqkv's K and V
 * columns of head h (keys past T not stored) */
template <typename E, class Thr, class TAcc>
__device__ __forceinline__ void store_dk_dv(const Params<E> &p, Thr const &to, TAcc const &accK, TAcc const &accV,
                                            int k0w, int h, int b)
{
    const int ld = 3 * p.C;
    E *dk = p.dqkv + (size_t)b * p.T * ld + p.C + h * kD, *dv = dk + p.C;
    Tensor cO = to.partition_C(make_identity_tensor(HalfShape{}));
    CUTE_UNROLL
    for (int i = 0; i < size(accK); i += 2) {
        const int key = k0w + get<0>(cO(i)), c = get<1>(cO(i));
        if (key >= p.T) continue;
        *reinterpret_cast<uint32_t *>(dk + (size_t)key * ld + c) = pack2<E>(accK(i) * p.scale, accK(i + 1) * p.scale);
        *reinterpret_cast<uint32_t *>(dv + (size_t)key * ld + c) = pack2<E>(accV(i), accV(i + 1));
    }
}

/* ---- dK, dV ---------------------------------------------------------------------------- */

template <typename E> __device__ __forceinline__ void prefetch_descriptors(const Params<E> &p)
{
    prefetch_tma_descriptor(p.own0.get_tma_descriptor());
    prefetch_tma_descriptor(p.own1.get_tma_descriptor());
    prefetch_tma_descriptor(p.tile0.get_tma_descriptor());
    prefetch_tma_descriptor(p.tile1.get_tma_descriptor());
    prefetch_tma_descriptor(p.lse.get_tma_descriptor());
    prefetch_tma_descriptor(p.delta.get_tma_descriptor());
}

/* The loader's start of the block's k-th unit: its own rows (own0 and own1 of row block
 * blk, head h, sequence b) into their buffer once unit k - 1's have been read */
template <typename E> __device__ __forceinline__ void load_own(const Params<E> &p, Smem<E> &sm, int blk, int h, int b, int k)
{
    using Ty = Types<E>;
    const auto gshape = make_shape(p.T, Int<kD>{}, p.H, p.B);
    Tensor g0 = local_tile(p.own0.get_tma_tensor(gshape)(_, _, h, b), OwnShape{}, make_coord(blk, _0{}));
    Tensor g1 = local_tile(p.own1.get_tma_tensor(gshape)(_, _, h, b), OwnShape{}, make_coord(blk, _0{}));
    Tensor s0 = make_tensor(make_smem_ptr(sm.own[0]), typename Ty::SmemOwn{});
    Tensor s1 = make_tensor(make_smem_ptr(sm.own[1]), typename Ty::SmemOwn{});
    auto t0 = p.own0.get_slice(0);
    auto t1 = p.own1.get_slice(0);
    own_acquire(sm.own_empty, k);
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&sm.own_full, kOwnBytes);
    copy(p.own0.with(sm.own_full), t0.partition_S(g0), t0.partition_D(s0));
    copy(p.own1.with(sm.own_full), t1.partition_S(g1), t1.partition_D(s1));
}

/* A tile tensor's (tile0's or tile1's) copy views for head h, sequence b: the source by
 * tile, the destination (stages of buf) by stage */
template <typename E, class Tma>
__device__ __forceinline__ auto tile_views(const Tma &tma, const Params<E> &p, E *buf, int h, int b)
{
    const auto gshape = make_shape(p.T, Int<kD>{}, p.H, p.B);
    Tensor g = local_tile(tma.get_tma_tensor(gshape)(_, _, h, b), TileShape{}, make_coord(_, _0{}));
    Tensor sm = make_tensor(make_smem_ptr(buf), typename Types<E>::SmemTiles{});
    auto t = tma.get_slice(0);
    return cute::make_tuple(t.partition_S(g), t.partition_D(sm));
}

/* The dK dV loader for the k-th unit of the block (key block nb of head h, sequence b): its
 * K and V rows, then Q, dO, lse and delta of its n query tiles tile_of(0 .. n - 1), the
 * block's tile j_base + i into stage (j_base + i) % kStages once that stage is free. */
template <typename E, class TileOf>
__device__ __forceinline__ void load_dkdv(const Params<E> &p, Smem<E> &sm, int nb, int h, int b, int n, TileOf tile_of,
                                          int k = 0, int j_base = 0)
{
    const int T = p.T;
    auto vq = tile_views(p.tile0, p, sm.tile[0], h, b);
    auto vo = tile_views(p.tile1, p, sm.tile[1], h, b);
    auto &tQg = get<0>(vq);
    auto &tQs = get<1>(vq);
    auto &tOg = get<0>(vo);
    auto &tOs = get<1>(vo);
    const int line0 = (b * p.H + h) * T, lines = p.B * p.H * T;
    Tensor gLall = p.lse.get_tma_tensor(make_shape(lines));
    Tensor gDall = p.delta.get_tma_tensor(make_shape(lines));
    using LineStages = Layout<Shape<Int<kLineBox>, Int<kStages>>, Stride<_1, Int<kLineStage>>>;
    Tensor sL = make_tensor(make_smem_ptr(&sm.lse[0][0]), LineStages{});
    Tensor sD = make_tensor(make_smem_ptr(&sm.delta[0][0]), LineStages{});
    auto tl = p.lse.get_slice(0);
    auto td = p.delta.get_slice(0);
    Tensor tLs = tl.partition_D(sL);
    Tensor tDs = td.partition_D(sD);

    load_own(p, sm, nb, h, b, k);
    for (int i = 0; i < n; i++) {
        const int j = j_base + i, s = stage_of(j), qt = tile_of(i);
        if (j >= kStages) wait_barrier(sm.empty[s], round_parity(j) ^ 1u);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&sm.full[s], kTileBytes + kLineBytes);
        copy(p.tile0.with(sm.full[s]), tQg(_, _, _, qt), tQs(_, _, _, s));
        copy(p.tile1.with(sm.full[s]), tOg(_, _, _, qt), tOs(_, _, _, s));
        const int a = (line0 + qt * kTile) & ~3; /* see kLineBox */
        Tensor gL = local_tile(domain_offset(make_coord(a), gLall), Shape<Int<kLineBox>>{}, make_coord(0));
        Tensor gD = local_tile(domain_offset(make_coord(a), gDall), Shape<Int<kLineBox>>{}, make_coord(0));
        copy(p.lse.with(sm.full[s]), tl.partition_S(gL), tLs(_, _, s));
        copy(p.delta.with(sm.full[s]), td.partition_S(gD), tDs(_, _, s));
    }
}

/* a persistent grid (unit_at: key blocks, the first ones, with the most query tiles, first) */
template <typename E, bool Causal>
__global__ void __launch_bounds__(kThreads, 1) fa90_backward_dkdv(const __grid_constant__ Params<E> p)
{
    using Ty = Types<E>;
    Smem<E> &sm = shared_storage<Smem<E>>();
    const int T = p.T, nqt = (T + kTile - 1) / kTile, nblk = (T + kBlock - 1) / kBlock, units = nblk * p.H * p.B;
    /* queries before a block's first key see none of it */
    auto first_tile = [&](int nb) { return Causal ? nb * kBlock / kTile : 0; };
    const int wg = threadIdx.x / 128;
    /* the dQ kernel, launched as this one's dependent, reads nothing this one writes: its
     * blocks may take the SMs as this grid's finish (fa90_backward_dq) */
    dependents_may_start();
    init_barriers(sm);

    if (wg == 0) { /* the loader */
        cutlass::arch::warpgroup_reg_dealloc<kLoaderRegs>();
        if (threadIdx.x == 0) {
            prefetch_descriptors(p);
            for (int u = blockIdx.x, k = 0, j_base = 0; u < units; u += gridDim.x, k++) {
                const unit_rc w = unit_at(u, nblk, p.H, p.B, false);
                const int qt_first = first_tile(w.blk);
                load_dkdv(p, sm, w.blk, w.h, w.b, nqt - qt_first, [&](int i) { return qt_first + i; }, k, j_base);
                j_base += nqt - qt_first;
            }
        }
        return;
    }

    /* a consumer: keys k0w .. k0w + 63 of each unit */
    cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
    const int cw = wg - 1, tid = threadIdx.x % 128;
    typename Ty::MmaABt mma_s;
    typename Ty::MmaAB mma_o;
    auto ts = mma_s.get_thread_slice(tid);
    auto to = mma_o.get_thread_slice(tid);
    Tensor sK = local_tile(make_tensor(make_smem_ptr(sm.own[0]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sV = local_tile(make_tensor(make_smem_ptr(sm.own[1]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sQ = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTiles{});
    Tensor sO = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTiles{});
    Tensor sQt = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTilesT{});
    Tensor sOt = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTilesT{});
    Tensor rK = ts.partition_fragment_A(sK);
    Tensor rV = ts.partition_fragment_A(sV);
    Tensor dQs = ts.partition_fragment_B(sQ); /* wgmma descriptors */
    Tensor dOs = ts.partition_fragment_B(sO);
    Tensor dQt = to.partition_fragment_B(sQt);
    Tensor dOt = to.partition_fragment_B(sOt);
    Tensor accS = partition_fragment_C(mma_s, ScoreShape{});
    Tensor accP = partition_fragment_C(mma_s, ScoreShape{}); /* dP^T, then dS^T */
    Tensor accK = partition_fragment_C(mma_o, HalfShape{});
    Tensor accV = partition_fragment_C(mma_o, HalfShape{});
    Tensor rP = make_tensor<E>(partition_shape_A(mma_o, ScoreShape{}));
    Tensor rS = make_tensor<E>(partition_shape_A(mma_o, ScoreShape{}));
    Tensor cS = ts.partition_C(make_identity_tensor(ScoreShape{})); /* (key, query) in the tile */
    for (int u = blockIdx.x, k = 0, j_base = 0; u < units; u += gridDim.x, k++) {
        const unit_rc w = unit_at(u, nblk, p.H, p.B, false);
        const int h = w.h, b = w.b, k0w = w.blk * kBlock + 64 * cw, qt_first = first_tile(w.blk);
        const int skew = ((b * p.H + h) * T) & 3; /* row q0's place in its stage's box (kLineBox) */
        clear(accK);
        clear(accV);

        wait_barrier(sm.own_full, (uint32_t)k & 1u);
        {
            Tensor gK = ts.partition_A(sK);
            Tensor gV = ts.partition_A(sV);
            CUTE_UNROLL
            for (int i = 0; i < size(rK); i++) rK(i) = gK(i), rV(i) = gV(i);
        }
        arrive_barrier(sm.own_empty); /* K and V in registers: the next unit's may come */
        /* Software-pipelined over the tiles: tile j + 1's S^T and dP^T are issued right behind
         * tile j's dV and dK, so the tensor cores go from one to the next, and all four are
         * waited for in the same iteration (a batch still in flight across the loop's back edge
         * makes ptxas serialize every wgmma). Causal: the tiles whose queries all come before
         * this warpgroup's keys (at most the block's first, for the second warpgroup) add nothing
         * and come first. */
        int qt = qt_first, j = j_base;
        for (; Causal && qt < nqt && qt * kTile + kTile - 1 < k0w; qt++, j++) {
            wait_barrier(sm.full[stage_of(j)], round_parity(j));
            arrive_barrier(sm.empty[stage_of(j)]);
        }
        if (qt < nqt) {
            {
                const int s = stage_of(j), q0 = qt * kTile;
                wait_barrier(sm.full[s], round_parity(j));
                auto first = [&](auto masked) {
                    tile_s_dp(mma_s, rK, rV, dQs(_, _, _, s), dOs(_, _, _, s), accS, accP);
                    tile_p_ds_after<Causal, decltype(masked)::value>(accS, accP, cS, sm.lse[s] + skew,
                                                                     sm.delta[s] + skew, q0, k0w, T, p.sl2);
                };
                if (tile_needs_mask<Causal>(q0, k0w, T)) first(cute::true_type{});
                else first(cute::false_type{});
                acc_to_a<E>(rP, accS);
                acc_to_a<E>(rS, accP);
            }
            for (; qt + 1 < nqt; qt++, j++) {
                const int s = stage_of(j), sn = stage_of(j + 1), q1 = (qt + 1) * kTile;
                wait_barrier(sm.full[sn], round_parity(j + 1));
                /* dV dK of tile j, S^T dP^T of tile j + 1, then j + 1's P^T and dS^T */
                auto step = [&](auto masked) {
                    mma_rs<false>(mma_o, rP, dOt(_, _, _, s), accV);
                    mma_rs<false>(mma_o, rS, dQt(_, _, _, s), accK);
                    tile_s_dp(mma_s, rK, rV, dQs(_, _, _, sn), dOs(_, _, _, sn), accS, accP);
                    tile_p_ds_after<Causal, decltype(masked)::value>(accS, accP, cS, sm.lse[sn] + skew,
                                                                     sm.delta[sn] + skew, q1, k0w, T, p.sl2);
                };
                if (tile_needs_mask<Causal>(q1, k0w, T)) step(cute::true_type{});
                else step(cute::false_type{});
                arrive_barrier(sm.empty[s]);
                acc_to_a<E>(rP, accS);
                acc_to_a<E>(rS, accP);
            }
            const int s = stage_of(j);
            mma_rs<false>(mma_o, rP, dOt(_, _, _, s), accV);
            mma_rs<false>(mma_o, rS, dQt(_, _, _, s), accK);
            warpgroup_wait<0>();
            warpgroup_fence_operand(accV);
            warpgroup_fence_operand(accK);
            arrive_barrier(sm.empty[s]);
        }

        store_dk_dv(p, to, accK, accV, k0w, h, b);
        j_base += nqt - qt_first;
    }
}

/* ---- dK, dV and dQ in one kernel ---------------------------------------------------------- */

/* The dQ writer (one thread of the loader warpgroup): tile j's partial, once the consumers
 * staged it, into dq_accum when the tile's semaphore says this block's turn has come
 * (stored by the first contributor, reduce-added by the others); the staging buffer freed
 * once the bulk copy has read it, the semaphore passed on once the copy is complete. */
template <typename E>
__device__ __forceinline__ void add_dq_tiles(const Params<E> &p, SmemDq<E> &sd, int nb, int h, int b, int n)
{
    const dq_order o = p.order;
    const size_t bh = (size_t)b * p.H + h;
    int *sem = p.dq_sem + bh * o.nqt;
    float *acc = p.dq_accum + bh * p.T * kD;
    for (int j = 0; j < n; j++) {
        const int u = j & 1, qt = dq_order_tile(o, nb, j), rank = dq_order_rank(o, nb, qt);
        const uint32_t bytes = (uint32_t)min(kTile, p.T - qt * kTile) * kD * 4u; /* rows past T: none */
        float *dst = acc + (size_t)qt * kTile * kD;
        wait_barrier(sd.stage_full[u], (uint32_t)(j >> 1) & 1u);
        while (load_acquire(sem + qt) != rank) {
        }
        fence_async_global();
        if (rank == 0) bulk_store(dst, sd.stage[u], bytes);
        else bulk_add(dst, sd.stage[u], bytes);
        bulk_wait_read();
        arrive_barrier(sd.stage_empty[u]);
        bulk_wait_done();
        fence_async_global();
        increment_release(sem + qt);
    }
}

/* grid (key blocks in dq_order_block's order, heads, sequences). dK dV as
 * fa90_backward_dkdv, over the tiles in the order dq_order_tile gives, and for each tile
 * the block's share of dQ: the consumers put dS^T into shared memory (every key of the
 * block), meet, and each computes dQ^T = K^T dS^T for 32 of the tile's queries (SS wgmma
 * m64n32, K = 128 keys), staged as fp32 for the writer (add_dq_tiles). */
template <typename E, bool Causal>
__global__ void __launch_bounds__(kThreads, 1) fa90_backward_fused(const __grid_constant__ Params<E> p)
{
    using Ty = Types<E>;
    SmemDq<E> &sd = shared_storage<SmemDq<E>>();
    Smem<E> &sm = sd.pipe;
    const dq_order o = p.order;
    const int nb = dq_order_block(o, blockIdx.x), h = blockIdx.y, b = blockIdx.z, T = p.T;
    const int n0 = nb * kBlock, ntiles = dq_order_tiles(o, nb);
    const int wg = threadIdx.x / 128;
    init_barriers(sm, [&] {
        for (int u = 0; u < 2; u++) {
            cutlass::arch::ClusterBarrier::init(&sd.stage_full[u], kConsumers * 128);
            cutlass::arch::ClusterBarrier::init(&sd.stage_empty[u], 1);
        }
    });

    if (wg == 0) { /* the loader (thread 0) and the dQ writer (warp 1's first thread) */
        cutlass::arch::warpgroup_reg_dealloc<kLoaderRegs>();
        if (threadIdx.x == 0) {
            prefetch_descriptors(p);
            load_dkdv(p, sm, nb, h, b, ntiles, [&](int j) { return dq_order_tile(o, nb, j); });
        }
        else if (threadIdx.x == 32) add_dq_tiles(p, sd, nb, h, b, ntiles);
        return;
    }

    /* a consumer: keys k0w .. k0w + 63; dQ of queries 32 cw .. 32 cw + 31 of each tile */
    cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
    const int cw = wg - 1, tid = threadIdx.x % 128, k0w = n0 + 64 * cw;
    const int skew = ((b * p.H + h) * T) & 3; /* row q0's place in its stage's box (kLineBox) */
    typename Ty::MmaABt mma_s;
    typename Ty::MmaAB mma_o;
    typename Ty::MmaDq mma_q;
    auto ts = mma_s.get_thread_slice(tid);
    auto to = mma_o.get_thread_slice(tid);
    auto tq = mma_q.get_thread_slice(tid);
    Tensor sK = local_tile(make_tensor(make_smem_ptr(sm.own[0]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sV = local_tile(make_tensor(make_smem_ptr(sm.own[1]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sQ = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTiles{});
    Tensor sO = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTiles{});
    Tensor sQt = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTilesT{});
    Tensor sOt = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTilesT{});
    Tensor rK = ts.partition_fragment_A(sK);
    Tensor rV = ts.partition_fragment_A(sV);
    Tensor dQs = ts.partition_fragment_B(sQ); /* wgmma descriptors */
    Tensor dOs = ts.partition_fragment_B(sO);
    Tensor dQt = to.partition_fragment_B(sQt);
    Tensor dOt = to.partition_fragment_B(sOt);
    Tensor dKt = tq.partition_fragment_A(make_tensor(make_smem_ptr(sm.own[0]), typename Ty::SmemOwnT{}));
    Tensor dDs0 = tq.partition_fragment_B(make_tensor(make_smem_ptr(sd.ds[0][cw]), typename Ty::SmemDsHalf{}));
    Tensor dDs1 = tq.partition_fragment_B(make_tensor(make_smem_ptr(sd.ds[1][cw]), typename Ty::SmemDsHalf{}));
    Tensor accS = partition_fragment_C(mma_s, ScoreShape{});
    Tensor accP = partition_fragment_C(mma_s, ScoreShape{}); /* dP^T, then dS^T */
    Tensor accK = partition_fragment_C(mma_o, HalfShape{});
    Tensor accV = partition_fragment_C(mma_o, HalfShape{});
    Tensor accQ = partition_fragment_C(mma_q, Shape<Int<kD>, _32>{}); /* dQ^T: (d, query) */
    Tensor rP = make_tensor<E>(partition_shape_A(mma_o, ScoreShape{}));
    Tensor rS = make_tensor<E>(partition_shape_A(mma_o, ScoreShape{}));
    Tensor cS = ts.partition_C(make_identity_tensor(ScoreShape{})); /* (key, query) in the tile */
    Tensor cQ = tq.partition_C(make_identity_tensor(Shape<Int<kD>, _32>{}));
    clear(accK);
    clear(accV);

    wait_barrier(sm.own_full, 0);
    {
        Tensor gK = ts.partition_A(sK);
        Tensor gV = ts.partition_A(sV);
        CUTE_UNROLL
        for (int i = 0; i < size(rK); i++) rK(i) = gK(i), rV(i) = gV(i);
    }
    for (int j = 0; j < ntiles; j++) {
        const int s = stage_of(j), u = j & 1, q0 = dq_order_tile(o, nb, j) * kTile;
        wait_barrier(sm.full[s], round_parity(j));
        /* causal: a tile whose queries all come before this warpgroup's keys adds nothing
         * to dK dV, and zeros to dS^T */
        const bool active = !Causal || q0 + kTile - 1 >= k0w;
        if (active) {
            if (tile_needs_mask<Causal>(q0, k0w, T))
                tile_p_ds<Causal, true>(mma_s, rK, rV, dQs(_, _, _, s), dOs(_, _, _, s), accS, accP, cS,
                                        sm.lse[s] + skew, sm.delta[s] + skew, q0, k0w, T, p.sl2);
            else
                tile_p_ds<Causal, false>(mma_s, rK, rV, dQs(_, _, _, s), dOs(_, _, _, s), accS, accP, cS,
                                         sm.lse[s] + skew, sm.delta[s] + skew, q0, k0w, T, p.sl2);
            acc_to_a<E>(rP, accS);
            acc_to_a<E>(rS, accP);
        }
        /* dS^T into buffer u: the other warpgroup's dQ of tile j - 2, its last reader, was
         * complete before it met us at tile j - 1 */
        CUTE_UNROLL
        for (int i = 0; i < size(accP); i += 2) {
            const int key = 64 * cw + get<0>(cS(i)), c = get<1>(cS(i));
            Tensor half = make_tensor(make_smem_ptr(sd.ds[u][c / 32]), typename Ty::SmemDsHalf{});
            *reinterpret_cast<uint32_t *>(&half(c % 32, key)) = active ? pack2<E>(accP(i), accP(i + 1)) : 0u;
        }
        cutlass::arch::fence_view_async_shared(); /* generic stores, then wgmma's reads */
        consumers_sync();
        if (active) {
            mma_rs<false>(mma_o, rP, dOt(_, _, _, s), accV);
            mma_rs<false>(mma_o, rS, dQt(_, _, _, s), accK);
        }
        if (u) mma_ss(mma_q, dKt, dDs1, accQ);
        else mma_ss(mma_q, dKt, dDs0, accQ);
        warpgroup_wait<0>();
        warpgroup_fence_operand(accV);
        warpgroup_fence_operand(accK);
        warpgroup_fence_operand(accQ);
        arrive_barrier(sm.empty[s]);
        /* the partial into staging buffer u once the writer is done with its tile j - 2 */
        if (j >= 2) wait_barrier(sd.stage_empty[u], ((uint32_t)(j >> 1) & 1u) ^ 1u);
        float *st = sd.stage[u];
        CUTE_UNROLL
        for (int i = 0; i < size(accQ); i++) st[(32 * cw + get<1>(cQ(i))) * kD + get<0>(cQ(i))] = accQ(i);
        cutlass::arch::fence_view_async_shared(); /* generic stores, then the bulk copy's reads */
        arrive_barrier(sd.stage_full[u]);
    }

    store_dk_dv(p, to, accK, accV, k0w, h, b);
}

/* dQ (16-bit, dqkv's Q columns of head h) = scale dq_accum, 8 columns a thread */
template <typename E>
__global__ void fa90_dq_convert(E *dqkv, const float *acc, int T, int H, int C, size_t groups, float scale)
{
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    const size_t row = g / (kD / 8); /* (sequence, head, t) */
    const int c = (int)(g % (kD / 8)) * 8, t = (int)(row % T), bh = (int)(row / T), h = bh % H, b = bh / H;
    const float4 lo = reinterpret_cast<const float4 *>(acc)[2 * g], hi = reinterpret_cast<const float4 *>(acc)[2 * g + 1];
    uint4 v;
    v.x = pack2<E>(lo.x * scale, lo.y * scale);
    v.y = pack2<E>(lo.z * scale, lo.w * scale);
    v.z = pack2<E>(hi.x * scale, hi.y * scale);
    v.w = pack2<E>(hi.z * scale, hi.w * scale);
    *reinterpret_cast<uint4 *>(dqkv + ((size_t)b * T + t) * 3 * C + h * kD + c) = v;
}

/* ---- dQ -------------------------------------------------------------------------------- */

/* a persistent grid (unit_at: query blocks, the last ones, which see the most keys, first) */
template <typename E, bool Causal>
__global__ void __launch_bounds__(kThreads, 1) fa90_backward_dq(const __grid_constant__ Params<E> p)
{
    using Ty = Types<E>;
    Smem<E> &sm = shared_storage<Smem<E>>();
    const int T = p.T, tiles_T = (T + kTile - 1) / kTile, nblk = (T + kBlock - 1) / kBlock;
    const int units = nblk * p.H * p.B;
    /* the key tiles a query block sees */
    auto tiles_of = [&](int mb) { return Causal ? min(tiles_T, (mb * kBlock + kBlock - 1) / kTile + 1) : tiles_T; };
    const int wg = threadIdx.x / 128;
    init_barriers(sm);

    if (wg == 0) {
        cutlass::arch::warpgroup_reg_dealloc<kLoaderRegs>();
        if (threadIdx.x != 0) return;
        prefetch_descriptors(p);
        for (int u = blockIdx.x, k = 0, j_base = 0; u < units; u += gridDim.x, k++) {
            const unit_rc w = unit_at(u, nblk, p.H, p.B, Causal);
            const int nkt = tiles_of(w.blk);
            auto vk = tile_views(p.tile0, p, sm.tile[0], w.h, w.b);
            auto vv = tile_views(p.tile1, p, sm.tile[1], w.h, w.b);
            load_own(p, sm, w.blk, w.h, w.b, k);
            load_tile_pairs(p.tile0, get<0>(vk), get<1>(vk), p.tile1, get<0>(vv), get<1>(vv), sm.full, sm.empty, nkt,
                            kTileBytes, j_base);
            j_base += nkt;
        }
        return;
    }

    /* a consumer: queries q0w .. q0w + 63 */
    cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
    const int cw = wg - 1, tid = threadIdx.x % 128;
    typename Ty::MmaABt mma_s;
    typename Ty::MmaAB mma_o;
    auto ts = mma_s.get_thread_slice(tid);
    auto to = mma_o.get_thread_slice(tid);
    Tensor sQ = local_tile(make_tensor(make_smem_ptr(sm.own[0]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sO = local_tile(make_tensor(make_smem_ptr(sm.own[1]), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sK = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTiles{});
    Tensor sV = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTiles{});
    Tensor sKt = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTilesT{});
    Tensor rQ = ts.partition_fragment_A(sQ);
    Tensor rO = ts.partition_fragment_A(sO);
    Tensor dKs = ts.partition_fragment_B(sK);
    Tensor dVs = ts.partition_fragment_B(sV);
    Tensor dKt = to.partition_fragment_B(sKt);
    Tensor accS = partition_fragment_C(mma_s, ScoreShape{});
    Tensor accP = partition_fragment_C(mma_s, ScoreShape{});
    Tensor accQ = partition_fragment_C(mma_o, HalfShape{});
    Tensor rS = make_tensor<E>(partition_shape_A(mma_o, ScoreShape{}));
    Tensor cS = ts.partition_C(make_identity_tensor(ScoreShape{})); /* (query, key) in the tile */
    for (int u = blockIdx.x, k = 0, jb = 0; u < units; u += gridDim.x, k++) {
        const unit_rc w = unit_at(u, nblk, p.H, p.B, Causal);
        const int h = w.h, b = w.b, q0w = w.blk * kBlock + 64 * cw, nkt = tiles_of(w.blk);
        clear(accQ);

        /* a thread's accumulator rows: element i lies in row cS(i)'s first mode, one of two
         * rows, the second from element 2 on in pairs ((i / 2) % 2: the layout of wgmma's D) */
        float L[2], Dl[2];
        CUTE_UNROLL
        for (int r = 0; r < 2; r++) {
            const int q = q0w + get<0>(cS(2 * r));
            const size_t line = ((size_t)b * p.H + h) * T + q;
            L[r] = q < T ? p.lse_ptr[line] : INFINITY; /* P = 0 on rows past T */
            Dl[r] = q < T ? p.delta_ptr[line] : 0.0f;
        }

        wait_barrier(sm.own_full, (uint32_t)k & 1u);
        {
            Tensor gQ = ts.partition_A(sQ);
            Tensor gO = ts.partition_A(sO);
            CUTE_UNROLL
            for (int i = 0; i < size(rQ); i++) rQ(i) = gQ(i), rO(i) = gO(i);
        }
        arrive_barrier(sm.own_empty); /* Q and dO in registers: the next unit's may come */
        /* Software-pipelined as the dK dV loop: tile kt + 1's S and dP are issued right behind
         * tile kt's dQ, all three waited for in the same iteration. Causal: the tiles of keys all
         * after this warpgroup's queries (at most the block's last, for its first warpgroup) add
         * nothing and come last. */
        const int na = Causal ? min(nkt, (q0w + 63) / kTile + 1) : nkt;
        auto issue_s_dp = [&](int kt) {
            mma_rs<true>(mma_s, rQ, dKs(_, _, _, stage_of(jb + kt)), accS);
            mma_rs<true>(mma_s, rO, dVs(_, _, _, stage_of(jb + kt)), accP);
        };
        /* P and dS of the tile whose S and dP are the last two batches in flight, with the mask
         * (see tile_needs_mask: rows past T read L as infinity, which gives P = 0) or without */
        auto p_ds = [&](int k0, auto masked) {
            warpgroup_wait<1>(); /* S done (and the dQ before it), dP in flight */
            warpgroup_fence_operand(accS);
            CUTE_UNROLL
            for (int i = 0; i < size(accS); i++) {
                float pv = fast_exp2(fmaf(accS(i), p.sl2, -L[(i >> 1) & 1]));
                if constexpr (decltype(masked)::value) {
                    const int q = q0w + get<0>(cS(i)), key = k0 + get<1>(cS(i));
                    if (key >= T || (Causal && key > q)) pv = 0.0f;
                }
                accS(i) = pv;
            }
            warpgroup_wait<0>();
            warpgroup_fence_operand(accP);
            CUTE_UNROLL
            for (int i = 0; i < size(accP); i++) accP(i) = accS(i) * (accP(i) - Dl[(i >> 1) & 1]);
        };
        auto needs_mask = [&](int k0) { return k0 + kTile > T || (Causal && k0 + kTile - 1 > q0w); };
        if (na > 0) {
            wait_barrier(sm.full[stage_of(jb)], round_parity(jb));
            auto first = [&](auto masked) {
                issue_s_dp(0);
                p_ds(0, masked);
            };
            if (needs_mask(0)) first(cute::true_type{});
            else first(cute::false_type{});
            acc_to_a<E>(rS, accP);
            for (int kt = 0; kt + 1 < na; kt++) {
                const int k1 = (kt + 1) * kTile;
                wait_barrier(sm.full[stage_of(jb + kt + 1)], round_parity(jb + kt + 1));
                /* dQ of tile kt, S and dP of tile kt + 1, then kt + 1's P and dS */
                auto step = [&](auto masked) {
                    mma_rs<false>(mma_o, rS, dKt(_, _, _, stage_of(jb + kt)), accQ);
                    issue_s_dp(kt + 1);
                    p_ds(k1, masked);
                };
                if (needs_mask(k1)) step(cute::true_type{});
                else step(cute::false_type{});
                arrive_barrier(sm.empty[stage_of(jb + kt)]);
                acc_to_a<E>(rS, accP);
            }
            mma_rs<false>(mma_o, rS, dKt(_, _, _, stage_of(jb + na - 1)), accQ);
            warpgroup_wait<0>();
            warpgroup_fence_operand(accQ);
            arrive_barrier(sm.empty[stage_of(jb + na - 1)]);
        }
        for (int kt = na; kt < nkt; kt++) {
            wait_barrier(sm.full[stage_of(jb + kt)], round_parity(jb + kt));
            arrive_barrier(sm.empty[stage_of(jb + kt)]);
        }

        const int ld = 3 * p.C;
        E *dq = p.dqkv + (size_t)b * T * ld + h * kD;
        Tensor cO = to.partition_C(make_identity_tensor(HalfShape{}));
        CUTE_UNROLL
        for (int i = 0; i < size(accQ); i += 2) {
            const int q = q0w + get<0>(cO(i)), c = get<1>(cO(i));
            if (q < T)
                *reinterpret_cast<uint32_t *>(dq + (size_t)q * ld + c) =
                    pack2<E>(accQ(i) * p.scale, accQ(i + 1) * p.scale);
        }
        jb += nkt;
    }
    /* launched as the dK dV kernel's dependent (its blocks started as that grid's finished):
     * this grid ends no sooner than that one, so what follows in the stream sees both */
    wait_for_predecessor();
}

/* ---- forward --------------------------------------------------------------------------- */

constexpr int kFwdTile = 128; /* keys a forward tile holds: S is 64 x 128 a consumer warpgroup */

template <typename E> struct FwdParams {
    typename Types<E>::TmaOwn q;
    typename Types<E, kFwdTile>::TmaTile k, v;
    E *out;
    float *lse;
    int T, H, C, B;
    float sl2;
};

template <typename E> struct FwdSmem {
    alignas(1024) E q[kBlock * kD];
    alignas(1024) E tile[2][kStages * kFwdTile * kD];
    alignas(8) uint64_t own_full, own_empty, full[kStages], empty[kStages];
};
template <typename E> constexpr size_t fwd_smem_bytes() { return sizeof(FwdSmem<E>) + 1024; }

constexpr uint32_t kFwdOwnBytes = 1u * kBlock * kD * 2u;
constexpr uint32_t kFwdTileBytes = 2u * kFwdTile * kD * 2u;

/* a persistent grid (unit_at: query blocks, the last ones, which see the most keys, first).
 * A consumer warpgroup keeps 64 query rows, S = Q K^T over a tile of 128 keys, the online
 * softmax's row maximum and sum (log2 domain, as lse), and O += P V.
 * Tails: keys past T are masked; a row past T is computed and never stored. */
template <typename E, bool Causal>
__global__ void __launch_bounds__(kThreads, 1) fa90_forward(const __grid_constant__ FwdParams<E> p)
{
    using Ty = Types<E, kFwdTile>;
    using ScoreF = Shape<Int<64>, Int<kFwdTile>>;
    FwdSmem<E> &sm = shared_storage<FwdSmem<E>>();
    const int T = p.T, tiles_T = (T + kFwdTile - 1) / kFwdTile, nblk = (T + kBlock - 1) / kBlock;
    const int units = nblk * p.H * p.B;
    /* the key tiles a query block sees */
    auto tiles_of = [&](int mb) { return Causal ? min(tiles_T, (mb * kBlock + kBlock - 1) / kFwdTile + 1) : tiles_T; };
    const int wg = threadIdx.x / 128;
    init_barriers(sm);

    if (wg == 0) { /* the loader */
        cutlass::arch::warpgroup_reg_dealloc<kLoaderRegs>();
        if (threadIdx.x != 0) return;
        prefetch_tma_descriptor(p.q.get_tma_descriptor());
        prefetch_tma_descriptor(p.k.get_tma_descriptor());
        prefetch_tma_descriptor(p.v.get_tma_descriptor());
        for (int u = blockIdx.x, k = 0, j_base = 0; u < units; u += gridDim.x, k++) {
            const unit_rc w = unit_at(u, nblk, p.H, p.B, Causal);
            const int mb = w.blk, h = w.h, b = w.b, nkt = tiles_of(mb);
            const auto gshape = make_shape(T, Int<kD>{}, p.H, p.B);
            Tensor gQ = local_tile(p.q.get_tma_tensor(gshape)(_, _, h, b), OwnShape{}, make_coord(mb, _0{}));
            Tensor gK =
                local_tile(p.k.get_tma_tensor(gshape)(_, _, h, b), typename Ty::TileRows{}, make_coord(_, _0{}));
            Tensor gV =
                local_tile(p.v.get_tma_tensor(gshape)(_, _, h, b), typename Ty::TileRows{}, make_coord(_, _0{}));
            Tensor sQ = make_tensor(make_smem_ptr(sm.q), typename Ty::SmemOwn{});
            Tensor sK = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTiles{});
            Tensor sV = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTiles{});
            auto tq = p.q.get_slice(0);
            auto tk = p.k.get_slice(0);
            auto tv = p.v.get_slice(0);
            Tensor tKg = tk.partition_S(gK);
            Tensor tKs = tk.partition_D(sK);
            Tensor tVg = tv.partition_S(gV);
            Tensor tVs = tv.partition_D(sV);

            own_acquire(sm.own_empty, k);
            cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&sm.own_full, kFwdOwnBytes);
            copy(p.q.with(sm.own_full), tq.partition_S(gQ), tq.partition_D(sQ));
            load_tile_pairs(p.k, tKg, tKs, p.v, tVg, tVs, sm.full, sm.empty, nkt, kFwdTileBytes, j_base);
            j_base += nkt;
        }
        return;
    }

    /* a consumer: queries q0w .. q0w + 63 */
    cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
    const int cw = wg - 1, tid = threadIdx.x % 128;
    typename Ty::MmaABt mma_s;
    typename Ty::MmaAB mma_o;
    auto ts = mma_s.get_thread_slice(tid);
    auto to = mma_o.get_thread_slice(tid);
    Tensor sQ = local_tile(make_tensor(make_smem_ptr(sm.q), typename Ty::SmemOwn{}), HalfShape{}, make_coord(cw, _0{}));
    Tensor sK = make_tensor(make_smem_ptr(sm.tile[0]), typename Ty::SmemTiles{});
    Tensor sVt = make_tensor(make_smem_ptr(sm.tile[1]), typename Ty::SmemTilesT{});
    Tensor rQ = ts.partition_fragment_A(sQ);
    Tensor dKs = ts.partition_fragment_B(sK); /* wgmma descriptors */
    Tensor dVt = to.partition_fragment_B(sVt);
    Tensor accS = partition_fragment_C(mma_s, ScoreF{});
    Tensor accO = partition_fragment_C(mma_o, HalfShape{});
    Tensor rP = make_tensor<E>(partition_shape_A(mma_o, ScoreF{}));
    Tensor cS = ts.partition_C(make_identity_tensor(ScoreF{})); /* (query, key) in the tile */
    for (int u = blockIdx.x, k = 0, jb = 0; u < units; u += gridDim.x, k++) {
        const unit_rc w = unit_at(u, nblk, p.H, p.B, Causal);
        const int h = w.h, b = w.b, q0w = w.blk * kBlock + 64 * cw, nkt = tiles_of(w.blk);
        clear(accO);
        /* a thread's two rows (element i lies in row (i / 2) % 2 of them: wgmma's D layout):
         * the running maximum of S sl2 and the thread's share of the sum of exp2(S sl2 - max) */
        float mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.0f, 0.0f};

        /* S masked, the rows' new maximum of S sl2 (corr: the factor that rescales what was
         * summed before it) and P = exp2(S sl2 - max) in place (one FFMA an element: the maximum
         * is taken over S, sl2 > 0), its row sums added to sum. The maxima and sums go through
         * four partials a row, not one chain of 32 dependent instructions. */
        auto softmax_masked = [&](int k0, float corr[2], auto masked) {
            constexpr bool M = decltype(masked)::value;
            float part[2][4];
            CUTE_UNROLL
            for (int j = 0; j < 8; j++) part[j / 4][j % 4] = -INFINITY;
            CUTE_UNROLL
            for (int i = 0; i < size(accS); i++) {
                if constexpr (M) {
                    const int q = q0w + get<0>(cS(i)), key = k0 + get<1>(cS(i));
                    if (key >= T || (Causal && key > q)) accS(i) = -INFINITY;
                }
                float &m = part[(i >> 1) & 1][(i >> 2) & 3];
                m = fmaxf(m, accS(i));
            }
            float neg[2]; /* -max, the FFMA's addend; 0 on a row that has seen no key (P = 0 there) */
            CUTE_UNROLL
            for (int r = 0; r < 2; r++) {
                float t = fmaxf(fmaxf(part[r][0], part[r][1]), fmaxf(part[r][2], part[r][3]));
                t = fmaxf(mx[r], quad_max(t) * p.sl2);
                /* a row that has seen no key yet (max -inf) has nothing to rescale */
                corr[r] = t == -INFINITY ? 1.0f : fast_exp2(mx[r] - t);
                neg[r] = M && t == -INFINITY ? 0.0f : -t;
                mx[r] = t;
                sum[r] *= corr[r];
            }
            CUTE_UNROLL
            for (int j = 0; j < 8; j++) part[j / 4][j % 4] = 0.0f;
            CUTE_UNROLL
            for (int i = 0; i < size(accS); i++) {
                const int r = (i >> 1) & 1;
                const float pv = fast_exp2(fmaf(accS(i), p.sl2, neg[r]));
                accS(i) = pv;
                part[r][(i >> 2) & 3] += pv;
            }
            CUTE_UNROLL
            for (int r = 0; r < 2; r++) sum[r] += (part[r][0] + part[r][1]) + (part[r][2] + part[r][3]);
        };
        /* the mask's compares only on the tiles that need them (see tile_needs_mask): the last
         * one, which holds the diagonal or keys past T */
        auto softmax_tile = [&](int k0, float corr[2]) {
            if (k0 + kFwdTile > T || (Causal && k0 + kFwdTile - 1 > q0w)) softmax_masked(k0, corr, cute::true_type{});
            else softmax_masked(k0, corr, cute::false_type{});
        };

        wait_barrier(sm.own_full, (uint32_t)k & 1u);
        {
            Tensor gQ = ts.partition_A(sQ);
            CUTE_UNROLL
            for (int i = 0; i < size(rQ); i++) rQ(i) = gQ(i);
        }
        arrive_barrier(sm.own_empty); /* Q in registers: the next unit's may come */
        /* Every tile of the block is every consumer's: with tiles of 128 keys and blocks of 128
         * queries, a causal block's last tile holds its diagonal for both warpgroups. The loop is
         * software-pipelined within the warpgroup: tile kt's S = Q K^T and the previous tile's
         * O += P V are in flight together, and kt's softmax runs while P V computes. */
        float corr[2];
        wait_barrier(sm.full[stage_of(jb)], round_parity(jb));
        mma_rs<true>(mma_s, rQ, dKs(_, _, _, stage_of(jb)), accS);
        warpgroup_wait<0>();
        warpgroup_fence_operand(accS);
        softmax_tile(0, corr);
        acc_to_a<E>(rP, accS);
        for (int kt = 1; kt < nkt; kt++) {
            const int s = stage_of(jb + kt), sp = stage_of(jb + kt - 1);
            wait_barrier(sm.full[s], round_parity(jb + kt));
            mma_rs<true>(mma_s, rQ, dKs(_, _, _, s), accS);
            mma_rs<false>(mma_o, rP, dVt(_, _, _, sp), accO);
            warpgroup_wait<1>(); /* S done, P V in flight */
            warpgroup_fence_operand(accS);
            softmax_tile(kt * kFwdTile, corr);
            warpgroup_wait<0>();
            warpgroup_fence_operand(accO);
            arrive_barrier(sm.empty[sp]);
            CUTE_UNROLL
            for (int i = 0; i < size(accO); i++) accO(i) *= corr[(i >> 1) & 1];
            acc_to_a<E>(rP, accS);
        }
        mma_rs<false>(mma_o, rP, dVt(_, _, _, stage_of(jb + nkt - 1)), accO);
        warpgroup_wait<0>();
        warpgroup_fence_operand(accO);
        arrive_barrier(sm.empty[stage_of(jb + nkt - 1)]);

        /* O / sum into out's columns of head h; lse = max + log2(sum) by the quad's first thread */
        float inv[2];
        CUTE_UNROLL
        for (int r = 0; r < 2; r++) {
            sum[r] = quad_sum(sum[r]);
            inv[r] = sum[r] > 0.0f ? 1.0f / sum[r] : 0.0f;
        }
        E *o = p.out + (size_t)b * T * p.C + h * kD;
        Tensor cO = to.partition_C(make_identity_tensor(HalfShape{}));
        CUTE_UNROLL
        for (int i = 0; i < size(accO); i += 2) {
            const int r = (i >> 1) & 1, q = q0w + get<0>(cO(i)), c = get<1>(cO(i));
            if (q < T)
                *reinterpret_cast<uint32_t *>(o + (size_t)q * p.C + c) =
                    pack2<E>(accO(i) * inv[r], accO(i + 1) * inv[r]);
        }
        if (tid % 4 == 0) {
            CUTE_UNROLL
            for (int r = 0; r < 2; r++) {
                const int q = q0w + get<0>(cS(2 * r));
                if (q < T) p.lse[((size_t)b * p.H + h) * T + q] = mx[r] + __log2f(sum[r]);
            }
        }
        jb += nkt;
    }
}

/* ---- launch ------------------------------------------------------------------------------ */

template <typename E>
static typename Types<E>::GRows rows_of(const void *base, int T, int H, int B, int64_t ld)
{
    return make_tensor(make_gmem_ptr(static_cast<E const *>(base)),
                       make_layout(make_shape(T, Int<kD>{}, H, B), make_stride(ld, _1{}, (int64_t)kD, (int64_t)T * ld)));
}

template <typename E>
static typename Types<E>::TmaOwn tma_own(const void *base, int T, int H, int B, int64_t ld)
{
    return make_tma_copy(SM90_TMA_LOAD{}, rows_of<E>(base, T, H, B, ld), typename Types<E>::SmemOwn{}, OwnShape{}, _1{});
}

template <typename E, int Tile = kTile>
static typename Types<E, Tile>::TmaTile tma_tile(const void *base, int T, int H, int B, int64_t ld)
{
    return make_tma_copy(SM90_TMA_LOAD{}, rows_of<E>(base, T, H, B, ld), take<0, 2>(typename Types<E, Tile>::SmemTiles{}),
                         typename Types<E, Tile>::TileRows{}, _1{});
}

static Types<cutlass::bfloat16_t>::TmaLine tma_line(const float *base, int n)
{
    return make_tma_copy(SM90_TMA_LOAD{}, make_tensor(make_gmem_ptr(base), make_layout(make_shape(n), make_stride(_1{}))),
                         Layout<Shape<Int<kLineBox>>>{}, Shape<Int<kLineBox>>{}, _1{});
}

/* Every launch allows the kernel its dynamic shared memory, on whichever device is
 * current (an attribute set on the host, no work on the GPU). */
template <typename K> static cudaError_t allow_smem(K kernel, size_t bytes)
{
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

/* the current device's SM count, asked once per device (the order's rule for full attention) */
static int sm_count(void)
{
    static int known[64];
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 1;
    if (dev >= 0 && dev < 64 && known[dev]) return known[dev];
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) return 1;
    if (dev >= 0 && dev < 64) known[dev] = n;
    return n;
}

/* a persistent kernel's blocks: one an SM, or one a unit where there are fewer units */
static unsigned persistent_blocks(dim3 units)
{
    const long long n = (long long)units.x * units.y * units.z, sms = sm_count();
    return (unsigned)(n < sms ? n : sms);
}

/* the two-kernel scheme, or (accumulate) the one kernel and dQ's conversion */
template <typename E, bool Causal>
static cudaError_t backward_typed(void *dqkv, const void *dout, const void *qkv, const float *lse, const float *delta,
                                  float *dq_accum, int *dq_sem, int B, int T, int C, int H, int accumulate,
                                  cudaStream_t s)
{
    const int64_t ld = 3 * (int64_t)C;
    const E *q = static_cast<const E *>(qkv), *k = q + C, *v = q + 2 * C;
    Params<E> p{tma_own<E>(k, T, H, B, ld), tma_own<E>(v, T, H, B, ld), tma_tile<E>(q, T, H, B, ld),
                tma_tile<E>(dout, T, H, B, C), tma_line(lse, B * H * T), tma_line(delta, B * H * T),
                lse, delta, static_cast<E *>(dqkv), T, H, C, B, 1.4426950408889634f / sqrtf((float)kD),
                1.0f / sqrtf((float)kD), nullptr, nullptr, dq_order{}};
    const size_t smem = smem_bytes<E>();
    const dim3 grid((T + kBlock - 1) / kBlock, H, B);
    cudaError_t e;
    if (accumulate) {
        p.dq_accum = dq_accum;
        p.dq_sem = dq_sem;
        p.order = dq_order_make(T, Causal, sm_count());
        const size_t sems = (size_t)B * H * p.order.nqt, groups = (size_t)B * H * T * (kD / 8);
        if ((e = cudaMemsetAsync(dq_sem, 0, sems * sizeof(int), s)) != cudaSuccess) return e;
        if ((e = allow_smem(fa90_backward_fused<E, Causal>, dq_smem_bytes<E>())) != cudaSuccess) return e;
        fa90_backward_fused<E, Causal><<<grid, kThreads, dq_smem_bytes<E>(), s>>>(p);
        fa90_dq_convert<E><<<(unsigned)((groups + 255) / 256), 256, 0, s>>>(static_cast<E *>(dqkv), dq_accum, T, H, C,
                                                                          groups, p.scale);
        return cudaGetLastError();
    }
    e = allow_smem(fa90_backward_dkdv<E, Causal>, smem);
    if (e != cudaSuccess) return e;
    fa90_backward_dkdv<E, Causal><<<persistent_blocks(grid), kThreads, smem, s>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    /* dQ: the same parameters with the roles of the rows swapped */
    p.own0 = tma_own<E>(q, T, H, B, ld);
    p.own1 = tma_own<E>(dout, T, H, B, C);
    p.tile0 = tma_tile<E>(k, T, H, B, ld);
    p.tile1 = tma_tile<E>(v, T, H, B, ld);
    if ((e = allow_smem(fa90_backward_dq<E, Causal>, smem)) != cudaSuccess) return e;
    return launch_maybe_dependent(true, fa90_backward_dq<E, Causal>, dim3(persistent_blocks(grid)), dim3(kThreads),
                                  smem, s, p);
}


template <typename E, bool Causal>
static cudaError_t forward_typed(void *out, float *lse, const void *qkv, int B, int T, int C, int H, cudaStream_t s)
{
    const int64_t ld = 3 * (int64_t)C;
    const E *q = static_cast<const E *>(qkv), *k = q + C, *v = q + 2 * C;
    FwdParams<E> p{tma_own<E>(q, T, H, B, ld), tma_tile<E, kFwdTile>(k, T, H, B, ld), tma_tile<E, kFwdTile>(v, T, H, B, ld),
                   static_cast<E *>(out), lse, T, H, C, B, 1.4426950408889634f / sqrtf((float)kD)};
    const size_t smem = fwd_smem_bytes<E>();
    cudaError_t e = allow_smem(fa90_forward<E, Causal>, smem);
    if (e != cudaSuccess) return e;
    fa90_forward<E, Causal><<<persistent_blocks(dim3((T + kBlock - 1) / kBlock, H, B)), kThreads, smem, s>>>(p);
    return cudaGetLastError();
}

} /* namespace fa_sm90 */

/* the rule both directions share: bf16 / fp16, D = 64, 16-byte aligned buffers (TMA's and
 * the 4-byte stores'), the grid's limits */
static int fa_sm90_shape_takes(int dtype, int head_dim, uintptr_t aligned, int B, int T, int C, int H)
{
    return (dtype == DT_BF16 || dtype == DT_F16) && head_dim == fa_sm90::kD && C == H * head_dim && aligned % 16 == 0 &&
           T >= 1 && B >= 1 && B <= 65535 && H <= 65535 && (long long)B * H * T <= 0x7fffffffLL;
}

int fa_sm90_backward_takes(int dtype, int head_dim, const void *dqkv, const void *dout, const void *qkv,
                           const float *lse, const float *delta, int B, int T, int C, int H)
{
    const uintptr_t aligned = (uintptr_t)dqkv | (uintptr_t)dout | (uintptr_t)qkv | (uintptr_t)lse | (uintptr_t)delta;
    return fa_sm90_shape_takes(dtype, head_dim, aligned, B, T, C, H);
}

int fa_sm90_forward_takes(int dtype, int head_dim, const void *out, const float *lse, const void *qkv, int B, int T,
                          int C, int H)
{
    return fa_sm90_shape_takes(dtype, head_dim, (uintptr_t)out | (uintptr_t)lse | (uintptr_t)qkv, B, T, C, H);
}

cudaError_t fa_sm90_backward(void *dqkv, const void *dout, const void *qkv, const float *lse, const float *delta,
                             float *dq_accum, int *dq_sem, int B, int T, int C, int H, int causal, int accumulate,
                             int dtype, cudaStream_t s)
{
    using namespace fa_sm90;
#define FA90_BACKWARD(E, CAUSAL) \
    backward_typed<E, CAUSAL>(dqkv, dout, qkv, lse, delta, dq_accum, dq_sem, B, T, C, H, accumulate, s)
    if (dtype == DT_BF16)
        return causal ? FA90_BACKWARD(cutlass::bfloat16_t, true) : FA90_BACKWARD(cutlass::bfloat16_t, false);
    return causal ? FA90_BACKWARD(cutlass::half_t, true) : FA90_BACKWARD(cutlass::half_t, false);
#undef FA90_BACKWARD
}

cudaError_t fa_sm90_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int H, int causal, int dtype,
                            cudaStream_t s)
{
    using namespace fa_sm90;
    if (dtype == DT_BF16)
        return causal ? forward_typed<cutlass::bfloat16_t, true>(out, lse, qkv, B, T, C, H, s)
                      : forward_typed<cutlass::bfloat16_t, false>(out, lse, qkv, B, T, C, H, s);
    return causal ? forward_typed<cutlass::half_t, true>(out, lse, qkv, B, T, C, H, s)
                  : forward_typed<cutlass::half_t, false>(out, lse, qkv, B, T, C, H, s);
}
