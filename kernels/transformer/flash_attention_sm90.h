/* flash_attention_sm90.h — the Hopper forward and backward of the fused attention
 * (flash_attention_sm90.cu, built for sm_90a alone) and the choice between them and the
 * FA2 kernels of flash_attention.cu, which cuda_flash_attention_forward / _backward make.
 *
 * The choice: the Hopper kernels run on a device of compute capability 9.0, head
 * dimension 64, bf16 or fp16, buffers 16-byte aligned (TMA's rule); the FA2 kernels
 * everywhere else. DPSCALE_FLASH_FORWARD and DPSCALE_FLASH_BACKWARD, each read once per
 * process, override it for their direction: "fa2" keeps the FA2 kernels everywhere (an
 * A/B of a whole run), "auto" or unset is the rule above. The _using launchers pick
 * explicitly, for tests that compare the two in one process
 * (tests/unit/test_flash_attention_cuda.c).
 *
 * The Hopper backward has two schemes (flash_attention_sm90.cu's header), both giving the
 * same bits on every run. DPSCALE_FLASH_DQ, read once per process, picks the one the
 * automatic choice runs: "separate" or unset, two kernels (dK dV, then dQ, each output
 * written once); "accumulate", one kernel adding each key block's dQ into an fp32
 * workspace in a fixed order (kernels/transformer/attention_dq_order.h), then a
 * conversion (right, and measured slower on an H200: flash_attention_sm90.cu's header).
 * FLASH_KERNELS_SM90 and FLASH_KERNELS_SM90_ACCUMULATE name each explicitly. */
#ifndef DPSCALE_FLASH_ATTENTION_SM90_H
#define DPSCALE_FLASH_ATTENTION_SM90_H

#include "kernels/kernel_types.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(DPSCALE_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime.h>

enum flash_kernels {
    FLASH_KERNELS_AUTO = 0, /* the rule above, after the direction's environment variable */
    FLASH_KERNELS_FA2 = 1,  /* flash_attention.cu's mma.sync kernels, on any sm_80 or later */
    FLASH_KERNELS_SM90 = 2, /* the Hopper kernels; cudaErrorNotSupported where they do not apply */
    FLASH_KERNELS_SM90_ACCUMULATE = 3, /* the same, the backward's one-kernel scheme (the forward as SM90) */
};

/* cuda_flash_attention_forward / _backward with the kernels named; the arguments as theirs. */
cudaError_t cuda_flash_attention_forward_using(enum flash_kernels which, void *out, float *lse, const void *qkv,
                                               int B, int T, int C, int H, int causal, int dtype, cudaStream_t s);
cudaError_t cuda_flash_attention_backward_using(enum flash_kernels which, void *dqkv, const void *dout,
                                                const void *out, const void *qkv, const float *lse, float *scratch,
                                                int B, int T, int C, int H, int causal, int dtype, cudaStream_t s);
/* Whether the Hopper kernels take these arguments on the current device (AUTO's rule without the
 * environment). */
int cuda_flash_attention_sm90_applies(const void *dqkv, const void *dout, const void *qkv, const float *lse,
                                      const float *scratch, int B, int T, int C, int H, int dtype);

/* flash_attention_sm90.cu: the shape and alignment rule alone (not the device), the
 * forward's launch, and the backward once delta = rowsum(dO O) is in `delta`: two kernels
 * (dK dV, then dQ), or where `accumulate` one kernel summing dQ in dq_accum (B H T 64
 * floats, 16-byte aligned) under the semaphores dq_sem (B H ceil(T / 64) ints, zeroed
 * here), then dQ's conversion. */
int fa_sm90_forward_takes(int dtype, int head_dim, const void *out, const float *lse, const void *qkv, int B, int T,
                          int C, int H);
cudaError_t fa_sm90_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int H, int causal, int dtype,
                            cudaStream_t s);
int fa_sm90_backward_takes(int dtype, int head_dim, const void *dqkv, const void *dout, const void *qkv,
                           const float *lse, const float *delta, int B, int T, int C, int H);
cudaError_t fa_sm90_backward(void *dqkv, const void *dout, const void *qkv, const float *lse, const float *delta,
                             float *dq_accum, int *dq_sem, int B, int T, int C, int H, int causal, int accumulate,
                             int dtype, cudaStream_t s);
#endif
#ifdef __cplusplus
}
#endif

#endif
