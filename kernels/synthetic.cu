/* synthetic.cu — a batch of the synthetic task generated on the GPU, from the
 * same functions as the CPU (synthetic.h), so both backends train on the same data. */
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"
#include "kernels/synthetic.h"
#include "kernels/transformer/transformer_kernels.h"

template <typename T>
__global__ void synth_kernel(T *x, int *labels, uint64_t first, int rows, int dim, int classes, uint64_t seed,
                             float mean_scale)
{
    const size_t n = (size_t)rows * dim;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int row = (int)(i / dim), f = (int)(i % dim);
        const uint64_t sample = first + (uint64_t)row;
        const int label = synth_label(seed, sample, classes);
        if (f == 0) labels[row] = label;
        x[i] = from_f32<T>(synth_feature(seed, sample, label, f, mean_scale));
    }
}

template <typename T>
static cudaError_t launch(void *x, int *labels, uint64_t first, int rows, int dim, int classes, uint64_t seed,
                          cudaStream_t s)
{
    const size_t n = (size_t)rows * dim;
    synth_kernel<T><<<blocks_for(n, 256, 132 * 32), 256, 0, s>>>((T *)x, labels, first, rows, dim, classes, seed,
                                                               synth_mean_scale(dim));
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_synth_batch(void *x, int *labels, uint64_t first_sample, int rows, int input_dim,
                                        int classes, uint64_t seed, int dtype, cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, x, labels, first_sample, rows, input_dim, classes, seed, stream);
}

__global__ void synth_tokens_kernel(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first, int B,
                                    int T, int V, int nmask, int bert, uint64_t seed)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= B * T) return;
    const int b = row / T, t = row % T;
    int target, k;
    synth_position(seed, first + (uint64_t)b, t, T, V, nmask, bert, &tokens[row], &segments[row], &target, &k);
    if (!bert) targets[row] = target;
    else if (k >= 0) {
        targets[b * nmask + k] = target;
        mask_rows[b * nmask + k] = row;
    }
}

extern "C" cudaError_t cuda_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample,
                                         int B, int T, int V, int nmask, int bert, uint64_t seed, cudaStream_t stream)
{
    const int rows = B * T;
    synth_tokens_kernel<<<(rows + 255) / 256, 256, 0, stream>>>(tokens, segments, targets, mask_rows, first_sample, B, T,
                                                                V, nmask, bert, seed);
    return cudaGetLastError();
}
