/* relu_mask.h — a ReLU's mask as bits: element i of a tensor (row-major, any shape) is
 * bit i % 8 of byte i / 8, set where the ReLU's output is > 0 (as stored: a value that
 * rounds to 0 in the compute dtype is not). 1/16 of a 16-bit tensor's bytes, so that a
 * backward reads it where it would read the output itself. C and C++ (nvcc) alike. */
#ifndef DPSCALE_RELU_MASK_H
#define DPSCALE_RELU_MASK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define RELU_MASK_HD __host__ __device__
#else
#define RELU_MASK_HD
#endif

#define RELU_MASK_ELEMS 8 /* elements a byte */

/* the bytes of the mask of n elements */
static inline RELU_MASK_HD size_t relu_mask_bytes(size_t n) { return (n + RELU_MASK_ELEMS - 1) / RELU_MASK_ELEMS; }

/* element i's bit */
static inline RELU_MASK_HD int relu_mask_bit(const uint8_t *mask, size_t i)
{
    return (mask[i / RELU_MASK_ELEMS] >> (i % RELU_MASK_ELEMS)) & 1;
}

#endif
