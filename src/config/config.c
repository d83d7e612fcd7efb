/* config.c — parse the command line (getopt_long) and, through config_ini.c, the
 * INI file into struct config, through the key table of config_keys.c and the value
 * parser of config_value.c; the checks between keys.
 * Every error is one line naming where the value came from and what is accepted. */
#include "config/config.h"
#include "config/config_ini.h"
#include "config/config_value.h"
#include "base/utf8.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* ---- the command line, through getopt_long -------------------------------- */

enum { OPT_CONFIG = 'c', OPT_HELP = 'h', OPT_OUTPUT = 'o', OPT_KEY_BASE = 1000 };

/* Short spellings for the keys people type most. */
static const struct { const char *alias, *section, *name; } cli_aliases[] = {
    {"backend", "run", "backend"}, {"sweep", "run", "sweep"}, {"output-dir", "run", "output_dir"},
    {"precision", "train", "precision"}, {"path", "comm", "path"}, {"library", "comm", "library"},
};
#define NALIASES (sizeof cli_aliases / sizeof cli_aliases[0])

int config_count_paths(struct config *cfg, char *err, size_t errlen)
{
    char list[CONFIG_STR_LEN], *items[16];
    const int value = cfg->path;
    const struct config_key *pk = config_find_key("comm", "path");
    snprintf(list, sizeof list, "%s", cfg->paths);
    const int n = config_split_list(list, items, 16);
    if (n < 0) {
        set_err(err, errlen, "comm.paths = '%s' is not a list: give paths separated by commas, none empty, e.g. nvlink,host",
                cfg->paths);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (config_parse_value(cfg, pk, items[i]) != 0) {
            set_err(err, errlen, "comm.paths = '%s': '%s' is not a path; use auto, nvlink, pcie, host or net", cfg->paths,
                    items[i]);
            return -1;
        }
    if (n != 1) cfg->path = value; /* several: each launch takes one, by comm.path */
    return n;
}


static int load_args(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < config_nkeys; i++)
        if (config_parse_value(cfg, &config_keys[i], config_keys[i].default_value) != 0) {
            set_err(err, errlen, "internal: default of %s.%s does not parse", config_keys[i].section, config_keys[i].name);
            return -1;
        }

    /* One long option per key ("model.layers"), plus the aliases. */
    static char names[256][64];
    struct option opts[256 + NALIASES + 4];
    size_t n = 0;
    for (size_t i = 0; i < config_nkeys; i++, n++) {
        snprintf(names[i], sizeof names[i], "%s.%s", config_keys[i].section, config_keys[i].name);
        opts[n] = (struct option){names[i], required_argument, NULL, OPT_KEY_BASE + (int)i};
    }
    for (size_t a = 0; a < NALIASES; a++, n++) {
        const struct config_key *key = config_find_key(cli_aliases[a].section, cli_aliases[a].name);
        opts[n] = (struct option){cli_aliases[a].alias, required_argument, NULL, OPT_KEY_BASE + (int)(key - config_keys)};
    }
    opts[n++] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
    opts[n++] = (struct option){"output", required_argument, NULL, OPT_OUTPUT};
    opts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[n] = (struct option){NULL, 0, NULL, 0};

    /* First pass: remember the overrides, find --config. Second: apply the file, then them. */
    struct { int key; const char *value; const char *flag; } overrides[512];
    int noverrides = 0;
    const char *config_path = NULL;
    optind = 0; /* glibc: restart scanning from argv[1] (also re-initialises between calls) */
    opterr = 0;
    for (;;) {
        const int at = optind > 0 ? optind : 1; /* the argument getopt_long reads now */
        int longindex = -1;
        const int c = getopt_long(argc, argv, "+c:o:h", opts, &longindex);
        if (c == -1) break;
        const char *flag = argv[at];
        if (c == ':' || (c == '?' && optopt != 0)) {
            set_err(err, errlen, "option %s needs a value; see dpscale run --help", argv[optind - 1]);
            return -1;
        }
        if (c == '?') {
            const char *unknown = argv[optind - 1];
            const int transports = strncmp(unknown, "--comm.transports", 17) == 0;
            if (transports || strncmp(unknown, "--comm.transport", 16) == 0 || strncmp(unknown, "--transport", 11) == 0) {
                set_err(err, errlen, "%s: %s", unknown, config_renamed_key("comm", transports ? "transports" : "transport"));
                return -1;
            }
            set_err(err, errlen, "unknown option '%s'; options are --config FILE and --section.key=value (see dpscale run --help)",
                    unknown);
            return -1;
        }
        /* getopt_long takes any unambiguous prefix: --train.overlap would set train.overlap_update */
        if (longindex >= 0) {
            const size_t written = strcspn(flag + 2, "=");
            if (written != strlen(opts[longindex].name)) {
                set_err(err, errlen, "unknown option '%.*s'; did you mean --%s? (options are written in full)", (int)written + 2,
                        flag, opts[longindex].name);
                return -1;
            }
        }
        if (c == OPT_HELP) {
            set_err(err, errlen, "help");
            return 1;
        }
        /* every other option has a value, after '=' or as the next argument; one that
         * starts with "--" is the next option, and the value was forgotten */
        if (strncmp(optarg, "--", 2) == 0) {
            if (optind - 1 > at)
                set_err(err, errlen, "option %s has no value: the next argument '%s' is an option; write %s=VALUE", flag,
                        optarg, flag);
            else
                set_err(err, errlen, "option %.*s: the value '%s' starts with '--'; a value cannot", (int)strcspn(flag, "="),
                        flag, optarg);
            return -1;
        }
        if (c == OPT_CONFIG) {
            if (config_path != NULL) {
                set_err(err, errlen, "--config is given twice ('%s', then '%s'); give one file", config_path, optarg);
                return -1;
            }
            config_path = optarg;
        } else if (c == OPT_OUTPUT || c >= OPT_KEY_BASE) {
            if (noverrides == (int)(sizeof overrides / sizeof overrides[0])) {
                set_err(err, errlen, "too many command-line options");
                return -1;
            }
            int key = c == OPT_OUTPUT ? (int)(config_find_key("run", "output") - config_keys) : c - OPT_KEY_BASE;
            overrides[noverrides].key = key;
            overrides[noverrides].value = optarg;
            overrides[noverrides].flag = flag;
            noverrides++;
        }
    }
    if (optind < argc) {
        set_err(err, errlen, "unexpected argument '%s'; options are --config FILE and --section.key=value", argv[optind]);
        return -1;
    }
    if (config_path != NULL) {
        if (strlen(config_path) >= CONFIG_STR_LEN) {
            set_err(err, errlen, "config path is too long: %s", config_path);
            return -1;
        }
        snprintf(cfg->config_path, sizeof cfg->config_path, "%s", config_path);
        if (config_load_ini(cfg, config_path, err, errlen) != 0) return -1;
    }
    for (int i = 0; i < noverrides; i++) {
        const struct config_key *key = &config_keys[overrides[i].key];
        if (config_parse_value(cfg, key, overrides[i].value) != 0) {
            char accepted[512], shown[96];
            config_describe_accepted(key, accepted, sizeof accepted);
            config_quote_value(overrides[i].value, shown, sizeof shown);
            set_err(err, errlen, "command line %.*s: %s is not accepted for %s.%s; expected %s",
                    (int)(strlen(overrides[i].value) > 80 ? strcspn(overrides[i].flag, "=") : strlen(overrides[i].flag)),
                    overrides[i].flag, shown, key->section, key->name, accepted);
            return -1;
        }
    }

    /* Rules between keys that need no knowledge of the launch. */
    for (int i = 1; i < cfg->nsweep; i++)
        if (cfg->sweep[i] <= cfg->sweep[i - 1]) {
            set_err(err, errlen, "run.sweep must be strictly increasing (got %d after %d), e.g. 1,2,4,8", cfg->sweep[i],
                    cfg->sweep[i - 1]);
            return -1;
        }
    /* comm.paths: names of comm.path; a single one sets it (several: config_resolve_for_world) */
    if (config_count_paths(cfg, err, errlen) < 0) return -1;
    if (cfg->symmetric) cfg->register_buffers = 1;
    if (cfg->grad_dtype == ALLREDUCE_COMPUTE && cfg->precision == PREC_FP16) {
        set_err(err, errlen, "train.grad_dtype = compute with train.precision = fp16 would store loss-scaled gradients "
                "in fp16, where they overflow; use train.grad_dtype = fp32 (or train.precision = bf16)");
        return -1;
    }
    if (cfg->master_weights == MASTER_OFF && cfg->precision == PREC_FP16) {
        set_err(err, errlen, "train.master_weights = off with train.precision = fp16 would update fp16 weights in place "
                "under a loss scale; use train.master_weights = fp32 (or train.precision = bf16)");
        return -1;
    }
    if (cfg->optimizer_state == STATE_COMPUTE && cfg->precision == PREC_FP16) {
        set_err(err, errlen, "train.optimizer_state = compute with train.precision = fp16 would keep the optimizer "
                "state in fp16, whose range is too narrow for it; use train.optimizer_state = fp32 (or train.precision = bf16)");
        return -1;
    }
    if (cfg->grad_dtype == ALLREDUCE_COMPUTE && cfg->allreduce_dtype == ALLREDUCE_FP32 &&
        (cfg->precision == PREC_BF16 || cfg->precision == PREC_FP16)) {
        set_err(err, errlen, "train.grad_dtype = compute keeps the gradients in %s, and they travel as they are: set "
                "comm.allreduce_dtype = compute (or train.grad_dtype = fp32)", cfg->precision == PREC_BF16 ? "bf16" : "fp16");
        return -1;
    }
    if (cfg->coll_min_mib > cfg->coll_max_mib) {
        set_err(err, errlen, "collective.min_mib = %g is above collective.max_mib = %g", cfg->coll_min_mib, cfg->coll_max_mib);
        return -1;
    }
    if (strchr(cfg->output, '/') != NULL) {
        set_err(err, errlen, "run.output '%s' must be a file name; put the folder in run.output_dir", cfg->output);
        return -1;
    }
    return 0;
}

int config_load(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    if (errlen > 0) err[0] = '\0';
    const int rc = load_args(cfg, argc, argv, err, errlen);
    /* one line of plain text whatever the input: a flag's value or a file name may hold a
     * line break, a C1 control or bytes that are not UTF-8; each becomes one '?' */
    if (rc < 0) {
        char *out = err;
        for (const char *p = err; *p != '\0';) {
            unsigned cp;
            const size_t n = utf8_next(p, &cp);
            const int plain = !utf8_is_control(cp) && !(cp == 0xFFFD && n == 1);
            if (plain) memmove(out, p, n);
            else *out = '?';
            out += plain ? n : 1;
            p += n;
        }
        *out = '\0';
    }
    return rc;
}

double config_loss_scale(const struct config *cfg)
{
    if (cfg->loss_scale > 0) return cfg->loss_scale;
    return cfg->precision == PREC_FP16 ? 1024.0 : 1.0;
}

int config_batch_per_rank(const struct config *cfg, int n)
{
    return cfg->scaling == SCALING_WEAK ? cfg->batch_per_gpu : cfg->global_batch / n;
}

int config_resolve_for_world(struct config *cfg, int world_size, char *err, size_t errlen)
{
    if (config_count_paths(cfg, err, errlen) > 1) {
        set_err(err, errlen, "comm.paths = %s: NCCL fixes its path once per process, so each needs a launch of "
                "its own; run jobs/lib/sweep.sh (or sbatch jobs/scale8.sh), which launches one dpscale per path and "
                "compares them", cfg->paths);
        return -1;
    }
    if (cfg->nsweep == 0) {
        for (int n = 1; n <= world_size && cfg->nsweep < CONFIG_MAX_SWEEP; n *= 2) cfg->sweep[cfg->nsweep++] = n;
    }
    int largest = cfg->sweep[cfg->nsweep - 1];
    if (largest > world_size) {
        set_err(err, errlen, "run.sweep asks for %d ranks but the launch has %d; start with mpirun -np %d (or srun -n %d) or lower the sweep",
                largest, world_size, largest, largest);
        return -1;
    }
    if (cfg->scaling == SCALING_STRONG) {
        if (cfg->global_batch == 0) {
            long long g = (long long)cfg->batch_per_gpu * largest;
            if (g > 1073741824LL) {
                set_err(err, errlen, "train.global_batch = batch_per_gpu x %d = %lld is too large; set train.global_batch", largest, g);
                return -1;
            }
            cfg->global_batch = (int)g;
        }
        for (int i = 0; i < cfg->nsweep; i++)
            if (cfg->global_batch % cfg->sweep[i] != 0) {
                set_err(err, errlen, "train.global_batch = %d cannot be split evenly over %d ranks; use a multiple of %d",
                        cfg->global_batch, cfg->sweep[i], cfg->sweep[i]);
                return -1;
            }
    } else if ((long long)cfg->batch_per_gpu * largest > 1073741824LL) {
        set_err(err, errlen, "global batch %d x %d ranks is over 2^30 samples; lower train.batch_per_gpu", cfg->batch_per_gpu, largest);
        return -1;
    }
    return 0;
}

/* Is `key` named by a word of `only`: its section, or section.key? */
static int key_listed(const struct config_key *k, const char *only)
{
    if (only == NULL) return 1;
    const size_t ls = strlen(k->section), ln = strlen(k->name);
    for (const char *w = only; *w;) {
        const size_t n = strcspn(w, " ");
        if ((n == ls && strncmp(w, k->section, ls) == 0) ||
            (n == ls + 1 + ln && strncmp(w, k->section, ls) == 0 && w[ls] == '.' && strncmp(w + ls + 1, k->name, ln) == 0))
            return 1;
        w += n;
        w += strspn(w, " ");
    }
    return 0;
}

void config_print_keys(FILE *out, const char *only)
{
    const char *section = "";
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        char accepted[256];
        if (!key_listed(k, only)) continue;
        if (strcmp(section, k->section) != 0) {
            section = k->section;
            fprintf(out, "[%s]\n", section);
        }
        config_describe_accepted(k, accepted, sizeof accepted);
        fprintf(out, "  %-14s %s (default '%s'; %s)\n", k->name, k->help, k->default_value, accepted);
    }
}
