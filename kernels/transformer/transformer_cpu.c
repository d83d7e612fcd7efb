/* transformer_cpu.c — the transformer's own operations on the CPU: embeddings,
 * LayerNorm, multi-head attention, the residual add and row gathers/scatters.
 * Sums over rows are split by columns among threads, so their order is fixed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/transformer/transformer_cpu.h"
#include "kernels/synthetic.h"

/* columns per thread's share of a column-parallel sum over rows (128 bytes) */
#define COL_BLOCK 32

void cpu_embed_forward(float *x, const int *tokens, const int *segments, const float *wte, const float *wpe,
                       const float *wse, int B, int T, int C)
{
    int use_seg = wse != NULL && segments != NULL;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        float *xr = x + (size_t)r * C;
        const float *e = wte + (size_t)tokens[r] * C, *p = wpe + (size_t)(r % T) * C;
        if (use_seg) {
            const float *s = wse + (size_t)segments[r] * C;
            for (int j = 0; j < C; j++) xr[j] = e[j] + p[j] + s[j];
        } else {
            for (int j = 0; j < C; j++) xr[j] = e[j] + p[j];
        }
    }
}

void cpu_embed_backward(float *dwte, float *dwpe, float *dwse, const int *tokens, const int *segments,
                        const float *dx, int B, int T, int C, int V, int S)
{
    int rows = B * T;
#pragma omp parallel
    {
        /* dwpe[t,:] = dx[0,t,:] + dx[1,t,:] + ... in b order; one thread per t */
#pragma omp for schedule(static)
        for (int t = 0; t < T; t++) {
            float *g = dwpe + (size_t)t * C;
            for (int j = 0; j < C; j++) g[j] = 0.0f;
            for (int b = 0; b < B; b++) {
                const float *d = dx + ((size_t)b * T + t) * C;
                for (int j = 0; j < C; j++) g[j] += d[j];
            }
        }
        /* dwte and dwse: each thread owns a block of columns and walks the rows in order */
#pragma omp for schedule(static)
        for (int jb = 0; jb < C; jb += COL_BLOCK) {
            int je = jb + COL_BLOCK < C ? jb + COL_BLOCK : C;
            for (int r = 0; r < rows; r++) {
                int v = tokens[r];
                if (v < 0 || v >= V) continue;
                float *g = dwte + (size_t)v * C;
                const float *d = dx + (size_t)r * C;
                for (int j = jb; j < je; j++) g[j] += d[j];
            }
            if (dwse != NULL) {
                for (int s = 0; s < S; s++)
                    for (int j = jb; j < je; j++) dwse[(size_t)s * C + j] = 0.0f;
                if (segments != NULL)
                    for (int r = 0; r < rows; r++) {
                        int s = segments[r];
                        if (s < 0 || s >= S) continue;
                        float *g = dwse + (size_t)s * C;
                        const float *d = dx + (size_t)r * C;
                        for (int j = jb; j < je; j++) g[j] += d[j];
                    }
            }
        }
    }
}

void cpu_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                           int rows, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * C;
        float *yi = y + (size_t)i * C;
        double s = 0.0;
        for (int j = 0; j < C; j++) s += xi[j];
        double m = s / C, v = 0.0;
        for (int j = 0; j < C; j++) {
            double d = xi[j] - m;
            v += d * d;
        }
        float mf = (float)m, rs = (float)(1.0 / sqrt(v / C + 1e-5));
        for (int j = 0; j < C; j++) yi[j] = (xi[j] - mf) * rs * gamma[j] + beta[j];
        mean[i] = mf;
        rstd[i] = rs;
    }
}

void cpu_layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean,
                            const float *rstd, const float *gamma, int rows, int C, int accumulate)
{
#pragma omp parallel
    {
        /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma */
#pragma omp for schedule(static)
        for (int i = 0; i < rows; i++) {
            const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
            float *dxi = dx + (size_t)i * C;
            float m = mean[i], rs = rstd[i];
            double sg = 0.0, sgx = 0.0;
            for (int j = 0; j < C; j++) {
                float g = dyi[j] * gamma[j], xh = (xi[j] - m) * rs;
                sg += g;
                sgx += (double)g * xh;
            }
            float mg = (float)(sg / C), mgx = (float)(sgx / C);
            for (int j = 0; j < C; j++) {
                float g = dyi[j] * gamma[j], xh = (xi[j] - m) * rs;
                dxi[j] = (accumulate ? dxi[j] : 0.0f) + rs * (g - mg - xh * mgx);
            }
        }
        /* dgamma, dbeta: column blocks, rows in increasing order */
#pragma omp for schedule(static)
        for (int jb = 0; jb < C; jb += COL_BLOCK) {
            int je = jb + COL_BLOCK < C ? jb + COL_BLOCK : C;
            for (int j = jb; j < je; j++) dgamma[j] = dbeta[j] = 0.0f;
            for (int i = 0; i < rows; i++) {
                const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
                float m = mean[i], rs = rstd[i];
                for (int j = jb; j < je; j++) {
                    dgamma[j] += dyi[j] * ((xi[j] - m) * rs);
                    dbeta[j] += dyi[j];
                }
            }
        }
    }
}

void cpu_attention_forward(float *out, float *probs, const float *qkv, int B, int T, int C, int H, int causal)
{
    int D = C / H;
    size_t ld = (size_t)3 * C; /* row stride of qkv */
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        const float *q = qkv + (size_t)b * T * ld + (size_t)h * D, *k = q + C, *v = q + 2 * (size_t)C;
        float *o = out + (size_t)b * T * C + (size_t)h * D;
        for (int i = 0; i < T; i++) {
            float *p = probs + ((size_t)bh * T + i) * T;
            const float *qi = q + i * ld;
            int jn = causal ? i + 1 : T;
            float pmax = -INFINITY;
            for (int j = 0; j < jn; j++) {
                const float *kj = k + j * ld;
                float s = 0.0f;
                for (int d = 0; d < D; d++) s += qi[d] * kj[d];
                s *= scale;
                p[j] = s;
                pmax = s > pmax ? s : pmax;
            }
            float sum = 0.0f;
            for (int j = 0; j < jn; j++) {
                p[j] = expf(p[j] - pmax);
                sum += p[j];
            }
            float inv = 1.0f / sum;
            for (int j = 0; j < jn; j++) p[j] *= inv;
            for (int j = jn; j < T; j++) p[j] = 0.0f;
            float *oi = o + (size_t)i * C;
            for (int d = 0; d < D; d++) oi[d] = 0.0f;
            for (int j = 0; j < jn; j++) {
                const float *vj = v + j * ld;
                float pj = p[j];
                for (int d = 0; d < D; d++) oi[d] += pj * vj[d];
            }
        }
    }
}

void cpu_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *probs, int B, int T, int C,
                            int H, int causal)
{
    int D = C / H;
    size_t ld = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel
    {
        float *ds = malloc((size_t)T * sizeof *ds); /* one row of dP, then of dS */
        if (ds == NULL) {
            fprintf(stderr, "dpscale: error: cpu_attention_backward: out of host memory for a row of %d\n", T);
            abort();
        }
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            int b = bh / H, h = bh % H;
            size_t base = (size_t)b * T * ld + (size_t)h * D;
            const float *q = qkv + base, *k = q + C, *v = q + 2 * (size_t)C;
            float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * (size_t)C;
            const float *dO = dout + (size_t)b * T * C + (size_t)h * D;
            /* this (b, h) owns its D columns of dq, dk and dv in the rows of sequence b */
            for (int i = 0; i < T; i++)
                for (int d = 0; d < D; d++) dq[i * ld + d] = dk[i * ld + d] = dv[i * ld + d] = 0.0f;
            for (int i = 0; i < T; i++) {
                const float *p = probs + ((size_t)bh * T + i) * T;
                const float *doi = dO + (size_t)i * C, *qi = q + i * ld;
                int jn = causal ? i + 1 : T;
                /* dP_ij = dO_i . v_j; dV_j += P_ij dO_i */
                float dot = 0.0f;
                for (int j = 0; j < jn; j++) {
                    const float *vj = v + j * ld;
                    float *dvj = dv + j * ld;
                    float s = 0.0f, pj = p[j];
                    for (int d = 0; d < D; d++) {
                        s += doi[d] * vj[d];
                        dvj[d] += pj * doi[d];
                    }
                    ds[j] = s;
                    dot += s * pj;
                }
                /* dS_ij = P_ij (dP_ij - sum_j dP_ij P_ij); dQ_i += scale dS_ij k_j; dK_j += scale dS_ij q_i */
                float *dqi = dq + i * ld;
                for (int j = 0; j < jn; j++) {
                    float g = p[j] * (ds[j] - dot) * scale;
                    const float *kj = k + j * ld;
                    float *dkj = dk + j * ld;
                    for (int d = 0; d < D; d++) {
                        dqi[d] += g * kj[d];
                        dkj[d] += g * qi[d];
                    }
                }
            }
        }
        free(ds);
    }
}

void cpu_add(float *y, const float *x, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void cpu_gather_rows(float *dst, const float *src, const int *rows, int n, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) memcpy(dst + (size_t)i * C, src + (size_t)rows[i] * C, (size_t)C * sizeof *dst);
}

void cpu_scatter_rows(float *dst, const float *src, const int *rows, int n, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) memcpy(dst + (size_t)rows[i] * C, src + (size_t)i * C, (size_t)C * sizeof *dst);
}

/* The token task (synthetic.h): B sequences from first_sample. */
void cpu_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B, int T,
                      int V, int nmask, int bert, uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const int row = b * T + t;
            int target, k;
            synth_position(seed, first_sample + (uint64_t)b, t, T, V, nmask, bert, &tokens[row], &segments[row], &target,
                           &k);
            if (!bert) targets[row] = target;
            else if (k >= 0) {
                targets[b * nmask + k] = target;
                mask_rows[b * nmask + k] = row;
            }
        }
}
