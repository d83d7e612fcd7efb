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
 * the problem's M are skipped (VisitCheckOOB). The sums run in fp32 in CUTLASS's fixed
 * order (a thread's rows, warp shuffles, then the warps in shared memory), one tile a
 * block, no atomics: the same bits every run; the tiles are added in double by the finish.
 *
 * The tree: v = bf16(acc); S1 = RowReduction<d>(v, shift) passes v on; S2 =
 * RowReduction<d^2>(S1, shift) passes v on; D = v. Both reductions write CUTLASS's
 * non-final form: a compact [ceil(M / TileM)][round(N, TileN)] fp32 tensor each. */
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
 * the 128-wide one keeps its epilogue's state on the stack, results/h200x1-step-census) */
static inline int tile_n(int n)
{
    static int narrow = -1;
    return n <= 64 || env_switch(&narrow, "DPSCALE_BN_STATS_TILE", "narrow") ? 64 : 128;
}

template <class CtaTile, template <class> class Term>
using TileSum = Sm90RowReduction<Term, cutlass::plus, cutlass::plus, 0, CtaTile, float, float, kRound, Stride<_0, _1, _0>,
                                 4, false /* EnableNullptr */, false /* FinalReduction: the tiles' partials */,
                                 true /* VisitCheckOOB */, cute::seq<0, 1, 2>>;

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
