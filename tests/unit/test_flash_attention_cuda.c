/* test_flash_attention_cuda.c — the fused attention's Hopper forward and backward
 * (kernels/transformer/flash_attention_sm90.cu) against the FA2 kernels of
 * flash_attention.cu, which tests/gpu checks against PyTorch: out and lse, dQ, dK and dV
 * agree to the 16-bit types' resolution at GPT-2 small's shape (16 x 1024, 12 heads of
 * 64) and at awkward ones (T = 1, 80, 130, 1000; few and many sequences x heads; causal
 * and not; bf16 and fp16), every element written; the Hopper kernels give the same bits
 * twice; the launchers' automatic choice is the Hopper kernels on compute capability 9.0
 * and the FA2 kernels elsewhere. The Hopper backward's one-kernel scheme (dQ summed in a
 * fixed order, FLASH_KERNELS_SM90_ACCUMULATE) likewise: dQ to bf16 resolution (its sum's
 * order differs), dK dV the two-kernel scheme's bits where the tiles' order is theirs
 * (causal), the same bits twice, at shapes of many key blocks and several waves too. It
 * also times the forwards and the backwards (CUDA events, median of 20 after 3 warm-ups)
 * and prints TFLOP/s, asserting nothing about time.
 *
 * Inputs: random q, k, v, dO (a fixed seed) and, for the backward, the FA2 forward's out
 * and lse. Errors are max |got - want| / max |want| per gradient.
 *
 * Needs a GPU: where none is visible (or the binary has no CUDA) every test passes
 * without checking anything and says so once; on a GPU other than compute capability
 * 9.0 only the automatic choice is checked. Run on the GPU: bin/tests/test_flash_attention_cuda */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/halfconv.h"
#include "check.h"

#ifdef DPSCALE_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/transformer/flash_attention.h"
#include "kernels/transformer/flash_attention_sm90.h"

static int g_gpu = -1; /* -1 not asked; 0 none; 1 a GPU; 2 a compute capability 9.0 one */

static int gpu(void)
{
    if (g_gpu >= 0) return g_gpu;
    int n = 0, major = 0, minor = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("    skipped: no GPU visible\n");
        return g_gpu = 0;
    }
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    g_gpu = major == 9 && minor == 0 ? 2 : 1;
    if (g_gpu == 1) printf("    compute capability %d.%d: the Hopper kernels are not compared here\n", major, minor);
    return g_gpu;
}

/* what the test is doing, named when a CUDA call fails (an error in a kernel shows at the next sync) */
static char g_doing[128] = "setting up";

#define CUDA_OK(call)                                                                                      \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            printf("    FAILED %s:%d (%s): %s: %s\n", __FILE__, __LINE__, g_doing, #call,                 \
                   cudaGetErrorString(e_));                                                                \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

static const char *kernels_name(enum flash_kernels which)
{
    return which == FLASH_KERNELS_SM90              ? "Hopper"
           : which == FLASH_KERNELS_SM90_ACCUMULATE ? "Hopper one-kernel"
           : which == FLASH_KERNELS_FA2             ? "FA2"
                                                    : "automatic";
}

struct shape {
    int B, T, H, causal, dtype;
};

/* one problem on the device: qkv, dout, the forward's out and lse, scratch, dqkv */
struct problem {
    struct shape s;
    int C;
    size_t n3, n1;
    void *qkv, *dout, *out, *dqkv;
    float *lse, *scratch;
};

static uint16_t to16(int dtype, float v) { return dtype == DT_BF16 ? float_to_bf16(v) : float_to_fp16(v); }
static float from16(int dtype, uint16_t h) { return dtype == DT_BF16 ? bf16_to_float(h) : fp16_to_float(h); }

static void *upload_random(size_t n, int dtype, unsigned seed, float amplitude)
{
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = to16(dtype, amplitude * ((float)((seed >> 8) * (1.0 / 8388608.0)) - 1.0f));
    }
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, n * sizeof *h));
    CUDA_OK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static struct problem problem_make(struct shape s)
{
    struct problem p = {.s = s, .C = s.H * 64};
    p.n3 = (size_t)s.B * s.T * 3 * p.C;
    p.n1 = (size_t)s.B * s.T * p.C;
    /* scores of amplitude ~ 2 * 2 * 64 / 8 / 3: softmax neither flat nor one-hot */
    p.qkv = upload_random(p.n3, s.dtype, 12345u + (unsigned)s.T, 2.0f);
    p.dout = upload_random(p.n1, s.dtype, 777u + (unsigned)s.B, 1.0f);
    CUDA_OK(cudaMalloc(&p.out, p.n1 * 2));
    CUDA_OK(cudaMalloc(&p.dqkv, p.n3 * 2));
    CUDA_OK(cudaMalloc((void **)&p.lse, (size_t)s.B * s.H * s.T * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&p.scratch, cuda_flash_attention_scratch_floats(s.B, s.T, s.H) * sizeof(float)));
    snprintf(g_doing, sizeof g_doing, "the FA2 forward, B=%d H=%d T=%d", s.B, s.H, s.T);
    CUDA_OK(cuda_flash_attention_forward_using(FLASH_KERNELS_FA2, p.out, p.lse, p.qkv, s.B, s.T, p.C, s.H, s.causal,
                                               s.dtype, 0));
    CUDA_OK(cudaDeviceSynchronize());
    return p;
}

static void problem_free(struct problem *p)
{
    cudaFree(p->qkv), cudaFree(p->dout), cudaFree(p->out), cudaFree(p->dqkv), cudaFree(p->lse), cudaFree(p->scratch);
}

static cudaError_t backward(const struct problem *p, enum flash_kernels which)
{
    return cuda_flash_attention_backward_using(which, p->dqkv, p->dout, p->out, p->qkv, p->lse, p->scratch, p->s.B,
                                               p->s.T, p->C, p->s.H, p->s.causal, p->s.dtype, 0);
}

/* dqkv from the kernels named, every element NaN before (so that one left unwritten shows) */
static uint16_t *backward_host(const struct problem *p, enum flash_kernels which)
{
    snprintf(g_doing, sizeof g_doing, "the %s backward, B=%d H=%d T=%d %s", kernels_name(which), p->s.B, p->s.H,
             p->s.T, p->s.causal ? "causal" : "full");
    CUDA_OK(cudaMemset(p->dqkv, 0xff, p->n3 * 2));
    CUDA_OK(backward(p, which));
    CUDA_OK(cudaDeviceSynchronize());
    uint16_t *h = malloc(p->n3 * 2);
    CUDA_OK(cudaMemcpy(h, p->dqkv, p->n3 * 2, cudaMemcpyDeviceToHost));
    return h;
}

static cudaError_t forward(const struct problem *p, void *out, float *lse, enum flash_kernels which)
{
    return cuda_flash_attention_forward_using(which, out, lse, p->qkv, p->s.B, p->s.T, p->C, p->s.H, p->s.causal,
                                              p->s.dtype, 0);
}

/* out and lse from the kernels named, every element NaN before */
static void forward_host(const struct problem *p, enum flash_kernels which, uint16_t **out_h, float **lse_h)
{
    const size_t nl = (size_t)p->s.B * p->s.H * p->s.T;
    void *out = NULL;
    float *lse = NULL;
    snprintf(g_doing, sizeof g_doing, "the %s forward, B=%d H=%d T=%d %s", kernels_name(which), p->s.B, p->s.H,
             p->s.T, p->s.causal ? "causal" : "full");
    CUDA_OK(cudaMalloc(&out, p->n1 * 2));
    CUDA_OK(cudaMalloc((void **)&lse, nl * sizeof(float)));
    CUDA_OK(cudaMemset(out, 0xff, p->n1 * 2));
    CUDA_OK(cudaMemset(lse, 0xff, nl * sizeof(float)));
    CUDA_OK(forward(p, out, lse, which));
    CUDA_OK(cudaDeviceSynchronize());
    *out_h = malloc(p->n1 * 2);
    *lse_h = malloc(nl * sizeof(float));
    CUDA_OK(cudaMemcpy(*out_h, out, p->n1 * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(*lse_h, lse, nl * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(out), cudaFree(lse);
}

static void shape_name(char *buf, size_t n, struct shape s)
{
    snprintf(buf, n, "%s B=%d H=%d T=%d %s", s.dtype == DT_BF16 ? "bf16" : "fp16", s.B, s.H, s.T,
             s.causal ? "causal" : "full");
}

/* max |got - want| / max |want| over the columns [c0, c0 + C) of every row of ld; NaN counts as infinite */
static double rel_err_ld(const uint16_t *got, const uint16_t *want, const struct problem *p, size_t ld, int c0)
{
    double worst = 0.0, scale = 0.0;
    const size_t rows = (size_t)p->s.B * p->s.T;
    for (size_t r = 0; r < rows; r++)
        for (int c = c0; c < c0 + p->C; c++) {
            const double g = from16(p->s.dtype, got[r * ld + c]), w = from16(p->s.dtype, want[r * ld + c]);
            const double d = fabs(g - w);
            if (!(d <= worst)) worst = d == d ? d : INFINITY;
            if (fabs(w) > scale) scale = fabs(w);
        }
    return scale > 0.0 ? worst / scale : worst;
}

/* the same over dqkv's rows (3C) */
static double rel_err_cols(const uint16_t *got, const uint16_t *want, const struct problem *p, int c0)
{
    return rel_err_ld(got, want, p, 3 * (size_t)p->C, c0);
}

/* the awkward shapes first, GPT-2 small's last (a failure under compute-sanitizer shows sooner) */
static const struct shape k_shapes[] = {
    {2, 80, 3, 1, DT_BF16},   {2, 80, 3, 0, DT_BF16},     {3, 130, 5, 1, DT_BF16},    {3, 130, 5, 0, DT_BF16},
    {4, 1, 2, 1, DT_BF16},    {4, 1, 2, 0, DT_BF16},      {4, 80, 6, 0, DT_F16},      {1, 1000, 2, 1, DT_BF16},
    {1, 1000, 2, 0, DT_BF16}, {4, 1000, 6, 1, DT_F16},    {8, 1000, 12, 1, DT_BF16},  {16, 1024, 12, 0, DT_BF16},
    {16, 1024, 12, 1, DT_BF16}, /* GPT-2 small */
};
#define N_SHAPES (sizeof k_shapes / sizeof k_shapes[0])

TEST(hopper_forward_matches_fa2_to_16_bit_resolution)
{
    if (gpu() != 2) return;
    for (size_t k = 0; k < N_SHAPES; k++) {
        struct problem p = problem_make(k_shapes[k]);
        uint16_t *want, *got;
        float *lse_want, *lse_got;
        forward_host(&p, FLASH_KERNELS_FA2, &want, &lse_want);
        forward_host(&p, FLASH_KERNELS_SM90, &got, &lse_got);
        const double eo = rel_err_ld(got, want, &p, (size_t)p.C, 0);
        double el = 0.0; /* lse is log2 of a sum: compared absolutely */
        for (size_t i = 0; i < (size_t)p.s.B * p.s.H * p.s.T; i++) {
            const double d = fabs((double)lse_got[i] - lse_want[i]);
            if (!(d <= el)) el = d == d ? d : INFINITY;
        }
        const double tol = p.s.dtype == DT_BF16 ? 8e-3 : 1e-3; /* two ulps of the largest element */
        char name[96];
        shape_name(name, sizeof name, p.s);
        printf("    %-30s forward: max error / max |FA2| out %.2e, max |lse - FA2's| %.2e\n", name, eo, el);
        if (!(eo <= tol && el <= 1e-3))
            printf("    FAILED %s: expected out <= %.0e, lse <= 1e-3\n", name, tol), g_current_failed = 1;
        free(want), free(got), free(lse_want), free(lse_got);
        problem_free(&p);
    }
}

TEST(hopper_backward_matches_fa2_to_16_bit_resolution)
{
    if (gpu() != 2) return;
    for (size_t k = 0; k < N_SHAPES; k++) {
        struct problem p = problem_make(k_shapes[k]);
        uint16_t *want = backward_host(&p, FLASH_KERNELS_FA2), *got = backward_host(&p, FLASH_KERNELS_SM90);
        const double eq = rel_err_cols(got, want, &p, 0), ek = rel_err_cols(got, want, &p, p.C),
                     ev = rel_err_cols(got, want, &p, 2 * p.C);
        const double tol = p.s.dtype == DT_BF16 ? 8e-3 : 1e-3; /* two ulps of the largest element */
        char name[96];
        shape_name(name, sizeof name, p.s);
        printf("    %-30s max error / max |FA2|: dQ %.2e  dK %.2e  dV %.2e\n", name, eq, ek, ev);
        if (!(eq <= tol && ek <= tol && ev <= tol))
            printf("    FAILED %s: expected every error <= %.0e\n", name, tol), g_current_failed = 1;
        free(want), free(got);
        problem_free(&p);
    }
}

/* the shapes above and BERT's (16 x 512, 16 heads, full: 4 key blocks of staggered tiles) */
static const struct shape k_accumulate_shapes[] = {
    {2, 80, 3, 1, DT_BF16},   {2, 80, 3, 0, DT_BF16},     {3, 130, 5, 1, DT_BF16},    {3, 130, 5, 0, DT_BF16},
    {4, 1, 2, 1, DT_BF16},    {4, 1, 2, 0, DT_BF16},      {4, 80, 6, 0, DT_F16},      {1, 1000, 2, 1, DT_BF16},
    {1, 1000, 2, 0, DT_BF16}, {4, 1000, 6, 1, DT_F16},    {8, 1000, 12, 1, DT_BF16},  {16, 512, 16, 0, DT_BF16},
    {16, 1024, 12, 0, DT_BF16}, {16, 1024, 12, 1, DT_BF16},
};
#define N_ACCUMULATE_SHAPES (sizeof k_accumulate_shapes / sizeof k_accumulate_shapes[0])

/* whether columns [c0, c0 + C) of every dqkv row are the same bits in a and b */
static int same_cols(const uint16_t *a, const uint16_t *b, const struct problem *p, int c0)
{
    const size_t ld = 3 * (size_t)p->C;
    for (size_t r = 0; r < (size_t)p->s.B * p->s.T; r++)
        if (memcmp(a + r * ld + c0, b + r * ld + c0, (size_t)p->C * 2) != 0) return 0;
    return 1;
}

TEST(hopper_one_kernel_backward_matches_fa2_to_16_bit_resolution)
{
    if (gpu() != 2) return;
    for (size_t k = 0; k < N_ACCUMULATE_SHAPES; k++) {
        struct problem p = problem_make(k_accumulate_shapes[k]);
        uint16_t *want = backward_host(&p, FLASH_KERNELS_FA2), *sep = backward_host(&p, FLASH_KERNELS_SM90);
        uint16_t *got = backward_host(&p, FLASH_KERNELS_SM90_ACCUMULATE);
        const double eq = rel_err_cols(got, want, &p, 0), ek = rel_err_cols(got, want, &p, p.C),
                     ev = rel_err_cols(got, want, &p, 2 * p.C);
        const double tol = p.s.dtype == DT_BF16 ? 8e-3 : 1e-3; /* dK dV: as the two-kernel scheme */
        const int kv_same = same_cols(got, sep, &p, p.C) && same_cols(got, sep, &p, 2 * p.C);
        char name[96];
        shape_name(name, sizeof name, p.s);
        printf("    %-30s one kernel, max error / max |FA2|: dQ %.2e  dK %.2e  dV %.2e; dK dV %s the two-kernel "
               "scheme's bits\n",
               name, eq, ek, ev, kv_same ? "are" : "are not");
        /* dQ: summed in another order, so to 1e-2 (the forward's out checks' scale); dK dV:
         * causal tiles come in the two-kernel order, full ones staggered (other sums) */
        if (!(eq <= 1e-2 && ek <= tol && ev <= tol && (kv_same || !p.s.causal)))
            printf("    FAILED %s: expected dQ <= 1e-2, dK dV <= %.0e%s\n", name, tol,
                   p.s.causal ? " and the two-kernel scheme's bits" : ""),
                g_current_failed = 1;
        free(want), free(sep), free(got);
        problem_free(&p);
    }
}

TEST(hopper_one_kernel_backward_gives_the_same_bits_three_times)
{
    if (gpu() != 2) return;
    const struct shape shapes[] = {{16, 1024, 12, 1, DT_BF16}, {16, 1024, 12, 0, DT_BF16}, {16, 512, 16, 0, DT_BF16},
                                   {3, 130, 5, 0, DT_BF16},    {2, 80, 3, 1, DT_F16},      {4, 1, 2, 0, DT_BF16}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        struct problem p = problem_make(shapes[k]);
        uint16_t *a = backward_host(&p, FLASH_KERNELS_SM90_ACCUMULATE);
        int same = 1;
        for (int run = 0; run < 2; run++) {
            uint16_t *b = backward_host(&p, FLASH_KERNELS_SM90_ACCUMULATE);
            same &= memcmp(a, b, p.n3 * 2) == 0;
            free(b);
        }
        if (!same) {
            char name[96];
            shape_name(name, sizeof name, p.s);
            printf("    FAILED %s: runs of the one-kernel backward differ\n", name);
        }
        CHECK(same);
        free(a);
        problem_free(&p);
    }
}

TEST(hopper_kernels_give_the_same_bits_twice)
{
    if (gpu() != 2) return;
    const struct shape shapes[] = {{16, 1024, 12, 1, DT_BF16}, {3, 130, 5, 0, DT_BF16}};
    for (int k = 0; k < 2; k++) {
        struct problem p = problem_make(shapes[k]);
        uint16_t *a = backward_host(&p, FLASH_KERNELS_SM90), *b = backward_host(&p, FLASH_KERNELS_SM90);
        uint16_t *fa, *fb;
        float *la, *lb;
        forward_host(&p, FLASH_KERNELS_SM90, &fa, &la);
        forward_host(&p, FLASH_KERNELS_SM90, &fb, &lb);
        const size_t nl = (size_t)p.s.B * p.s.H * p.s.T;
        const int same = memcmp(a, b, p.n3 * 2) == 0 && memcmp(fa, fb, p.n1 * 2) == 0 &&
                         memcmp(la, lb, nl * sizeof(float)) == 0;
        free(fa), free(fb), free(la), free(lb);
        if (!same) {
            char name[96];
            shape_name(name, sizeof name, p.s);
            printf("    FAILED %s: two runs of the Hopper kernels differ\n", name);
        }
        CHECK(same);
        free(a), free(b);
        problem_free(&p);
    }
}

TEST(the_automatic_choice_is_hopper_on_compute_capability_9_0_and_fa2_elsewhere)
{
    const int g = gpu();
    if (g == 0) return;
    struct problem p = problem_make((struct shape){2, 200, 4, 1, DT_BF16});
    const int applies = cuda_flash_attention_sm90_applies(p.dqkv, p.dout, p.qkv, p.lse, p.scratch, p.s.B, p.s.T, p.C,
                                                          p.s.H, p.s.dtype);
    CHECK(applies == (g == 2));
    const char *env = getenv("DPSCALE_FLASH_BACKWARD"), *dq = getenv("DPSCALE_FLASH_DQ");
    const int fa2_forced = env != NULL && strcmp(env, "fa2") == 0;
    const enum flash_kernels hopper =
        dq != NULL && strcmp(dq, "accumulate") == 0 ? FLASH_KERNELS_SM90_ACCUMULATE : FLASH_KERNELS_SM90;
    uint16_t *a = backward_host(&p, FLASH_KERNELS_AUTO);
    uint16_t *b = backward_host(&p, g == 2 && !fa2_forced ? hopper : FLASH_KERNELS_FA2);
    CHECK(memcmp(a, b, p.n3 * 2) == 0);
    free(a), free(b);
    const char *fenv = getenv("DPSCALE_FLASH_FORWARD");
    const int fwd_fa2_forced = fenv != NULL && strcmp(fenv, "fa2") == 0;
    uint16_t *fa, *fb;
    float *la, *lb;
    forward_host(&p, FLASH_KERNELS_AUTO, &fa, &la);
    forward_host(&p, g == 2 && !fwd_fa2_forced ? FLASH_KERNELS_SM90 : FLASH_KERNELS_FA2, &fb, &lb);
    CHECK(memcmp(fa, fb, p.n1 * 2) == 0 && memcmp(la, lb, (size_t)p.s.B * p.s.H * p.s.T * sizeof(float)) == 0);
    free(fa), free(fb), free(la), free(lb);
    /* head dimension 32 and misaligned buffers are the FA2 kernels' everywhere */
    CHECK(!cuda_flash_attention_sm90_applies(p.dqkv, p.dout, p.qkv, p.lse, p.scratch, p.s.B, p.s.T, 4 * 32, 4,
                                             p.s.dtype));
    CHECK(!cuda_flash_attention_sm90_applies(p.dqkv, p.dout, (const char *)p.qkv + 2, p.lse, p.scratch, p.s.B,
                                             p.s.T, p.C, p.s.H, p.s.dtype));
    if (g != 2) CHECK(backward(&p, FLASH_KERNELS_SM90) == cudaErrorNotSupported);
    if (g != 2) CHECK(backward(&p, FLASH_KERNELS_SM90_ACCUMULATE) == cudaErrorNotSupported);
    if (g != 2) CHECK(forward(&p, p.out, p.lse, FLASH_KERNELS_SM90) == cudaErrorNotSupported);
    problem_free(&p);
}

/* median of 20 timed forwards (backward = 0) or backwards (3 first), in ms */
static double time_kernels(const struct problem *p, enum flash_kernels which, int backward_too)
{
    enum { WARM = 3, RUNS = 20 };
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    float ms[RUNS];
    snprintf(g_doing, sizeof g_doing, "timing the %s %s, B=%d H=%d T=%d", kernels_name(which),
             backward_too ? "backward" : "forward", p->s.B, p->s.H, p->s.T);
#define RUN_ONCE() (backward_too ? backward(p, which) : forward(p, p->out, p->lse, which))
    for (int i = 0; i < WARM; i++) CUDA_OK(RUN_ONCE());
    for (int i = 0; i < RUNS; i++) {
        CUDA_OK(cudaEventRecord(e0, 0));
        CUDA_OK(RUN_ONCE());
        CUDA_OK(cudaEventRecord(e1, 0));
        CUDA_OK(cudaEventSynchronize(e1));
        CUDA_OK(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    for (int i = 1; i < RUNS; i++) /* insertion sort */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            const float t = ms[j];
            ms[j] = ms[j - 1], ms[j - 1] = t;
        }
#undef RUN_ONCE
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return 0.5 * (ms[RUNS / 2 - 1] + ms[RUNS / 2]);
}

TEST(timings_fa2_and_hopper)
{
    if (gpu() != 2) return;
    const struct shape shapes[] = {{16, 1024, 12, 1, DT_BF16}, {16, 1024, 12, 0, DT_BF16}, {16, 512, 16, 0, DT_BF16},
                                   {8, 1000, 12, 1, DT_BF16},  {4, 1000, 6, 1, DT_F16}};
    printf("    median of 20; TFLOP/s counts the forward's 4 B H T^2 D, 2.5 x that for the backward (delta, dK dV, "
           "dQ), halved when causal; one-kernel: the Hopper backward's DPSCALE_FLASH_DQ=accumulate\n");
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        struct problem p = problem_make(shapes[k]);
        const double flop = 4.0 * p.s.B * p.s.H * (double)p.s.T * p.s.T * 64 / (p.s.causal ? 2.0 : 1.0);
        char name[96];
        shape_name(name, sizeof name, p.s);
        for (int bwd = 0; bwd < 2; bwd++) {
            const double f = bwd ? 2.5 * flop : flop;
            const double t2 = time_kernels(&p, FLASH_KERNELS_FA2, bwd), t9 = time_kernels(&p, FLASH_KERNELS_SM90, bwd);
            printf("    %-30s %s FA2 %7.3f ms (%5.1f TFLOP/s)   Hopper %7.3f ms (%5.1f TFLOP/s)   x%.2f", name,
                   bwd ? "backward" : "forward ", t2, f / t2 * 1e-9, t9, f / t9 * 1e-9, t2 / t9);
            if (bwd) {
                const double t1 = time_kernels(&p, FLASH_KERNELS_SM90_ACCUMULATE, bwd);
                printf("   one-kernel %7.3f ms (%5.1f TFLOP/s)   x%.2f", t1, f / t1 * 1e-9, t2 / t1);
            }
            printf("\n");
        }
        problem_free(&p);
    }
}

#else
TEST(no_cuda_in_this_build)
{
    printf("    skipped: built without CUDA\n");
}
#endif

int main(void) { return test_main("flash_attention_cuda"); }
