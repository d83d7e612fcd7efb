/* optimizer.cu — SGD with momentum and AdamW in one fused pass over the flat
 * parameter arena or a bucket's slice of it (fp32 master weights and state), which
 * reads the gradients in fp32 or as a 16-bit allreduce left them, and also writes
 * the compute-dtype copy of the weights that the next step's GEMMs read; and the
 * casts between fp32 and the compute dtype. */
#include "../src/backend.h"
#include "dtype_cuda.cuh"
#include "kernels_cuda.h"

/* T: the compute dtype of the weights' copy; G: the gradients' type (fp32, or T when
 * a 16-bit allreduce's result is read as is).
 *
 * Short blocks, no grid-stride loop: each block updates OPT_ELEMS_PER_BLOCK elements
 * (OPT_ILP per thread, coalesced) and retires. Overlapped with backward on a stream
 * of lower priority, such blocks fill the SMs the GEMMs leave idle and give them
 * back within microseconds, instead of holding SMs that the next GEMM waits for. */
#define OPT_THREADS 256
#define OPT_ILP 4
#define OPT_ELEMS_PER_BLOCK (OPT_THREADS * OPT_ILP)

template <typename T, typename G>
__global__ void __launch_bounds__(OPT_THREADS) sgd_step(float *p, const G *g, float *m, T *lp, size_t n, float lr,
                                                        float mu, float wd, float scale)
{
    const size_t base = (size_t)blockIdx.x * OPT_ELEMS_PER_BLOCK + threadIdx.x;
#pragma unroll
    for (int k = 0; k < OPT_ILP; k++) {
        const size_t i = base + (size_t)k * OPT_THREADS;
        if (i >= n) return;
        float grad = to_f32(g[i]) * scale + wd * p[i];
        float v = mu * m[i] + grad;
        float w = p[i] - lr * v;
        m[i] = v;
        p[i] = w;
        if (lp != nullptr) lp[i] = from_f32<T>(w);
    }
}

template <typename T, typename G>
__global__ void __launch_bounds__(OPT_THREADS) adamw_step(float *p, const G *g, float *m, float *v, T *lp, size_t n,
                                                          float lr, float b1, float b2, float eps, float wd, float scale,
                                                          float c1, float c2)
{
    const size_t base = (size_t)blockIdx.x * OPT_ELEMS_PER_BLOCK + threadIdx.x;
#pragma unroll
    for (int k = 0; k < OPT_ILP; k++) {
        const size_t i = base + (size_t)k * OPT_THREADS;
        if (i >= n) return;
        float grad = to_f32(g[i]) * scale;
        float mi = b1 * m[i] + (1.0f - b1) * grad;
        float vi = b2 * v[i] + (1.0f - b2) * grad * grad;
        float w = p[i] - lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
        m[i] = mi;
        v[i] = vi;
        p[i] = w;
        if (lp != nullptr) lp[i] = from_f32<T>(w);
    }
}

template <typename T, typename G>
static cudaError_t launch_typed(float *params, const G *grads, float *s1, float *s2, void *lp, size_t n,
                                const struct optim_hparams *h, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    const size_t blocks = (n + OPT_ELEMS_PER_BLOCK - 1) / OPT_ELEMS_PER_BLOCK;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    if (h->kind == OPT_SGD) {
        sgd_step<T, G><<<(unsigned)blocks, OPT_THREADS, 0, s>>>(params, grads, s1, (T *)lp, n, h->lr, h->momentum,
                                                                h->weight_decay, h->grad_scale);
    } else {
        const float c1 = 1.0f - powf(h->beta1, (float)h->step), c2 = 1.0f - powf(h->beta2, (float)h->step);
        adamw_step<T, G><<<(unsigned)blocks, OPT_THREADS, 0, s>>>(params, grads, s1, s2, (T *)lp, n, h->lr, h->beta1,
                                                                  h->beta2, h->eps, h->weight_decay, h->grad_scale, c1, c2);
    }
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch(float *params, const void *grads, int grads_in_t, float *s1, float *s2, void *lp, size_t n,
                          const struct optim_hparams *h, cudaStream_t s)
{
    return grads_in_t ? launch_typed<T, T>(params, (const T *)grads, s1, s2, lp, n, h, s)
                      : launch_typed<T, float>(params, (const float *)grads, s1, s2, lp, n, h, s);
}

extern "C" cudaError_t cuda_optimizer_step(float *params, const void *grads, int grad_dtype, float *state1,
                                           float *state2, void *params_lp, size_t n, const struct optim_hparams *h,
                                           int dtype, cudaStream_t stream)
{
    if (grad_dtype != DT_F32 && grad_dtype != dtype) return cudaErrorInvalidValue;
    return DISPATCH_DTYPE(dtype, launch, params, grads, grad_dtype != DT_F32, state1, state2, params_lp, n, h, stream);
}

template <typename T> __global__ void cast_kernel(T *dst, const float *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = from_f32<T>(src[i]);
}

template <typename T> static cudaError_t launch_cast(void *dst, const float *src, size_t n, cudaStream_t s)
{
    cast_kernel<T><<<blocks_for(n, 256, 132 * 16), 256, 0, s>>>((T *)dst, src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_cast_from_f32(void *dst, const float *src, size_t n, int dtype, cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch_cast, dst, src, n, stream);
}

template <typename T> __global__ void cast_back_kernel(float *dst, const T *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = to_f32(src[i]);
}

template <typename T> static cudaError_t launch_cast_back(float *dst, const void *src, size_t n, cudaStream_t s)
{
    cast_back_kernel<T><<<blocks_for(n, 256, 132 * 16), 256, 0, s>>>(dst, (const T *)src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_cast_to_f32(float *dst, const void *src, size_t n, int dtype, cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch_cast_back, dst, src, n, stream);
}
