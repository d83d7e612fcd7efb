/* test_transformer_kernels.c — the CPU transformer kernels: each backward against
 * central differences of L = sum(forward output * R), the forward outputs against
 * direct definitions, what is overwritten or added to, and bit-identical gradients
 * whatever the OpenMP thread count. */
#include <omp.h>
#include <stdlib.h>

#include "kernels/transformer/transformer_cpu.h"
#include "check.h"
#include "test_arrays.h"

#define FD_EPS 1e-3f
#define FD_TOL 1e-2

/* ---- embeddings ---- */

enum { EB = 2, ET = 5, EC = 8, EV = 7, ES = 2 };
static const int k_tokens[EB * ET] = {3, 1, 3, 0, 6, 1, 1, 5, 3, 2}; /* 4 is unused */
static const int k_segments[EB * ET] = {0, 0, 1, 1, 1, 0, 1, 1, 0, 0};

static double embed_loss(const float *wte, const float *wpe, const float *wse, const float *R)
{
    float x[EB * ET * EC];
    cpu_embed_forward(x, k_tokens, k_segments, wte, wpe, wse, EB, ET, EC);
    return dot_d(x, R, EB * ET * EC);
}

/* Three float arrays and the fixed weights R: the arguments of either loss below. */
struct loss_args {
    const float *a, *b, *c, *R;
    double (*loss)(const float *a, const float *b, const float *c, const float *R);
};

/* The worst relative error of grad against central differences of args->loss, each
 * element of w (one of the arrays the loss reads) perturbed in turn. */
static double fd_worst(float *w, size_t n, const float *grad, const struct loss_args *args)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        float keep = w[i];
        w[i] = keep + FD_EPS;
        double lp = args->loss(args->a, args->b, args->c, args->R);
        w[i] = keep - FD_EPS;
        double lm = args->loss(args->a, args->b, args->c, args->R);
        w[i] = keep;
        double e = rel_err(grad[i], (lp - lm) / (2.0 * FD_EPS));
        worst = e > worst ? e : worst;
    }
    return worst;
}

TEST(embed_forward_adds_token_position_and_segment_rows)
{
    float *wte = rand_array(EV * EC, 1), *wpe = rand_array(ET * EC, 2), *wse = rand_array(ES * EC, 3);
    float x[EB * ET * EC], x2[EB * ET * EC];
    cpu_embed_forward(x, k_tokens, k_segments, wte, wpe, wse, EB, ET, EC);
    cpu_embed_forward(x2, k_tokens, NULL, wte, wpe, NULL, EB, ET, EC);
    for (int b = 0; b < EB; b++)
        for (int t = 0; t < ET; t++)
            for (int j = 0; j < EC; j++) {
                int r = b * ET + t;
                float want2 = wte[k_tokens[r] * EC + j] + wpe[t * EC + j];
                CHECK(x2[r * EC + j] == want2);
                CHECK(x[r * EC + j] == want2 + wse[k_segments[r] * EC + j]);
            }
    free(wte), free(wpe), free(wse);
}

TEST(embed_backward_matches_finite_differences)
{
    float *wte = rand_array(EV * EC, 11), *wpe = rand_array(ET * EC, 12), *wse = rand_array(ES * EC, 13);
    float *R = rand_array(EB * ET * EC, 14);
    /* dL/dx = R; dwpe and dwse start as garbage (overwritten), dwte at zero (added to) */
    float *dwte = filled(EV * EC, 0.0f), *dwpe = filled(ET * EC, 123.0f), *dwse = filled(ES * EC, -77.0f);
    cpu_embed_backward(dwte, dwpe, dwse, k_tokens, k_segments, R, EB, ET, EC, EV, ES);
    const struct loss_args args = {wte, wpe, wse, R, embed_loss};
    double e_te = fd_worst(wte, EV * EC, dwte, &args);
    double e_pe = fd_worst(wpe, ET * EC, dwpe, &args);
    double e_se = fd_worst(wse, ES * EC, dwse, &args);
    printf("    worst relative error: wte %.2e, wpe %.2e, wse %.2e\n", e_te, e_pe, e_se);
    CHECK(e_te < FD_TOL);
    CHECK(e_pe < FD_TOL);
    CHECK(e_se < FD_TOL);
    /* the unused token's row gets nothing */
    for (int j = 0; j < EC; j++) CHECK(dwte[4 * EC + j] == 0.0f);
    free(wte), free(wpe), free(wse), free(R), free(dwte), free(dwpe), free(dwse);
}

TEST(embed_backward_adds_into_dwte_and_repeated_tokens_accumulate)
{
    float *dx = rand_array(EB * ET * EC, 21);
    float *dwte = filled(EV * EC, 0.5f), *dwpe = filled(ET * EC, 9.0f);
    cpu_embed_backward(dwte, dwpe, NULL, k_tokens, k_segments, dx, EB, ET, EC, EV, ES);
    for (int v = 0; v < EV; v++)
        for (int j = 0; j < EC; j++) {
            double want = 0.5;
            int count = 0;
            for (int r = 0; r < EB * ET; r++)
                if (k_tokens[r] == v) want += dx[r * EC + j], count++;
            if (v == 3 || v == 1) CHECK(count == 3); /* tokens 3 and 1 appear three times each */
            CHECK_NEAR(dwte[v * EC + j], want, 1e-6);
        }
    /* dwpe is overwritten: sum over b only, the 9.0 is gone */
    for (int t = 0; t < ET; t++)
        for (int j = 0; j < EC; j++) CHECK_NEAR(dwpe[t * EC + j], dx[t * EC + j] + dx[(ET + t) * EC + j], 1e-6);
    /* a second call adds again */
    float first = dwte[3 * EC];
    cpu_embed_backward(dwte, dwpe, NULL, k_tokens, k_segments, dx, EB, ET, EC, EV, ES);
    CHECK_NEAR(dwte[3 * EC], 2.0 * first - 0.5, 1e-5);
    free(dx), free(dwte), free(dwpe);
}

/* ---- LayerNorm ---- */

enum { LR = 10, LC = 8 };

static double ln_loss(const float *x, const float *gamma, const float *beta, const float *R)
{
    float y[LR * LC], mean[LR], rstd[LR];
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, LR, LC);
    return dot_d(y, R, LR * LC);
}

TEST(layernorm_forward_normalises_each_row)
{
    float *x = rand_array(LR * LC, 31), *gamma = filled(LC, 1.0f), *beta = filled(LC, 0.0f);
    for (int i = 0; i < LR * LC; i++) x[i] = 3.0f * x[i] + 5.0f; /* offset and spread */
    float y[LR * LC], mean[LR], rstd[LR];
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, LR, LC);
    for (int i = 0; i < LR; i++) {
        double m = 0.0, v = 0.0, xm = 0.0, xv = 0.0;
        for (int j = 0; j < LC; j++) m += y[i * LC + j], xm += x[i * LC + j];
        m /= LC, xm /= LC;
        for (int j = 0; j < LC; j++) {
            v += (y[i * LC + j] - m) * (y[i * LC + j] - m);
            xv += (x[i * LC + j] - xm) * (x[i * LC + j] - xm);
        }
        v /= LC, xv /= LC;
        CHECK_NEAR(m, 0.0, 1e-6);
        CHECK_NEAR(v, xv / (xv + 1e-5), 1e-5); /* ~1: biased variance, eps 1e-5 */
        CHECK_NEAR(v, 1.0, 1e-4);
        CHECK_NEAR(mean[i], xm, 1e-5);
        CHECK_NEAR(rstd[i], 1.0 / sqrt(xv + 1e-5), 1e-5);
    }
    /* gamma and beta scale and shift each column */
    float *g2 = rand_array(LC, 32), *b2 = rand_array(LC, 33), y2[LR * LC];
    cpu_layernorm_forward(y2, mean, rstd, x, g2, b2, LR, LC);
    for (int i = 0; i < LR * LC; i++) CHECK_NEAR(y2[i], y[i] * g2[i % LC] + b2[i % LC], 1e-5);
    free(x), free(gamma), free(beta), free(g2), free(b2);
}

TEST(layernorm_backward_matches_finite_differences)
{
    float *x = rand_array(LR * LC, 41), *gamma = rand_array(LC, 42), *beta = rand_array(LC, 43);
    float *R = rand_array(LR * LC, 44);
    for (int j = 0; j < LC; j++) gamma[j] += 1.5f; /* away from 0 */
    float y[LR * LC], mean[LR], rstd[LR];
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, LR, LC);
    float *dx = filled(LR * LC, 55.0f), *dgamma = filled(LC, 55.0f), *dbeta = filled(LC, 55.0f);
    cpu_layernorm_backward(dx, dgamma, dbeta, R, x, mean, rstd, gamma, LR, LC, 0);
    const struct loss_args args = {x, gamma, beta, R, ln_loss};
    double ex = fd_worst(x, LR * LC, dx, &args);
    double eg = fd_worst(gamma, LC, dgamma, &args);
    double eb = fd_worst(beta, LC, dbeta, &args);
    printf("    worst relative error: x %.2e, gamma %.2e, beta %.2e\n", ex, eg, eb);
    CHECK(ex < FD_TOL);
    CHECK(eg < FD_TOL);
    CHECK(eb < FD_TOL);
    free(x), free(gamma), free(beta), free(R), free(dx), free(dgamma), free(dbeta);
}

TEST(layernorm_backward_accumulates_into_the_residual_gradient)
{
    float *x = rand_array(LR * LC, 61), *gamma = rand_array(LC, 62), *dy = rand_array(LR * LC, 63);
    float *base = rand_array(LR * LC, 64);
    float y[LR * LC], mean[LR], rstd[LR], dg[LC], db[LC], dg2[LC], db2[LC], plain[LR * LC], acc[LR * LC];
    cpu_layernorm_forward(y, mean, rstd, x, gamma, gamma, LR, LC);
    cpu_layernorm_backward(plain, dg, db, dy, x, mean, rstd, gamma, LR, LC, 0);
    memcpy(acc, base, sizeof acc);
    cpu_layernorm_backward(acc, dg2, db2, dy, x, mean, rstd, gamma, LR, LC, 1);
    for (int i = 0; i < LR * LC; i++) CHECK_NEAR(acc[i], base[i] + plain[i], 1e-6);
    for (int j = 0; j < LC; j++) CHECK(dg2[j] == dg[j] && db2[j] == db[j]); /* the gains' sums are overwritten */
    free(x), free(gamma), free(dy), free(base);
}

/* ---- attention ---- */

enum { AB = 2, AT = 5, AC = 8, AH = 2, AD = AC / AH, AN = AB * AT * 3 * AC };

/* the definition in double: out [B*T x C], probs [B*H x T x T] (probs may be NULL) */
static void attention_ref(double *out, double *probs, const double *qkv, int B, int T, int C, int H, int causal)
{
    int D = C / H;
    double *s = malloc((size_t)T * sizeof *s);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *qi = qkv + ((size_t)b * T + i) * 3 * C + h * D;
                double mx = -INFINITY, sum = 0.0;
                int jn = causal ? i + 1 : T;
                for (int j = 0; j < jn; j++) {
                    const double *kj = qkv + ((size_t)b * T + j) * 3 * C + C + h * D;
                    s[j] = 0.0;
                    for (int d = 0; d < D; d++) s[j] += qi[d] * kj[d];
                    s[j] /= sqrt((double)D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < jn; j++) sum += (s[j] = exp(s[j] - mx));
                for (int j = 0; j < T; j++)
                    if (probs) probs[(((size_t)b * H + h) * T + i) * T + j] = j < jn ? s[j] / sum : 0.0;
                for (int d = 0; d < D; d++) {
                    double o = 0.0;
                    for (int j = 0; j < jn; j++) o += s[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * D + d];
                    out[((size_t)b * T + i) * C + h * D + d] = o;
                }
            }
    free(s);
}

static double attn_loss(const float *qkv, const float *R, int causal)
{
    float out[AB * AT * AC], probs[AB * AH * AT * AT];
    cpu_attention_forward(out, probs, qkv, AB, AT, AC, AH, causal);
    return dot_d(out, R, AB * AT * AC);
}

static double attn_loss_ref(const double *qkv, const float *R, int causal)
{
    double out[AB * AT * AC], s = 0.0;
    attention_ref(out, NULL, qkv, AB, AT, AC, AH, causal);
    for (int i = 0; i < AB * AT * AC; i++) s += out[i] * R[i];
    return s;
}

static double rel_err_floor(double a, double n, double floor)
{
    double den = fabs(a) + fabs(n);
    return fabs(a - n) / (den > floor ? den : floor);
}

/* dqkv from the kernel against central differences of L, two ways:
 *  - L from the definition in double (no rounding noise): eps 1e-3, the full test
 *    (relative error < 1e-2, denominator at least 1e-3);
 *  - L from the kernel's own float forward: its rounding, ~1e-7 in L, over 2 eps is
 *    ~1e-4 in the quotient, as large as the smallest gradients, so the denominator
 *    there is at least 3e-2 (every gradient of 3e-4 or more is still held to 1e-2). */
static void check_attention_grad(int causal, unsigned seed)
{
    float *qkv = rand_array(AN, seed), *R = rand_array(AB * AT * AC, seed + 1);
    double *qkvd = malloc(AN * sizeof *qkvd);
    for (int i = 0; i < AN; i++) qkvd[i] = qkv[i];
    float out[AB * AT * AC], probs[AB * AH * AT * AT];
    cpu_attention_forward(out, probs, qkv, AB, AT, AC, AH, causal);
    float *dqkv = filled(AN, 7.0f); /* overwritten */
    cpu_attention_backward(dqkv, R, qkv, probs, AB, AT, AC, AH, causal);
    double worst_ref[3] = {0, 0, 0}, worst_f[3] = {0, 0, 0};
    for (int i = 0; i < AN; i++) {
        int part = (i % (3 * AC)) / AC; /* q, k or v */
        double keep = qkvd[i];
        qkvd[i] = keep + FD_EPS;
        double lp = attn_loss_ref(qkvd, R, causal);
        qkvd[i] = keep - FD_EPS;
        double lm = attn_loss_ref(qkvd, R, causal);
        qkvd[i] = keep;
        double e = rel_err(dqkv[i], (lp - lm) / (2.0 * FD_EPS));
        worst_ref[part] = e > worst_ref[part] ? e : worst_ref[part];

        float keepf = qkv[i];
        qkv[i] = keepf + FD_EPS;
        lp = attn_loss(qkv, R, causal);
        qkv[i] = keepf - FD_EPS;
        lm = attn_loss(qkv, R, causal);
        qkv[i] = keepf;
        e = rel_err_floor(dqkv[i], (lp - lm) / (2.0 * FD_EPS), 3e-2);
        worst_f[part] = e > worst_f[part] ? e : worst_f[part];
    }
    printf("    %s: worst relative error q %.2e, k %.2e, v %.2e (double forward); q %.2e, k %.2e, v %.2e (float)\n",
           causal ? "causal" : "bidirectional", worst_ref[0], worst_ref[1], worst_ref[2], worst_f[0], worst_f[1],
           worst_f[2]);
    for (int p = 0; p < 3; p++) {
        CHECK(worst_ref[p] < FD_TOL);
        CHECK(worst_f[p] < FD_TOL);
    }
    if (causal) /* the first query sees only the first key: its gradient is exactly 0 */
        for (int b = 0; b < AB; b++)
            for (int d = 0; d < AC; d++) CHECK(dqkv[(size_t)b * AT * 3 * AC + d] == 0.0f);
    free(qkv), free(qkvd), free(R), free(dqkv);
}

TEST(attention_backward_causal_matches_finite_differences) { check_attention_grad(1, 51); }

TEST(attention_backward_bidirectional_matches_finite_differences) { check_attention_grad(0, 61); }

TEST(attention_forward_matches_the_definition)
{
    for (int causal = 0; causal <= 1; causal++) {
        float *qkv = rand_array(AN, 71 + causal);
        for (int i = 0; i < AN; i++) qkv[i] *= 3.0f;
        double qkvd[AN], outd[AB * AT * AC], probsd[AB * AH * AT * AT];
        for (int i = 0; i < AN; i++) qkvd[i] = qkv[i];
        float out[AB * AT * AC], probs[AB * AH * AT * AT];
        cpu_attention_forward(out, probs, qkv, AB, AT, AC, AH, causal);
        attention_ref(outd, probsd, qkvd, AB, AT, AC, AH, causal);
        for (int i = 0; i < AB * AH * AT * AT; i++) CHECK_NEAR(probs[i], probsd[i], 1e-6);
        for (int i = 0; i < AB * AT * AC; i++) CHECK_NEAR(out[i], outd[i], 1e-5);
        free(qkv);
    }
}

TEST(attention_causal_probs_are_zero_above_the_diagonal_and_rows_sum_to_one)
{
    enum { T = 9 };
    float *qkv = rand_array(AB * T * 3 * AC, 81);
    for (int i = 0; i < AB * T * 3 * AC; i++) qkv[i] *= 4.0f;
    float *out = malloc(sizeof(float) * AB * T * AC), *probs = filled(AB * AH * T * T, 0.5f); /* not 0 beforehand */
    for (int causal = 1; causal >= 0; causal--) {
        cpu_attention_forward(out, probs, qkv, AB, T, AC, AH, causal);
        for (int r = 0; r < AB * AH * T; r++) {
            int i = r % T;
            double sum = 0.0;
            for (int j = 0; j < T; j++) {
                float p = probs[(size_t)r * T + j];
                if (causal && j > i) CHECK(p == 0.0f);
                else CHECK(p > 0.0f);
                sum += p;
            }
            CHECK_NEAR(sum, 1.0, 1e-6);
        }
        if (causal) /* the first position attends only to itself: out = v_0 */
            for (int b = 0; b < AB; b++)
                for (int c = 0; c < AC; c++) CHECK(out[b * T * AC + c] == qkv[b * T * 3 * AC + 2 * AC + c]);
    }
    free(qkv), free(out), free(probs);
}

/* ---- determinism over thread counts ---- */

TEST(backwards_are_bit_identical_with_1_and_4_threads)
{
    /* wide enough that 4 threads split the columns, rows and (b, h) among them */
    enum { B = 4, T = 16, C = 256, V = 37, S = 3, H = 8, N = B * T };
    int tokens[N], segments[N];
    unsigned s = 91;
    for (int r = 0; r < N; r++) {
        tokens[r] = (int)((lcg(&s) + 1.0f) * 0.5f * V) % V;
        segments[r] = r % S;
    }
    float *dx = rand_array((size_t)N * C, 92), *x = rand_array((size_t)N * C, 93), *gamma = rand_array(C, 94);
    float *beta = rand_array(C, 95), *qkv = rand_array((size_t)N * 3 * C, 96);
    float *y = malloc(sizeof(float) * N * C), mean[N], rstd[N];
    float *att = malloc(sizeof(float) * N * C), *probs = malloc(sizeof(float) * B * H * T * T);
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, N, C);
    cpu_attention_forward(att, probs, qkv, B, T, C, H, 1);

    size_t nte = (size_t)V * C, npe = (size_t)T * C, nse = (size_t)S * C, nx = (size_t)N * C, nq = (size_t)N * 3 * C;
    float *res[2][7];
    int saved = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k == 0 ? 1 : 4);
        float **g = res[k];
        g[0] = filled(nte, 0.25f), g[1] = malloc(npe * 4), g[2] = malloc(nse * 4);
        g[3] = malloc(nx * 4), g[4] = malloc(C * 4), g[5] = malloc(C * 4), g[6] = malloc(nq * 4);
        cpu_embed_backward(g[0], g[1], g[2], tokens, segments, dx, B, T, C, V, S);
        cpu_layernorm_backward(g[3], g[4], g[5], dx, x, mean, rstd, gamma, N, C, 0);
        cpu_attention_backward(g[6], dx, qkv, probs, B, T, C, H, 1);
    }
    omp_set_num_threads(saved);
    size_t n[7] = {nte, npe, nse, nx, C, C, nq};
    for (int i = 0; i < 7; i++) {
        CHECK(memcmp(res[0][i], res[1][i], n[i] * sizeof(float)) == 0);
        free(res[0][i]), free(res[1][i]);
    }
    free(dx), free(x), free(gamma), free(beta), free(qkv), free(y), free(att), free(probs);
}

/* ---- residual add, gather, scatter ---- */

TEST(add_adds_elementwise)
{
    size_t n = 100003; /* above the parallel threshold, odd */
    float *y = rand_array(n, 101), *x = rand_array(n, 102), *y0 = malloc(n * sizeof *y0);
    memcpy(y0, y, n * sizeof *y0);
    cpu_add(y, x, n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != y0[i] + x[i];
    CHECK(bad == 0);
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    cpu_add(a, b, 2);
    CHECK(a[0] == 11.0f && a[1] == 22.0f && a[2] == 3.0f);
    free(y), free(x), free(y0);
}

TEST(gather_then_scatter_round_trips_the_rows)
{
    enum { ROWS = 9, C = 6, N = 4 };
    const int rows[N] = {7, 2, 5, 0};
    float *src = rand_array(ROWS * C, 111), g[N * C], back[ROWS * C];
    cpu_gather_rows(g, src, rows, N, C);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < C; j++) CHECK(g[i * C + j] == src[rows[i] * C + j]);
    for (int i = 0; i < ROWS * C; i++) back[i] = -1.0f;
    cpu_scatter_rows(back, g, rows, N, C);
    for (int r = 0; r < ROWS; r++) {
        int picked = r == 7 || r == 2 || r == 5 || r == 0;
        for (int j = 0; j < C; j++) CHECK(back[r * C + j] == (picked ? src[r * C + j] : -1.0f));
    }
    free(src);
}

int main(void) { return test_main("transformer_kernels"); }
