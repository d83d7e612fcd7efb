/* peer_bw_cuda.c — the GPU-to-GPU copy matrix (peer_bw.h), with cudaMemcpyPeerAsync
 * between every pair of visible GPUs, timed by events, after one untimed copy. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/error.h"
#include "system/peer_bw.h"

#define REPS 10
#define LATENCY_REPS 100

/* Seconds per copy of `bytes` from (src, sdev) to (dst, ddev), on `s`. */
static double time_copies(void *dst, int ddev, const void *src, int sdev, size_t bytes, cudaStream_t s, int reps)
{
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    CHECK_CUDA(cudaMemcpyPeerAsync(dst, ddev, src, sdev, bytes, s));
    CHECK_CUDA(cudaEventRecord(a, s));
    for (int r = 0; r < reps; r++) CHECK_CUDA(cudaMemcpyPeerAsync(dst, ddev, src, sdev, bytes, s));
    CHECK_CUDA(cudaEventRecord(b, s));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms * 1e-3 / reps;
}

int peer_measure(struct peer_matrix *m, size_t bytes)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        cudaGetLastError();
        return -1;
    }
    memset(m, 0, sizeof *m);
    m->n = n > TOPO_MAX_GPUS ? TOPO_MAX_GPUS : n;
    void *buf[TOPO_MAX_GPUS], *back[TOPO_MAX_GPUS];
    cudaStream_t stream[TOPO_MAX_GPUS];
    for (int i = 0; i < m->n; i++) {
        CHECK_CUDA(cudaSetDevice(i));
        CHECK_CUDA(cudaMalloc(&buf[i], bytes));
        CHECK_CUDA(cudaMalloc(&back[i], bytes));
        CHECK_CUDA(cudaMemset(buf[i], 1, bytes));
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking));
    }
    void *host = NULL;
    CHECK_CUDA(cudaMallocHost(&host, bytes));
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->n; j++) {
            if (i == j) continue;
            int can = 0;
            CHECK_CUDA(cudaDeviceCanAccessPeer(&can, i, j));
            m->p2p[i][j] = can;
            if (can) {
                CHECK_CUDA(cudaSetDevice(i));
                cudaError_t rc = cudaDeviceEnablePeerAccess(j, 0);
                if (rc == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
                else CHECK_CUDA(rc);
                CHECK_CUDA(cudaSetDevice(j));
                rc = cudaDeviceEnablePeerAccess(i, 0);
                if (rc == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
                else CHECK_CUDA(rc);
            }
            CHECK_CUDA(cudaSetDevice(i));
            m->unidir_gbps[i][j] = bytes / time_copies(buf[j], j, buf[i], i, bytes, stream[i], REPS) / 1e9;
            m->latency_us[i][j] = 1e6 * time_copies(back[j], j, buf[i], i, 4, stream[i], LATENCY_REPS);
            /* both ways at once: i -> j on i's stream, j -> i on j's, timed around both */
            cudaEvent_t a, b;
            CHECK_CUDA(cudaEventCreate(&a));
            CHECK_CUDA(cudaEventCreate(&b));
            CHECK_CUDA(cudaDeviceSynchronize());
            CHECK_CUDA(cudaEventRecord(a, stream[i]));
            CHECK_CUDA(cudaStreamWaitEvent(stream[j], a, 0));
            for (int r = 0; r < REPS; r++) {
                CHECK_CUDA(cudaMemcpyPeerAsync(back[j], j, buf[i], i, bytes, stream[i]));
                CHECK_CUDA(cudaMemcpyPeerAsync(back[i], i, buf[j], j, bytes, stream[j]));
            }
            cudaEvent_t done_j;
            CHECK_CUDA(cudaSetDevice(j));
            CHECK_CUDA(cudaEventCreate(&done_j));
            CHECK_CUDA(cudaEventRecord(done_j, stream[j]));
            CHECK_CUDA(cudaSetDevice(i));
            CHECK_CUDA(cudaStreamWaitEvent(stream[i], done_j, 0));
            CHECK_CUDA(cudaEventRecord(b, stream[i]));
            CHECK_CUDA(cudaEventSynchronize(b));
            float ms = 0;
            CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
            m->bidir_gbps[i][j] = 2.0 * REPS * bytes / (ms * 1e-3) / 1e9;
            cudaEventDestroy(a);
            cudaEventDestroy(b);
            cudaEventDestroy(done_j);
            /* through host memory: i -> pinned host, then host -> j */
            CHECK_CUDA(cudaDeviceSynchronize());
            double t = 0;
            for (int r = 0; r <= REPS; r++) {
                cudaEvent_t x, y;
                CHECK_CUDA(cudaEventCreate(&x));
                CHECK_CUDA(cudaEventCreate(&y));
                CHECK_CUDA(cudaEventRecord(x, stream[i]));
                CHECK_CUDA(cudaMemcpyAsync(host, buf[i], bytes, cudaMemcpyDeviceToHost, stream[i]));
                CHECK_CUDA(cudaMemcpyAsync(back[j], host, bytes, cudaMemcpyHostToDevice, stream[i]));
                CHECK_CUDA(cudaEventRecord(y, stream[i]));
                CHECK_CUDA(cudaEventSynchronize(y));
                float xm = 0;
                CHECK_CUDA(cudaEventElapsedTime(&xm, x, y));
                if (r > 0) t += xm * 1e-3; /* the first one warms up */
                cudaEventDestroy(x);
                cudaEventDestroy(y);
            }
            m->host_gbps[i][j] = REPS * bytes / t / 1e9;
        }
    cudaFreeHost(host);
    for (int i = 0; i < m->n; i++) {
        cudaSetDevice(i);
        cudaFree(buf[i]);
        cudaFree(back[i]);
        cudaStreamDestroy(stream[i]);
    }
    cudaSetDevice(0);
    return 0;
}
