/* bn_partials.h — a training batch norm's partial sums, left by the GEMM or convolution
 * that wrote its input (its epilogue: bn_stats_epilogue_sm90.cuh), so that the batch norm
 * takes its statistics from them with no pass over that input (batchnorm.cu's finish).
 * C and C++ (nvcc) alike. */
#ifndef DPSCALE_BN_PARTIALS_H
#define DPSCALE_BN_PARTIALS_H

/* The partials' layout: `tiles` rows (one per tile of the producer's output rows) of `ld`
 * floats (its columns, the channels, rounded up to its column tile). */
struct bn_partials_shape {
    int tiles, ld;
};

/* For tile t and channel c: sum[t * ld + c] = the sum over the tile's rows of
 * d = x - shift[c], sumsq[t * ld + c] of d^2, x as the compute dtype stored it; shift [C]
 * fp32, near the channel's mean (the running mean). */
struct bn_partials {
    const float *sum, *sumsq, *shift;
    struct bn_partials_shape shape;
};

#endif
