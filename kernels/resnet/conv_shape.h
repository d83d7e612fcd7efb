/* conv_shape.h — the ResNet's window geometry: a convolution's or a pooling's windows
 * over NHWC images, which its kernels (resnet_cpu.h, resnet_kernels.h), the backend's
 * table (rn_ops.h) and the model's passes take. C and C++ (nvcc) alike. */
#ifndef DPSCALE_CONV_SHAPE_H
#define DPSCALE_CONV_SHAPE_H

#ifdef __CUDACC__
#define CONV_SHAPE_HD __host__ __device__
#else
#define CONV_SHAPE_HD
#endif

/* The geometry of a convolution's or a pooling's windows over NHWC images: N images
 * of H x W x C in, windows of R x S moved by `stride`, `pad` zeros (pooling: nothing)
 * around, P x Q out, P = (H + 2 pad - R) / stride + 1 and Q likewise. A convolution's
 * im2col rows (its col [N P Q x R S C]) lie ldcol >= R S C elements apart, the columns
 * past R S C zero (im2col writes them, col2im never reads them): a GEMM on col wants
 * 16-byte-aligned rows, which the stem's 7 x 7 x 3 = 147 are not. 0: R S C. */
struct conv_shape {
    int N, H, W, C;
    int R, S, stride, pad;
    int P, Q;
    int ldcol;
};

/* the elements from one col row to the next */
static inline CONV_SHAPE_HD int conv_col_ld(const struct conv_shape *s)
{
    return s->ldcol > 0 ? s->ldcol : s->R * s->S * s->C;
}

#endif
