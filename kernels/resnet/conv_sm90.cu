/* conv_sm90.cu — the ResNet's convolutions as implicit GEMMs on Hopper (sm_90a; the rule
 * and the interface: conv_sm90.h). CUTLASS 3's convolution kernels, built from its
 * collective builders: a producer warp issues TMA loads in im2col mode (each K-block of
 * the GEMM is C-channels of one filter tap over a tile of output pixels, gathered from
 * the NHWC image with the padding read as zeros) into a pipeline of shared-memory
 * stages; a consumer warpgroup runs wgmma on them; the epilogue stores the tile through
 * TMA. The GEMM views:
 *   forward:  M = N P Q output pixels, N = K output channels, K = R S C (tap-major, as
 *             im2col's columns and the weight's [K x R*S*C] rows);
 *   dgrad:    M = N H W input pixels, N = C input channels, K = K R S (the filter read
 *             MN-major, dy gathered over the flipped window).
 * Accumulation in fp32; no C operand is read (beta = 0, ElementC = void), so the output
 * is written once. The tile's N is 64 for 64 output channels (ResNet-50's first stage)
 * and 128 above; M is 128. The sums inside a tile run in a fixed order and every output
 * element is written by one block: the same bits on every run.
 *
 * TMA descriptors are built on the host at each call (cuTensorMapEncodeIm2col through the
 * driver entry point CUTLASS fetches): a few microseconds against a convolution's tens to
 * hundreds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp>
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/device/conv_universal_adapter.hpp>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/numeric_types.h>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/kernel_types.h"
#include "kernels/resnet/bn_stats_epilogue_sm90.cuh"
#include "kernels/resnet/conv_sm90.h"
#include "kernels/resnet/cutlass_sm90_launch.cuh"
#include "kernels/env_switch.h"

namespace conv_sm90 {
using namespace cute;
using namespace cutlass_sm90; /* sm_count, hardware, device_is_sm90, aligned16, launch */

using Element = cutlass::bfloat16_t;
constexpr int kAlign = 8; /* elements of 16 bytes: TMA's alignment */

constexpr int kTileM = 128;

/* Stats: the epilogue also leaves batch norm's partial sums of the output
 * (bn_stats_epilogue_sm90.cuh), the forward only */
template <cutlass::conv::Operator Op, int TileN, bool Stats = false> struct Conv2d {
    static constexpr bool kStats = Stats;
    using Tile = Shape<Int<kTileM>, Int<TileN>, Shape<_64>>;
    using Cluster = Shape<_1, _1, _1>;
    using Fusion = cute::conditional_t<Stats, bn_stats_epilogue::Sums<Tile>,
                                       cutlass::epilogue::fusion::LinearCombination<Element, float, void, float>>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::TensorNHWC, kAlign,
        Element, cutlass::layout::TensorNHWC, kAlign, cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Op, Element, cutlass::layout::TensorNHWC, kAlign, Element,
        cutlass::layout::TensorNHWC, kAlign, float, Tile, Cluster,
        cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
    using Problem = cutlass::conv::ConvProblemShape<Op, 2>;
    using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>;
    using Device = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
};

/* The weight's gradient: M = K output channels, N = R S C (the filter's KRSC columns), the
 * reduction over N P Q output pixels; dy read by tiled TMA, x gathered by TMA's im2col mode;
 * fp32 out (the partial sums a split adds). No shared memory for the epilogue: each thread
 * stores its accumulators (a tile of output is small against the reduction). */
template <int TileM> struct Wgrad2d {
    using Tile = Shape<Int<TileM>, Shape<_128>, Shape<_64>>;
    using Cluster = Shape<_1, _1, _1>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, float, cutlass::layout::TensorKCSR, 4, float,
        cutlass::layout::TensorKCSR, 4, cutlass::epilogue::NoSmemWarpSpecialized>::CollectiveOp;
    using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kWgrad, Element,
        cutlass::layout::TensorNHWC, kAlign, Element, cutlass::layout::TensorNHWC, kAlign, float, Tile, Cluster,
        cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
    using Problem = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kWgrad, 2>;
    using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>;
    using Device = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
};

/* the geometry as CUTLASS's problem: activation [N, H, W, C], filter [K, R, S, C] */
template <cutlass::conv::Operator Op> static cutlass::conv::ConvProblemShape<Op, 2> problem(const struct conv_shape *s, int K)
{
    return cutlass::conv::ConvProblemShape<Op, 2>(cutlass::conv::Mode::kCrossCorrelation, {s->N, s->H, s->W, s->C},
                                                  {K, s->R, s->S, s->C}, {s->pad, s->pad}, {s->pad, s->pad},
                                                  {s->stride, s->stride}, {1, 1}, 1);
}

/* The kernel's arguments for out = op(in, w): A = in (x or dy), B = w, D = out, packed
 * NHWC strides (for the forward and dgrad CUTLASS takes D's as the problem's C stride,
 * innermost first); the epilogue's own (thread): out = the accumulators, or (Stats) the
 * batch norm sums' tree's. */
template <class Conv>
static typename Conv::Device::Arguments arguments(const typename Conv::Problem &p, void *out, const void *in,
                                                  const void *w, const float *shift = nullptr, float *sum = nullptr,
                                                  float *sumsq = nullptr)
{
    using Kernel = typename Conv::Kernel;
    typename Kernel::EpilogueArguments epi{};
    if constexpr (Conv::kStats) {
        epi.thread = bn_stats_epilogue::arguments<typename Conv::Tile>(shift, sum, sumsq);
    } else {
        epi.thread.alpha = 1.0f;
        epi.thread.beta = 0.0f;
    }
    epi.ptr_C = nullptr;
    epi.ptr_D = static_cast<Element *>(out);
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideD{})>{}, [&](auto i) {
        cute::get<0, i>(epi.dD) = p.stride_C[Conv::Problem::RankT - 2 - i];
        cute::get<0, i>(epi.dC) = p.stride_C[Conv::Problem::RankT - 2 - i];
    });
    const cutlass::KernelHardwareInfo hw = hardware();
    return typename Conv::Device::Arguments{
        p, typename Kernel::MainloopArguments{static_cast<const Element *>(in), static_cast<const Element *>(w)}, epi, hw};
}

template <class Conv> static int takes(const typename Conv::Problem &p, void *out, const void *in, const void *w)
{
    return Conv::Device::can_implement(arguments<Conv>(p, out, in, w)) == cutlass::Status::kSuccess;
}

template <class Conv>
static cudaError_t run(const typename Conv::Problem &p, void *out, const void *in, const void *w, cudaStream_t st,
                       const float *shift = nullptr, float *sum = nullptr, float *sumsq = nullptr)
{
    auto args = arguments<Conv>(p, out, in, w, shift, sum, sumsq);
    return launch<typename Conv::Device>(args, st);
}

template <cutlass::conv::Operator Op> using Narrow = Conv2d<Op, 64>;
template <cutlass::conv::Operator Op> using Wide = Conv2d<Op, 128>;
using NarrowStats = Conv2d<cutlass::conv::Operator::kFprop, 64, true>;
using WideStats = Conv2d<cutlass::conv::Operator::kFprop, 128, true>;
/* the tile's N for a GEMM's N (the output channels of a forward, dgrad's input channels) */
static int tile_n(int n) { return n <= 64 ? 64 : 128; }

/* the GEMM's N: the forward's output channels, dgrad's input channels */
static int gemm_n(enum conv_sm90_op op, const struct conv_shape *s, int K) { return op == CONV_SM90_FORWARD ? K : s->C; }

template <cutlass::conv::Operator Op>
static int takes_op(const struct conv_shape *s, int K, int n, void *out, const void *in, const void *w)
{
    const auto p = problem<Op>(s, K);
    return tile_n(n) == 64 ? takes<Narrow<Op>>(p, out, in, w) : takes<Wide<Op>>(p, out, in, w);
}

template <cutlass::conv::Operator Op>
static cudaError_t run_op(const struct conv_shape *s, int K, int n, void *out, const void *in, const void *w,
                          cudaStream_t st)
{
    const auto p = problem<Op>(s, K);
    return tile_n(n) == 64 ? run<Narrow<Op>>(p, out, in, w, st) : run<Wide<Op>>(p, out, in, w, st);
}

/* dw [K x R S C] fp32 = the weight's gradient of n images: A = dy, B = x */
template <class W>
static typename W::Device::Arguments wgrad_arguments(const typename W::Problem &p, float *dw, const void *dy,
                                                     const void *x)
{
    using Kernel = typename W::Kernel;
    typename Kernel::EpilogueArguments epi{};
    epi.thread.alpha = 1.0f;
    epi.thread.beta = 0.0f;
    epi.ptr_C = nullptr;
    epi.ptr_D = dw;
    epi.dC = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, p.shape_C, p.stride_C, W::Problem::ConvOp);
    epi.dD = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, p.shape_C, p.stride_C, W::Problem::ConvOp);
    const cutlass::KernelHardwareInfo hw = hardware();
    return typename W::Device::Arguments{
        p, typename Kernel::MainloopArguments{static_cast<const Element *>(dy), static_cast<const Element *>(x)}, epi,
        hw};
}

template <class W>
static cudaError_t wgrad_run(const typename W::Problem &p, float *dw, const void *dy, const void *x, cudaStream_t st)
{
    auto args = wgrad_arguments<W>(p, dw, dy, x);
    return launch<typename W::Device>(args, st);
}

template <class W> static int wgrad_takes(const struct conv_shape *s, int K, const void *dy, const void *x)
{
    const auto p = problem<cutlass::conv::Operator::kWgrad>(s, K);
    return W::Device::can_implement(wgrad_arguments<W>(p, nullptr, dy, x)) == cutlass::Status::kSuccess;
}

/* How many slices of the batch the weight's gradient is split into: enough blocks (output
 * tiles x slices) for two of them an SM, at least 4 images a slice, at most kMaxSplits. */
constexpr int kMaxSplits = 32;
static int wgrad_splits(const struct conv_shape *s, int K)
{
    const int tile_m = K <= 64 ? 64 : 128;
    const long long tiles = (long long)((K + tile_m - 1) / tile_m) * ((s->R * s->S * s->C + 127) / 128);
    long long want = (2LL * sm_count() + tiles - 1) / tiles;
    if (want > s->N / 4) want = s->N / 4;
    if (want > kMaxSplits) want = kMaxSplits;
    return want < 1 ? 1 : (int)want;
}

/* dw[i] = the slices' sum in slice order, in fp32 or bf16 */
template <typename O> __global__ void sum_slices(O *dw, const float *partial, int splits, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int k = 0; k < splits; k++) acc += partial[(size_t)k * n + i];
        if constexpr (sizeof(O) == 4) dw[i] = acc;
        else dw[i] = __float2bfloat16(acc);
    }
}

/* DPSCALE_CONV: "im2col" turns these kernels off; unset or "auto" leaves the rule */
static int enabled(void)
{
    static int im2col = -1;
    return !env_switch(&im2col, "DPSCALE_CONV", "im2col");
}

/* DPSCALE_CONV_WGRAD=implicit asks for the implicit weight gradient; by default the weight's
 * gradient stays on im2col + cuBLASLt, which measured 2.5 x faster on an H200 at ResNet-50's
 * shapes (2.14 against 5.40 ms for the 16 windowed convolutions: one non-persistent kernel
 * a slice, each on a few tiles) */
static int wgrad_enabled(void)
{
    static int cached = -1;
    return env_switch(&cached, "DPSCALE_CONV_WGRAD", "implicit");
}

} // namespace conv_sm90

extern "C" int cuda_conv_sm90_takes(enum conv_sm90_op op, const struct conv_shape *s, int K, int dtype, const void *in,
                                    const void *w, const void *out)
{
    using namespace conv_sm90;
    if (dtype != DT_BF16 || s->C % kAlign != 0 || K % kAlign != 0 || s->N <= 0 || K <= 0) return 0;
    if (!aligned16(in) || !aligned16(w) || !aligned16(out)) return 0;
    if (op == CONV_SM90_DGRAD && s->stride != 1) return 0;
    if (s->R == 1 && s->S == 1) return 0; /* a 1x1's im2col is a strided copy; TMA's im2col mode lost to it */
    if (!enabled() || !device_is_sm90()) return 0;
    void *o = const_cast<void *>(out);
    const int n = gemm_n(op, s, K);
    return op == CONV_SM90_FORWARD ? takes_op<cutlass::conv::Operator::kFprop>(s, K, n, o, in, w)
                                   : takes_op<cutlass::conv::Operator::kDgrad>(s, K, n, o, in, w);
}

extern "C" cudaError_t cuda_conv_sm90(enum conv_sm90_op op, void *out, const void *in, const void *w,
                                      const struct conv_shape *s, int K, int dtype, cudaStream_t st)
{
    using namespace conv_sm90;
    if (!cuda_conv_sm90_takes(op, s, K, dtype, in, w, out)) return cudaErrorNotSupported;
    const int n = gemm_n(op, s, K);
    return op == CONV_SM90_FORWARD ? run_op<cutlass::conv::Operator::kFprop>(s, K, n, out, in, w, st)
                                   : run_op<cutlass::conv::Operator::kDgrad>(s, K, n, out, in, w, st);
}

extern "C" size_t cuda_conv_sm90_wgrad_workspace_floats(const struct conv_shape *s, int K)
{
    using namespace conv_sm90;
    const int splits = wgrad_splits(s, K);
    return (size_t)splits * K * s->R * s->S * s->C;
}

extern "C" int cuda_conv_sm90_wgrad_takes(const struct conv_shape *s, int K, int dtype, int grad_dtype,
                                          const void *dy, const void *x, const void *dw)
{
    using namespace conv_sm90;
    if (dtype != DT_BF16 || (grad_dtype != DT_F32 && grad_dtype != DT_BF16)) return 0;
    if (s->C % kAlign != 0 || K % kAlign != 0 || s->N <= 0 || K <= 0 || (s->R == 1 && s->S == 1)) return 0;
    if (!aligned16(dy) || !aligned16(x) || !aligned16(dw)) return 0;
    if (!enabled() || !wgrad_enabled() || !device_is_sm90()) return 0;
    return K <= 64 ? wgrad_takes<Wgrad2d<64>>(s, K, dy, x) : wgrad_takes<Wgrad2d<128>>(s, K, dy, x);
}

extern "C" cudaError_t cuda_conv_sm90_wgrad(void *dw, int grad_dtype, const void *dy, const void *x,
                                            const struct conv_shape *s, int K, int dtype, float *workspace,
                                            cudaStream_t st)
{
    using namespace conv_sm90;
    if (!cuda_conv_sm90_wgrad_takes(s, K, dtype, grad_dtype, dy, x, dw)) return cudaErrorNotSupported;
    const int splits = wgrad_splits(s, K);
    const size_t n = (size_t)K * s->R * s->S * s->C;
    const int direct = splits == 1 && grad_dtype == DT_F32; /* no sum to take: straight into the gradient */
    float *out = direct ? static_cast<float *>(dw) : workspace;
    const int per = s->N / splits, extra = s->N % splits; /* the first `extra` slices take one image more */
    const size_t in_image = (size_t)s->H * s->W * s->C, out_image = (size_t)s->P * s->Q * K;
    int n0 = 0;
    for (int k = 0; k < splits; k++) {
        struct conv_shape slice = *s;
        slice.N = per + (k < extra ? 1 : 0);
        const auto p = problem<cutlass::conv::Operator::kWgrad>(&slice, K);
        const char *dyk = static_cast<const char *>(dy) + (size_t)n0 * out_image * sizeof(Element);
        const char *xk = static_cast<const char *>(x) + (size_t)n0 * in_image * sizeof(Element);
        const cudaError_t e = K <= 64 ? wgrad_run<Wgrad2d<64>>(p, out + (size_t)k * n, dyk, xk, st)
                                      : wgrad_run<Wgrad2d<128>>(p, out + (size_t)k * n, dyk, xk, st);
        if (e != cudaSuccess) return e;
        n0 += slice.N;
    }
    if (direct) return cudaSuccess;
    const int threads = 256, blocks = (int)((n + threads - 1) / threads < 4096 ? (n + threads - 1) / threads : 4096);
    if (grad_dtype == DT_F32) sum_slices<float><<<blocks, threads, 0, st>>>(static_cast<float *>(dw), workspace, splits, n);
    else sum_slices<__nv_bfloat16><<<blocks, threads, 0, st>>>(static_cast<__nv_bfloat16 *>(dw), workspace, splits, n);
    return cudaGetLastError();
}

extern "C" struct bn_partials_shape cuda_conv_sm90_stats_shape(const struct conv_shape *s, int K)
{
    using namespace conv_sm90;
    const long long M = (long long)s->N * s->P * s->Q;
    const int tn = bn_stats_epilogue::tile_n(K);
    return (struct bn_partials_shape){(int)((M + kTileM - 1) / kTileM), (K + tn - 1) / tn * tn};
}

extern "C" cudaError_t cuda_conv_sm90_stats(void *out, const void *in, const void *w, const struct conv_shape *s, int K,
                                            int dtype, const float *shift, float *sum, float *sumsq, cudaStream_t st)
{
    using namespace conv_sm90;
    if (!cuda_conv_sm90_takes(CONV_SM90_FORWARD, s, K, dtype, in, w, out)) return cudaErrorNotSupported;
    const auto p = problem<cutlass::conv::Operator::kFprop>(s, K);
    return bn_stats_epilogue::tile_n(K) == 64 ? run<NarrowStats>(p, out, in, w, st, shift, sum, sumsq)
                                              : run<WideStats>(p, out, in, w, st, shift, sum, sumsq);
}
