/* cutlass_sm90_launch.cuh — what the ResNet's CUTLASS 3 kernels on Hopper share
 * (conv_sm90.cu, gemm_bn_stats_sm90.cu): the device's SMs and compute capability, asked
 * once a process; the hardware description a persistent kernel wants; the 16-byte
 * alignment TMA asks of every operand; and one launch of a device adapter that needs no
 * workspace, its failure as a cudaError_t. */
#ifndef DPSCALE_CUTLASS_SM90_LAUNCH_CUH
#define DPSCALE_CUTLASS_SM90_LAUNCH_CUH

#include <stdint.h>

#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp>

namespace cutlass_sm90 {

static inline int sm_count(void)
{
    static int n = 0;
    if (n == 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) == cudaSuccess) n = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(dev);
    }
    return n;
}

static inline cutlass::KernelHardwareInfo hardware(void)
{
    cutlass::KernelHardwareInfo hw{};
    cudaGetDevice(&hw.device_id);
    hw.sm_count = sm_count();
    return hw;
}

static inline int device_is_sm90(void)
{
    static int cached = -1;
    if (cached < 0) {
        int dev = 0, major = 0, minor = 0;
        cached = cudaGetDevice(&dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
                 major == 9 && minor == 0;
    }
    return cached;
}

static inline int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* One kernel on st, for a call that needs no workspace */
template <class Device> static cudaError_t launch(typename Device::Arguments &args, cudaStream_t st)
{
    Device op;
    if (Device::get_workspace_size(args) != 0 || op.can_implement(args) != cutlass::Status::kSuccess)
        return cudaErrorNotSupported;
    if (op.initialize(args, nullptr, st) != cutlass::Status::kSuccess) return cudaErrorLaunchFailure;
    if (op.run(st) != cutlass::Status::kSuccess) {
        const cudaError_t e = cudaGetLastError();
        return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
    return cudaGetLastError();
}
} // namespace cutlass_sm90

#endif
