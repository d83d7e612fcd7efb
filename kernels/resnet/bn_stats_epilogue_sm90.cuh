/* bn_stats_epilogue_sm90.cuh — a CUTLASS 3 epilogue (an epilogue visitor tree, EVT) for
 * Hopper's GEMMs and convolutions whose output a training batch norm reads next: it stores
 * the output tile in bf16, as the plain epilogue does, and leaves the batch norm's partial
 * sums of that tile, so that the batch norm's statistics need no pass over the output
 * (kernels/resnet/bn_partials.h has the contract, batchnorm.cu the finish).
 *
 * For each output tile of 128 rows and each of its columns c (a channel):
 *   sum[tile][c]   = sum over the tile's rows of d,   d = v - shift[c],
 *   sumsq[tile][c] = sum over the tile's rows of d^2,
 * v being the output as bf16 stores it (the accumulator rounded to bf16 and back: the
 * statistics of the stored tensor, as the batch norm's own pass takes them), shift a
 * per-channel value near the mean (the running mean), so that the variance
 * sum(d^2)/n - (sum(d)/n)^2 does not cancel the way raw sums of squares would. Rows past
 * the problem's M are skipped (VisitCheckOOB). The sums run in fp32 in a fixed order (a
 * thread's rows, an xor butterfly over a warp's lanes, then the warps in shared memory), one
 * tile a block, no atomics: the same bits every run; the tiles are added in double by the finish.
 *
 * The tree: v = bf16(acc); S1 = TileSum<d>(v, shift) passes v on; S2 =
 * TileSum<d^2>(S1, shift) passes v on; D = v. Both reductions (CUTLASS's row reduction,
 * its reduce our own) write CUTLASS's non-final form: a compact
 * [ceil(M / TileM)][round(N, TileN)] fp32 tensor each. */
#ifndef DPSCALE_BN_STATS_EPILOGUE_SM90_CUH
#define DPSCALE_BN_STATS_EPILOGUE_SM90_CUH

#include <cute/tensor.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_compute_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_load_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_store_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/functional.h>
#include <cutlass/numeric_types.h>

#include "kernels/env_switch.h"

namespace bn_stats_epilogue {
using namespace cute;
using namespace cutlass::epilogue::fusion;

/* a row's term of the two sums: acc + d, acc + d^2, d = v - s (the reduction's RegReduceFn,
 * called with the running sum, the value and the shift) */
template <class T> struct dev_plus {
    CUTLASS_HOST_DEVICE T operator()(T const &acc, T const &v, T const &s) const { return acc + (v - s); }
};
template <class T> struct dev_sq_plus {
    CUTLASS_HOST_DEVICE T operator()(T const &acc, T const &v, T const &s) const
    {
        const T d = v - s;
        return acc + d * d;
    }
};

constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

/* The tile's N for an output of n channels, for the GEMM and the implicit GEMM alike: 64 up
 * to 64 channels, 128 above; DPSCALE_BN_STATS_TILE=narrow takes 64 at every width (an A/B:
 * with CUTLASS's own reduce the 128-wide one kept its epilogue's state on the stack,
 * results/h200x1-step-census; TileSum's below keeps it in registers) */
static inline int tile_n(int n)
{
    static int narrow = -1;
    return n <= 64 || env_switch(&narrow, "DPSCALE_BN_STATS_TILE", "narrow") ? 64 : 128;
}

template <class CtaTile, template <class> class Term>
using RowSums = Sm90RowReduction<Term, cutlass::plus, cutlass::plus, 0, CtaTile, float, float, kRound, Stride<_0, _1, _0>,
                                 4, false /* EnableNullptr */, false /* FinalReduction: the tiles' partials */,
                                 true /* VisitCheckOOB */, cute::seq<0, 1, 2>>;

/* v summed over the lanes of a warp that hold the same column, the lane_m coordinates
 * M / 2, M / 4, ..., 1 exchanged by xor (their lane indices, `lanes`' M mode being a
 * power-of-two bit map): a recursion the compiler unrolls whatever the fragment's size */
template <int M, class LaneLayout> CUTLASS_DEVICE float across_lanes(float v, LaneLayout const &lanes)
{
    static_assert(M > 0 && (M & (M - 1)) == 0, "the lanes that share a column: a power of two");
    if constexpr (M > 1) {
        constexpr int mask = decltype(lanes(Int<M / 2>{}, _0{}))::value;
        static_assert(mask > 0 && mask < 32 && (mask & (mask - 1)) == 0, "a lane coordinate in M: one bit of the lane");
        v += __shfl_xor_sync(0xffffffffu, v, mask);
        return across_lanes<M / 2>(v, lanes);
    } else {
        return v;
    }
}

/* CUTLASS's row reduction (the tiles' partial sums, non-final) with its reduce replaced.
 * At a 128-wide tile a thread holds more columns than its warp has lanes in M, and CUTLASS
 * 4.2 then takes a swap-and-shuffle loop that nvcc leaves rolled: the register fragment is
 * indexed at run time, so the whole fragment, and every row's term of the sums, lives in
 * local memory (a 896-928-byte stack frame; results/h200x1-step-census). Here the warp's
 * lanes are summed by an unrolled xor butterfly (across_lanes), then, as CUTLASS does, the
 * warps that share columns through shared memory in a fixed order and the tile's sums
 * written to its row of the partials. visit() and the arguments are CUTLASS's. */
template <class CtaTile, template <class> class Term> struct TileSum : RowSums<CtaTile, Term> {
    using Base = RowSums<CtaTile, Term>;
    using Base::Base;

    template <class ArgsTuple> struct Callbacks : Base::template ConsumerStoreCallbacks<ArgsTuple> {
        using Of = typename Base::template ConsumerStoreCallbacks<ArgsTuple>;
        CUTLASS_DEVICE Callbacks(Of &&of) : Of(cute::move(of)) {}

        template <class STensor, class SyncFn, class VTensor>
        CUTLASS_DEVICE void reduce(STensor &&smem_buffer, SyncFn const &sync_fn, int, int, bool is_last_iteration,
                                   VTensor)
        {
            if (!is_last_iteration) return;
            auto &[ref_src, tCrRow, tCcRow, gRow_l, cRow, gBuf_ml, sBuf_layout, lane_layout_MN, lane_mn, warp_layout_MN,
                   warp_mn, tile_coord_mnkl, residue_cRow, residue_tCcRow, epi_tile, tiled_copy, thread_idx] =
                this->args_tuple;
            constexpr bool ReferenceSrc = decltype(ref_src)::value;
            auto [m, n, k, l] = tile_coord_mnkl;
            if (!elem_less(cRow(_0{}, _0{}), residue_cRow)) return; /* a CTA wholly past the problem */
            Tensor row = filter(tCrRow);                                /* this thread's columns, each once */
            constexpr int LanesM = decltype(size<0>(lane_layout_MN))::value;
            CUTLASS_PRAGMA_UNROLL
            for (int i = 0; i < decltype(size(row))::value; i++) row(i) = across_lanes<LanesM>(row(i), lane_layout_MN);
            const bool writer = get<0>(lane_mn) == 0;
            if constexpr (decltype(size<0>(warp_layout_MN))::value <= 1) { /* one warp in M: the lanes' sums are the tile's */
                Tensor tCgBuf = sm90_partition_for_epilogue<ReferenceSrc>(gBuf_ml(_, _, m, l), epi_tile, tiled_copy,
                                                                          thread_idx);
                if (writer) copy_aligned(tCrRow, tCgBuf);
                sync_fn();
            } else { /* the warps in M through shared memory, then the tile's row of the partials */
                Tensor sBuf = make_tensor(make_smem_ptr<float>(raw_pointer_cast(smem_buffer.data())), sBuf_layout);
                static_assert(decltype(cosize(sBuf.layout()))::value * sizeof(float) <=
                                  decltype(cosize(smem_buffer.layout()))::value *
                                      sizeof(typename remove_cvref_t<STensor>::value_type),
                              "the warps' sums do not fit in the epilogue's shared memory: a larger epilogue tile");
                sync_fn();
                Tensor tCsBuf = sm90_partition_for_epilogue<ReferenceSrc>(sBuf(_, _, get<0>(warp_mn)), epi_tile,
                                                                          tiled_copy, thread_idx);
                if (writer) copy_aligned(tCrRow, tCsBuf);
                sync_fn();
                constexpr int Cols = decltype(size<1>(CtaTile{}))::value;
                constexpr int WarpsM = decltype(size<0>(warp_layout_MN))::value;
                for (int c = thread_idx; c < Cols; c += size(tiled_copy)) { /* column c: its warps' sums in order */
                    float t = 0.0f;
                    CUTLASS_PRAGMA_UNROLL
                    for (int w = 0; w < WarpsM; w++) t += sBuf(0, c, w);
                    gBuf_ml(0, c, m, l) = t;
                }
                sync_fn();
            }
        }
    };

    template <bool ReferenceSrc, class... Args>
    CUTLASS_DEVICE auto get_consumer_store_callbacks(ConsumerStoreArgs<Args...> const &args)
    {
        auto of = Base::template get_consumer_store_callbacks<ReferenceSrc>(args);
        return Callbacks<decltype(of.args_tuple)>(cute::move(of));
    }
};

template <class CtaTile> using Shift = Sm90RowBroadcast<0, CtaTile, float, float>;

/* v: the accumulator as bf16 stores it */
using Stored = Sm90EVT<Sm90Compute<cutlass::epilogue::thread::Identity, cutlass::bfloat16_t, float, kRound>, Sm90AccFetch>;

template <class CtaTile>
using Sums = Sm90EVT<TileSum<CtaTile, dev_sq_plus>, Sm90EVT<TileSum<CtaTile, dev_plus>, Stored, Shift<CtaTile>>,
                     Shift<CtaTile>>;

/* the tree's arguments: the shift [N] (fp32), the two partial tensors */
template <class CtaTile> typename Sums<CtaTile>::Arguments arguments(const float *shift, float *sum, float *sumsq)
{
    using S = Shift<CtaTile>;
    typename S::Arguments sh{shift, 0.0f, {}};
    return {
        {
            {{}, {}},                              /* Stored: the accumulator, then its rounding */
            sh,                                    /* the shift */
            {sum, 0.0f, {}},                       /* S1 */
        },
        sh,                                        /* the shift again, for S2 */
        {sumsq, 0.0f, {}},                         /* S2 */
    };
}
} // namespace bn_stats_epilogue

#endif
