/* test_conv_shapes.h — the ResNet kernel tests' window geometries (the CPU's and the
 * CUDA backend's tests share them): conv() builds one, test_conv_shapes() the list of
 * odd sizes, strides 1 and 2, padding, the stem's 7x7/2 on 3 channels and a shortcut's
 * 1x1/2 that both tests run. */
#ifndef DPSCALE_TEST_CONV_SHAPES_H
#define DPSCALE_TEST_CONV_SHAPES_H

#include "kernels/resnet/conv_shape.h"

static inline struct conv_shape conv(int N, int H, int W, int C, int R, int stride, int pad)
{
    struct conv_shape s = {N, H, W, C, R, R, stride, pad, 0, 0};
    s.P = (H + 2 * pad - R) / stride + 1;
    s.Q = (W + 2 * pad - R) / stride + 1;
    return s;
}

#define TEST_CONV_SHAPES 4
/* out[0..TEST_CONV_SHAPES): the shapes every ResNet kernel test covers */
static inline void test_conv_shapes(struct conv_shape *out)
{
    out[0] = conv(2, 7, 6, 3, 3, 2, 1);
    out[1] = conv(1, 5, 5, 4, 3, 1, 1);
    out[2] = conv(2, 9, 8, 3, 7, 2, 3);
    out[3] = conv(2, 6, 5, 5, 1, 2, 0);
}

#endif
