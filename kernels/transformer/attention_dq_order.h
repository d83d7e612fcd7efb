/* attention_dq_order.h — the fixed order in which the Hopper attention backward's one-kernel
 * scheme (flash_attention_sm90.cu, DPSCALE_FLASH_DQ=accumulate) adds the key blocks' dQ
 * partial sums, for host C (tests/unit/test_attention_dq_order.c) and device code alike.
 *
 * A (sequence, head) has nkb key blocks of 128 keys (nb) and nqt query tiles of 64 (qt).
 * Key block nb visits its tiles in the order dq_order_tile gives and adds its partial dQ of
 * tile qt into an fp32 workspace when tile qt's semaphore equals dq_order_rank(nb, qt),
 * then increments it: the contributors of a tile add in one order on every run.
 *
 * Causal: nb sees tiles 2 nb .. nqt - 1, in that order; a tile's contributors rank by
 * DESCENDING nb, and the key blocks launch in reverse (blockIdx.x 0 is the last). Block
 * nb + 1 handles tile qt two iterations before nb does and was dispatched first: blocks
 * that run in lockstep never wait, and a block waits only on blocks dispatched before it.
 * Full attention, nkb <= the device's SM count: block nb starts at tile nb nqt / nkb and
 * wraps around; a tile's contributors rank by the iteration at which each visits it
 * (lockstep: no waits). A block may then wait on one launched after it, which is safe only
 * because the whole group (nkb blocks, one an SM) fits on the device at once. Full
 * attention with more key blocks than SMs: every block visits 0, 1, .. in order and ranks
 * descend with nb, as causal (the last-ranked block trails by a few reductions). */
#ifndef DPSCALE_ATTENTION_DQ_ORDER_H
#define DPSCALE_ATTENTION_DQ_ORDER_H

#ifdef __CUDACC__
#define DQ_ORDER_FN static inline __host__ __device__
#else
#define DQ_ORDER_FN static inline
#endif

#define DQ_ORDER_KEYS 128   /* keys a block owns */
#define DQ_ORDER_QUERIES 64 /* queries a tile holds */

struct dq_order {
    int nkb, nqt, causal, rotated; /* rotated: full attention's staggered starts */
};

/* the order of a sequence length T on a device of sm_count SMs */
DQ_ORDER_FN struct dq_order dq_order_make(int T, int causal, int sm_count)
{
    struct dq_order o;
    o.nkb = (T + DQ_ORDER_KEYS - 1) / DQ_ORDER_KEYS;
    o.nqt = (T + DQ_ORDER_QUERIES - 1) / DQ_ORDER_QUERIES;
    o.causal = causal != 0;
    o.rotated = !o.causal && o.nkb > 1 && o.nkb <= sm_count;
    return o;
}

/* the key block launched as blockIdx.x = x (the last first), and the other way round */
DQ_ORDER_FN int dq_order_block(struct dq_order o, int x) { return o.nkb - 1 - x; }
DQ_ORDER_FN int dq_order_launch(struct dq_order o, int nb) { return o.nkb - 1 - nb; }

/* the tile block nb visits first, and how many it visits */
DQ_ORDER_FN int dq_order_start(struct dq_order o, int nb)
{
    return o.causal ? 2 * nb : o.rotated ? nb * o.nqt / o.nkb : 0;
}
DQ_ORDER_FN int dq_order_tiles(struct dq_order o, int nb) { return o.causal ? o.nqt - 2 * nb : o.nqt; }

/* the tile block nb visits at iteration i (0 <= i < dq_order_tiles) */
DQ_ORDER_FN int dq_order_tile(struct dq_order o, int nb, int i)
{
    const int qt = dq_order_start(o, nb) + i;
    return qt >= o.nqt ? qt - o.nqt : qt;
}

/* the iteration at which block nb visits tile qt; -1 where it does not */
DQ_ORDER_FN int dq_order_visit(struct dq_order o, int nb, int qt)
{
    const int i = qt - dq_order_start(o, nb);
    if (o.causal) return i >= 0 ? i : -1;
    return i >= 0 ? i : i + o.nqt;
}

/* how many key blocks add into tile qt */
DQ_ORDER_FN int dq_order_contributors(struct dq_order o, int qt)
{
    return o.causal ? (qt / 2 < o.nkb - 1 ? qt / 2 : o.nkb - 1) + 1 : o.nkb;
}

/* how many blocks start at a tile <= x (rotated: starts rise with nb) */
DQ_ORDER_FN int dq_order_started_by(struct dq_order o, int x)
{
    const int n = ((x + 1) * o.nkb + o.nqt - 1) / o.nqt;
    return n < o.nkb ? n : o.nkb;
}

/* block nb's place (0 first) among tile qt's contributors; nb must visit qt. Rotated: the
 * blocks that visit qt before nb are those starting after nb's start and at or before qt,
 * cyclically (no two start alike, as nqt >= nkb) */
DQ_ORDER_FN int dq_order_rank(struct dq_order o, int nb, int qt)
{
    if (!o.rotated) return dq_order_contributors(o, qt) - 1 - nb;
    const int before = dq_order_started_by(o, qt) - dq_order_started_by(o, dq_order_start(o, nb));
    return before >= 0 ? before : before + o.nkb;
}

#endif
