/* test_layernorm_staged_plan.cu — what the staged LayerNorm backward (ln_bwd_staged,
 * kernels/transformer/layernorm.cu) takes on trust from its launcher's plan, checked on the
 * host, without a GPU: for GPUs of 8 to 148 SMs and 99 or 227 KB of shared memory a block,
 * widths 8 .. 20,000, 1 .. 65,536 rows (4 million elements at most), fp32 and bf16, dx
 * overwritten or added to, with dx's column sums asked for or not, the plan (ln_stg_plan_for) fits its shared memory and its limits,
 * and the kernel's mapping, replayed here with the kernel's formulas, writes each vector of
 * dx once, adds each row into each column's gain sums once, reads inside each tile's stage,
 * and keeps its pipeline sound: a stage is refilled only once its tile is consumed, every
 * copy issued is waited for, and each wait's parity is that of the phase its tile completes.
 * It also prints the plan at the shapes the timing test measures (H200: 132 SMs).
 *
 * Built by nvcc with the kernel file included (Makefile: CUDA builds only); prints the unit
 * tests' "N passed, N failed" line. */
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "kernels/transformer/layernorm.cu"

static int g_passed, g_failed, g_bad;
static char g_case[128]; /* the problem being replayed, named when a check fails */

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond) && g_bad++ < 10)                                                       \
            printf("    FAILED %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, g_case);      \
    } while (0)

static void result(const char *name)
{
    printf("%s layernorm_staged_plan.%s\n", g_bad ? "FAIL" : "ok  ", name);
    g_bad ? g_failed++ : g_passed++;
    g_bad = 0;
}

/* The kernel's work for one problem, replayed block by block and tile by tile. Returns
 * whether the staged kernel takes it. */
template <typename T> static bool replay(const ln_gpu &g, int R, int C, int accumulate, bool sum_dx)
{
    snprintf(g_case, sizeof g_case, "%d SMs, %zu KB, R %d, C %d, %zu-byte elements, accumulate %d, sums %d", g.sms,
             g.smem_optin >> 10, R, C, sizeof(T), accumulate, (int)sum_dx);
    ln_stg_plan p;
    if (!ln_stg_plan_for<T>(&p, g, R, C, accumulate, sum_dx)) return false;
    EXPECT(p.sum_dx == sum_dx && (!sum_dx || p.k == 1)); /* the kernel keeps the dx sums of one vector a thread */
    constexpr int NT = LN_STG_THREADS, NW = LN_STG_WARPS, V = pack16<T>::N;
    const int NA = accumulate ? 3 : 2, nvec = C / V, tile_rows = p.tile_rows, stages = p.stages;
    const int slices = p.slices;
    /* the plan's limits and its shared memory */
    EXPECT(p.smem + ln_stg_static_smem <= g.smem_optin);
    EXPECT(tile_rows >= 1 && tile_rows <= LN_STG_MAX_TILE_ROWS && stages >= 1 && stages <= LN_STG_MAX_STAGES);
    EXPECT(p.k >= 1 && p.k <= LN_STG_MAX_K && p.k * NT >= nvec);
    EXPECT(slices >= 1 && slices <= tile_rows && (slices == 1 || slices * nvec <= NT));
    EXPECT(p.blocks >= 1 && p.blocks <= g.sms && p.blocks <= R);
    const size_t head = ln_stg_head_bytes(p.block_rows, C), plane_bytes = (size_t)tile_rows * nvec * 16;
    EXPECT(head % 16 == 0 && head + stages * NA * plane_bytes <= p.smem);
    if (slices > 1) EXPECT(head + (size_t)slices * (sum_dx ? 3 : 2) * C * sizeof(float) <= p.smem);
    /* the row step: wpr warps a row, the wpr pairs within a warp's lanes, one warp a row to add them */
    const int wpr = tile_rows < NW ? NW / tile_rows : 1, per_pass = NW / wpr;
    EXPECT(wpr * per_pass <= NW && (wpr == 1 || tile_rows < NW));
    std::vector<int> dx_writes((size_t)R * nvec, 0), column_rows(nvec, 0);
    for (int b = 0; b < p.blocks; b++) {
        const int r_begin = (int)((long long)b * R / p.blocks), r_end = (int)((long long)(b + 1) * R / p.blocks);
        EXPECT(r_end - r_begin >= 1 && r_end - r_begin <= p.block_rows);
        const int ntiles = (r_end - r_begin + tile_rows - 1) / tile_rows;
        /* each stage: the tile in it, whether its copies are outstanding, its phases completed */
        std::vector<int> tile_in(stages, -1), outstanding(stages, 0), phases(stages, 0);
        auto issue = [&](int t, int k) {
            const int r0 = r_begin + t * tile_rows, n = std::min(tile_rows, r_end - r0);
            EXPECT(k >= 0 && k < stages && !outstanding[k]);
            EXPECT(n >= 1 && (size_t)n * C * sizeof(T) <= plane_bytes);
            EXPECT((size_t)r0 * C * sizeof(T) % 16 == 0 && (size_t)n * C * sizeof(T) % 16 == 0);
            EXPECT((size_t)NA * n * C * sizeof(T) < (1u << 20)); /* an mbarrier's transaction count */
            tile_in[k] = t, outstanding[k] = 1;
        };
        for (int t = 0; t < std::min(stages, ntiles); t++) issue(t, t);
        int buf = 0;
        unsigned parity = 0;
        for (int t = 0; t < ntiles; t++) {
            const int l0 = t * tile_rows, nrows = std::min(tile_rows, r_end - r_begin - l0);
            /* the wait: this stage holds tile t, and the phase it completes has the parity waited on */
            EXPECT(tile_in[buf] == t && outstanding[buf]);
            EXPECT((unsigned)(phases[buf] & 1) == parity);
            phases[buf]++, outstanding[buf] = 0;
            /* rows: each vector of each row once */
            std::vector<int> seen((size_t)nrows * nvec, 0);
            for (int warp = 0; warp < NW; warp++) {
                const int q = warp % wpr, rw = warp / wpr;
                if (rw >= per_pass) continue;
                for (int lr = rw; lr < nrows; lr += per_pass) {
                    EXPECT(l0 + lr < p.block_rows && (wpr == 1 ? lr < LN_STG_MAX_TILE_ROWS : lr * wpr + q < NW));
                    for (int lane = 0; lane < 32; lane++)
                        for (int j = q * 32 + lane; j < nvec; j += 32 * wpr) seen[(size_t)lr * nvec + j]++;
                }
            }
            for (int v : seen) EXPECT(v == 1);
            /* after the first __syncthreads: the stage of tile t - 1 takes tile t + stages - 1 */
            if (t >= 1 && t + stages - 1 < ntiles) issue(t + stages - 1, buf == 0 ? stages - 1 : buf - 1);
            /* columns */
            const int span = slices > 1 ? nvec : NT;
            for (int tid = 0; tid < NT; tid++) {
                const int s = tid / span, j0 = tid % span;
                if (s >= slices) continue;
                for (int lr = s; lr < nrows; lr += slices)
                    for (int k = 0; k < p.k; k++) {
                        const int j = j0 + k * NT;
                        if (j >= nvec) continue;
                        EXPECT((size_t)lr * nvec + j < (size_t)tile_rows * nvec);
                        dx_writes[(size_t)(r_begin + l0 + lr) * nvec + j]++;
                        column_rows[j]++;
                    }
            }
            if (++buf == stages) buf = 0, parity ^= 1;
        }
        for (int k = 0; k < stages; k++) EXPECT(!outstanding[k]);
    }
    for (int v : dx_writes) EXPECT(v == 1);
    for (int v : column_rows) EXPECT(v == R);
    return true;
}

static const ln_gpu g_gpus[] = {{132, 9, 232448}, {114, 9, 232448}, {148, 10, 232448}, {84, 12, 101376}, {8, 9, 232448}};
static const int g_widths[] = {8,    16,   64,   256,  512,  768,   1000,  1024,  1536,  1600, 2048,
                               2400, 3072, 4096, 5120, 6400, 8192, 12288, 16384, 16392, 20000};
static const int g_rows[] = {1, 2, 7, 37, 131, 132, 133, 300, 1207, 2407, 4096, 8192, 8193, 16384, 65536};

/* every GPU, width and row count above, of at most 2^22 elements (a second or two in all) */
static void the_plans_fit_and_the_mapping_covers_each_element_once(void)
{
    for (const ln_gpu &g : g_gpus)
        for (int C : g_widths)
            for (int R : g_rows)
                for (int accumulate = 0; accumulate < 2 && (long long)R * C <= (1 << 22); accumulate++) {
                    for (int sum_dx = 0; sum_dx < 2; sum_dx++) {
                        replay<__nv_bfloat16>(g, R, C, accumulate, sum_dx);
                        replay<float>(g, R, C, accumulate, sum_dx);
                    }
                }
    result("the_plans_fit_and_the_mapping_covers_each_element_once");
}

/* the staged kernel takes the models' shapes on a Hopper GPU, and not before compute
 * capability 9.0 */
static void the_staged_kernel_takes_the_models_shapes_on_hopper_alone(void)
{
    const ln_gpu h200 = {132, 9, 232448}, a100 = {108, 8, 166912};
    static const int wide[] = {768, 1024, 1600, 2048, 4096, 8192};
    for (int C : wide)
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            ln_stg_plan p;
            snprintf(g_case, sizeof g_case, "8192 x %d, accumulate %d", C, accumulate);
            EXPECT(ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, C, accumulate, false));
            EXPECT(ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, C, accumulate, true)); /* up to 8,192 in 16 bits */
            /* fp32 rows of 8,192 added to: two stages of one 96 KB row and gamma's 32 KB leave 64
             * bytes too few beside the static shared memory: the tiled kernel's */
            const bool fp32_fits = !(C == 8192 && accumulate);
            EXPECT(ln_stg_plan_for<float>(&p, h200, 8192, C, accumulate, false) == fp32_fits);
            EXPECT(ln_stg_plan_for<float>(&p, h200, 8192, C, accumulate, true) == (C <= 4096));
            EXPECT(!ln_stg_plan_for<__nv_bfloat16>(&p, a100, 8192, C, accumulate, false));
        }
    snprintf(g_case, sizeof g_case, "16384 wide");
    ln_stg_plan p;
    EXPECT(ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, 16384, 0, false) && p.k == 2);
    EXPECT(!ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, 16384, 0, true)); /* dx's sums: one vector a thread */
    EXPECT(!ln_stg_plan_for<float>(&p, h200, 8192, 16384, 0, false));        /* 4 vectors a thread */
    EXPECT(!ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, 1003, 0, false));
    result("the_staged_kernel_takes_the_models_shapes_on_hopper_alone");
}

/* The plan counts the static shared memory the kernel declares (ln_stg_static): checked against
 * the compiled kernels' own figure where a GPU answers (cudaFuncGetAttributes), said where none
 * does. A plan that under-counts it asks cudaFuncSetAttribute for more dynamic memory than the
 * GPU has beside the static, and the launch fails (8192 x 8192 bf16 on an H200 did, by 64 bytes). */
template <typename T, bool ACC, int K, bool SUM> static bool static_smem_matches(bool *asked)
{
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, ln_bwd_staged<T, ACC, K, SUM>) != cudaSuccess) return true;
    *asked = true;
    if (a.sharedSizeBytes != ln_stg_static_smem)
        printf("    the kernel's static shared memory %zu bytes, the plan's %zu\n", a.sharedSizeBytes,
               ln_stg_static_smem);
    return a.sharedSizeBytes == ln_stg_static_smem;
}

static void the_plan_counts_the_kernels_static_shared_memory(void)
{
    snprintf(g_case, sizeof g_case, "static shared memory");
    bool asked = false;
    EXPECT((static_smem_matches<__nv_bfloat16, false, 1, false>(&asked)));
    EXPECT((static_smem_matches<__nv_bfloat16, true, 2, false>(&asked)));
    EXPECT((static_smem_matches<__nv_bfloat16, true, 1, true>(&asked)));
    EXPECT((static_smem_matches<float, false, 1, true>(&asked)));
    if (!asked) {
        printf("    no GPU answered: the kernels' static shared memory not compared with the plan's\n");
        cudaGetLastError();
    }
    /* and the shape that exposed it: the plan, if it takes it, leaves the static room */
    const ln_gpu h200 = {132, 9, 232448};
    for (int accumulate = 0; accumulate < 2; accumulate++)
        for (int sum_dx = 0; sum_dx < 2; sum_dx++) {
            ln_stg_plan p;
            if (ln_stg_plan_for<__nv_bfloat16>(&p, h200, 8192, 8192, accumulate, sum_dx))
                EXPECT(p.smem + sizeof(ln_stg_static) <= h200.smem_optin);
        }
    result("the_plan_counts_the_kernels_static_shared_memory");
}

static void print_the_timed_shapes_plans(void)
{
    const ln_gpu h200 = {132, 9, 232448};
    static const struct { int R, C; } shapes[] = {{8192, 1600}, {16384, 768}, {8192, 1024}, {4096, 8192}};
    for (auto sh : shapes)
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            ln_stg_plan p;
            if (!ln_stg_plan_for<__nv_bfloat16>(&p, h200, sh.R, sh.C, accumulate, true)) continue;
            printf("    bf16 %5d x %4d, accumulate %d, dx's sums on 132 SMs: tiles of %d rows (%zu KB), %d stages, %d slices, "
                   "%d tiles a block, %zu KB of shared memory\n",
                   sh.R, sh.C, accumulate, p.tile_rows, (size_t)p.tile_rows * sh.C * 2 * (accumulate ? 3 : 2) >> 10,
                   p.stages, p.slices, (p.block_rows + p.tile_rows - 1) / p.tile_rows, p.smem >> 10);
        }
}

int main(void)
{
    the_plans_fit_and_the_mapping_covers_each_element_once();
    the_staged_kernel_takes_the_models_shapes_on_hopper_alone();
    the_plan_counts_the_kernels_static_shared_memory();
    print_the_timed_shapes_plans();
    printf("layernorm_staged_plan: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
