/* test_h5out.c — the result file: written, read back through the HDF5 C API and
 * compared; never overwritten; nothing left behind when the disk fills up. */
#include <hdf5.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../src/h5out.h"
#include "check.h"
#include "fake_run.h"

static char g_dir[64];

static void fake_runs(struct run_result *runs, struct run_summary *sums, struct config *cfg)
{
    char err[256], *argv[] = {"run", "--model.layers=2", NULL};
    config_load(cfg, 2, argv, err, sizeof err);
    for (int k = 0; k < 2; k++) {
        runs[k] = fake_run(k + 1, 0.01 * (k + 1), 4);
        for (int p = 0; p < NPHASES; p++)
            for (int i = 0; i < 3 * runs[k].nranks; i++) runs[k].times[p][i] = 0.01 * (p + 1) + 0.001 * i;
        for (int s = 0; s < 4; s++) runs[k].loss[s] = 2.0 - 0.1 * s;
        runs[k].final_loss = runs[k].loss[3];
        stats_summarize_run(&runs[k], &sums[k]);
    }
    stats_fill_scaling(sums, 2);
}

static const struct h5out_system g_sys = {
    .dpscale_version = "test", .created_utc = "2026-01-01T00:00:00Z", .command_line = "dpscale run",
    .job_id = "", .backend = "cpu", .device_name = "cpu", .backend_library = "none", .mpi_library = "none",
    .threads_per_rank = 1, .world_size = 2, .nnodes = 1, .hosts = "host-a\0...............................................................host-b",
};

static double read_attr_double(hid_t obj, const char *name)
{
    double v = NAN;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
    return v;
}

TEST(file_reads_back_with_schema_runs_and_summary)
{
    struct run_result runs[2];
    struct run_summary sums[2];
    struct config cfg;
    char path[128], err[512];
    fake_runs(runs, sums, &cfg);
    snprintf(path, sizeof path, "%s/a.h5", g_dir);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){runs, sums, 2, NULL, 0}, err, sizeof err) == 0);

    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0);
    CHECK_NEAR(read_attr_double(f, "schema_version"), 1, 0);
    hid_t cfg_group = H5Gopen2(f, "config", H5P_DEFAULT);
    CHECK_NEAR(read_attr_double(cfg_group, "model.layers"), 2, 0);
    H5Gclose(cfg_group);

    hid_t d = H5Dopen2(f, "runs/mpi/n2/step_s", H5P_DEFAULT);
    hid_t space = H5Dget_space(d);
    hsize_t dims[2];
    CHECK(H5Sget_simple_extent_ndims(space) == 2);
    H5Sget_simple_extent_dims(space, dims, NULL);
    CHECK(dims[0] == 3 && dims[1] == 2);
    double back[6];
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back);
    for (int i = 0; i < 6; i++) CHECK_NEAR(back[i], runs[1].times[PHASE_STEP][i], 0);
    H5Sclose(space);
    H5Dclose(d);

    /* /summary: read one field of the compound table by name */
    hid_t s = H5Dopen2(f, "summary", H5P_DEFAULT);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(t, "efficiency", 0, H5T_NATIVE_DOUBLE);
    double eff[2];
    CHECK(H5Dread(s, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, eff) >= 0);
    CHECK_NEAR(eff[0], 1.0, 1e-15);
    CHECK_NEAR(eff[1], sums[1].efficiency, 0);
    H5Tclose(t);
    H5Dclose(s);
    H5Fclose(f);
    CHECK(access(path, F_OK) == 0);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(access(tmp, F_OK) != 0);
}

TEST(existing_file_is_never_overwritten)
{
    struct config cfg;
    char err[512], path[256], *argv[] = {"run", NULL};
    config_load(&cfg, 1, argv, err, sizeof err);
    snprintf(cfg.output_dir, sizeof cfg.output_dir, "%s", g_dir);
    snprintf(cfg.output, sizeof cfg.output, "taken.h5");
    snprintf(path, sizeof path, "%s/taken.h5", g_dir);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    CHECK(h5out_choose_path(&cfg, "x", "y", path, sizeof path, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "already exists and is never overwritten");
    /* and the writer itself refuses to replace it */
    struct run_result runs[2];
    struct run_summary sums[2];
    fake_runs(runs, sums, &cfg);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){runs, sums, 2, NULL, 0}, err, sizeof err) != 0);
    f = fopen(path, "r");
    char buf[16] = "";
    CHECK(fgets(buf, sizeof buf, f) != NULL && strcmp(buf, "precious") == 0);
    fclose(f);
}

TEST(full_disk_leaves_no_file_behind)
{
    struct run_result runs[2];
    struct run_summary sums[2];
    struct config cfg;
    char path[128], tmp[160], err[512];
    fake_runs(runs, sums, &cfg);
    runs[1].nparams = 1 << 20;                          /* 4 MiB of parameters to store */
    runs[1].params = calloc(runs[1].nparams, sizeof(float));
    snprintf(path, sizeof path, "%s/full.h5", g_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct rlimit old, small = {64 * 1024, 64 * 1024};  /* files may not grow past 64 KiB */
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    small.rlim_max = old.rlim_max;
    setrlimit(RLIMIT_FSIZE, &small);
    int rc = h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){runs, sums, 2, NULL, 0}, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(rc != 0);
    CHECK_CONTAINS(err, "nothing was kept");
    CHECK(access(path, F_OK) != 0);
    CHECK(access(tmp, F_OK) != 0);
    free(runs[1].params);
    runs[1].params = NULL;
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/dpscale-h5test-XXXXXX");
    if (mkdtemp(g_dir) == NULL) return 1;
    int rc = test_main("h5out");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 1;
    return rc;
}
