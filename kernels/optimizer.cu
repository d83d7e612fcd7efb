/* optimizer.cu — SGD with momentum and AdamW in one fused pass over the whole
 * flat parameter arena (fp32 master weights and state), which also writes the
 * compute-dtype copy of the weights that the next step's GEMMs read; and the
 * casts between fp32 and the compute dtype. */
#include "../src/backend.h"
#include "dtype_cuda.cuh"
#include "kernels_cuda.h"

template <typename T>
__global__ void sgd_step(float *p, const float *g, float *m, T *lp, size_t n, float lr, float mu, float wd, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float grad = g[i] * scale + wd * p[i];
        float v = mu * m[i] + grad;
        float w = p[i] - lr * v;
        m[i] = v;
        p[i] = w;
        if (lp != nullptr) lp[i] = from_f32<T>(w);
    }
}

template <typename T>
__global__ void adamw_step(float *p, const float *g, float *m, float *v, T *lp, size_t n, float lr, float b1, float b2,
                           float eps, float wd, float scale, float c1, float c2)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float grad = g[i] * scale;
        float mi = b1 * m[i] + (1.0f - b1) * grad;
        float vi = b2 * v[i] + (1.0f - b2) * grad * grad;
        float w = p[i] - lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
        m[i] = mi;
        v[i] = vi;
        p[i] = w;
        if (lp != nullptr) lp[i] = from_f32<T>(w);
    }
}

template <typename T>
static cudaError_t launch(float *params, const float *grads, float *s1, float *s2, void *lp, size_t n,
                          const struct optim_hparams *h, cudaStream_t s)
{
    const int blocks = blocks_for(n, 256, 132 * 16);
    if (h->kind == OPT_SGD) {
        sgd_step<T><<<blocks, 256, 0, s>>>(params, grads, s1, (T *)lp, n, h->lr, h->momentum, h->weight_decay,
                                           h->grad_scale);
    } else {
        const float c1 = 1.0f - powf(h->beta1, (float)h->step), c2 = 1.0f - powf(h->beta2, (float)h->step);
        adamw_step<T><<<blocks, 256, 0, s>>>(params, grads, s1, s2, (T *)lp, n, h->lr, h->beta1, h->beta2, h->eps,
                                             h->weight_decay, h->grad_scale, c1, c2);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_optimizer_step(float *params, const float *grads, float *state1, float *state2,
                                           void *params_lp, size_t n, const struct optim_hparams *h, int dtype,
                                           cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, params, grads, state1, state2, params_lp, n, h, stream);
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
