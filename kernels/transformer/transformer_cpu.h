/* transformer_cpu.h — the CPU versions of the transformer's own operations (the
 * reference for the CUDA ones): embeddings, LayerNorm, attention, residual adds and
 * row gathers; the token task's sequences (transformer_cpu.c, synthetic.h). Plain C over row-major
 * fp32 arrays, parallel over rows with OpenMP.
 * Every backward is deterministic: the same inputs give the same bits, whatever the
 * thread count (no atomics; every sum has a fixed order).
 *
 * Shapes: B sequences of T positions, model width C, H heads of D = C / H; a "row"
 * is one position of one sequence (B*T rows). */
#ifndef DPSCALE_TRANSFORMER_CPU_H
#define DPSCALE_TRANSFORMER_CPU_H

#include <stddef.h>
#include <stdint.h>

/* x[b,t,:] = wte[tokens[b,t],:] + wpe[t,:] (+ wse[segments[b,t],:] when wse is not NULL).
 * tokens, segments: [B*T]; wte [V x C], wpe [>= T x C], wse [S x C]; x [B*T x C]. */
void cpu_embed_forward(float *x, const int *tokens, const int *segments, const float *wte, const float *wpe,
                       const float *wse, int B, int T, int C);
/* The embeddings' gradients from dx [B*T x C]:
 *   dwte[v,:] += sum of dx over the rows whose token is v (ADDS to dwte: the tied head
 *                wrote its part first), rows summed in increasing row order;
 *   dwpe[t,:]  = sum over b of dx[b,t,:] (overwrites rows 0..T-1);
 *   dwse[s,:]  = sum of dx over the rows of segment s, s < S (overwrites; skipped when NULL).
 * V: rows of dwte (tokens are in [0, V)). */
void cpu_embed_backward(float *dwte, float *dwpe, float *dwse, const int *tokens, const int *segments,
                        const float *dx, int B, int T, int C, int V, int S);

/* y = (x - mean) * rstd * gamma + beta per row of C, rstd = 1/sqrt(var + 1e-5) (biased
 * variance); mean and rstd [rows] are kept for backward. y may not alias x. */
void cpu_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                           int rows, int C);
/* From dy: dx (overwritten; accumulate = 1: added to), dgamma and dbeta [C]
 * (overwritten: sums over the rows). */
void cpu_layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean,
                            const float *rstd, const float *gamma, int rows, int C, int accumulate);

/* Multi-head attention of packed qkv [B*T x 3C] (columns 0..C-1 the queries, C..2C-1
 * the keys, 2C..3C-1 the values; head h uses columns h*D..h*D+D-1 of each):
 *   probs[b,h,i,j] = softmax_j(q_i . k_j / sqrt(D)), j <= i when causal (0 above);
 *   out[b,i,h*D:(h+1)*D] = sum_j probs[b,h,i,j] v_j.
 * probs [B*H x T x T] is kept for backward; out [B*T x C]. */
void cpu_attention_forward(float *out, float *probs, const float *qkv, int B, int T, int C, int H, int causal);
/* dqkv [B*T x 3C] (overwritten) from dout [B*T x C], with the forward's qkv and probs. */
void cpu_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *probs, int B, int T, int C,
                            int H, int causal);

/* y[i] += x[i], i < n (the residual stream). */
void cpu_add(float *y, const float *x, size_t n);
/* dst[i,:] = src[rows[i],:] for i < n (rows of C): the masked positions of BERT's loss. */
void cpu_gather_rows(float *dst, const float *src, const int *rows, int n, int C);
/* dst[rows[i],:] = src[i,:] for i < n; the other rows of dst are left as they are (the
 * caller zeroes them). rows are distinct. */
void cpu_scatter_rows(float *dst, const float *src, const int *rows, int n, int C);

/* B sequences of the token task (synthetic.h): tokens, segments [B*T]; targets [B*T]
 * (GPT) or [B*nmask] with mask_rows [B*nmask] (BERT). */
void cpu_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B, int T,
                      int V, int nmask, int bert, uint64_t seed);

#endif
