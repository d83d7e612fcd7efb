/* synthetic_images.h — the ResNet's synthetic task, its images, built on synthetic.h's
 * hash and uniform draws; shared by cpu_synth_images (resnet_cpu.h) and
 * cuda_synth_images (resnet_kernels.h) so that both backends see bit-identical images. */
#ifndef DPSCALE_SYNTHETIC_IMAGES_H
#define DPSCALE_SYNTHETIC_IMAGES_H

#include <stdint.h>

#include "kernels/synthetic.h"

/* The image task of the ResNet: image `sample` of class synth_label is its class's
 * picture, a 4 x 4 grid of tiles each of a colour drawn per (class, tile, channel) in
 * [-1, 1), plus noise uniform in [-1, 1) per pixel and channel: coarse enough for a
 * convolution to see, not separable in one step. Pixel (h, w, c) of an H x W x C image. */
#define SYNTH_TILES 4

SYNTH_FN float synth_pixel(uint64_t seed, uint64_t sample, int label, int h, int w, int c, int H, int W, int C)
{
    const int tile = (int)((int64_t)h * SYNTH_TILES / H) * SYNTH_TILES + (int)((int64_t)w * SYNTH_TILES / W);
    const float colour = synth_uniform(synth_hash3(seed ^ 0x696d616765ULL, (uint64_t)label, (uint64_t)tile * C + c));
    const float noise = synth_uniform(synth_hash3(seed ^ 0x706978656cULL, sample, ((uint64_t)h * W + w) * C + c));
    return colour + noise;
}

#endif
