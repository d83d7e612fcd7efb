/* dtype.h — element types and reduction ops, shared by the backend seam (which
 * computes on them) and the comm seam (which moves and reduces them), so that
 * neither needs the other's header. */
#ifndef DPSCALE_DTYPE_H
#define DPSCALE_DTYPE_H

#include <stddef.h>

#include "kernels/kernel_types.h" /* enum dtype, dtype_size: the kernels' too */

/* How a collective combines the ranks' values. AVG is the mean where the library
 * has one (NCCL); elsewhere the caller sums and scales (comm_has_avg). The values
 * match comm.allreduce_op (enum allreduce_op of config.h). */
enum reduce_op { REDUCE_AVG = 0, REDUCE_SUM = 1 };

static inline const char *dtype_name(int dt) { return dt == DT_BF16 ? "bf16" : dt == DT_F16 ? "fp16" : "fp32"; }

#endif
