/* watchdog.c — the watchdog thread, the node's heartbeat folder and its files, the
 * removal of dead jobs' folders, and the abort (watchdog.h). */
#include "base/watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"

#define HEARTBEAT_MAGIC 0x3162686373706475ull /* "udpschb1" */
/* mkdtemp's template in the base folder; older dpscale named its folders
 * dpscale-heartbeat-PID-TIME, which this never makes, reads or removes. */
#define HEARTBEAT_PREFIX "dpscale-heartbeat."

/* A rank's heartbeat file: its watchdog thread rewrites it every tick from the main
 * thread's notes, the other ranks of the node read it. */
struct heartbeat {
    uint64_t magic, token; /* token: this launch's, so that a stray file is not a rank */
    int32_t rank, armed, step, bucket;
    int64_t pid, seq; /* seq: notes so far; the ranks make the same ones, in step */
    double beat, note; /* CLOCK_MONOTONIC, the same for every process of the node */
    char pass[48];
};

/* MPI's errors come back to us (mpi_bootstrap sets MPI_ERRORS_RETURN): one fails the rank. */
#define WATCHDOG_MPI(call)                                                                          \
    do {                                                                                            \
        const int mpi_rc_ = (call);                                                                 \
        if (mpi_rc_ != MPI_SUCCESS)                                                                 \
            DP_FATAL("a peer rank may have died; look for its error above", "%s failed (MPI error %d)", #call, mpi_rc_); \
    } while (0)

static struct {
    pthread_t thread;
    int started, running, stop; /* started: the collective set-up is done (watchdog_stop's to undo) */
    pthread_mutex_t lock;
    double timeout_s; /* run.timeout_s; 0: automatic */
    double pass_deadline_s; /* the armed pass's own deadline (watchdog_arm_for); 0: the one above */
    int rank;
    long pid;
    char host[128];
    /* where the main thread is (under lock) */
    const char *pass;
    int armed, step, bucket;
    long seq;
    double last_note, step_started, slowest_step;
    /* the node's ranks, its heartbeat folder (held with flock(LOCK_SH) while this rank
     * lives; -1 when there is none) and this rank's file in it (-1: none) */
    MPI_Comm node;
    int node_rank, dirfd, fd;
    int *peers, npeers; /* world ranks of this node's other ranks, from MPI: no file names another */
    uint64_t token;
    char dir[PATH_MAX], name[32];
    int (*poll)(char *why, size_t len);
    void (*abort_comms)(void);
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .step = -1, .bucket = -1, .dirfd = -1, .fd = -1};

static double now_s(void) /* one clock for every process of the node */
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double deadline_locked(void)
{
    if (W.pass_deadline_s > 0) return W.pass_deadline_s; /* a pass that set its own (watchdog_arm_for) */
    if (W.timeout_s > 0) return W.timeout_s;
    if (W.slowest_step <= 0) return WATCHDOG_START_S;
    const double d = WATCHDOG_STEP_MULTIPLE * W.slowest_step;
    return d > WATCHDOG_FLOOR_S ? d : WATCHDOG_FLOOR_S;
}

static void where_locked(char *buf, size_t len)
{
    if (W.pass == NULL) snprintf(buf, len, "outside the timed passes");
    else if (W.bucket >= 0) snprintf(buf, len, "in the %s pass, step %d, bucket %d", W.pass, W.step, W.bucket);
    else if (W.step < 0) snprintf(buf, len, "in the %s pass", W.pass); /* between steps: set-up, agreement, write */
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
    if (W.fd >= 0) unlinkat(W.dirfd, W.name, 0);
    MPI_Abort(MPI_COMM_WORLD, EXIT_HUNG);
    _exit(EXIT_HUNG);
}

/* This rank's heartbeat as the main thread left it (under W.lock). The main thread
 * only updates W: its notes come every bucket of every step, and make no system call. */
static void snapshot_locked(struct heartbeat *h, double beat)
{
    *h = (struct heartbeat){.magic = HEARTBEAT_MAGIC, .token = W.token, .rank = W.rank, .armed = W.armed,
                            .step = W.step, .bucket = W.bucket, .pid = W.pid, .seq = W.seq, .beat = beat,
                            .note = W.last_note};
    snprintf(h->pass, sizeof h->pass, "%s", W.pass != NULL ? W.pass : "-");
}

/* The thread's tick: the snapshot written over this rank's file. A failure (a tmpfs
 * filled after someone truncated the file) costs this beat only. */
static void beat(double now)
{
    if (W.fd < 0) return;
    struct heartbeat h;
    pthread_mutex_lock(&W.lock);
    snapshot_locked(&h, now);
    pthread_mutex_unlock(&W.lock);
    (void)!pwrite(W.fd, &h, sizeof h, 0);
}

static int is_heartbeat_file(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_size == (off_t)sizeof(struct heartbeat) && st->st_uid == geteuid();
}

/* Node peer `rank`'s heartbeat, when its file is one: a regular file of this user, of
 * the heartbeat's size, carrying this launch's token and that rank. Anything else (a
 * link, a FIFO, a file cut short or left by something else) is skipped: never
 * followed, never waited on, never believed. Only the node's ranks, as MPI lists
 * them, are looked for: a file for rank 9 of a 2-rank job is never read. */
static int read_peer(int rank, struct heartbeat *h)
{
    char name[32];
    struct stat st;
    snprintf(name, sizeof name, "rank%d", rank);
    if (fstatat(W.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !is_heartbeat_file(&st)) return 0;
    const int fd = openat(W.dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    const int got = fstat(fd, &st) == 0 && is_heartbeat_file(&st) && pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h;
    close(fd);
    if (!got || h->magic != HEARTBEAT_MAGIC || h->token != W.token || h->rank != rank || h->beat <= 0) return 0;
    h->pass[sizeof h->pass - 1] = '\0';
    return 1;
}

static void describe(const struct heartbeat *h, char *buf, size_t len)
{
    if (strcmp(h->pass, "-") == 0) snprintf(buf, len, "outside the timed passes");
    else if (h->bucket >= 0) snprintf(buf, len, "in the %s pass, step %d, bucket %d", h->pass, h->step, h->bucket);
    else if (h->step < 0) snprintf(buf, len, "in the %s pass", h->pass);
    else snprintf(buf, len, "in the %s pass, step %d", h->pass, h->step);
}

/* The other ranks of this node, from their heartbeats: the first whose heartbeat is
 * older than `stale_s` (stopped), else the first that is behind this rank in the same
 * pass (fewer notes: it never started what this rank waits in; my_seq < 0: not
 * looked for), with the reason; *ahead: some rank has gone further in this pass;
 * *moving: some rank made progress within the last `moving_s` seconds (a step, a pass
 * begun: it is running toward what this rank waits in, as a rank still in the pass
 * before is on a loaded machine, since the compute-only pass meets the others only at
 * its end; it is no culprit, and its own deadline covers it). Returns 1 when a rank is
 * named. */
static int scan_peers(double now, double stale_s, double moving_s, long my_seq, char *why, size_t len, int *ahead,
                      int *moving)
{
    *ahead = *moving = 0;
    if (W.fd < 0) return 0;
    char my_pass[48];
    pthread_mutex_lock(&W.lock);
    snprintf(my_pass, sizeof my_pass, "%s", W.pass != NULL ? W.pass : "-");
    pthread_mutex_unlock(&W.lock);
    struct heartbeat stopped = {.rank = -1}, behind = {.rank = -1}, h;
    for (int i = 0; i < W.npeers; i++) {
        if (!read_peer(W.peers[i], &h)) continue; /* gone (its rank ended) or not a heartbeat */
        if (now - h.beat > stale_s) {
            if (stopped.rank < 0) stopped = h;
        } else if (now - h.note <= moving_s) {
            *moving = 1;
        } else if (my_seq >= 0 && strcmp(h.pass, my_pass) == 0 && h.seq < my_seq) {
            if (behind.rank < 0) behind = h;
        } else if (my_seq >= 0 && strcmp(h.pass, my_pass) == 0 && h.seq > my_seq) {
            *ahead = 1;
        }
    }
    char mine[160], theirs[200];
    pthread_mutex_lock(&W.lock);
    where_locked(mine, sizeof mine);
    const double waited = now - W.last_note;
    pthread_mutex_unlock(&W.lock);
    if (stopped.rank >= 0) {
        describe(&stopped, theirs, sizeof theirs);
        snprintf(why, len, "rank %d on this node (pid %ld) stopped answering %.1f s ago %s, while this rank waited %.1f s "
                 "%s", (int)stopped.rank, (long)stopped.pid, now - stopped.beat, theirs, waited, mine);
        return 1;
    }
    if (behind.rank >= 0) {
        describe(&behind, theirs, sizeof theirs);
        snprintf(why, len, "rank %d on this node (pid %ld) is stuck %s (running, but it never started what this rank "
                 "has waited %.1f s for %s)", (int)behind.rank, (long)behind.pid, theirs, waited, mine);
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
    double last_tick = now_s();
    for (;;) {
        nanosleep(&tick, NULL);
        const double now = now_s();
        pthread_mutex_lock(&W.lock);
        if (W.stop) {
            pthread_mutex_unlock(&W.lock);
            return NULL;
        }
        if (now - last_tick > WATCHDOG_STALL_S) W.last_note = now; /* this process was stopped itself: count anew */
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
        int ahead = 0, moving = 0;
        if (!why[0])
            scan_peers(now, stalled ? WATCHDOG_STALL_S : deadline, deadline, stalled ? seq : -1, why, sizeof why, &ahead,
                       &moving);
        if (!why[0] && stalled && !moving && !(ahead && idle <= 2 * deadline + WATCHDOG_STALL_S))
            snprintf(why, sizeof why, "no progress for %.1f s %s: the ranks did not all reach it (no rank of this "
                     "node is stopped or behind: one of another node, or a collective or GPU that never returned)",
                     idle, where);
        if (why[0]) fire(why);
        beat(now);
    }
}

/* Every entry of the folder `dfd`, removed by unlinkat on the folder: a link goes,
 * never what it points at. */
static void remove_entries(int dfd)
{
    const int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0) close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dfd, e->d_name, 0);
    closedir(d);
}

/* Folders that jobs killed outright (SIGKILL, a node's OOM killer) left in `base`.
 * A folder goes only when it is this user's own real folder (not a link), older than
 * WATCHDOG_CLEAN_AGE_S (a job makes its folder before it locks it), and can be locked
 * exclusively: every rank of a live job holds flock(LOCK_SH) on its folder, which
 * tells the living from the dead in every pid namespace and whichever node its rank 0
 * is on, where a pid would not. */
static void remove_dead_jobs(const char *base)
{
    DIR *d = opendir(base);
    if (d == NULL) return;
    const int bfd = dirfd(d);
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st, held;
        if (strncmp(e->d_name, HEARTBEAT_PREFIX, strlen(HEARTBEAT_PREFIX)) != 0) continue;
        if (fstatat(bfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            now - st.st_mtime < WATCHDOG_CLEAN_AGE_S)
            continue;
        const int jfd = openat(bfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (jfd < 0) continue;
        if (fstat(jfd, &held) == 0 && held.st_dev == st.st_dev && held.st_ino == st.st_ino &&
            held.st_uid == geteuid() && flock(jfd, LOCK_EX | LOCK_NB) == 0) {
            remove_entries(jfd);
            unlinkat(bfd, e->d_name, AT_REMOVEDIR);
        }
        close(jfd);
    }
    closedir(d);
}

/* What went wrong on a rank while setting its heartbeat up, as the node's first rank
 * reports it: a stage and an errno (0: none to give). */
enum hb_stage { HB_OK, HB_NO_FOLDER, HB_MKDTEMP, HB_OPEN, HB_NOT_PRIVATE, HB_LOCK, HB_CREATE, HB_WRITE };
static const char *const hb_stage_name[] = {
    "", "the node's first rank made no folder", "making the folder", "opening the folder",
    "the folder is not this user's private folder", "locking the folder", "creating the rank's file", "writing the rank's file"};

static void say_failure(char *buf, size_t len, int stage, int err)
{
    if (err != 0) snprintf(buf, len, "%s: %s", hb_stage_name[stage], strerror(err));
    else snprintf(buf, len, "%s", hb_stage_name[stage]);
}

/* Opens the node's folder `path`, checks that it is this user's private folder (the
 * very one the first rank made, when expect_dev/ino are given) and locks it shared. */
static int adopt_folder(const char *path, const struct stat *expect, int *err)
{
    struct stat st;
    const int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int stage = HB_OK;
    *err = 0;
    if (fd < 0) {
        *err = errno;
        return HB_OPEN;
    }
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0777) != 0700 ||
        (expect != NULL && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino)))
        stage = HB_NOT_PRIVATE;
    else if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        stage = HB_LOCK;
        *err = errno;
    }
    if (stage != HB_OK) close(fd);
    else W.dirfd = fd;
    return stage;
}

/* This rank's file, made anew in the folder and written whole once, so that a full
 * tmpfs says so now (ENOSPC) rather than at some later beat. */
static int make_own_file(int *err)
{
    snprintf(W.name, sizeof W.name, "rank%d", W.rank);
    W.fd = openat(W.dirfd, W.name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (W.fd < 0) {
        *err = errno;
        return HB_CREATE;
    }
    struct heartbeat h;
    pthread_mutex_lock(&W.lock);
    snapshot_locked(&h, now_s());
    pthread_mutex_unlock(&W.lock);
    const ssize_t put = pwrite(W.fd, &h, sizeof h, 0);
    if (put == (ssize_t)sizeof h) return HB_OK;
    *err = put < 0 ? errno : ENOSPC;
    close(W.fd);
    W.fd = -1;
    unlinkat(W.dirfd, W.name, 0);
    return HB_WRITE;
}

/* Undoes adopt_folder and make_own_file on this rank. */
static void drop_own_file(void)
{
    if (W.fd >= 0) {
        unlinkat(W.dirfd, W.name, 0);
        close(W.fd);
        W.fd = -1;
    }
}

static int listed_before(const char *const *bases, int n, const char *base)
{
    for (int i = 0; i < n; i++)
        if (bases[i] != NULL && strcmp(bases[i], base) == 0) return 1;
    return 0;
}

/* The node's first rank: a folder of its own in the first base where one can be made,
 * with its file written in it. Returns 0, or -1 with what each base said in `why`. */
static int make_folder(struct stat *made, char *why, size_t len)
{
    const char *env = getenv("DPSCALE_HEARTBEAT_DIR");
    const char *bases[3] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
    int nbases = 3;
    if (env != NULL && env[0]) bases[0] = env, nbases = 1; /* the one asked for, or none */
    why[0] = '\0';
    for (int b = 0; b < nbases; b++) {
        const char *base = bases[b];
        if (base == NULL || !base[0] || listed_before(bases, b, base)) continue;
        remove_dead_jobs(base);
        int stage = HB_MKDTEMP, err = 0;
        const int n = snprintf(W.dir, sizeof W.dir, "%s/" HEARTBEAT_PREFIX "XXXXXX", base);
        if (n < 0 || (size_t)n >= sizeof W.dir) err = ENAMETOOLONG;
        else if (mkdtemp(W.dir) == NULL) err = errno;
        else if ((stage = adopt_folder(W.dir, NULL, &err)) == HB_OK && (stage = make_own_file(&err)) == HB_OK &&
                 fstat(W.dirfd, made) == 0)
            return 0;
        if (stage != HB_MKDTEMP) { /* the folder was made: it goes */
            drop_own_file();
            if (W.dirfd >= 0) close(W.dirfd);
            W.dirfd = -1;
            rmdir(W.dir);
        }
        char reason[200];
        say_failure(reason, sizeof reason, stage, err);
        const size_t used = strlen(why);
        snprintf(why + used, len - used, "%s%s: %s", used ? "; " : "", base, reason);
    }
    W.dir[0] = '\0';
    return -1;
}

/* The node's heartbeat folder: its first rank makes it and tells the others, who open
 * and check it; then each rank makes its file. Every MPI call here is made by every
 * rank of the node whatever happened before it, so that a rank that failed never
 * leaves the others waiting in a collective; the node uses heartbeats only when every
 * one of its ranks has one. */
static void make_heartbeat_dir(void)
{
    struct { char path[PATH_MAX]; long long dev, ino; int ok; } made = {.ok = 0};
    char why[1024] = "";
    int mine[3] = {W.rank, HB_OK, 0}; /* world rank, stage, errno */
    WATCHDOG_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, W.rank, MPI_INFO_NULL, &W.node));
    WATCHDOG_MPI(MPI_Comm_rank(W.node, &W.node_rank));
    int nlocal = 1;
    WATCHDOG_MPI(MPI_Comm_size(W.node, &nlocal));
    if (W.node_rank == 0) {
        struct stat st;
        if (make_folder(&st, why, sizeof why) == 0) {
            snprintf(made.path, sizeof made.path, "%s", W.dir);
            made.dev = (long long)st.st_dev, made.ino = (long long)st.st_ino, made.ok = 1;
        }
        mine[1] = made.ok ? HB_OK : HB_NO_FOLDER;
    }
    WATCHDOG_MPI(MPI_Bcast(&made, (int)sizeof made, MPI_BYTE, 0, W.node));
    if (W.node_rank != 0) {
        struct stat expect = {.st_dev = (dev_t)made.dev, .st_ino = (ino_t)made.ino};
        snprintf(W.dir, sizeof W.dir, "%s", made.path);
        if (!made.ok) mine[1] = HB_NO_FOLDER;
        else if ((mine[1] = adopt_folder(W.dir, &expect, &mine[2])) == HB_OK) mine[1] = make_own_file(&mine[2]);
    }
    int *all = malloc(sizeof(int) * 3 * (size_t)nlocal);
    CHECK_ALLOC(all);
    WATCHDOG_MPI(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, W.node));
    int bad = -1; /* the first node-local rank without a heartbeat */
    for (int i = 0; i < nlocal && bad < 0; i++)
        if (all[3 * i + 1] != HB_OK) bad = i;
    W.peers = malloc(sizeof(int) * (size_t)nlocal);
    CHECK_ALLOC(W.peers);
    W.npeers = 0;
    for (int i = 0; i < nlocal && bad < 0; i++)
        if (all[3 * i] != W.rank) W.peers[W.npeers++] = all[3 * i];
    if (bad >= 0) drop_own_file();
    WATCHDOG_MPI(MPI_Barrier(W.node)); /* on failure: every file of the node is gone, the folder can go */
    if (bad >= 0 && W.dirfd >= 0) {
        if (W.node_rank == 0) {
            remove_entries(W.dirfd);
            rmdir(W.dir);
        }
        close(W.dirfd);
        W.dirfd = -1;
    }
    if (bad >= 0 && W.node_rank == 0) {
        char what[PATH_MAX + 1100], reason[300];
        if (bad == 0) snprintf(what, sizeof what, "no heartbeat folder could be used (%s", why);
        else {
            say_failure(reason, sizeof reason, all[3 * bad + 1], all[3 * bad + 2]);
            snprintf(what, sizeof what, "rank %d of this node could not use the heartbeat folder %s (%s",
                     all[3 * bad], made.path, reason);
        }
        fprintf(stderr, "dpscale: warning: %s:%d %s; DPSCALE_HEARTBEAT_DIR may name a writable node-local folder): "
                "no node-local heartbeats; a stopped rank is found by each rank's own deadline only\n",
                W.host, W.rank, what);
    }
    free(all);
}

/* The launch's token, from world rank 0: what tells this launch's heartbeats from any
 * other file. */
static uint64_t launch_token(void)
{
    uint64_t t = 0;
    if (W.rank == 0 && getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t) /* no entropy yet: something still unique */
        t = ((uint64_t)time(NULL) << 32) ^ (uint64_t)getpid() ^ (uint64_t)(now_s() * 1e9);
    WATCHDOG_MPI(MPI_Bcast(&t, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
    return t;
}

void watchdog_start(double timeout_s, int rank, const char *host)
{
    if (W.started) return;
    W.timeout_s = timeout_s;
    W.rank = rank;
    W.pid = (long)getpid();
    snprintf(W.host, sizeof W.host, "%s", host);
    W.last_note = now_s();
    W.token = launch_token();
    make_heartbeat_dir();
    W.started = 1;
    WATCHDOG_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every rank's first heartbeat is there before anyone looks */
    W.stop = 0;
    if (pthread_create(&W.thread, NULL, watch, NULL) == 0) W.running = 1;
}

void watchdog_stop(void)
{
    if (!W.started) return;
    if (W.running) {
        pthread_mutex_lock(&W.lock);
        W.stop = 1;
        pthread_mutex_unlock(&W.lock);
        pthread_join(W.thread, NULL);
        W.running = 0;
    }
    drop_own_file();
    WATCHDOG_MPI(MPI_Barrier(W.node)); /* every rank of the node is done with the folder: it can go */
    if (W.dirfd >= 0) {
        struct stat here, held;
        if (W.node_rank == 0) { /* with whatever else came into it; by name only if the name is still it */
            remove_entries(W.dirfd);
            if (fstat(W.dirfd, &held) == 0 && lstat(W.dir, &here) == 0 && here.st_dev == held.st_dev &&
                here.st_ino == held.st_ino)
                rmdir(W.dir);
        }
        close(W.dirfd);
        W.dirfd = -1;
    }
    free(W.peers);
    W.peers = NULL;
    W.npeers = 0;
    WATCHDOG_MPI(MPI_Comm_free(&W.node));
    W.started = 0;
}

void watchdog_arm(const char *pass) { watchdog_arm_for(pass, 0.0); }

void watchdog_arm_for(const char *pass, double deadline_s)
{
    pthread_mutex_lock(&W.lock);
    W.pass_deadline_s = deadline_s;
    W.pass = pass;
    W.armed = 1;
    W.seq = 0; /* notes are counted within a pass: every rank of the run makes the pass's same ones */
    W.step = -1;
    W.bucket = -1;
    W.last_note = now_s();
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
    pthread_mutex_unlock(&W.lock);
}

void watchdog_entered(void)
{
    pthread_mutex_lock(&W.lock);
    W.seq++;
    W.last_note = now_s();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_idle(void)
{
    pthread_mutex_lock(&W.lock);
    W.armed = 0;
    W.pass_deadline_s = 0;
    W.pass = NULL;
    W.step = W.bucket = -1;
    W.last_note = now_s();
    pthread_mutex_unlock(&W.lock);
}

void watchdog_set_library(int (*poll)(char *why, size_t len), void (*abort_comms)(void))
{
    pthread_mutex_lock(&W.lock); /* the thread polls under this lock: after this, never the old ones */
    W.poll = poll;
    W.abort_comms = abort_comms;
    pthread_mutex_unlock(&W.lock);
}
