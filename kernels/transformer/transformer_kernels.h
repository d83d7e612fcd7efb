/* transformer_kernels.h — C launchers of the transformer's CUDA kernels (transformer.cu,
 * layernorm.cu, and the token task's in synthetic.cu; the fused attention's are in
 * flash_attention.h). As kernels_cuda.h's: each takes the compute dtype of its
 * activation buffers, enqueues on its stream and returns the launch's cudaError_t;
 * semantics in transformer_cpu.h (the backend's table: tf_ops.h). */
#ifndef DPSCALE_TRANSFORMER_KERNELS_H
#define DPSCALE_TRANSFORMER_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t cuda_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B,
                              int T, int V, int nmask, int bert, uint64_t seed, cudaStream_t stream);

cudaError_t cuda_embed_forward(void *x, const int *tokens, const int *segments, const void *wte, const void *wpe,
                               const void *wse, int B, int T, int C, int dtype, cudaStream_t s);
size_t cuda_embed_scratch_bytes(int rows);
cudaError_t cuda_embed_backward(void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                                const int *segments, const void *dx, int B, int T, int C, int S, void *scratch,
                                int dtype, cudaStream_t s);
size_t cuda_layernorm_scratch_floats(int rows, int C);
cudaError_t cuda_layernorm_forward(void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                   const void *beta, int rows, int C, int dtype, cudaStream_t s);
/* accumulate = 1: dx += the gradient (the residual add fused where it meets the LayerNorm).
 * dxsum (NULL: none): also dx's column sums as written (after accumulating), C of them in
 * grad_dtype, as dgamma and dbeta: the bias gradient of the linear layer whose output
 * gradient dx is, from the staged kernel's registers (elsewhere the bias gradient's kernel
 * on dx). partial: cuda_layernorm_scratch_floats(rows, C) floats. */
cudaError_t cuda_layernorm_backward(void *dx, void *dgamma, void *dbeta, void *dxsum, int grad_dtype, const void *dy,
                                    const void *x, const float *mean, const float *rstd, const void *gamma, int rows,
                                    int C, int accumulate, float *partial, int dtype, cudaStream_t s);
/* The LayerNorm backward's two kernels (layernorm.cu's header says how each works).
 * cuda_layernorm_backward takes the one DPSCALE_LN_BACKWARD names (staged | tiled, read
 * once per process; staged when unset); the _using launcher takes the one named, for tests
 * that compare the two in one process (tests/unit/test_transformer_cuda.c). STAGED runs
 * the tiled kernel where the staged one does not take the arguments (see _staged_takes). */
enum ln_backward_kernel {
    LN_BACKWARD_AUTO = 0,   /* DPSCALE_LN_BACKWARD's choice */
    LN_BACKWARD_TILED = 1,  /* a persistent grid reading each tile twice (through the L1 / L2) */
    LN_BACKWARD_STAGED = 2, /* tiles staged in shared memory by bulk copies, read from HBM once */
};
cudaError_t cuda_layernorm_backward_using(enum ln_backward_kernel which, void *dx, void *dgamma, void *dbeta,
                                          void *dxsum, int grad_dtype, const void *dy, const void *x,
                                          const float *mean, const float *rstd, const void *gamma, int rows, int C,
                                          int accumulate, float *partial, int dtype, cudaStream_t s);
/* How the staged kernel splits its work: blocks (one an SM at most), rows a tile, tiles in
 * flight a block, slices (groups of rows that the column step's threads take in turn), and
 * whether it adds dx's column sums itself. */
struct ln_staged_shape {
    int blocks, tile_rows, stages, slices, sum_dx;
};
/* Whether LN_BACKWARD_STAGED runs the staged kernel for these arguments on the current device
 * (compute capability 9.0 or later, rows of whole 16-byte vectors, 16-byte aligned buffers, a
 * width whose staged rows and gain sums fit), and if so its shape (unless NULL), for tests and
 * their printouts; sum_dx: asked with dx's column sums (shape->sum_dx: whether it takes them,
 * up to 8,192 wide in 16 bits, 4,096 in fp32). */
int cuda_layernorm_backward_staged_takes(struct ln_staged_shape *shape, const void *dx, const void *dy, const void *x,
                                         const void *gamma, const float *partial, int rows, int C, int accumulate,
                                         int sum_dx, int dtype);
cudaError_t cuda_attention_softmax(void *p, int rows, int T, int causal, int dtype, cudaStream_t s);
cudaError_t cuda_attention_softmax_backward(void *dp, const void *p, int rows, int T, int dtype, cudaStream_t s);
cudaError_t cuda_move_rows(void *dst, const void *src, const int *rows, int n, int C, int scatter, int dtype,
                           cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
