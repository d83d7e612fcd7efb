/* optimizer.cu — SGD with momentum and AdamW in one fused pass over the flat
 * parameter arena or a bucket's slice of it (fp32 master weights, or the 16-bit
 * weights in place; the state in fp32 or the compute dtype), which reads the gradients
 * in fp32 or as a 16-bit allreduce left them, and also writes the compute-dtype copy
 * of the weights that the next step's GEMMs read (four elements per vector access
 * where the slice is aligned); and the casts between fp32 and the compute dtype. */
#include <stdint.h>

#include "kernels/dtype_cuda.cuh"
#include "kernels/kernel_types.h"
#include "kernels/kernels_cuda.h"

/* The per-element rules, shared by the vector and the scalar kernel so that both
 * give the same bits. p: the fp32 master weight; g: the gradient already in fp32;
 * s1, s2: the optimizer state (s2 unused by SGD). Returns the new weight. */
struct sgd_rule {
    static constexpr bool two_states = false;
    float lr, mu, wd, scale;
    __device__ __forceinline__ float operator()(float p, float g, float &s1, float &) const
    {
        const float grad = g * scale + wd * p;
        const float v = mu * s1 + grad;
        s1 = v;
        return p - lr * v;
    }
};

struct adamw_rule {
    static constexpr bool two_states = true;
    float lr, b1, b2, eps, wd, scale, c1, c2;
    __device__ __forceinline__ float operator()(float p, float g, float &s1, float &s2) const
    {
        const float grad = g * scale;
        const float mi = b1 * s1 + (1.0f - b1) * grad;
        const float vi = b2 * s2 + (1.0f - b2) * grad * grad;
        s1 = mi;
        s2 = vi;
        return p - lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p);
    }
};

/* Four consecutive values of X: one 16-byte (fp32) or 8-byte (16-bit) access. */
template <typename X> struct alignas(4 * sizeof(X)) quad {
    X v[4];
};

/* W: the weights the rule updates (the fp32 master, or T in place when there is no
 * master: then lp is NULL); T: the compute dtype of the weights' copy; G: the
 * gradients' type (fp32, or T when a 16-bit allreduce's result is read as is); S: the
 * optimizer state's (fp32, or T).
 *
 * Short blocks, no grid-stride loop: each block updates OPT_QUADS_PER_BLOCK groups of
 * four elements (OPT_ILP per thread, coalesced, vector loads) and retires. Overlapped
 * with backward on a stream of lower priority, such blocks fill the SMs the GEMMs
 * leave idle and give them back within microseconds, instead of holding SMs that the
 * next GEMM waits for. */
#define OPT_THREADS 256
#define OPT_ILP 2
#define OPT_QUADS_PER_BLOCK (OPT_THREADS * OPT_ILP)

template <typename Rule, typename W, typename T, typename G, typename S>
__global__ void __launch_bounds__(OPT_THREADS) update_quads(W *p, const G *g, S *s1, S *s2, T *lp, size_t nquads,
                                                            Rule rule)
{
    const size_t base = (size_t)blockIdx.x * OPT_QUADS_PER_BLOCK + threadIdx.x;
#pragma unroll
    for (int k = 0; k < OPT_ILP; k++) {
        const size_t q = base + (size_t)k * OPT_THREADS;
        if (q >= nquads) return;
        quad<W> P = ((const quad<W> *)p)[q];
        const quad<G> Gq = ((const quad<G> *)g)[q];
        quad<S> M = ((const quad<S> *)s1)[q], V = {};
        if (Rule::two_states) V = ((const quad<S> *)s2)[q];
        quad<T> L;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float m = to_f32(M.v[j]), v = Rule::two_states ? to_f32(V.v[j]) : 0.0f;
            const float w = rule(to_f32(P.v[j]), to_f32(Gq.v[j]), m, v);
            P.v[j] = from_f32<W>(w);
            M.v[j] = from_f32<S>(m);
            if (Rule::two_states) V.v[j] = from_f32<S>(v);
            L.v[j] = from_f32<T>(w);
        }
        ((quad<W> *)p)[q] = P;
        ((quad<S> *)s1)[q] = M;
        if (Rule::two_states) ((quad<S> *)s2)[q] = V;
        if (lp != nullptr) ((quad<T> *)lp)[q] = L;
    }
}

/* The same rule one element at a time: slices whose pointers are not aligned for
 * the vector kernel, and the last n % 4 elements. */
template <typename Rule, typename W, typename T, typename G, typename S>
__global__ void __launch_bounds__(OPT_THREADS) update_scalar(W *p, const G *g, S *s1, S *s2, T *lp, size_t n,
                                                             Rule rule)
{
    const size_t base = (size_t)blockIdx.x * OPT_QUADS_PER_BLOCK + threadIdx.x;
#pragma unroll
    for (int k = 0; k < OPT_ILP; k++) {
        const size_t i = base + (size_t)k * OPT_THREADS;
        if (i >= n) return;
        float m = to_f32(s1[i]), v = Rule::two_states ? to_f32(s2[i]) : 0.0f;
        const float w = rule(to_f32(p[i]), to_f32(g[i]), m, v);
        p[i] = from_f32<W>(w);
        s1[i] = from_f32<S>(m);
        if (Rule::two_states) s2[i] = from_f32<S>(v);
        if (lp != nullptr) lp[i] = from_f32<T>(w);
    }
}

static bool aligned(const void *ptr, size_t bytes) { return ((uintptr_t)ptr % bytes) == 0; }

static unsigned blocks_of(size_t units) { return (unsigned)((units + OPT_QUADS_PER_BLOCK - 1) / OPT_QUADS_PER_BLOCK); }

template <typename Rule, typename W, typename T, typename G, typename S>
static cudaError_t launch_rule(W *p, const G *g, S *s1, S *s2, T *lp, size_t n, const Rule &rule, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    if (n / OPT_QUADS_PER_BLOCK >= 0x7fffffffu) return cudaErrorInvalidValue;
    const bool vec = aligned(p, 4 * sizeof(W)) && aligned(s1, 4 * sizeof(S)) && (!Rule::two_states || aligned(s2, 4 * sizeof(S))) &&
                     aligned(g, 4 * sizeof(G)) && (lp == nullptr || aligned(lp, 4 * sizeof(T)));
    size_t done = 0;
    if (vec && n >= 4) {
        const size_t nquads = n / 4;
        update_quads<Rule, W, T, G, S><<<blocks_of(nquads), OPT_THREADS, 0, s>>>(p, g, s1, s2, lp, nquads, rule);
        done = nquads * 4;
    }
    if (done < n) {
        update_scalar<Rule, W, T, G, S><<<blocks_of(n - done), OPT_THREADS, 0, s>>>(
            p + done, g + done, s1 + done, s2 != nullptr ? s2 + done : nullptr, lp != nullptr ? lp + done : nullptr,
            n - done, rule);
    }
    return cudaGetLastError();
}

/* The weights: the fp32 master and its compute copy, or (params NULL) the compute
 * copy alone, in place. */
template <typename T, typename G, typename S, typename Rule>
static cudaError_t launch_weights(float *params, const G *grads, S *s1, S *s2, void *lp, size_t n, const Rule &r,
                                  cudaStream_t s)
{
    return params != nullptr ? launch_rule(params, grads, s1, s2, (T *)lp, n, r, s)
                             : launch_rule((T *)lp, grads, s1, s2, (T *)nullptr, n, r, s);
}

template <typename T, typename G, typename S>
static cudaError_t launch_typed(float *params, const G *grads, S *s1, S *s2, void *lp, size_t n,
                                const struct optim_hparams *h, cudaStream_t s)
{
    if (h->kind == OPT_SGD) {
        const sgd_rule r = {h->lr, h->momentum, h->weight_decay, h->grad_scale};
        return launch_weights<T>(params, grads, s1, (S *)nullptr, lp, n, r, s);
    }
    const float c1 = 1.0f - powf(h->beta1, (float)h->step), c2 = 1.0f - powf(h->beta2, (float)h->step);
    const adamw_rule r = {h->lr, h->beta1, h->beta2, h->eps, h->weight_decay, h->grad_scale, c1, c2};
    return launch_weights<T>(params, grads, s1, s2, lp, n, r, s);
}

/* The gradients' and the state's types: each fp32 or T. */
template <typename T, typename S>
static cudaError_t launch_state(float *params, const void *grads, int grads_in_t, S *s1, S *s2, void *lp, size_t n,
                                const struct optim_hparams *h, cudaStream_t s)
{
    return grads_in_t ? launch_typed<T, T, S>(params, (const T *)grads, s1, s2, lp, n, h, s)
                      : launch_typed<T, float, S>(params, (const float *)grads, s1, s2, lp, n, h, s);
}

template <typename T>
static cudaError_t launch(float *params, const void *grads, int grads_in_t, void *s1, void *s2, int state_in_t,
                          void *lp, size_t n, const struct optim_hparams *h, cudaStream_t s)
{
    return state_in_t ? launch_state<T, T>(params, grads, grads_in_t, (T *)s1, (T *)s2, lp, n, h, s)
                      : launch_state<T, float>(params, grads, grads_in_t, (float *)s1, (float *)s2, lp, n, h, s);
}

extern "C" cudaError_t cuda_optimizer_step(float *params, const void *grads, int grad_dtype, void *state1, void *state2,
                                           int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h,
                                           int dtype, cudaStream_t stream)
{
    if (grad_dtype != DT_F32 && grad_dtype != dtype) return cudaErrorInvalidValue;
    if (state_dtype != DT_F32 && state_dtype != dtype) return cudaErrorInvalidValue;
    if (params == nullptr && params_lp == nullptr) return cudaErrorInvalidValue;
    return DISPATCH_DTYPE(dtype, launch, params, grads, grad_dtype != DT_F32, state1, state2, state_dtype != DT_F32,
                          params_lp, n, h, stream);
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
