/* watchdog.c — the watchdog thread, its heartbeat files and the abort (watchdog.h). */
#include "watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

/* A rank's heartbeat file, mapped: the main thread's notes land in it as they are
 * made, the watchdog thread stamps `beat`; the other ranks of the node read it. */
struct heartbeat {
    int rank, armed, step, bucket;
    long pid, seq; /* seq: notes so far; the ranks make the same ones, in step */
    double beat, note; /* CLOCK_MONOTONIC, the same for every process of the node */
    char pass[48];
};

static struct {
    pthread_t thread;
    int running, stop;
    pthread_mutex_t lock;
    double timeout_s; /* run.timeout_s; 0: automatic */
    int rank;
    char host[128];
    /* where the main thread is (under lock) */
    const char *pass;
    int armed, step, bucket;
    long seq;
    double last_note, step_started, slowest_step;
    /* the heartbeat folder of the node and this rank's file; "" when there is none */
    char dir[200], file[240];
    struct heartbeat *hb; /* mapped `file`, NULL when there is none */
    int (*poll)(char *why, size_t len);
    void (*abort_comms)(void);
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .step = -1, .bucket = -1};

static double now_s(void) /* one clock for every process of the node */
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double deadline_locked(void)
{
    if (W.timeout_s > 0) return W.timeout_s;
    if (W.slowest_step <= 0) return WATCHDOG_START_S;
    const double d = WATCHDOG_STEP_MULTIPLE * W.slowest_step;
    return d > WATCHDOG_FLOOR_S ? d : WATCHDOG_FLOOR_S;
}

static void where_locked(char *buf, size_t len)
{
    if (W.pass == NULL) snprintf(buf, len, "outside the timed passes");
    else if (W.bucket >= 0) snprintf(buf, len, "in the %s pass, step %d, bucket %d", W.pass, W.step, W.bucket);
    else snprintf(buf, len, "in the %s pass, step %d", W.pass, W.step);
}

/* Print the one line, take the communicators and the job down; never returns. */
static void fire(const char *what)
{
    char line[1400];
    pthread_mutex_lock(&W.lock);
    const double d = deadline_locked();
    const int automatic = W.timeout_s <= 0;
    pthread_mutex_unlock(&W.lock);
    const int n = snprintf(line, sizeof line,
                           "dpscale: error: %s:%d %s; ending the job (deadline %.0f s, %s)\n"
                           "hint: a rank that is stopped, dead or waiting for a collective the others never started "
                           "hangs the job; raise run.timeout_s if the steps are legitimately that slow\n",
                           W.host, W.rank, what, d, automatic ? "automatic: run.timeout_s = 0" : "run.timeout_s");
    if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    dp_error_ending(); /* the main thread's NCCL call fails once its communicator is aborted: no second line */
    alarm(WATCHDOG_ABORT_GRACE_S); /* should an abort below hang, SIGALRM ends the process */
    if (W.abort_comms != NULL) W.abort_comms();
    if (W.file[0]) unlink(W.file);
    MPI_Abort(MPI_COMM_WORLD, EXIT_HUNG);
    _exit(EXIT_HUNG);
}

/* The mapped heartbeat follows the main thread (under W.lock). */
static void publish_locked(void)
{
    if (W.hb == NULL) return;
    W.hb->armed = W.armed;
    W.hb->step = W.step;
    W.hb->bucket = W.bucket;
    W.hb->note = W.last_note;
    W.hb->seq = W.seq;
}

/* ... and its pass's name, which changes only at watchdog_arm and watchdog_idle. */
static void publish_pass_locked(void)
{
    if (W.hb != NULL) snprintf(W.hb->pass, sizeof W.hb->pass, "%s", W.pass != NULL ? W.pass : "-");
    publish_locked();
}

static void describe(const struct heartbeat *h, char *buf, size_t len)
{
    if (strcmp(h->pass, "-") == 0) snprintf(buf, len, "outside the timed passes");
    else if (h->bucket >= 0) snprintf(buf, len, "in the %s pass, step %d, bucket %d", h->pass, h->step, h->bucket);
    else snprintf(buf, len, "in the %s pass, step %d", h->pass, h->step);
}

/* The other ranks of this node, from their heartbeats: the first whose heartbeat is
 * older than `stale_s` (stopped), else the first that is behind this rank in the same
 * pass (fewer notes: it never started what this rank waits in; my_seq < 0: not
 * looked for), with the reason; *ahead: some rank has gone further in this pass.
 * Returns 1 when a rank is named. */
static int scan_peers(double now, double stale_s, long my_seq, char *why, size_t len, int *ahead)
{
    *ahead = 0;
    char my_pass[48];
    pthread_mutex_lock(&W.lock);
    snprintf(my_pass, sizeof my_pass, "%s", W.pass != NULL ? W.pass : "-");
    pthread_mutex_unlock(&W.lock);
    if (!W.dir[0]) return 0;
    DIR *d = opendir(W.dir);
    if (d == NULL) return 0;
    struct heartbeat stopped = {.rank = -1}, behind = {.rank = -1};
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int rank;
        char tail[8], path[480];
        if (sscanf(e->d_name, "rank%d%7s", &rank, tail) != 1 || rank == W.rank) continue;
        snprintf(path, sizeof path, "%s/%s", W.dir, e->d_name);
        struct heartbeat h;
        const int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        const ssize_t got = read(fd, &h, sizeof h);
        close(fd);
        if (got != (ssize_t)sizeof h || h.beat <= 0) continue;
        h.pass[sizeof h.pass - 1] = '\0';
        if (now - h.beat > stale_s) {
            if (stopped.rank < 0) stopped = h;
        } else if (my_seq >= 0 && strcmp(h.pass, my_pass) == 0 && h.seq < my_seq) {
            if (behind.rank < 0) behind = h;
        } else if (my_seq >= 0 && strcmp(h.pass, my_pass) == 0 && h.seq > my_seq) {
            *ahead = 1;
        }
    }
    closedir(d);
    char mine[160], theirs[200];
    pthread_mutex_lock(&W.lock);
    where_locked(mine, sizeof mine);
    const double waited = now - W.last_note;
    pthread_mutex_unlock(&W.lock);
    if (stopped.rank >= 0) {
        describe(&stopped, theirs, sizeof theirs);
        snprintf(why, len, "rank %d on this node (pid %ld) stopped answering %.1f s ago %s, while this rank waited %.1f s "
                 "%s", stopped.rank, stopped.pid, now - stopped.beat, theirs, waited, mine);
        return 1;
    }
    if (behind.rank >= 0) {
        describe(&behind, theirs, sizeof theirs);
        snprintf(why, len, "rank %d on this node (pid %ld) is stuck %s (running, but it never started what this rank "
                 "has waited %.1f s for %s)", behind.rank, behind.pid, theirs, waited, mine);
        return 1;
    }
    return 0;
}

static void *watch(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's */
    const struct timespec tick = {0, (long)(WATCHDOG_TICK_S * 1e9)};
    double last_beat = 0, last_tick = now_s();
    for (;;) {
        nanosleep(&tick, NULL);
        const double now = now_s();
        pthread_mutex_lock(&W.lock);
        if (W.stop) {
            pthread_mutex_unlock(&W.lock);
            return NULL;
        }
        if (now - last_tick > WATCHDOG_STALL_S) { /* this process was stopped itself: count anew */
            W.last_note = now;
            publish_locked();
        }
        last_tick = now;
        const double deadline = deadline_locked(), idle = now - W.last_note;
        char why[1100] = "", where[160];
        where_locked(where, sizeof where);
        const int stalled = W.armed && idle > deadline;
        const long seq = W.seq;
        if (!stalled && W.poll != NULL) {
            char lib[600] = "";
            if (W.poll(lib, sizeof lib)) snprintf(why, sizeof why, "%s, %s", lib, where);
        }
        pthread_mutex_unlock(&W.lock);
        /* a peer stopped for longer than the deadline; or, when this rank is the one
         * that stalled, a peer that misses its heartbeats or lags behind: that is the
         * rank to name. A rank that is itself behind gives the others another deadline
         * to say so first (their abort ends it), so that one line names the culprit. */
        int ahead = 0;
        if (!why[0]) scan_peers(now, stalled ? WATCHDOG_STALL_S : deadline, stalled ? seq : -1, why, sizeof why, &ahead);
        if (!why[0] && stalled && !(ahead && idle <= 2 * deadline + WATCHDOG_STALL_S))
            snprintf(why, sizeof why, "no progress for %.1f s %s: the ranks did not all reach it (no rank of this "
                     "node is stopped or behind: one of another node, or a collective or GPU that never returned)",
                     idle, where);
        if (why[0]) fire(why);
        if (W.hb != NULL && now - last_beat >= WATCHDOG_BEAT_S) {
            W.hb->beat = now;
            last_beat = now;
        }
    }
}

/* Folders that jobs killed outright (SIGKILL, a node's OOM killer) left behind: their
 * rank 0 (the pid in the name) is gone from this node. */
static void remove_dead_jobs(const char *base)
{
    DIR *d = opendir(base);
    if (d == NULL) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long pid, when;
        if (sscanf(e->d_name, "dpscale-heartbeat-%ld-%ld", &pid, &when) != 2 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        DIR *j = opendir(path);
        for (struct dirent *f; j != NULL && (f = readdir(j)) != NULL;) {
            char file[800];
            snprintf(file, sizeof file, "%s/%s", path, f->d_name);
            if (f->d_name[0] != '.') unlink(file);
        }
        if (j != NULL) closedir(j);
        rmdir(path);
    }
    closedir(d);
}

/* The node's heartbeat folder: rank 0 names it, every rank creates it on its node. */
static void make_heartbeat_dir(void)
{
    char name[200] = "";
    if (W.rank == 0) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        remove_dead_jobs(base);
        snprintf(name, sizeof name, "%s/dpscale-heartbeat-%ld-%ld", base, (long)getpid(), (long)time(NULL));
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (mkdir(name, 0700) != 0 && errno != EEXIST) return; /* no heartbeats here: this rank's own deadline still holds */
    snprintf(W.dir, sizeof W.dir, "%s", name);
    snprintf(W.file, sizeof W.file, "%s/rank%d", name, W.rank);
    const int fd = open(W.file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(struct heartbeat)) != 0) {
        if (fd >= 0) close(fd);
        W.file[0] = '\0';
        return;
    }
    void *map = mmap(NULL, sizeof(struct heartbeat), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        unlink(W.file);
        W.file[0] = '\0';
        return;
    }
    W.hb = map;
    W.hb->rank = W.rank;
    W.hb->pid = (long)getpid();
}

void watchdog_start(double timeout_s, int rank, const char *host)
{
    if (W.running) return;
    W.timeout_s = timeout_s;
    W.rank = rank;
    snprintf(W.host, sizeof W.host, "%s", host);
    W.last_note = now_s();
    make_heartbeat_dir();
    pthread_mutex_lock(&W.lock);
    publish_pass_locked();
    if (W.hb != NULL) W.hb->beat = now_s();
    pthread_mutex_unlock(&W.lock);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's first heartbeat is there before anyone looks */
    W.stop = 0;
    if (pthread_create(&W.thread, NULL, watch, NULL) == 0) W.running = 1;
}

void watchdog_stop(void)
{
    if (!W.running) return;
    pthread_mutex_lock(&W.lock);
    W.stop = 1;
    pthread_mutex_unlock(&W.lock);
    pthread_join(W.thread, NULL);
    W.running = 0;
    if (W.hb != NULL) munmap(W.hb, sizeof *W.hb);
    W.hb = NULL;
    if (W.file[0]) unlink(W.file);
    MPI_Barrier(MPI_COMM_WORLD); /* every file of the node is gone: the folder can go */
    if (W.dir[0]) rmdir(W.dir);
}

void watchdog_arm(const char *pass)
{
    pthread_mutex_lock(&W.lock);
    W.pass = pass;
    W.armed = 1;
    W.seq = 0; /* notes are counted within a pass: every rank of the run makes the pass's same ones */
    W.step = -1;
    W.bucket = -1;
    W.last_note = now_s();
    publish_pass_locked();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_note(int step, int bucket)
{
    const double now = now_s();
    pthread_mutex_lock(&W.lock);
    if (step != W.step) { /* a step ended: the automatic deadline follows the slowest */
        if (W.step >= 0 && now - W.step_started > W.slowest_step) W.slowest_step = now - W.step_started;
        W.step_started = now;
    }
    W.step = step;
    W.bucket = bucket;
    W.last_note = now;
    W.seq++;
    publish_locked();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_entered(void)
{
    pthread_mutex_lock(&W.lock);
    W.seq++;
    W.last_note = now_s();
    publish_locked();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_idle(void)
{
    pthread_mutex_lock(&W.lock);
    W.armed = 0;
    W.pass = NULL;
    W.step = W.bucket = -1;
    W.last_note = now_s();
    publish_pass_locked();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_set_library(int (*poll)(char *why, size_t len), void (*abort_comms)(void))
{
    pthread_mutex_lock(&W.lock); /* the thread polls under this lock: after this, never the old ones */
    W.poll = poll;
    W.abort_comms = abort_comms;
    pthread_mutex_unlock(&W.lock);
}
