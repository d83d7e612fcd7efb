/* compiler.h — the function attributes the sources use, empty where the compiler
 * does not know them: DP_PRINTF(fmt, first) checks a printf-style format against
 * its arguments, DP_NORETURN marks a function that never returns. */
#ifndef DPSCALE_COMPILER_H
#define DPSCALE_COMPILER_H

#if defined(__GNUC__)
#define DP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define DP_NORETURN __attribute__((noreturn))
#else
#define DP_PRINTF(a, b)
#define DP_NORETURN
#endif

#endif
