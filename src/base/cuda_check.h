/* cuda_check.h — the check macros of the CUDA runtime and cuBLAS APIs, and a non-blocking
 * stream at the highest or the lowest priority; shared by the CUDA backend, the
 * peer copy matrix and the NCCL library of the comm seam (CUDA host code only). */
#ifndef DPSCALE_CUDA_CHECK_H
#define DPSCALE_CUDA_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime.h>

#include "base/error.h"

#define CHECK_CUDA(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t cuda_rc_ = (call);                                                                     \
        if (cuda_rc_ != cudaSuccess)                                                                       \
            DP_FATAL(NULL, "%s failed: %s (%s)", #call, cudaGetErrorString(cuda_rc_), cudaGetErrorName(cuda_rc_)); \
    } while (0)

#define CHECK_CUBLAS(call)                                                                                 \
    do {                                                                                                   \
        cublasStatus_t blas_rc_ = (call);                                                                  \
        if (blas_rc_ != CUBLAS_STATUS_SUCCESS)                                                             \
            DP_FATAL(NULL, "%s failed: %s", #call, cublasGetStatusString(blas_rc_));                       \
    } while (0)

/* The block scheduler serves pending blocks of a higher-priority stream first. */
static inline cudaStream_t cuda_stream_at_priority(int high)
{
    int least = 0, greatest = 0;
    cudaStream_t s;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high ? greatest : least));
    return s;
}

#endif
