/* gemm_bn_stats_sm90.cu — the ResNet's forward GEMMs that a training batch norm reads
 * next (a 1x1 convolution on its input, or any convolution on its im2col), on Hopper
 * (sm_90a): y [M x N] = A [M x K] W^T (W [N x K], rows ldw apart; A's rows lda apart), in
 * bf16 with fp32 accumulation, and the batch norm's partial sums of y from the epilogue
 * (bn_stats_epilogue_sm90.cuh; the contract: gemm_bn_stats_sm90.h).
 *
 * CUTLASS 3's GEMM from its collective builders: TMA loads into a pipeline of shared-memory
 * stages, two consumer warpgroups (the cooperative schedule) on a 128-row tile, a
 * persistent grid; the epilogue through shared memory and TMA. The tile's N is 64 for 64
 * output channels and 128 above (a 256-wide output is two column tiles). Every output
 * element and every partial sum is written by one block, in a fixed order: the same bits
 * every run. */
#include <stdint.h>

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/kernel_hardware_info.hpp>
#include <cutlass/numeric_types.h>

#include "kernels/kernel_types.h"
#include "kernels/resnet/bn_stats_epilogue_sm90.cuh"
#include "kernels/resnet/cutlass_sm90_launch.cuh"
#include "kernels/resnet/gemm_bn_stats_sm90.h"

namespace gemm_bn_stats {
using namespace cute;
using namespace cutlass_sm90; /* hardware, device_is_sm90, aligned16, launch */

using Element = cutlass::bfloat16_t;
constexpr int kAlign = 8; /* elements of 16 bytes: TMA's alignment */
constexpr int kTileM = 128;

template <int TileN> struct Gemm {
    using Tile = Shape<Int<kTileM>, Int<TileN>, _64>;
    using Cluster = Shape<_1, _1, _1>;
    using Fusion = bn_stats_epilogue::Sums<Tile>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::RowMajor, kAlign, Element,
        cutlass::layout::RowMajor, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor, kAlign, Element,
        cutlass::layout::ColumnMajor, kAlign, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                                        cutlass::gemm::PersistentScheduler>;
    using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <class G>
static typename G::Device::Arguments arguments(void *y, const void *A, int lda, const void *W, int ldw, int M, int N,
                                               int K, const float *shift, float *sum, float *sumsq)
{
    using Kernel = typename G::Kernel;
    typename Kernel::StrideA sa{};
    typename Kernel::StrideB sb{};
    typename Kernel::StrideD sd{};
    get<0>(sa) = lda;
    get<0>(sb) = ldw;
    get<0>(sd) = N;
    typename Kernel::EpilogueArguments epi{bn_stats_epilogue::arguments<typename G::Tile>(shift, sum, sumsq), nullptr, sd,
                                           static_cast<Element *>(y), sd};
    return typename G::Device::Arguments{cutlass::gemm::GemmUniversalMode::kGemm,
                                         {M, N, K, 1},
                                         {static_cast<const Element *>(A), sa, static_cast<const Element *>(W), sb},
                                         epi,
                                         hardware()};
}

template <class G> static int takes(void *y, const void *A, int lda, const void *W, int ldw, int M, int N, int K)
{
    auto args = arguments<G>(y, A, lda, W, ldw, M, N, K, nullptr, nullptr, nullptr);
    return G::Device::can_implement(args) == cutlass::Status::kSuccess;
}

template <class G>
static cudaError_t run(void *y, const void *A, int lda, const void *W, int ldw, int M, int N, int K, const float *shift,
                       float *sum, float *sumsq, cudaStream_t st)
{
    auto args = arguments<G>(y, A, lda, W, ldw, M, N, K, shift, sum, sumsq);
    return launch<typename G::Device>(args, st);
}

} // namespace gemm_bn_stats

extern "C" struct bn_partials_shape cuda_gemm_bn_stats_shape(int M, int N)
{
    using namespace gemm_bn_stats;
    const int tn = bn_stats_epilogue::tile_n(N);
    return (struct bn_partials_shape){(M + kTileM - 1) / kTileM, (N + tn - 1) / tn * tn};
}

extern "C" int cuda_gemm_bn_stats_takes(int M, int N, int K, int dtype, const void *A, int lda, const void *W, int ldw,
                                        const void *y)
{
    using namespace gemm_bn_stats;
    if (dtype != DT_BF16 || M <= 0 || N <= 0 || K <= 0 || N % kAlign != 0 || lda % kAlign != 0 || ldw % kAlign != 0)
        return 0;
    if (!aligned16(A) || !aligned16(W) || !aligned16(y) || !device_is_sm90()) return 0;
    void *o = const_cast<void *>(y);
    return bn_stats_epilogue::tile_n(N) == 64 ? takes<Gemm<64>>(o, A, lda, W, ldw, M, N, K)
                                              : takes<Gemm<128>>(o, A, lda, W, ldw, M, N, K);
}

extern "C" cudaError_t cuda_gemm_bn_stats(void *y, const void *A, int lda, const void *W, int ldw, int M, int N, int K,
                                          int dtype, const float *shift, float *sum, float *sumsq, cudaStream_t st)
{
    using namespace gemm_bn_stats;
    if (!cuda_gemm_bn_stats_takes(M, N, K, dtype, A, lda, W, ldw, y)) return cudaErrorNotSupported;
    return bn_stats_epilogue::tile_n(N) == 64 ? run<Gemm<64>>(y, A, lda, W, ldw, M, N, K, shift, sum, sumsq, st)
                                              : run<Gemm<128>>(y, A, lda, W, ldw, M, N, K, shift, sum, sumsq, st);
}
