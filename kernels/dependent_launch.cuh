/* dependent_launch.cuh — programmatic dependent launch (compute capability 9.0 or later):
 * a kernel launched as its predecessor's dependent may have its blocks start while the
 * predecessor's last ones finish, instead of after the whole grid has drained and the next
 * launch has gone through. The predecessor says when (dependents_may_start: after that
 * point in each of its blocks, or at their exit); the dependent waits for the whole
 * predecessor grid and its memory (wait_for_predecessor) before it touches what that grid
 * writes or reads. Both are no-ops below 9.0 and in a kernel launched the ordinary way, so
 * they can sit in kernels that are sometimes launched one way, sometimes the other. */
#ifndef DPSCALE_DEPENDENT_LAUNCH_CUH
#define DPSCALE_DEPENDENT_LAUNCH_CUH

#include <cuda_runtime.h>

__device__ __forceinline__ void dependents_may_start()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_predecessor()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Whether the current device takes programmatic dependent launches (9.0 or later), asked
 * once per device. */
static inline bool dependent_launch_supported(void)
{
    static int known[64]; /* 0 unknown, 1 no, 2 yes */
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    if (dev >= 0 && dev < 64 && known[dev]) return known[dev] == 2;
    const bool yes = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9;
    if (dev >= 0 && dev < 64) known[dev] = yes ? 2 : 1;
    return yes;
}

/* kernel<<<grid, block, smem, s>>>(args...), as the dependent of what s ran last where
 * dependent (and the device takes it), else launched the ordinary way. */
template <typename... P, typename... A>
static cudaError_t launch_maybe_dependent(bool dependent, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                                          cudaStream_t s, A... args)
{
    if (!dependent || !dependent_launch_supported()) {
        kernel<<<grid, block, smem, s>>>(args...);
        return cudaGetLastError();
    }
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif
