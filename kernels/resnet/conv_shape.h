/* conv_shape.h — the ResNet's window geometry: a convolution's or a pooling's windows
 * over NHWC images, which its kernels (resnet_cpu.h, resnet_kernels.h), the backend's
 * table (rn_ops.h) and the model's passes take. C and C++ (nvcc) alike. */
#ifndef DPSCALE_CONV_SHAPE_H
#define DPSCALE_CONV_SHAPE_H

/* The geometry of a convolution's or a pooling's windows over NHWC images: N images
 * of H x W x C in, windows of R x S moved by `stride`, `pad` zeros (pooling: nothing)
 * around, P x Q out, P = (H + 2 pad - R) / stride + 1 and Q likewise. */
struct conv_shape {
    int N, H, W, C;
    int R, S, stride, pad;
    int P, Q;
};

#endif
