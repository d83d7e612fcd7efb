/* dtype.h — element types and reduction ops, shared by the backend seam (which
 * computes on them) and the comm seam (which moves and reduces them), so that
 * neither needs the other's header. */
#ifndef DPSCALE_DTYPE_H
#define DPSCALE_DTYPE_H

#include <stddef.h>

/* Element types of the buffers. Master weights, gradients and optimizer state are
 * always fp32; activations and the compute copy of the weights are in the
 * backend's compute dtype. */
enum dtype { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2 };

/* How a collective combines the ranks' values. AVG is the mean where the library
 * has one (NCCL); elsewhere the caller sums and scales (comm_has_avg). The values
 * match comm.allreduce_op (enum allreduce_op of config.h). */
enum reduce_op { REDUCE_AVG = 0, REDUCE_SUM = 1 };

static inline size_t dtype_size(int dt) { return dt == DT_F32 ? 4 : 2; }
static inline const char *dtype_name(int dt) { return dt == DT_BF16 ? "bf16" : dt == DT_F16 ? "fp16" : "fp32"; }

#endif
