/* check.h — a minimal test harness: TEST(name) defines a test, CHECK(cond) records
 * a failure with the expression, file and line, and test_main() runs them all and
 * ends with "N passed, N failed". A test that fails prints what it expected. */
#ifndef DPSCALE_TEST_CHECK_H
#define DPSCALE_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*test_fn)(void);
struct test_entry { const char *name; test_fn fn; };

static struct test_entry g_tests[256];
static int g_ntests, g_current_failed;

#define TEST(name)                                                              \
    static void name(void);                                                     \
    __attribute__((constructor)) static void register_##name(void)              \
    {                                                                           \
        g_tests[g_ntests++] = (struct test_entry){#name, name};                 \
    }                                                                           \
    static void name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("    FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            g_current_failed = 1;                                               \
        }                                                                       \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                              \
    do {                                                                        \
        double got_ = (got), want_ = (want);                                    \
        if (!(fabs(got_ - want_) <= (tol))) {                                   \
            printf("    FAILED %s:%d: %s = %.17g, expected %.17g (+-%g)\n", __FILE__, __LINE__, #got, got_, want_, (double)(tol)); \
            g_current_failed = 1;                                               \
        }                                                                       \
    } while (0)

#define CHECK_CONTAINS(text, part)                                              \
    do {                                                                        \
        if (strstr((text), (part)) == NULL) {                                   \
            printf("    FAILED %s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__, (part), (text)); \
            g_current_failed = 1;                                               \
        }                                                                       \
    } while (0)

/* Two strings equal, both shown when they are not. */
#define CHECK_STR(got, want)                                                                          \
    do {                                                                                              \
        const char *got_ = (got), *want_ = (want);                                                    \
        if (strcmp(got_, want_) != 0) {                                                               \
            printf("    FAILED %s:%d: %s = \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #got, got_, want_); \
            g_current_failed = 1;                                                                     \
        }                                                                                             \
    } while (0)

static int test_main(const char *suite)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < g_ntests; i++) {
        g_current_failed = 0;
        g_tests[i].fn();
        printf("%s %s.%s\n", g_current_failed ? "FAIL" : "ok  ", suite, g_tests[i].name);
        if (g_current_failed) failed++;
        else passed++;
    }
    printf("%s: %d passed, %d failed\n", suite, passed, failed);
    return failed ? 1 : 0;
}

#endif
