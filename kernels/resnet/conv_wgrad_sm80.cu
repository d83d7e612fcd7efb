/* conv_wgrad_sm80.cu — the weight's gradient of the ResNet's windowed convolutions as a
 * CUTLASS 2 implicit GEMM with a parallel split of its reduction (the rule and the
 * interface: conv_wgrad_sm80.h), built for sm_80 and sm_90 (mma.sync runs on both).
 *
 * The GEMM: dw [K x R S C] = dy^T [K x N P Q] . x gathered [N P Q x R S C]. CUTLASS's
 * optimized wgrad iterators read dy as the A operand (K contiguous) and gather x's windows
 * as B (C contiguous, the padding read as zeros) into a multistage cp.async pipeline;
 * mma.sync m16n8k16 bf16 -> fp32. The N P Q reduction is cut into `splits` slices, CUTLASS's
 * parallel split-K: slice k takes the k-blocks k, k + splits, k + 2 splits ... of the
 * reduction (interleaved: the slices' lengths differ by one k-block at most) and writes
 * its fp32 partial to workspace + k K R S C; CUTLASS's ReduceSplitK then sums the slices per
 * element in slice order and writes fp32 or bf16. Every output element is written by one
 * thread of one block, in a fixed order: the same bits on every run. One split with an fp32
 * gradient goes straight into dw.
 *
 * Two tiles (the only instantiations), both 4 warps and a k-block of 32: 128 x 128 (warps of
 * 64 x 64, 5 stages, 80 KiB of shared memory; 255 registers on sm_90, two blocks an SM) for
 * K > 64, and 64 x 128 (warps of 32 x 64, 6 stages, 72 KiB; 159 registers, three blocks an
 * SM) for K <= 64, ResNet-50's first stage, where 128 rows would be half empty. Every R S C
 * of ResNet-50 past its first stage is a multiple of 128; the first's 576 is 4.5 tiles. (A
 * k-block of 64 spilled at 128 x 128 on sm_90: the wgrad iterators keep a window position
 * per access.)
 * The split count comes from a small cost model (wgrad_splits): the busiest SM's blocks
 * (tiles x splits over the SMs), slowed when it runs fewer at once than it holds (the
 * occupancy CUDA reports for the kernel), each block's fill and epilogue, and the partials'
 * traffic (written, read back, summed), the slices at least kMinSliceRows rows. On an H200
 * (132 SMs) at ResNet-50's batch of 256 it gives 79 slices for 64 x 576 x 802816 (395
 * blocks, 3 an SM), 29 for 128 x 1152 x 200704 (261), 7 for 256 x 2304 x 50176 (252) and 4
 * for 512 x 4608 x 12544 (576 blocks: one slice would leave 12 SMs two blocks and the rest
 * one). The count depends on the shape and the SM count alone: the same bits every run on
 * one kind of GPU. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cutlass/cutlass.h>
#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/device/implicit_gemm_convolution.h>
#include <cutlass/conv/kernel/default_conv2d_wgrad.h>
#include <cutlass/device_kernel.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>
#include <cutlass/numeric_types.h>
#include <cutlass/reduction/device/reduce_split_k.h>
#include <cutlass/reduction/kernel/reduce_split_k.h>
#include <cutlass/reduction/thread/reduction_operators.h>

#include "kernels/kernel_types.h"
#include "kernels/resnet/conv_wgrad_sm80.h"
#include "kernels/env_switch.h"

namespace conv_wgrad_sm80 {

using Element = cutlass::bfloat16_t;
using Layout = cutlass::layout::TensorNHWC;
constexpr int kAlign = 8;     /* elements of one 16-byte load: C and K multiples of it */
constexpr int kOutVector = 4; /* floats an epilogue or reduction thread stores at once */
constexpr int kMaxSplits = 256;
constexpr int kMinSliceRows = 2048; /* of the N P Q reduction, a slice at least (the pipeline's fill is amortised) */
constexpr int kMaxDevices = 64;

/* The partials' output: fp32, no scaling (D = the accumulator), C never read */
using PartialOp = cutlass::epilogue::thread::LinearCombination<float, kOutVector, float, float,
                                                               cutlass::epilogue::thread::ScaleType::Nothing>;

template <int TileM, int TileN, int TileK, int WarpM, int WarpN, int Stages> struct Wgrad {
    using Kernel = typename cutlass::conv::kernel::DefaultConv2dWgrad<
        Element, Layout, Element, Layout, float, Layout, float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
        cutlass::gemm::GemmShape<TileM, TileN, TileK>, cutlass::gemm::GemmShape<WarpM, WarpN, TileK>,
        cutlass::gemm::GemmShape<16, 8, 16>, PartialOp, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>,
        Stages, cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kOptimized,
        cutlass::conv::StrideSupport::kStrided, kAlign, kAlign>::Kernel;
    using Device = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
    static constexpr int kTileM = TileM, kTileN = TileN;
};
using Wide = Wgrad<128, 128, 32, 64, 64, 5>;
using Narrow = Wgrad<64, 128, 32, 32, 64, 6>;

/* dw = the slices' sum, in slice order, converted to O */
template <typename O> struct Reduce {
    using OutputOp = cutlass::epilogue::thread::LinearCombination<O, kOutVector, float, float,
                                                                  cutlass::epilogue::thread::ScaleType::Nothing>;
    using Kernel =
        cutlass::reduction::kernel::ReduceSplitK<cutlass::MatrixShape<4, 32 * kOutVector>, OutputOp,
                                                 cutlass::reduction::thread::ReduceAdd<float, float, kOutVector>>;
    using Device = cutlass::reduction::device::ReduceSplitK<Kernel>;
};

static int narrow(int K) { return K <= 64; }

/* the geometry as CUTLASS's problem: activation [N, H, W, C], filter [K, R, S, C], output [N, P, Q, K] */
static cutlass::conv::Conv2dProblemSize problem(const struct conv_shape *s, int K, int splits)
{
    return cutlass::conv::Conv2dProblemSize(s->N, s->H, s->W, s->C, K, s->R, s->S, s->P, s->Q, s->pad, s->pad,
                                            s->stride, s->stride, 1, 1, cutlass::conv::Mode::kCrossCorrelation, splits);
}

template <class W>
static typename W::Kernel::Arguments arguments(const cutlass::conv::Conv2dProblemSize &p, float *partials,
                                               const void *dy, const void *x)
{
    const Layout dy_layout = Layout::packed({p.N, p.P, p.Q, p.K}), x_layout = Layout::packed({p.N, p.H, p.W, p.C});
    const Layout dw_layout = Layout::packed({p.K, p.R, p.S, p.C});
    return typename W::Kernel::Arguments(
        p, {static_cast<Element *>(const_cast<void *>(dy)), dy_layout},
        {static_cast<Element *>(const_cast<void *>(x)), x_layout}, {nullptr, dw_layout}, {partials, dw_layout},
        typename PartialOp::Params(), cutlass::conv::SplitKMode::kParallel);
}

static int current_device(void)
{
    int dev = -1;
    return cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < kMaxDevices ? dev : -1;
}

/* The kernel W on the current device: 1 when it has an image here and its shared memory is
 * granted (the attributes set once a device: its dynamic shared memory, and the largest
 * shared-memory carve-out, so that an SM holds two or three blocks), with the blocks an SM
 * holds in *per_sm. */
template <class W> static int kernel_ready(int *per_sm)
{
    static int state[kMaxDevices]; /* 0 unknown, -1 no, else 1 + the blocks an SM holds */
    const int dev = current_device();
    if (dev < 0) return 0;
    if (state[dev] == 0) {
        const int smem = (int)sizeof(typename W::Kernel::SharedStorage);
        int blocks = 0;
        cudaError_t e = cudaFuncSetAttribute(cutlass::Kernel<typename W::Kernel>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(cutlass::Kernel<typename W::Kernel>,
                                     cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, cutlass::Kernel<typename W::Kernel>,
                                                              W::Kernel::kThreadCount, smem);
        if (e != cudaSuccess) cudaGetLastError(); /* no image for this device: not a sticky error, cleared */
        state[dev] = e == cudaSuccess && blocks > 0 ? 1 + blocks : -1;
    }
    if (per_sm != NULL) *per_sm = state[dev] > 0 ? state[dev] - 1 : 1;
    return state[dev] > 0;
}

static int sm_count(void)
{
    static int count[kMaxDevices];
    const int dev = current_device();
    if (dev < 0) return 132;
    if (count[dev] == 0) {
        int n = 0;
        count[dev] = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && n > 0 ? n : 132;
    }
    return count[dev];
}

static int compute_capability_8_or_later(void)
{
    const int dev = current_device();
    int major = 0;
    return dev >= 0 && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           major >= 8;
}

/* The cost model's rates, an H200's order of magnitude (only their ratios choose): mma.sync
 * per SM with as many blocks as it holds, the fraction of it that one block alone, or more
 * but fewer than it holds, reach (too few warps to hide latency), the memory the partials go
 * through, and a block's fill and epilogue. */
constexpr double kFlopsPerSm = 4.5e12, kAloneEfficiency = 0.65, kPartEfficiency = 0.9, kBytesPerS = 3.5e12,
                 kBlockOverheadS = 1.5e-6;

/* Predicted seconds of the GEMM in `splits` slices and of their reduction */
static double wgrad_cost(long long tiles, int tile_m, int tile_n, long long npq, long long outputs, int splits,
                         int sms, int per_sm)
{
    const long long blocks = tiles * splits;
    const long long on_busiest = (blocks + sms - 1) / sms;
    const double rows = (double)((npq + splits - 1) / splits);
    const long long together = on_busiest < per_sm ? on_busiest : per_sm; /* blocks an SM runs at once */
    const double efficiency = together >= per_sm ? 1.0 : together == 1 ? kAloneEfficiency : kPartEfficiency;
    const double gemm = (double)on_busiest * (2.0 * tile_m * tile_n * rows / (kFlopsPerSm * efficiency)) +
                        (double)((on_busiest + per_sm - 1) / per_sm) * kBlockOverheadS;
    const double reduce = splits > 1 ? (2.0 * splits + 1.0) * (double)outputs * sizeof(float) / kBytesPerS : 0.0;
    return gemm + reduce;
}

/* The slices of the N P Q reduction: the cheapest by wgrad_cost, each of kMinSliceRows at least */
static int wgrad_splits(const struct conv_shape *s, int K)
{
    int per_sm = 1;
    const int is_narrow = narrow(K);
    if (is_narrow) kernel_ready<Narrow>(&per_sm);
    else kernel_ready<Wide>(&per_sm);
    const int tile_m = is_narrow ? Narrow::kTileM : Wide::kTileM, tile_n = is_narrow ? Narrow::kTileN : Wide::kTileN;
    const long long rsc = (long long)s->R * s->S * s->C, npq = (long long)s->N * s->P * s->Q;
    const long long tiles = (long long)((K + tile_m - 1) / tile_m) * ((rsc + tile_n - 1) / tile_n);
    long long most = npq / kMinSliceRows;
    if (most > kMaxSplits) most = kMaxSplits;
    const int sms = sm_count();
    int best = 1;
    double best_cost = wgrad_cost(tiles, tile_m, tile_n, npq, K * rsc, 1, sms, per_sm);
    for (int k = 2; k <= most; k++) {
        const double c = wgrad_cost(tiles, tile_m, tile_n, npq, K * rsc, k, sms, per_sm);
        if (c < best_cost) best = k, best_cost = c;
    }
    return best;
}

/* DPSCALE_CONV or DPSCALE_CONV_WGRAD = "im2col" turns this kernel off; unset or "auto" leaves the rule */
static int enabled(void)
{
    static int conv = -1, wgrad = -1;
    return !env_switch(&conv, "DPSCALE_CONV", "im2col") && !env_switch(&wgrad, "DPSCALE_CONV_WGRAD", "im2col");
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

template <class W> static int can_implement(const struct conv_shape *s, int K, const void *dy, const void *x)
{
    const auto p = problem(s, K, wgrad_splits(s, K));
    return W::Device::can_implement(arguments<W>(p, nullptr, dy, x)) == cutlass::Status::kSuccess;
}

/* The split partials (or, one split, the whole gradient) into `partials`, CUTLASS's kernel
 * launched directly: its device adapter would clear the workspace first, which parallel
 * split-K overwrites whole. */
template <class W>
static cudaError_t run_partials(const struct conv_shape *s, int K, int splits, float *partials, const void *dy,
                                const void *x, cudaStream_t stream)
{
    using Kernel = typename W::Kernel;
    const auto args = arguments<W>(problem(s, K, splits), partials, dy, x);
    if (W::Device::can_implement(args) != cutlass::Status::kSuccess || !kernel_ready<W>(NULL))
        return cudaErrorNotSupported;
    const typename Kernel::Params params(args, nullptr);
    const dim3 grid = typename Kernel::ThreadblockSwizzle().get_grid_shape(params.grid_tiled_shape);
    const int smem = (int)sizeof(typename Kernel::SharedStorage);
    cutlass::Kernel<Kernel><<<grid, Kernel::kThreadCount, smem, stream>>>(params);
    return cudaGetLastError();
}

/* dw [K x rsc] = the sum of `splits` partials [K x rsc] a K rsc apart */
template <typename O>
static cudaError_t run_reduce(O *dw, const float *partials, int splits, int K, int rsc, cudaStream_t stream)
{
    using Device = typename Reduce<O>::Device;
    const typename Device::Arguments args(cutlass::MatrixCoord(K, rsc), splits, (size_t)K * rsc,
                                          {const_cast<float *>(partials), rsc}, {dw, rsc}, {dw, rsc});
    Device reduce;
    if (reduce.initialize(args, nullptr, stream) != cutlass::Status::kSuccess) return cudaErrorLaunchFailure;
    if (reduce.run(stream) != cutlass::Status::kSuccess) {
        const cudaError_t e = cudaGetLastError();
        return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
    return cudaSuccess;
}
} // namespace conv_wgrad_sm80

extern "C" int cuda_conv_wgrad_sm80_takes(const struct conv_shape *s, int K, int act_dtype, int grad_dtype,
                                          const void *dy, const void *x, const void *dw)
{
    using namespace conv_wgrad_sm80;
    if (act_dtype != DT_BF16 || (grad_dtype != DT_F32 && grad_dtype != DT_BF16)) return 0;
    if (s->N <= 0 || K <= 0 || s->C <= 0 || s->C % kAlign != 0 || K % kAlign != 0) return 0;
    if (s->R < 1 || s->S < 1 || (s->R == 1 && s->S == 1) || s->stride < 1 || s->pad < 0) return 0;
    if (s->P != (s->H + 2 * s->pad - s->R) / s->stride + 1 || s->Q != (s->W + 2 * s->pad - s->S) / s->stride + 1 ||
        s->P <= 0 || s->Q <= 0)
        return 0;
    if ((long long)s->N * s->P * s->Q > INT_MAX || (long long)s->R * s->S * s->C > INT_MAX / 2) return 0;
    if (!aligned16(dy) || !aligned16(x) || !aligned16(dw)) return 0;
    if (!enabled() || !compute_capability_8_or_later()) return 0;
    if (narrow(K)) return kernel_ready<Narrow>(NULL) && can_implement<Narrow>(s, K, dy, x);
    return kernel_ready<Wide>(NULL) && can_implement<Wide>(s, K, dy, x);
}

extern "C" size_t cuda_conv_wgrad_sm80_workspace_floats(const struct conv_shape *s, int K)
{
    using namespace conv_wgrad_sm80;
    return (size_t)wgrad_splits(s, K) * K * s->R * s->S * s->C;
}

extern "C" cudaError_t cuda_conv_wgrad_sm80(void *dw, int grad_dtype, const void *dy, const void *x,
                                           const struct conv_shape *s, int K, int act_dtype, float *workspace,
                                           cudaStream_t stream)
{
    using namespace conv_wgrad_sm80;
    if (!cuda_conv_wgrad_sm80_takes(s, K, act_dtype, grad_dtype, dy, x, dw)) return cudaErrorNotSupported;
    const int splits = wgrad_splits(s, K), rsc = s->R * s->S * s->C;
    const int direct = splits == 1 && grad_dtype == DT_F32; /* no sum to take: straight into the gradient */
    if (!direct && (workspace == NULL || !aligned16(workspace))) return cudaErrorInvalidValue;
    float *partials = direct ? static_cast<float *>(dw) : workspace;
    const cudaError_t e = narrow(K) ? run_partials<Narrow>(s, K, splits, partials, dy, x, stream)
                                    : run_partials<Wide>(s, K, splits, partials, dy, x, stream);
    if (e != cudaSuccess || direct) return e;
    if (grad_dtype == DT_F32) return run_reduce(static_cast<float *>(dw), workspace, splits, K, rsc, stream);
    return run_reduce(static_cast<cutlass::bfloat16_t *>(dw), workspace, splits, K, rsc, stream);
}
