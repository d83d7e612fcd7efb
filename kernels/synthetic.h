/* synthetic.h — the synthetic tasks (the MLP's classification, the transformers'
 * tokens) as pure functions of (seed, sample index, feature or position), and the hash
 * and uniform draws they are made of (the ResNet's images, synthetic_images.h, too),
 * shared by the CPU loops and the CUDA kernels so that both backends see bit-identical
 * data.
 *
 * Sample s has label hash(s) mod classes and features mean[label] + noise, the
 * noise uniform in [-1, 1): learnable, but not in one step. Because a sample is a
 * function of its global index, N ranks with batch B see exactly the samples that
 * one rank with batch N*B sees, which the data-parallel equivalence test relies on. */
#ifndef DPSCALE_SYNTHETIC_H
#define DPSCALE_SYNTHETIC_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SYNTH_FN static inline __host__ __device__
#else
#define SYNTH_FN static inline
#endif

SYNTH_FN uint64_t synth_mix(uint64_t x) /* splitmix64's finaliser */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* synth_hash3(seed, a, b) = synth_mix(synth_hash_key(seed, a) + b): a key, two of its
 * three mixes, made once for the many b that share (seed, a) */
SYNTH_FN uint64_t synth_hash_key(uint64_t seed, uint64_t a) { return synth_mix(synth_mix(seed + 0x9e3779b97f4a7c15ULL) ^ a); }

SYNTH_FN uint64_t synth_hash3(uint64_t seed, uint64_t a, uint64_t b) { return synth_mix(synth_hash_key(seed, a) + b); }

/* Uniform in [-1, 1), exact in float (24 bits). */
SYNTH_FN float synth_uniform(uint64_t h) { return (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f; }

SYNTH_FN int synth_label(uint64_t seed, uint64_t sample, int classes)
{
    return (int)(synth_hash3(seed, 0x4c4142454cULL, sample) % (uint64_t)classes);
}

/* The class means shrink as 1/sqrt(input_dim) so that the task is equally hard at
 * any width: the distance between two means stays a few noise deviations. */
SYNTH_FN float synth_mean_scale(int input_dim) { return 8.0f / sqrtf((float)input_dim); }

SYNTH_FN float synth_feature(uint64_t seed, uint64_t sample, int label, int feature, float mean_scale)
{
    float mean = mean_scale * synth_uniform(synth_hash3(seed ^ 0x6d65616eULL, (uint64_t)label, (uint64_t)feature));
    float noise = synth_uniform(synth_hash3(seed, sample, (uint64_t)feature));
    return mean + noise;
}

/* The token task of the transformers: sequence s repeats a random phrase of
 * SYNTH_PERIOD tokens from [0, V-1); V-1 is the mask token. */
#define SYNTH_PERIOD 8

SYNTH_FN int synth_token(uint64_t seed, uint64_t sample, int t, int V)
{
    return (int)(synth_hash3(seed ^ 0x746f6b656eULL, sample, (uint64_t)(t % SYNTH_PERIOD)) % (uint64_t)(V - 1));
}

/* BERT's nmask masked positions of a sequence: start + k * step, k < nmask, with step
 * T / nmask made odd, so that no two masked positions are a period apart and every
 * masked token has an unmasked copy while fewer than half the positions are masked. */
SYNTH_FN int synth_mask_step(int T, int nmask)
{
    int step = T / nmask;
    return step > 1 && step % 2 == 0 ? step - 1 : step;
}

SYNTH_FN int synth_mask_start(uint64_t seed, uint64_t sample, int step)
{
    return (int)(synth_hash3(seed ^ 0x6d61736bULL, sample, 0) % (uint64_t)step);
}

/* Position t of sequence `sample`: its input token, its segment, and (GPT) its target,
 * the next token; for BERT, k >= 0 when t is the k-th masked position (its input is
 * the mask token, its target the token), else -1. The same for the CPU loop and the
 * CUDA kernel: both backends train on the same tokens. */
SYNTH_FN void synth_position(uint64_t seed, uint64_t sample, int t, int T, int V, int nmask, int bert, int *token,
                             int *segment, int *target, int *k)
{
    const int tok = synth_token(seed, sample, t, V);
    *token = tok;
    *segment = bert && t >= T / 2;
    *target = bert ? tok : synth_token(seed, sample, t + 1, V);
    *k = -1;
    if (bert) {
        const int step = synth_mask_step(T, nmask), start = synth_mask_start(seed, sample, step);
        if (t >= start && (t - start) % step == 0 && (t - start) / step < nmask) {
            *k = (t - start) / step;
            *token = V - 1;
        }
    }
}

#endif
