/* transformer.h — GPT and BERT (model.type = gpt | bert) behind the model seam
 * (model.h), written by hand: GEMMs through the backend, everything else our own
 * operations (backend.h: embeddings, LayerNorm, attention, residual adds).
 *
 *   gpt:  pre-LN decoder; x = wte[tok] + wpe; per block x += proj(attn(LN1 x)),
 *         x += W2 gelu(W1 LN2 x); logits = LNf(x) wte^T; causal; loss on every position
 *         (the target is the next token).
 *   bert: post-LN encoder; x = LNe(wte[tok] + wpe + wse[segment]); per block
 *         x = LN1(x + proj(attn(x))), x = LN2(x + W2 gelu(W1 x)); bidirectional;
 *         masked-LM loss on mask_fraction of the positions, gathered before the head
 *         (logits = x[masked] wte^T).
 *
 * Stages: 0 the embeddings (and BERT's LNe), 1..L the blocks, L+1 GPT's final LN.
 * Dropout is off. The head is tied to the token embedding, whose gradient (the
 * head's part, then the embedding's) is complete at the end of backward. */
#ifndef DPSCALE_MODELS_TRANSFORMER_H
#define DPSCALE_MODELS_TRANSFORMER_H

#include "model/model.h"

/* A block's tensors' offsets in the arenas. */
struct tf_block {
    size_t ln1_g, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_g, ln2_b, fc_w, fc_b, out_w, out_b;
};

struct tf {
    int bert;                  /* 1: BERT, 0: GPT */
    int L, C, H, T, V, F, S;   /* blocks, width, heads, sequence, vocabulary, FFN width (4C), segments (BERT: 2) */
    int Vp;                    /* the head's rows (wte's, the logits' columns): V rounded up to 64, the rest zero */
    int nmask;                 /* predicted positions per sequence: T (GPT), round(mask_fraction x T) (BERT) */
    int attention;             /* train.attention as asked (enum attention_impl) */
    int flash;                 /* the fused attention runs (settled by the backend: tf_supported) */
    struct tf_block *blk;      /* [L] */
    size_t wte, wpe, wse, lne_g, lne_b, lnf_g, lnf_b;
};

/* The transformer of cfg into m (model_describe calls it for model.type = gpt, bert). */
model_describe_fn transformer_describe;
static inline const struct tf *tf_of(const struct model *m) { return (const struct tf *)m->impl; }

#endif
