/* test_attention_dq_order.c — the order in which the Hopper attention backward's one-kernel
 * scheme adds the key blocks' dQ (kernels/transformer/attention_dq_order.h): every tile's
 * contributors rank exactly 0 .. n - 1 and visit it; a block waits only on blocks
 * dispatched before it unless its (sequence, head) group fits the SM count; a group whose
 * blocks run in lockstep never waits (causal, or full with staggered starts); and a whole
 * grid, dispatched in order onto a few SMs, always finishes. */
#include <stdlib.h>
#include <string.h>

#include "kernels/transformer/attention_dq_order.h"
#include "check.h"

static const int k_T[] = {1, 63, 64, 65, 80, 127, 128, 129, 130, 200, 256, 512, 1000, 1024, 2048, 4096, 8192};
static const int k_sms[] = {1, 2, 3, 4, 7, 16, 132};
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* every tile's contributors: the blocks that visit it, ranked 0 .. n - 1 once each */
TEST(each_tiles_contributors_rank_exactly_0_to_n_minus_1)
{
    for (int t = 0; t < N_OF(k_T); t++)
        for (int c = 0; c < 2; c++)
            for (int s = 0; s < N_OF(k_sms); s++) {
                const struct dq_order o = dq_order_make(k_T[t], c, k_sms[s]);
                int *seen = calloc((size_t)o.nkb, sizeof *seen), bad = 0;
                for (int qt = 0; qt < o.nqt; qt++) {
                    const int n = dq_order_contributors(o, qt);
                    memset(seen, 0, (size_t)o.nkb * sizeof *seen);
                    int visitors = 0;
                    for (int nb = 0; nb < o.nkb; nb++) {
                        const int i = dq_order_visit(o, nb, qt);
                        if (i < 0) continue;
                        visitors++;
                        bad |= i >= dq_order_tiles(o, nb) || dq_order_tile(o, nb, i) != qt;
                        const int r = dq_order_rank(o, nb, qt);
                        if (r < 0 || r >= n || seen[r]++) bad = 1;
                        /* the rank is the place by visiting iteration (later blocks first on a tie) */
                        int want = 0;
                        for (int m = 0; m < o.nkb; m++) {
                            const int im = dq_order_visit(o, m, qt);
                            want += im >= 0 && (im < i || (im == i && m > nb));
                        }
                        bad |= r != want;
                    }
                    bad |= visitors != n;
                }
                /* a block's iterations visit distinct tiles */
                for (int nb = 0; nb < o.nkb; nb++)
                    for (int i = 0; i < dq_order_tiles(o, nb); i++)
                        bad |= dq_order_visit(o, nb, dq_order_tile(o, nb, i)) != i;
                if (bad) printf("    FAILED T=%d causal=%d SMs=%d\n", k_T[t], c, k_sms[s]);
                CHECK(!bad);
                free(seen);
            }
}

/* a lower rank is a block launched earlier, except in a group that fits the device */
TEST(a_block_waits_only_on_earlier_blocks_unless_its_group_fits)
{
    for (int t = 0; t < N_OF(k_T); t++)
        for (int c = 0; c < 2; c++)
            for (int s = 0; s < N_OF(k_sms); s++) {
                const struct dq_order o = dq_order_make(k_T[t], c, k_sms[s]);
                int bad = 0;
                CHECK(!o.rotated || o.nkb <= k_sms[s]);
                if (o.rotated) continue;
                for (int qt = 0; qt < o.nqt; qt++)
                    for (int nb = 0; nb < o.nkb; nb++)
                        for (int m = 0; m < o.nkb; m++)
                            if (dq_order_visit(o, nb, qt) >= 0 && dq_order_visit(o, m, qt) >= 0 &&
                                dq_order_rank(o, m, qt) < dq_order_rank(o, nb, qt))
                                bad |= dq_order_launch(o, m) >= dq_order_launch(o, nb);
                for (int x = 0; x < o.nkb; x++) bad |= dq_order_launch(o, dq_order_block(o, x)) != x;
                if (bad) printf("    FAILED T=%d causal=%d SMs=%d\n", k_T[t], c, k_sms[s]);
                CHECK(!bad);
            }
}

/* One group's blocks, each one tile a step when its tile's semaphore allows (decided on
 * the step's starting state); the steps on which some unfinished block could not go on. */
static int lockstep_waits(struct dq_order o)
{
    int *sem = calloc((size_t)o.nqt, sizeof *sem), *at = calloc((size_t)o.nkb, sizeof *at);
    int *go = calloc((size_t)o.nkb, sizeof *go), waits = 0, left = 1;
    while (left) {
        left = 0;
        for (int nb = 0; nb < o.nkb; nb++) {
            go[nb] = 0;
            if (at[nb] >= dq_order_tiles(o, nb)) continue;
            const int qt = dq_order_tile(o, nb, at[nb]);
            go[nb] = sem[qt] == dq_order_rank(o, nb, qt);
            waits += !go[nb];
        }
        for (int nb = 0; nb < o.nkb; nb++)
            if (go[nb]) sem[dq_order_tile(o, nb, at[nb]++)]++;
        for (int nb = 0; nb < o.nkb; nb++) left |= at[nb] < dq_order_tiles(o, nb);
        if (waits > 1000000) break; /* stuck */
    }
    free(sem), free(at), free(go);
    return waits;
}

TEST(a_group_in_lockstep_never_waits_causal_or_rotated)
{
    for (int t = 0; t < N_OF(k_T); t++) {
        const struct dq_order c = dq_order_make(k_T[t], 1, 132), f = dq_order_make(k_T[t], 0, 132);
        const int wc = lockstep_waits(c), wf = lockstep_waits(f);
        if (wc != 0 || wf != 0) printf("    FAILED T=%d: %d causal waits, %d full (rotated %d)\n", k_T[t], wc, wf, f.rotated);
        CHECK(wc == 0 && wf == 0);
    }
    /* what the rotation buys: the plain order at BERT's shape waits (for the record) */
    const struct dq_order plain = dq_order_make(512, 0, 1);
    printf("    T=512 full, plain order: %d block-steps waiting in lockstep (rotated: 0)\n", lockstep_waits(plain));
}

/* groups x nkb blocks dispatched in linear order onto `sms` SMs, one block each, a block
 * leaving when it has added all its tiles; each step every resident block adds one tile
 * where its semaphore allows. Whether the grid finishes. */
static int grid_finishes(struct dq_order o, int groups, int sms)
{
    const int n = groups * o.nkb;
    int *sem = calloc((size_t)groups * o.nqt, sizeof *sem), *at = calloc((size_t)n, sizeof *at);
    int *slot = malloc((size_t)sms * sizeof *slot), next = 0, done = 0, idle_steps = 0;
    for (int k = 0; k < sms; k++) slot[k] = next < n ? next++ : -1;
    while (done < n && idle_steps < 4) {
        int moved = 0;
        for (int k = 0; k < sms; k++) {
            const int id = slot[k];
            if (id < 0) continue;
            const int g = id / o.nkb, nb = dq_order_block(o, id % o.nkb);
            const int qt = dq_order_tile(o, nb, at[id]);
            int *s = &sem[(size_t)g * o.nqt + qt];
            if (*s != dq_order_rank(o, nb, qt)) continue;
            (*s)++, moved = 1;
            if (++at[id] == dq_order_tiles(o, nb)) done++, slot[k] = next < n ? next++ : -1;
        }
        idle_steps = moved ? 0 : idle_steps + 1;
    }
    free(sem), free(at), free(slot);
    return done == n;
}

TEST(a_grid_dispatched_in_order_onto_few_sms_always_finishes)
{
    const int Ts[] = {80, 130, 512, 1000, 1024, 2048};
    for (int t = 0; t < N_OF(Ts); t++)
        for (int c = 0; c < 2; c++)
            for (int s = 0; s < N_OF(k_sms); s++) {
                const struct dq_order o = dq_order_make(Ts[t], c, k_sms[s]);
                const int ok = grid_finishes(o, 5, k_sms[s]);
                if (!ok) printf("    FAILED T=%d causal=%d SMs=%d: stuck\n", Ts[t], c, k_sms[s]);
                CHECK(ok);
            }
    /* and the simulation can tell: the staggered order on fewer SMs than its group gets stuck */
    CHECK(!grid_finishes(dq_order_make(1024, 0, 132), 5, 4));
}

int main(void) { return test_main("attention_dq_order"); }
