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
 * convolution to see, not separable in one step. Pixel (h, w, c) of an H x W x C image is
 * synth_pixel; its two draws' keys are per class and per image (synth_hash_key), so a
 * loop over an image makes them once and then mixes once per draw (synth_colour,
 * synth_noise): the same bits. */
#define SYNTH_TILES 4

SYNTH_FN uint64_t synth_colour_key(uint64_t seed, int label) { return synth_hash_key(seed ^ 0x696d616765ULL, (uint64_t)label); }
SYNTH_FN uint64_t synth_noise_key(uint64_t seed, uint64_t sample) { return synth_hash_key(seed ^ 0x706978656cULL, sample); }

/* the tile of row h, column w */
SYNTH_FN int synth_tile(int h, int w, int H, int W)
{
    return (int)((int64_t)h * SYNTH_TILES / H) * SYNTH_TILES + (int)((int64_t)w * SYNTH_TILES / W);
}

/* channel c of a tile's colour, and the noise of element e = (h W + w) C + c */
SYNTH_FN float synth_colour(uint64_t colour_key, int tile, int c, int C)
{
    return synth_uniform(synth_mix(colour_key + ((uint64_t)tile * C + c)));
}
SYNTH_FN float synth_noise(uint64_t noise_key, uint64_t e) { return synth_uniform(synth_mix(noise_key + e)); }

SYNTH_FN float synth_pixel(uint64_t seed, uint64_t sample, int label, int h, int w, int c, int H, int W, int C)
{
    return synth_colour(synth_colour_key(seed, label), synth_tile(h, w, H, W), c, C) +
           synth_noise(synth_noise_key(seed, sample), ((uint64_t)h * W + w) * C + c);
}

#endif
