/* log.c — rank-0-only output and the progress lines of a launch (log.h). */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRESS_DEFAULT_INTERVAL_S 5.0

static int g_rank = 0;
static int g_quiet = 0;

void log_set_rank(int rank) { g_rank = rank; }
int log_rank(void) { return g_rank; }
void log_set_quiet(int quiet) { g_quiet = quiet; }
int log_quiet(void) { return g_quiet; }

void say(const char *fmt, ...)
{
    if (g_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

int log_launch_rank(void)
{
    /* SLURM_PROCID last: a batch script's (0) is inherited by every rank that mpirun starts */
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') return atoi(v);
    }
    return 0;
}

/* ---- progress ------------------------------------------------------------ */

static struct {
    int started;                        /* the first point has begun */
    double interval_s;                  /* between lines within a pass */
    double launch_t0;                   /* monotonic clock at the first point's start */
    long long launch_steps, launch_done;
    int in_point, nranks, index, count;
    double point_t0;
    long long point_steps, point_done;
    char pass[32];                      /* "" between passes */
    double pass_t0;
    int warmup, timed, step;            /* of the pass in progress */
    double last_line;
} P;

static double monotonic_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void format_duration(double s, char *buf, size_t len)
{
    const long long r = (long long)(s + 0.5);
    if (s < 10) snprintf(buf, len, "%.1f s", s);
    else if (r < 60) snprintf(buf, len, "%lld s", r);
    else if (r < 3600) snprintf(buf, len, "%lld min %02lld s", r / 60, r % 60);
    else snprintf(buf, len, "%lld h %02lld min", r / 3600, r % 3600 / 60);
}

/* "launch 45% done, 17 s left": the steps left at the pace of the pass in progress,
 * or before it has one, of the point in progress (a later point is more like it than
 * the first, which communicates nothing), or else of the launch so far. */
static void format_launch(double now, char *buf, size_t len)
{
    const long long left = P.launch_steps - P.launch_done;
    const int pct = P.launch_steps > 0 ? (int)(100 * P.launch_done / P.launch_steps) : 100;
    char t[32];
    if (left <= 0) {
        format_duration(now - P.launch_t0, t, sizeof t);
        snprintf(buf, len, "launch 100%% done in %s", t);
        return;
    }
    double per_step = -1;
    if (P.pass[0] && P.step >= 2) per_step = (now - P.pass_t0) / P.step;
    else if (P.in_point && P.point_done >= 2) per_step = (now - P.point_t0) / (double)P.point_done;
    else if (P.launch_done > 0) per_step = (now - P.launch_t0) / (double)P.launch_done;
    if (per_step < 0) {
        snprintf(buf, len, "launch %d%% done, no estimate yet", pct);
        return;
    }
    format_duration(per_step * (double)left, t, sizeof t);
    snprintf(buf, len, "launch %d%% done, %s left", pct, t);
}

/* One line, written at once: "dpscale: <UTC> n=N (point i/k) <what>; <launch>". */
/* Now, UTC, ISO 8601. */
static void utc_stamp(char *buf, size_t len)
{
    const time_t wall = time(NULL);
    struct tm utc;
    gmtime_r(&wall, &utc);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

static void progress_line(double now, const char *fmt, ...) DP_PRINTF(2, 3);
static void progress_line(double now, const char *fmt, ...)
{
    char stamp[32], what[256], launch[96], line[512];
    utc_stamp(stamp, sizeof stamp);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    format_launch(now, launch, sizeof launch);
    const int n = snprintf(line, sizeof line, "dpscale: %s n=%d (point %d/%d) %s; %s\n", stamp, P.nranks, P.index,
                           P.count, what, launch);
    fwrite(line, 1, n < (int)sizeof line ? (size_t)n : sizeof line - 1, stderr);
    P.last_line = now;
}

static int progress_on(void) { return g_rank == 0 && !g_quiet; }

void progress_note(const char *fmt, ...)
{
    if (!progress_on()) return;
    char stamp[32], what[4400];
    utc_stamp(stamp, sizeof stamp);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dpscale: %s %s\n", stamp, what);
}

void progress_point_begin(int nranks, int index, int count, long long steps, long long launch_steps, const char *passes)
{
    const double now = monotonic_s();
    if (!P.started) {
        const char *env = getenv("DPSCALE_PROGRESS_S");
        P.interval_s = env != NULL && env[0] ? atof(env) : PROGRESS_DEFAULT_INTERVAL_S;
        P.launch_t0 = now;
        P.launch_steps = launch_steps;
        P.started = 1;
    }
    P.in_point = 1;
    P.nranks = nranks;
    P.index = index;
    P.count = count;
    P.point_t0 = now;
    P.point_steps = steps;
    P.point_done = 0;
    P.pass[0] = '\0';
    if (progress_on()) progress_line(now, "begins: %s pass%s, %lld steps", passes, strchr(passes, ',') ? "es" : "", steps);
}

void progress_pass_begin(const char *pass, int warmup, int timed)
{
    if (!P.in_point) return;
    snprintf(P.pass, sizeof P.pass, "%s", pass);
    P.warmup = warmup;
    P.timed = timed;
    P.step = 0;
    P.pass_t0 = monotonic_s();
    if (!progress_on()) return;
    if (warmup > 0) progress_line(P.pass_t0, "%s pass begins: %d warm-up + %d timed steps", pass, warmup, timed);
    else progress_line(P.pass_t0, "%s pass begins: %d timed steps", pass, timed);
}

void progress_step(void)
{
    if (!P.in_point) return;
    P.step++;
    if (P.point_done < P.point_steps) { /* never past the plan, whatever the caller counted */
        P.point_done++;
        P.launch_done++;
    }
    if (!progress_on()) return;
    const double now = monotonic_s();
    if (now - P.last_line < P.interval_s) return;
    if (P.step <= P.warmup) progress_line(now, "%s pass, warm-up step %d/%d", P.pass, P.step, P.warmup);
    else progress_line(now, "%s pass, timed step %d/%d", P.pass, P.step - P.warmup, P.timed);
}

void progress_point_end(void)
{
    if (!P.in_point) return;
    P.launch_done += P.point_steps - P.point_done; /* the plan's steps, whatever was counted */
    P.point_done = P.point_steps;
    P.pass[0] = '\0';
    const double now = monotonic_s();
    char t[32];
    format_duration(now - P.point_t0, t, sizeof t);
    P.in_point = 0;
    if (progress_on()) progress_line(now, "done in %s", t);
}
