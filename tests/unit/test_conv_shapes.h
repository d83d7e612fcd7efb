/* test_conv_shapes.h — the ResNet kernel tests' window geometries (the CPU's and the
 * CUDA backend's tests share them): conv() builds one, padded() gives its col rows a
 * pitch past R S C, test_conv_shapes() the list of odd sizes, strides 1 and 2, padding,
 * the stem's 7x7/2 on 3 channels, a shortcut's 1x1/2 and col rows padded to 8 elements
 * (as the model pads the stem's 147) that both tests run. */
#ifndef DPSCALE_TEST_CONV_SHAPES_H
#define DPSCALE_TEST_CONV_SHAPES_H

#include "kernels/resnet/conv_shape.h"

static inline struct conv_shape conv(int N, int H, int W, int C, int R, int stride, int pad)
{
    struct conv_shape s = {N, H, W, C, R, R, stride, pad, 0, 0, 0};
    s.P = (H + 2 * pad - R) / stride + 1;
    s.Q = (W + 2 * pad - R) / stride + 1;
    return s;
}

/* s with col rows of R S C rounded up to a multiple of `to` elements */
static inline struct conv_shape padded(struct conv_shape s, int to)
{
    s.ldcol = (s.R * s.S * s.C + to - 1) / to * to;
    return s;
}

#define TEST_CONV_SHAPES 6
/* out[0..TEST_CONV_SHAPES): the shapes every ResNet kernel test covers */
static inline void test_conv_shapes(struct conv_shape *out)
{
    out[0] = conv(2, 7, 6, 3, 3, 2, 1);
    out[1] = conv(1, 5, 5, 4, 3, 1, 1);
    out[2] = conv(2, 9, 8, 3, 7, 2, 3);
    out[3] = conv(2, 6, 5, 5, 1, 2, 0);
    out[4] = padded(conv(2, 9, 8, 3, 7, 2, 3), 8); /* 147 -> 152 */
    out[5] = padded(conv(2, 7, 7, 5, 3, 2, 1), 8); /* 45 -> 48 */
}

#endif
