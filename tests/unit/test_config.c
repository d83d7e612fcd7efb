/* test_config.c — the configuration parser: defaults, INI files, command-line
 * overrides, and a clear one-line error for every kind of bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "check.h"

static char g_err[1024];

/* Write `len` bytes of `text` to a temporary INI file and return its path. */
static const char *ini_bytes(const char *text, size_t len)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/dpscale-test-%d.ini", (int)getpid());
    FILE *f = fopen(path, "w");
    fwrite(text, 1, len, f);
    fclose(f);
    return path;
}

static const char *ini(const char *text) { return ini_bytes(text, strlen(text)); }

static int load(struct config *cfg, int argc, char **argv)
{
    g_err[0] = '\0';
    return config_load(cfg, argc, argv, g_err, sizeof g_err);
}

TEST(defaults_apply_without_any_input)
{
    struct config c;
    char *argv[] = {"run", NULL};
    CHECK(load(&c, 1, argv) == 0);
    CHECK(c.layers == 4 && c.batch_per_gpu == 64 && c.iters == 20);
    CHECK(c.activation == ACT_GELU && c.scaling == SCALING_WEAK && c.nsweep == 0);
}

TEST(ini_values_are_read_and_command_line_wins)
{
    struct config c;
    const char *p = ini("[model]\nlayers = 6\nactivation = relu\n[train]\nlr = 0.5\n[run]\nsweep = 1, 2,4\n");
    char *argv[] = {"run", "--config", (char *)p, "--model.layers=3", "--train.iters", "7", NULL};
    CHECK(load(&c, 6, argv) == 0);
    CHECK(c.layers == 3);
    CHECK(c.iters == 7);
    CHECK(c.activation == ACT_RELU);
    CHECK_NEAR(c.lr, 0.5, 0);
    CHECK(c.nsweep == 3 && c.sweep[0] == 1 && c.sweep[1] == 2 && c.sweep[2] == 4);
}

TEST(unknown_key_names_file_line_and_accepted_keys)
{
    struct config c;
    const char *p = ini("[model]\nlayers = 2\nlayerz = 3\n");
    char *argv[] = {"run", "--config", (char *)p, NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":3: unknown key 'layerz' in [model]");
    CHECK_CONTAINS(g_err, "accepted keys: name, type, layers");
}

TEST(unknown_section_is_an_error)
{
    struct config c;
    /* named at its own header line, even with no key under it */
    char *argv[] = {"run", "--config", (char *)ini("[modle]\nlayers = 2\n"), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":1: unknown section [modle]; accepted sections: model, train");
    char *empty[] = {"run", "--config", (char *)ini("[train]\niters = 3\n[bogus]\n"), NULL};
    CHECK(load(&c, 3, empty) != 0);
    CHECK_CONTAINS(g_err, ":3: unknown section [bogus]");
}

TEST(duplicate_key_names_both_lines)
{
    struct config c;
    char *argv[] = {"run", "--config", (char *)ini("[train]\niters = 3\nwarmup = 1\niters = 4\n"), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":4: duplicate key [train] iters, first set on line 2");
}

TEST(out_of_range_value_names_the_range)
{
    struct config c;
    char *argv[] = {"run", "--config", (char *)ini("[model]\nlayers = 0\n"), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":2: [model] layers = '0' is not accepted; expected an integer in [1, 4096]");
}

TEST(unparsable_numbers_are_errors)
{
    struct config c;
    char *a1[] = {"run", "--train.lr=fast", NULL};
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "command line --train.lr=fast: 'fast' is not accepted for train.lr; expected a decimal number");
    char *a2[] = {"run", "--model.layers=4x", NULL};
    CHECK(load(&c, 2, a2) != 0);
    char *a3[] = {"run", "--train.lr=nan", NULL};
    CHECK(load(&c, 2, a3) != 0);
}

TEST(integers_that_overflow_are_errors)
{
    struct config c;
    char *a1[] = {"run", "--train.batch_per_gpu=99999999999999999999", NULL};
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "expected an integer in [1, 1073741824]");
    char *a2[] = {"run", "--train.seed=-1", NULL};
    CHECK(load(&c, 2, a2) != 0);
}

TEST(enum_lists_accepted_values)
{
    struct config c;
    char *argv[] = {"run", "--model.activation=tanh", NULL};
    CHECK(load(&c, 2, argv) != 0);
    CHECK_CONTAINS(g_err, "expected one of gelu|relu");
}

TEST(unknown_flag_and_missing_value_are_errors)
{
    struct config c;
    char *a1[] = {"run", "--model.widht=3", NULL};
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "unknown option '--model.widht=3'");
    char *a2[] = {"run", "--model.layers", NULL};
    CHECK(load(&c, 2, a2) != 0);
    CHECK_CONTAINS(g_err, "needs a value");
}

TEST(missing_config_file_is_an_error)
{
    struct config c;
    char *argv[] = {"run", "--config", "/nonexistent/x.ini", NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, "cannot open config file /nonexistent/x.ini");
}

TEST(syntax_error_names_the_line)
{
    struct config c;
    char *argv[] = {"run", "--config", (char *)ini("[model]\nlayers 3\n"), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":2: syntax error");
}

TEST(sweep_must_increase_and_fit_the_world)
{
    struct config c;
    char *a1[] = {"run", "--sweep=1,4,2", NULL};
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "strictly increasing");
    char *a2[] = {"run", "--sweep=1,2,8", NULL};
    CHECK(load(&c, 2, a2) == 0);
    CHECK(config_resolve_for_world(&c, 4, g_err, sizeof g_err) != 0);
    CHECK_CONTAINS(g_err, "asks for 8 ranks but the launch has 4");
}

TEST(empty_sweep_means_powers_of_two_up_to_the_world)
{
    struct config c;
    char *argv[] = {"run", NULL};
    CHECK(load(&c, 1, argv) == 0);
    CHECK(config_resolve_for_world(&c, 6, g_err, sizeof g_err) == 0);
    CHECK(c.nsweep == 3 && c.sweep[0] == 1 && c.sweep[1] == 2 && c.sweep[2] == 4);
}

TEST(strong_scaling_batch_must_split_evenly)
{
    struct config c;
    char *argv[] = {"run", "--train.scaling=strong", "--train.global_batch=6", "--sweep=1,2,4", NULL};
    CHECK(load(&c, 4, argv) == 0);
    CHECK(config_resolve_for_world(&c, 4, g_err, sizeof g_err) != 0);
    CHECK_CONTAINS(g_err, "train.global_batch = 6 cannot be split evenly over 4 ranks");
    char *ok[] = {"run", "--train.scaling=strong", "--train.global_batch=8", "--sweep=1,2,4", NULL};
    CHECK(load(&c, 4, ok) == 0);
    CHECK(config_resolve_for_world(&c, 4, g_err, sizeof g_err) == 0);
    CHECK(config_batch_per_rank(&c, 4) == 2 && config_batch_per_rank(&c, 1) == 8);
}

TEST(paths_list_is_checked_and_one_entry_sets_the_path)
{
    struct config c;
    char *one[] = {"run", "--comm.paths=host", NULL};
    CHECK(load(&c, 2, one) == 0 && c.path == PATH_HOST);
    CHECK(config_resolve_for_world(&c, 2, g_err, sizeof g_err) == 0);
    char *bad[] = {"run", "--comm.paths=nvlink,infiniband", NULL};
    CHECK(load(&c, 2, bad) != 0);
    CHECK_CONTAINS(g_err, "'infiniband' is not a path");
    char *two[] = {"run", "--comm.paths=nvlink,host", NULL};
    CHECK(load(&c, 2, two) == 0 && c.path == PATH_AUTO); /* loads: dpscale config reads it */
    CHECK(config_resolve_for_world(&c, 2, g_err, sizeof g_err) != 0); /* but one launch cannot run both */
    CHECK_CONTAINS(g_err, "run jobs/lib/sweep.sh");
    char *alias[] = {"run", "--path=nvlink", NULL};
    CHECK(load(&c, 2, alias) == 0 && c.path == PATH_NVLINK);
    char *library[] = {"run", "--library=mpi", NULL};
    CHECK(load(&c, 2, library) == 0 && c.library == LIBRARY_MPI);
}

TEST(host_and_pcie_are_two_paths_named_as_the_file_records_them)
{
    /* host = through host memory (pcie before schema 6); pcie = peer-to-peer over PCIe */
    struct config c;
    char *host[] = {"run", "--comm.path=host", NULL};
    CHECK(load(&c, 2, host) == 0 && c.path == PATH_HOST);
    CHECK(strcmp(config_value_name(&c, "comm", "path"), "host") == 0);
    char *pcie[] = {"run", "--path=pcie", NULL};
    CHECK(load(&c, 2, pcie) == 0 && c.path == PATH_PCIE && c.path != PATH_HOST);
    CHECK(strcmp(config_value_name(&c, "comm", "path"), "pcie") == 0);
    char *bad[] = {"run", "--comm.paths=nvlink,p2p", NULL};
    CHECK(load(&c, 2, bad) != 0);
    CHECK_CONTAINS(g_err, "use auto, nvlink, pcie, host or net");
}

TEST(the_former_transport_keys_name_their_new_names)
{
    struct config c;
    char *a1[] = {"run", "--config", (char *)ini("[comm]\ntransport = nvlink\n"), NULL};
    CHECK(load(&c, 3, a1) != 0);
    CHECK_CONTAINS(g_err, ":2: comm.transport is now comm.path");
    CHECK(strchr(g_err, '\n') == NULL);
    char *a2[] = {"run", "--config", (char *)ini("[comm]\ntransports = nvlink,pcie\n"), NULL};
    CHECK(load(&c, 3, a2) != 0);
    CHECK_CONTAINS(g_err, ":2: comm.transports is now comm.paths");
    char *a3[] = {"run", "--comm.transport=nvlink", NULL};
    CHECK(load(&c, 2, a3) != 0);
    CHECK_CONTAINS(g_err, "--comm.transport=nvlink: comm.transport is now comm.path");
    char *a4[] = {"run", "--comm.transports=nvlink", NULL};
    CHECK(load(&c, 2, a4) != 0);
    CHECK_CONTAINS(g_err, "comm.transports is now comm.paths");
    char *a5[] = {"run", "--transport=pcie", NULL};
    CHECK(load(&c, 2, a5) != 0);
    CHECK_CONTAINS(g_err, "comm.path");
}

TEST(the_new_comm_and_train_keys_have_their_defaults)
{
    struct config c;
    char *argv[] = {"run", NULL};
    CHECK(load(&c, 1, argv) == 0);
    CHECK(c.overlap_update == 1 && c.shard_optimizer == 0 && c.register_buffers == 0 && c.symmetric == 0);
    CHECK(c.cta_policy == 0 && c.gemm_sm_margin == 0 && c.path == PATH_AUTO && c.library == LIBRARY_AUTO);
    CHECK(strcmp(config_value_name(&c, "comm", "cta_policy"), "default") == 0);
    char *set[] = {"run", "--train.overlap_update=off", "--comm.shard_optimizer=on", "--comm.cta_policy=zero", NULL};
    CHECK(load(&c, 4, set) == 0);
    CHECK(c.overlap_update == 0 && c.shard_optimizer == 1 && c.cta_policy == 2);
    char *bad[] = {"run", "--comm.cta_policy=greedy", NULL};
    CHECK(load(&c, 2, bad) != 0);
    CHECK_CONTAINS(g_err, "expected one of default|efficiency|zero");
}

TEST(every_default_formats_back_to_itself)
{
    struct config c;
    char *argv[] = {"run", NULL};
    CHECK(load(&c, 1, argv) == 0);
    for (size_t i = 0; i < config_nkeys; i++) {
        char text[CONFIG_STR_LEN];
        struct config again = c;
        config_format_value(&c, &config_keys[i], text, sizeof text);
        char flag[CONFIG_STR_LEN + 160];
        snprintf(flag, sizeof flag, "--%s.%s=%s", config_keys[i].section, config_keys[i].name, text);
        char *a[] = {"run", flag, NULL};
        if (text[0] == '\0') continue; /* empty strings are the default already */
        CHECK(load(&again, 2, a) == 0);
    }
}

/* ---- strict numbers ------------------------------------------------------- */

static int int_ok(const char *text, long long min, long long max, long long want)
{
    long long v = -12345;
    return config_parse_int(text, min, max, &v) == 0 && v == want;
}

static int int_refused(const char *text, long long min, long long max)
{
    long long v = -12345;
    return config_parse_int(text, min, max, &v) != 0 && v == -12345;
}

TEST(integers_are_optional_sign_and_decimal_digits)
{
    CHECK(int_ok("7", 0, 10, 7));
    CHECK(int_ok("+7", 0, 10, 7));
    CHECK(int_ok("-3", -5, 10, -3));
    CHECK(int_ok("007", 0, 10, 7));
    CHECK(int_refused("", 0, 10));
    CHECK(int_refused("+", 0, 10));
    CHECK(int_refused(" 7", 0, 10));
    CHECK(int_refused("7 ", 0, 10));
    CHECK(int_refused("0x10", 0, 100));
    CHECK(int_refused("1e3", 0, 10000));
    CHECK(int_refused("3.0", 0, 10));
    CHECK(int_refused("--3", -5, 10));
}

TEST(integers_are_compared_with_their_bounds_as_integers)
{
    const long long two62 = 4611686018427387904LL;
    CHECK(int_ok("4611686018427387904", 0, two62, two62));
    CHECK(int_refused("4611686018427387905", 0, two62)); /* as doubles, 2^62 + 1 == 2^62 */
    CHECK(int_ok("9223372036854775807", 0, 9223372036854775807LL, 9223372036854775807LL));
    CHECK(int_refused("9223372036854775808", 0, 9223372036854775807LL)); /* ERANGE */
    CHECK(int_refused("-1", 0, 10));
    CHECK(int_refused("11", 0, 10));
    CHECK(int_ok("10", 0, 10, 10) && int_ok("0", 0, 10, 0));
}

static int double_ok(const char *text, double want)
{
    double v = -12345;
    return config_parse_double(text, -1e300, 1e300, &v) == 0 && v == want;
}

static int double_refused(const char *text)
{
    double v = -12345;
    return config_parse_double(text, -1e300, 1e300, &v) != 0 && v == -12345;
}

TEST(numbers_are_finite_decimals)
{
    CHECK(double_ok("0.5", 0.5));
    CHECK(double_ok("-2.", -2.0));
    CHECK(double_ok(".5", 0.5));
    CHECK(double_ok("+1e-3", 1e-3));
    CHECK(double_ok("1E+2", 100.0));
    CHECK(double_ok("3", 3.0));
    CHECK(double_refused("0x1p-3")); /* strtod reads hex floats */
    CHECK(double_refused("0x10"));
    CHECK(double_refused("inf"));
    CHECK(double_refused("-Infinity"));
    CHECK(double_refused("nan"));
    CHECK(double_refused("NAN(1)"));
    CHECK(double_refused("1e999"));  /* overflow */
    CHECK(double_refused("1e-400")); /* underflow */
    CHECK(double_refused(""));
    CHECK(double_refused("."));
    CHECK(double_refused("e3"));
    CHECK(double_refused("1e"));
    CHECK(double_refused("1e+"));
    CHECK(double_refused(" 1"));
    CHECK(double_refused("1.5x"));
    CHECK(double_refused("1,5"));
}

TEST(numbers_are_compared_with_their_bounds)
{
    double v = 0;
    CHECK(config_parse_double("10", 1e-12, 10, &v) == 0 && v == 10);
    CHECK(config_parse_double("10.000001", 1e-12, 10, &v) != 0);
    CHECK(config_parse_double("0", 1e-12, 10, &v) != 0);
}

TEST(hex_floats_and_out_of_range_seeds_are_refused_on_the_command_line)
{
    struct config c;
    char *a1[] = {"run", "--train.lr=0x1p-3", NULL};
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "'0x1p-3' is not accepted for train.lr; expected a decimal number");
    char *a2[] = {"run", "--train.seed=4611686018427387905", NULL};
    CHECK(load(&c, 2, a2) != 0);
    CHECK_CONTAINS(g_err, "expected an integer in [0, 4611686018427387904]");
    char *a3[] = {"run", "--train.seed=4611686018427387904", NULL};
    CHECK(load(&c, 2, a3) == 0 && c.seed == 4611686018427387904LL);
    char *a4[] = {"run", "--run.sweep=1,0x2", NULL};
    CHECK(load(&c, 2, a4) != 0);
}

/* ---- the config file itself ------------------------------------------------- */

TEST(a_directory_fifo_or_device_is_not_a_config_file)
{
    struct config c;
    char *a1[] = {"run", "--config", "/tmp", NULL};
    CHECK(load(&c, 3, a1) != 0);
    CHECK_CONTAINS(g_err, "config file /tmp is a directory, not a file");
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/dpscale-test-%d.fifo", (int)getpid());
    CHECK(mkfifo(fifo, 0600) == 0);
    char *a2[] = {"run", "--config", fifo, NULL};
    CHECK(load(&c, 3, a2) != 0); /* and returns: no open that waits for a writer */
    CHECK_CONTAINS(g_err, "is a FIFO (named pipe), not a file");
    unlink(fifo);
    char *a3[] = {"run", "--config", "/dev/zero", NULL};
    CHECK(load(&c, 3, a3) != 0);
    CHECK_CONTAINS(g_err, "config file /dev/zero is a character device, not a file");
    CHECK(strchr(g_err, '\n') == NULL);
}

TEST(a_file_over_one_mib_is_refused)
{
    struct config c;
    size_t n = (1u << 20) + 1;
    char *big = malloc(n);
    memset(big, '\n', n);
    char *argv[] = {"run", "--config", (char *)ini_bytes(big, n), NULL};
    free(big);
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, "is over 1 MiB");
}

TEST(a_nul_byte_is_refused_with_its_line)
{
    struct config c;
    static const char text[] = "[model]\nlayers = 2\nhidden_dim = 6\0" "4\n";
    char *argv[] = {"run", "--config", (char *)ini_bytes(text, sizeof text - 1), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":3: a NUL byte at column 15");
}

TEST(a_long_comment_is_accepted_and_counts_as_one_line)
{
    struct config c;
    char text[1024];
    snprintf(text, sizeof text, "[model]\n; %0*d\nlayers = 2\nlayerz = 3\n", 600, 0);
    char *argv[] = {"run", "--config", (char *)ini(text), NULL};
    CHECK(load(&c, 3, argv) != 0);
    CHECK_CONTAINS(g_err, ":4: unknown key 'layerz'"); /* line 4 of the file, not line 7 */
    snprintf(text, sizeof text, "[model]\n  # %0*d\nlayers = 2\n", 600, 0);
    char *ok[] = {"run", "--config", (char *)ini(text), NULL};
    CHECK(load(&c, 3, ok) == 0 && c.layers == 2);
}

TEST(an_over_long_line_is_refused_with_its_true_line)
{
    struct config c;
    static char text[2 * CONFIG_MAX_LINE];
    snprintf(text, sizeof text, "[model]\nlayers = 2\n[run]\noutput_dir = %0*d\n", CONFIG_MAX_LINE, 0);
    char *argv[] = {"run", "--config", (char *)ini(text), NULL};
    CHECK(load(&c, 3, argv) != 0);
    char want[128];
    snprintf(want, sizeof want, ":4: a line of %d characters; at most %d are read", CONFIG_MAX_LINE + 13, CONFIG_MAX_LINE);
    CHECK_CONTAINS(g_err, want);
    /* the longest line read holds the longest value */
    snprintf(text, sizeof text, "[run]\noutput_dir = %0*d\n", CONFIG_STR_LEN - 1, 0);
    char *edge[] = {"run", "--config", (char *)ini(text), NULL};
    CHECK(load(&c, 3, edge) == 0 && strlen(c.output_dir) == CONFIG_STR_LEN - 1);
}

TEST(an_indented_key_is_a_key_not_the_previous_keys_continuation)
{
    struct config c;
    char *argv[] = {"run", "--config", (char *)ini("[model]\nlayers = 2\n  hidden_dim = 64\n\t[train]\n    iters = 9\n"), NULL};
    CHECK(load(&c, 3, argv) == 0);
    CHECK(c.layers == 2 && c.hidden_dim == 64 && c.iters == 9);
}

TEST(the_first_error_of_a_file_is_the_one_named)
{
    struct config c;
    static const char text[] = "[model]\nlayers 2\nhidden_dim = 6\0" "4\n";
    char *a1[] = {"run", "--config", (char *)ini_bytes(text, sizeof text - 1), NULL};
    CHECK(load(&c, 3, a1) != 0);
    CHECK_CONTAINS(g_err, ":2: syntax error");
    char *a2[] = {"run", "--config", (char *)ini("[model]\nlayerz = 2\nlayers 2\n"), NULL};
    CHECK(load(&c, 3, a2) != 0);
    CHECK_CONTAINS(g_err, ":2: unknown key 'layerz'");
}

/* ---- the command line ------------------------------------------------------- */

TEST(a_value_that_is_the_next_option_is_refused)
{
    struct config c;
    char *a1[] = {"run", "--run.output_dir", "--train.iters=3", NULL};
    CHECK(load(&c, 3, a1) != 0);
    CHECK_CONTAINS(g_err, "option --run.output_dir has no value: the next argument '--train.iters=3' is an option");
    char *a2[] = {"run", "--run.output_dir=--x", NULL};
    CHECK(load(&c, 2, a2) != 0);
    CHECK_CONTAINS(g_err, "option --run.output_dir: the value '--x' starts with '--'");
    char *a3[] = {"run", "-o", "--train.iters=3", NULL};
    CHECK(load(&c, 3, a3) != 0);
    CHECK_CONTAINS(g_err, "option -o has no value");
    char *a4[] = {"run", "--config", "--model.layers=3", NULL};
    CHECK(load(&c, 3, a4) != 0);
    char *ok[] = {"run", "--train.lr", "0.5", "--run.output_dir", "-dash", "--model.layers", "-1", NULL};
    CHECK(load(&c, 5, ok) == 0 && c.lr == 0.5 && strcmp(c.output_dir, "-dash") == 0);
    CHECK(load(&c, 7, ok) != 0); /* -1 is a value, then out of range */
    CHECK_CONTAINS(g_err, "command line --model.layers: '-1' is not accepted");
}

TEST(an_abbreviated_option_is_refused)
{
    struct config c;
    char *a1[] = {"run", "--train.overlap=off", NULL}; /* getopt_long alone would set train.overlap_update */
    CHECK(load(&c, 2, a1) != 0);
    CHECK_CONTAINS(g_err, "unknown option '--train.overlap'; did you mean --train.overlap_update?");
    char *a2[] = {"run", "--model.lay", "3", NULL};
    CHECK(load(&c, 3, a2) != 0);
    char *a3[] = {"run", "--conf", "x.ini", NULL};
    CHECK(load(&c, 3, a3) != 0);
}

TEST(config_given_twice_is_refused)
{
    struct config c;
    char *argv[] = {"run", "--config", "a.ini", "--config=b.ini", NULL};
    CHECK(load(&c, 4, argv) != 0);
    CHECK_CONTAINS(g_err, "--config is given twice ('a.ini', then 'b.ini')");
}

int main(void)
{
    int rc = test_main("config");
    char path[64];
    snprintf(path, sizeof path, "/tmp/dpscale-test-%d.ini", (int)getpid());
    unlink(path);
    return rc;
}
