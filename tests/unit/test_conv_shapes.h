/* test_conv_shapes.h — the ResNet kernel tests' window geometries (the CPU's and the
 * CUDA backend's tests share them): conv() builds one, padded() gives its col rows a
 * pitch past R S C, test_conv_shapes() the list of odd sizes, strides 1 and 2, padding,
 * the stem's 7x7/2 on 3 channels, a shortcut's 1x1/2 and col rows padded to 8 elements
 * (as the model pads the stem's 147) that both tests run; and the implicit GEMMs' cases. */
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

/* A convolution of K output channels, for the implicit GEMMs' tests (test_conv_sm90_cuda.c,
 * test_conv_wgrad_cuda.c) */
struct conv_case {
    struct conv_shape s;
    int K;
};

/* awkward shapes: few channels, odd sizes, every padding, windows 3 to 7, both strides, K on
 * both sides of 64 and past 128 */
#define CONV_AWKWARD 10
static inline const struct conv_case *conv_awkward(int *n)
{
    static struct conv_case c[CONV_AWKWARD];
    c[0] = (struct conv_case){conv(2, 8, 8, 64, 3, 1, 1), 64};
    c[1] = (struct conv_case){conv(2, 9, 7, 24, 3, 1, 1), 40};
    c[2] = (struct conv_case){conv(3, 11, 10, 8, 3, 2, 1), 16};
    c[3] = (struct conv_case){conv(1, 5, 5, 40, 5, 1, 2), 8};
    c[4] = (struct conv_case){conv(2, 13, 13, 16, 7, 2, 3), 64};
    c[5] = (struct conv_case){conv(2, 8, 8, 256, 3, 2, 1), 512};
    c[6] = (struct conv_case){conv(1, 4, 4, 64, 3, 1, 0), 136};
    c[7] = (struct conv_case){conv(2, 7, 7, 512, 3, 1, 1), 512};
    c[8] = (struct conv_case){conv(1, 3, 3, 8, 3, 1, 1), 8};
    c[9] = (struct conv_case){conv(4, 6, 6, 32, 3, 2, 0), 72};
    *n = CONV_AWKWARD;
    return c;
}

/* ResNet-50's windowed convolutions (torchvision's: the stride on the 3x3) at batch N into
 * c[0..RESNET50_WINDOWED) */
#define RESNET50_WINDOWED 7
static inline void resnet50_windowed(int N, struct conv_case *c)
{
    static const int hw[RESNET50_WINDOWED] = {56, 56, 28, 28, 14, 14, 7};
    static const int ch[RESNET50_WINDOWED] = {64, 128, 128, 256, 256, 512, 512};
    for (int i = 0; i < RESNET50_WINDOWED; i++) c[i] = (struct conv_case){conv(N, hw[i], hw[i], ch[i], 3, i % 2 ? 2 : 1, 1), ch[i]};
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
