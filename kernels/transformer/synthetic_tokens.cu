/* synthetic_tokens.cu — the transformer's token task generated on the GPU, from the
 * same functions as the CPU (synthetic.h; transformer_cpu.c's cpu_synth_tokens), so
 * both backends train on the same sequences. */
#include <stdint.h>

#include "kernels/synthetic.h"
#include "kernels/transformer/transformer_kernels.h"

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
