/* provenance_cuda.c — the CUDA side of provenance.h, in builds with CUDA: NCCL, the
 * CUDA runtime and driver, and cuBLASLt, each as built with (headers) and loaded (its
 * own answer at run time), and a device's memory where NVML cannot say. None of these
 * calls needs a GPU; one that fails leaves its field empty. */
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>

#include "system/provenance.h"

/* NCCL and cuBLAS count major x 10000 + minor x 100 + patch; CUDA major x 1000 + minor x 10. */
static void dotted(char *buf, size_t len, long long v) { snprintf(buf, len, "%lld.%lld.%lld", v / 10000, v / 100 % 100, v % 100); }
static void cuda_dotted(char *buf, size_t len, int v) { snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10); }

void provenance_cuda_libraries(struct provenance_libraries *l)
{
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess) dotted(l->nccl_version, sizeof l->nccl_version, v);
    dotted(l->nccl_version_built, sizeof l->nccl_version_built, NCCL_VERSION_CODE);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) cuda_dotted(l->cuda_runtime_version, sizeof l->cuda_runtime_version, v);
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) cuda_dotted(l->cuda_driver_version, sizeof l->cuda_driver_version, v);
    dotted(l->cublas_version, sizeof l->cublas_version, (long long)cublasLtGetVersion());
    dotted(l->cublas_version_built, sizeof l->cublas_version_built, CUBLAS_VERSION);
}

long long provenance_cuda_memory_bytes(int index)
{
    struct cudaDeviceProp prop;
    if (index < 0 || cudaGetDeviceProperties(&prop, index) != cudaSuccess) return -1;
    return (long long)prop.totalGlobalMem;
}
