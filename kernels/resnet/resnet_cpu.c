/* resnet_cpu.c — the ResNet's own operations on the CPU (resnet_cpu.h): im2col,
 * col2im, batch norm forward (alone, or with the residual add and ReLU) and backward,
 * the residual add with ReLU, max and average pooling. Parallel over rows of output;
 * a channel's sum over the rows is taken over fixed chunks of BN_CHUNK rows, whose
 * partial sums are added in order, so the bits do not depend on the thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/conv_shape.h"
#include "kernels/resnet/relu_mask.h"
#include "kernels/resnet/resnet_cpu.h"
#include "kernels/resnet/synthetic_images.h"

#define BN_CHUNK 512 /* rows of one partial sum of a channel */

static void *scratch(size_t count, size_t size)
{
    void *p = malloc(count * size);
    if (p == NULL) {
        fprintf(stderr, "dpscale: error: resnet_cpu: out of host memory for %zu bytes of scratch\n", count * size);
        abort();
    }
    return p;
}

void cpu_im2col(float *col, const float *x, const struct conv_shape *s)
{
    const int R = s->R, S = s->S, C = s->C;
    const size_t K = (size_t)R * S * C, ld = (size_t)conv_col_ld(s), rowlen = (size_t)C * sizeof(float);
#pragma omp parallel for schedule(static)
    for (int np = 0; np < s->N * s->P; np++) {
        const int n = np / s->P, p = np % s->P;
        for (int q = 0; q < s->Q; q++) {
            float *c = col + ((size_t)np * s->Q + q) * ld;
            memset(c + K, 0, (ld - K) * sizeof(float));
            for (int r = 0; r < R; r++) {
                const int h = p * s->stride - s->pad + r;
                for (int t = 0; t < S; t++) {
                    const int w = q * s->stride - s->pad + t;
                    float *dst = c + ((size_t)r * S + t) * C;
                    if (h < 0 || h >= s->H || w < 0 || w >= s->W) memset(dst, 0, rowlen);
                    else memcpy(dst, x + (((size_t)n * s->H + h) * s->W + w) * C, rowlen);
                }
            }
        }
    }
}

void cpu_col2im(float *dx, const float *col, const struct conv_shape *s)
{
    const int R = s->R, S = s->S, C = s->C;
    const size_t K = (size_t)conv_col_ld(s); /* a col row's pitch */
#pragma omp parallel for schedule(static)
    for (int nh = 0; nh < s->N * s->H; nh++) {
        const int n = nh / s->H, h = nh % s->H;
        for (int w = 0; w < s->W; w++) {
            float *d = dx + ((size_t)nh * s->W + w) * C;
            for (int c = 0; c < C; c++) d[c] = 0.0f;
            /* the windows (p, q) that cover (h, w), at their tap (r, t) */
            for (int r = 0; r < R; r++) {
                const int hp = h + s->pad - r;
                if (hp < 0 || hp % s->stride != 0 || hp / s->stride >= s->P) continue;
                const int p = hp / s->stride;
                for (int t = 0; t < S; t++) {
                    const int wq = w + s->pad - t;
                    if (wq < 0 || wq % s->stride != 0 || wq / s->stride >= s->Q) continue;
                    const int q = wq / s->stride;
                    const float *src = col + (((size_t)n * s->P + p) * s->Q + q) * K + ((size_t)r * S + t) * C;
                    for (int c = 0; c < C; c++) d[c] += src[c];
                }
            }
        }
    }
}

/* ---- batch norm ------------------------------------------------------------------- */

static int nchunks(int rows) { return (rows + BN_CHUNK - 1) / BN_CHUNK; }

/* sum[c] over the rows of x [rows x C] (centre NULL), or of (x - centre[c])^2: each
 * chunk's partial sum into part, then the partials added in chunk order. */
static void column_sums(double *sum, const float *x, const double *centre, int rows, int C, double *part)
{
    const int nk = nchunks(rows);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nk; k++) {
        double *acc = part + (size_t)k * C;
        for (int c = 0; c < C; c++) acc[c] = 0.0;
        const int end = (k + 1) * BN_CHUNK < rows ? (k + 1) * BN_CHUNK : rows;
        for (int i = k * BN_CHUNK; i < end; i++) {
            const float *xi = x + (size_t)i * C;
            if (centre == NULL)
                for (int c = 0; c < C; c++) acc[c] += xi[c];
            else
                for (int c = 0; c < C; c++) {
                    const double d = xi[c] - centre[c];
                    acc[c] += d * d;
                }
        }
    }
    for (int c = 0; c < C; c++) sum[c] = 0.0;
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) sum[c] += part[(size_t)k * C + c];
}

/* mean and rstd [C] of x (training: the batch's, and the running statistics updated;
 * frozen: the running ones) */
static void batch_statistics(float *mean, float *rstd, float *run_mean, float *run_var, const float *x, int rows, int C,
                             int training, float momentum)
{
    if (!training) {
        for (int c = 0; c < C; c++) {
            mean[c] = run_mean[c];
            rstd[c] = 1.0f / sqrtf(run_var[c] + BATCHNORM_EPS);
        }
        return;
    }
    double *part = scratch((size_t)nchunks(rows) * C, sizeof(double));
    double *m = scratch(2 * (size_t)C, sizeof(double)), *v = m + C;
    column_sums(m, x, NULL, rows, C, part);
    for (int c = 0; c < C; c++) m[c] /= rows;
    column_sums(v, x, m, rows, C, part);
    const double unbias = rows > 1 ? (double)rows / (rows - 1) : 1.0;
    for (int c = 0; c < C; c++) {
        const double var = v[c] / rows;
        mean[c] = (float)m[c];
        rstd[c] = (float)(1.0 / sqrt(var + BATCHNORM_EPS));
        run_mean[c] = (1.0f - momentum) * run_mean[c] + momentum * (float)m[c];
        run_var[c] = (1.0f - momentum) * run_var[c] + momentum * (float)(var * unbias);
    }
    free(m);
    free(part);
}

/* A channel's normalised value before any ReLU: the forward's, and the backward's
 * recomputation of its ReLU mask, so that the two agree bit for bit. */
static inline float bn_value(float x, float mean, float rstd, float gamma, float beta)
{
    return (x - mean) * rstd * gamma + beta;
}

void cpu_batchnorm_forward(float *y, float *mean, float *rstd, float *run_mean, float *run_var, const float *x,
                           const float *gamma, const float *beta, int rows, int C, int training, float momentum,
                           int relu)
{
    batch_statistics(mean, rstd, run_mean, run_var, x, rows, C, training, momentum);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * C;
        float *yi = y + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            const float v = bn_value(xi[c], mean[c], rstd[c], gamma[c], beta[c]);
            yi[c] = relu && v < 0.0f ? 0.0f : v;
        }
    }
}

static void operand_statistics(const struct bn_operands *o, int rows, int C, int training, float momentum)
{
    batch_statistics(o->mean, o->rstd, o->run_mean, o->run_var, o->x, rows, C, training, momentum);
}

/* One pass for the element-wise work of batchnorm_forward (no ReLU), the shortcut's
 * batchnorm_forward and add_relu: each value as those compute it, in fp32 (nothing to
 * round), added in add_relu's order. */
void cpu_batchnorm_add_relu_forward(float *y, const struct bn_operands *bn, const struct bn_operands *proj,
                                    const float *shortcut, int rows, int C, int training, float momentum)
{
    operand_statistics(bn, rows, C, training, momentum);
    if (proj != NULL) operand_statistics(proj, rows, C, training, momentum);
    const float *x = bn->x, *gamma = bn->gamma, *beta = bn->beta, *mean = bn->mean, *rstd = bn->rstd;
    const float *r = proj != NULL ? proj->x : shortcut; /* the shortcut's tensor, before its batch norm if any */
    const float *pgamma = proj != NULL ? proj->gamma : NULL, *pbeta = proj != NULL ? proj->beta : NULL;
    const float *pmean = proj != NULL ? proj->mean : NULL, *prstd = proj != NULL ? proj->rstd : NULL;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * C, *ri = r + (size_t)i * C;
        float *yi = y + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            const float s = proj == NULL ? ri[c] : bn_value(ri[c], pmean[c], prstd[c], pgamma[c], pbeta[c]);
            const float v = bn_value(xi[c], mean[c], rstd[c], gamma[c], beta[c]) + s;
            yi[c] = v > 0.0f ? v : 0.0f;
        }
    }
}

void cpu_batchnorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean,
                            const float *rstd, const float *gamma, const float *beta, int rows, int C, int training,
                            int relu)
{
    const int nk = nchunks(rows);
    double *part = scratch((size_t)nk * 2 * C, sizeof(double));
    /* per chunk: the sums of g and of g xhat */
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nk; k++) {
        double *sg = part + (size_t)k * 2 * C, *sgx = sg + C;
        for (int c = 0; c < C; c++) sg[c] = sgx[c] = 0.0;
        const int end = (k + 1) * BN_CHUNK < rows ? (k + 1) * BN_CHUNK : rows;
        for (int i = k * BN_CHUNK; i < end; i++) {
            const float *xi = x + (size_t)i * C, *di = dy + (size_t)i * C;
            for (int c = 0; c < C; c++) {
                /* the forward's max(v, 0) is > 0 exactly where v is (a NaN: neither) */
                const float g = relu && !(bn_value(xi[c], mean[c], rstd[c], gamma[c], beta[c]) > 0.0f) ? 0.0f : di[c];
                sg[c] += g;
                sgx[c] += (double)g * ((xi[c] - mean[c]) * rstd[c]);
            }
        }
    }
    for (int c = 0; c < C; c++) {
        double sg = 0.0, sgx = 0.0;
        for (int k = 0; k < nk; k++) {
            sg += part[(size_t)k * 2 * C + c];
            sgx += part[(size_t)k * 2 * C + C + c];
        }
        dbeta[c] = (float)sg;
        dgamma[c] = (float)sgx;
    }
    free(part);
    const float inv_rows = training ? 1.0f / (float)rows : 0.0f; /* frozen: the statistics are constants */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * C, *di = dy + (size_t)i * C;
        float *dxi = dx + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            const float g = relu && !(bn_value(xi[c], mean[c], rstd[c], gamma[c], beta[c]) > 0.0f) ? 0.0f : di[c];
            const float xhat = (xi[c] - mean[c]) * rstd[c];
            dxi[c] = gamma[c] * rstd[c] * (g - (dbeta[c] + xhat * dgamma[c]) * inv_rows);
        }
    }
}

void cpu_relu_mask(uint8_t *mask, const float *y, size_t n)
{
    const size_t bytes = relu_mask_bytes(n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < bytes; i++) {
        unsigned m = 0;
        for (size_t k = 0; k < RELU_MASK_ELEMS && i * RELU_MASK_ELEMS + k < n; k++)
            m |= (y[i * RELU_MASK_ELEMS + k] > 0.0f ? 1u : 0u) << k;
        mask[i] = (uint8_t)m;
    }
}

void cpu_relu_mask_apply(float *g, const float *dy, const uint8_t *mask, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) g[i] = relu_mask_bit(mask, i) ? dy[i] : 0.0f;
}

void cpu_add_relu(float *y, const float *x, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++) {
        const float v = y[i] + x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

/* ---- pooling ---------------------------------------------------------------------- */

/* The taps [*lo, *hi) of a window at output position `o` that fall inside [0, size). */
static void window_taps(int o, int stride, int pad, int R, int size, int *lo, int *hi)
{
    const int start = o * stride - pad;
    *lo = start < 0 ? -start : 0;
    *hi = start + R > size ? size - start : R;
}

void cpu_maxpool_forward(float *y, uint8_t *argmax, const float *x, const struct conv_shape *s)
{
    const int C = s->C;
#pragma omp parallel for schedule(static)
    for (int np = 0; np < s->N * s->P; np++) {
        const int n = np / s->P, p = np % s->P;
        int r0, r1;
        window_taps(p, s->stride, s->pad, s->R, s->H, &r0, &r1);
        for (int q = 0; q < s->Q; q++) {
            int t0, t1;
            window_taps(q, s->stride, s->pad, s->S, s->W, &t0, &t1);
            float *yo = y + ((size_t)np * s->Q + q) * C;
            uint8_t *am = argmax + ((size_t)np * s->Q + q) * C;
            for (int r = r0; r < r1; r++)
                for (int t = t0; t < t1; t++) {
                    const int h = p * s->stride - s->pad + r, w = q * s->stride - s->pad + t;
                    const float *xi = x + (((size_t)n * s->H + h) * s->W + w) * C;
                    const uint8_t at = (uint8_t)(r * s->S + t);
                    for (int c = 0; c < C; c++)
                        if ((r == r0 && t == t0) || xi[c] > yo[c]) {
                            yo[c] = xi[c];
                            am[c] = at;
                        }
                }
        }
    }
}

void cpu_maxpool_backward(float *dx, const float *dy, const uint8_t *argmax, const struct conv_shape *s)
{
    const int C = s->C;
#pragma omp parallel for schedule(static)
    for (int nh = 0; nh < s->N * s->H; nh++) {
        const int n = nh / s->H, h = nh % s->H;
        /* the output rows p whose windows hold row h: p stride - pad <= h <= p stride - pad + R - 1 */
        const int above = h + s->pad - s->R + 1;
        const int p0 = above <= 0 ? 0 : (above + s->stride - 1) / s->stride;
        const int p1 = (h + s->pad) / s->stride < s->P - 1 ? (h + s->pad) / s->stride : s->P - 1;
        for (int w = 0; w < s->W; w++) {
            float *d = dx + ((size_t)nh * s->W + w) * C;
            for (int c = 0; c < C; c++) d[c] = 0.0f;
            const int left = w + s->pad - s->S + 1;
            const int q0 = left <= 0 ? 0 : (left + s->stride - 1) / s->stride;
            const int q1 = (w + s->pad) / s->stride < s->Q - 1 ? (w + s->pad) / s->stride : s->Q - 1;
            for (int p = p0; p <= p1; p++)
                for (int q = q0; q <= q1; q++) {
                    /* (h, w)'s tap in window (p, q) */
                    const int at = (h - (p * s->stride - s->pad)) * s->S + (w - (q * s->stride - s->pad));
                    const size_t o = (((size_t)n * s->P + p) * s->Q + q) * C;
                    for (int c = 0; c < C; c++)
                        if (argmax[o + c] == at) d[c] += dy[o + c];
                }
        }
    }
}

void cpu_avgpool_forward(float *y, const float *x, int N, int HW, int C)
{
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *yn = y + (size_t)n * C;
        for (int c = 0; c < C; c++) yn[c] = 0.0f;
        for (int i = 0; i < HW; i++) {
            const float *xi = x + ((size_t)n * HW + i) * C;
            for (int c = 0; c < C; c++) yn[c] += xi[c];
        }
        for (int c = 0; c < C; c++) yn[c] *= inv;
    }
}

void cpu_avgpool_backward(float *dx, const float *dy, int N, int HW, int C)
{
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for schedule(static)
    for (int ni = 0; ni < N * HW; ni++) {
        const float *d = dy + (size_t)(ni / HW) * C;
        float *o = dx + (size_t)ni * C;
        for (int c = 0; c < C; c++) o[c] = d[c] * inv;
    }
}

/* The image task (synthetic_images.h): B images from first_sample, and their labels. */
void cpu_synth_images(float *x, int *labels, uint64_t first_sample, int B, int H, int W, int C, int classes,
                      uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const uint64_t sample = first_sample + (uint64_t)b;
        const int label = synth_label(seed, sample, classes);
        labels[b] = label;
        float *img = x + (size_t)b * H * W * C;
        const uint64_t ck = synth_colour_key(seed, label), nk = synth_noise_key(seed, sample);
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                const int tile = synth_tile(h, w, H, W);
                const size_t e = ((size_t)h * W + w) * C;
                for (int c = 0; c < C; c++) img[e + c] = synth_colour(ck, tile, c, C) + synth_noise(nk, e + c);
            }
    }
}
