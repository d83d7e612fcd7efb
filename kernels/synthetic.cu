/* synthetic.cu — a batch of the MLP's synthetic task generated on the GPU, from the
 * same functions as the CPU (synthetic.h), so both backends train on the same data
 * (the families' own tasks are beside their kernels). */
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"
#include "kernels/synthetic.h"

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
