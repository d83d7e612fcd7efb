/* test_h5out.c — the result file: written, read back through the HDF5 C API and
 * compared; every dataset with its units, every string UTF-8 of variable length, the
 * provenance at the root, on /system and in /system/ranks; a dataset the schema does
 * not define refused; never overwritten; nothing left behind when the disk fills up. */
#include <hdf5.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "result/h5out.h"
#include "result/h5w.h"
#include "train/stats.h"
#include "report/report.h"
#include "check.h"
#include "test_model_of.h"
#include "fake_run.h"

static char g_dir[64];

static void fake_runs(struct run_result *runs, struct run_summary *sums, struct config *cfg)
{
    char err[256], *argv[] = {"run", "--model.layers=2", "--run.system_label=rack 12", NULL};
    config_load(cfg, 3, argv, err, sizeof err);
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

static struct provenance g_prov;
static struct h5out_system g_sys = {
    .prov = &g_prov, .backend = "cpu", .device_name = "cpu", .backend_library = "none", .mpi_library = "none",
    .threads_per_rank = 1, .world_size = 2, .nnodes = 1, .ranks_per_node = 2,
    .hosts = "host-a\0...............................................................host-b",
    .library = "mpi", .path = "auto",
};

/* The launch's provenance as a session holds it: two ranks, each its environment. */
static void fake_provenance(void)
{
    char *argv[] = {"dpscale", "run", "--run.system_label=rack 12, 'east'", NULL};
    provenance_note_command(3, argv);
    provenance_start(&g_prov);
    snprintf(g_prov.system_label, sizeof g_prov.system_label, "rack 12");
    g_prov.nranks = 2;
    g_prov.ranks = calloc(2, sizeof *g_prov.ranks);
    for (int r = 0; r < 2; r++) {
        snprintf(g_prov.ranks[r].environment, sizeof g_prov.ranks[r].environment, "CUDA_VISIBLE_DEVICES=%d\nNCCL_DEBUG=WARN\n", r);
        provenance_rank_collect(&g_prov.ranks[r], r, r, r ? "host-b" : "host-a", "", "", -1);
    }
    provenance_finish(&g_prov);
}

/* A string attribute, as text ("" when missing). */
static void read_attr_text(hid_t obj, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    if (H5Aexists(obj, name) <= 0) return;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ft = H5Aget_type(a), mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5Tget_cset(ft));
    char *v = NULL;
    if (H5Tis_variable_str(ft) > 0 && H5Aread(a, mt, &v) >= 0 && v != NULL) {
        snprintf(buf, len, "%s", v);
        H5free_memory(v);
    } else if (H5Tis_variable_str(ft) <= 0 && H5Tget_size(ft) < len) {
        memset(buf, 0, len);
        H5Aread(a, ft, buf);
    }
    H5Tclose(mt);
    H5Tclose(ft);
    H5Aclose(a);
}

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
    const struct model *m = test_model_of(2, 8, 16, 4);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){m, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err) == 0);

    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0);
    CHECK_NEAR(read_attr_double(f, "schema_version"), H5OUT_SCHEMA_VERSION, 0);
    CHECK(H5OUT_SCHEMA_VERSION == 6);
    char text[64];
    /* /model: the tensor table, in arena order */
    hid_t model_group = H5Gopen2(f, "model", H5P_DEFAULT);
    CHECK(model_group >= 0);
    read_attr_text(model_group, "type", text, sizeof text);
    CHECK(strcmp(text, "mlp") == 0);
    read_attr_text(model_group, "unit", text, sizeof text);
    CHECK(strcmp(text, "samples") == 0);
    CHECK_NEAR(read_attr_double(model_group, "parameters"), (double)m->nparams, 0);
    CHECK_NEAR(read_attr_double(model_group, "gemm_flops_per_sample"), m->flops_per_sample, 0);
    hid_t tensors = H5Dopen2(model_group, "tensors", H5P_DEFAULT), tspace = H5Dget_space(tensors);
    CHECK(H5Sget_simple_extent_npoints(tspace) == m->ntensors);
    struct {
        uint64_t offset, count;
    } table[4];
    hid_t mem = H5Tcreate(H5T_COMPOUND, sizeof table[0]);
    H5Tinsert(mem, "offset", 0, H5T_NATIVE_UINT64);
    H5Tinsert(mem, "count", sizeof(uint64_t), H5T_NATIVE_UINT64);
    CHECK(H5Dread(tensors, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, table) >= 0);
    CHECK(table[0].offset == 0 && table[3].offset + table[3].count == m->nparams);
    H5Tclose(mem);
    H5Sclose(tspace);
    H5Dclose(tensors);
    H5Gclose(model_group);
    hid_t sys_group = H5Gopen2(f, "system", H5P_DEFAULT);
    read_attr_text(sys_group, "library", text, sizeof text);
    CHECK(strcmp(text, "mpi") == 0);
    read_attr_text(sys_group, "path", text, sizeof text);
    CHECK(strcmp(text, "auto") == 0);
    CHECK(H5Aexists(sys_group, "transport") == 0);
    H5Gclose(sys_group);
    hid_t cfg_group = H5Gopen2(f, "config", H5P_DEFAULT);
    CHECK_NEAR(read_attr_double(cfg_group, "model.layers"), 2, 0);
    H5Gclose(cfg_group);

    /* /runs/<library>/<path>/n<N>: the 1-rank run communicates nothing */
    for (int n = 1; n <= 2; n++) {
        char name[64];
        snprintf(name, sizeof name, "runs/mpi/auto/n%d", n);
        hid_t g = H5Gopen2(f, name, H5P_DEFAULT);
        CHECK(g >= 0);
        read_attr_text(g, "library", text, sizeof text);
        CHECK(strcmp(text, "mpi") == 0);
        read_attr_text(g, "path", text, sizeof text);
        CHECK(strcmp(text, "auto") == 0);
        CHECK(H5Aexists(g, "transport") == 0);
        CHECK_NEAR(read_attr_double(g, "communicates"), n > 1, 0);
        CHECK_NEAR(read_attr_double(g, "allreduce_bytes"), n > 1 ? 1e9 : 0, 0);
        read_attr_text(g, "allreduce_dtype", text, sizeof text);
        CHECK(strcmp(text, n > 1 ? "fp32" : "none") == 0);
        for (size_t k = 0; k < 6; k++) {
            static const char *const attrs[] = {"overlap_update", "shard_optimizer", "register", "symmetric", "cta_policy",
                                                "gemm_sm_margin"};
            CHECK(H5Aexists(g, attrs[k]) > 0);
        }
        CHECK(H5Lexists(g, "compute_only_backward_s", H5P_DEFAULT) > 0);
        hid_t alone = H5Dopen2(g, "allreduce_alone_s", H5P_DEFAULT), as = H5Dget_space(alone);
        hsize_t adims[2];
        H5Sget_simple_extent_dims(as, adims, NULL);
        double a[6] = {0};
        CHECK(adims[0] * adims[1] <= 6 && H5Dread(alone, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a) >= 0);
        if (n == 1) CHECK(adims[0] == 1 && adims[1] == 1 && a[0] == 0.0);
        H5Sclose(as);
        H5Dclose(alone);
        H5Gclose(g);
    }

    hid_t d = H5Dopen2(f, "runs/mpi/auto/n2/step_s", H5P_DEFAULT);
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
    /* the library, path and label columns: variable-length UTF-8 strings */
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    H5Tset_cset(str, H5T_CSET_UTF8);
    t = H5Tcreate(H5T_COMPOUND, 3 * sizeof(char *));
    H5Tinsert(t, "library", 0, str);
    H5Tinsert(t, "path", sizeof(char *), str);
    H5Tinsert(t, "system_label", 2 * sizeof(char *), str);
    char *labels[2][3];
    CHECK(H5Dread(s, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels) >= 0);
    for (int k = 0; k < 2; k++) {
        CHECK(strcmp(labels[k][0], "mpi") == 0 && strcmp(labels[k][1], "auto") == 0 && strcmp(labels[k][2], "rack 12") == 0);
        for (int j = 0; j < 3; j++) H5free_memory(labels[k][j]);
    }
    H5Tclose(t);
    t = H5Dget_type(s);
    CHECK(H5Tget_member_index(t, "transport") < 0); /* schema 1's column is gone */
    CHECK(H5Tget_member_index(t, "loss_interference") >= 0);
    CHECK(H5Tget_member_index(t, "compute_only_backward_s") >= 0);
    H5Tclose(t);
    H5Tclose(str);
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
    char note[256] = "";
    CHECK(h5file_choose_path(&cfg, "x", "y", path, sizeof path, err, sizeof err, note, sizeof note) != 0);
    CHECK_CONTAINS(err, "already exists and is never overwritten");
    /* and the writer itself refuses to replace it */
    struct run_result runs[2];
    struct run_summary sums[2];
    fake_runs(runs, sums, &cfg);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){NULL, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err) != 0);
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
    int rc = h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){NULL, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(rc != 0);
    CHECK_CONTAINS(err, "nothing was kept");
    CHECK(access(path, F_OK) != 0);
    CHECK(access(tmp, F_OK) != 0);
    free(runs[1].params);
    runs[1].params = NULL;
}

/* Every dataset below the root has a `units` attribute; every string is UTF-8 of
 * variable length (so pandas and h5py need no width, and any name fits). */
static herr_t check_dataset(hid_t root, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    int *bad = data;
    hid_t d = H5Oopen(root, name, H5P_DEFAULT);
    if (H5Iget_type(d) != H5I_DATASET) {
        H5Oclose(d);
        return 0;
    }
    hid_t t = H5Dget_type(d);
    if (H5Aexists(d, "units") <= 0) {
        printf("    %s has no units attribute\n", name);
        (*bad)++;
    }
    const int n = H5Tget_class(t) == H5T_COMPOUND ? H5Tget_nmembers(t) : 1;
    for (int i = 0; i < n; i++) {
        hid_t m = H5Tget_class(t) == H5T_COMPOUND ? H5Tget_member_type(t, (unsigned)i) : H5Tcopy(t);
        if (H5Tget_class(m) == H5T_STRING && (H5Tis_variable_str(m) <= 0 || H5Tget_cset(m) != H5T_CSET_UTF8)) {
            printf("    %s (member %d) holds fixed-length or ASCII strings\n", name, i);
            (*bad)++;
        }
        H5Tclose(m);
    }
    H5Tclose(t);
    H5Dclose(d);
    return 0;
}

TEST(every_dataset_has_units_and_every_string_is_utf8_of_variable_length)
{
    struct run_result runs[2];
    struct run_summary sums[2];
    struct config cfg;
    char path[128], err[512];
    fake_runs(runs, sums, &cfg);
    snprintf(path, sizeof path, "%s/units.h5", g_dir);
    const struct model *m = test_model_of(2, 8, 16, 4);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){m, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err) == 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int bad = 0;
    CHECK(H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, check_dataset, &bad) >= 0);
    CHECK(bad == 0);
    /* counts are integers: bucket_elements, and the integer columns of /summary */
    hid_t d = H5Dopen2(f, "runs/mpi/auto/n2/bucket_elements", H5P_DEFAULT), t = H5Dget_type(d);
    CHECK(H5Tget_class(t) == H5T_INTEGER);
    H5Tclose(t);
    H5Dclose(d);
    d = H5Dopen2(f, "summary", H5P_DEFAULT);
    t = H5Dget_type(d);
    const char *ints[] = {"nranks", "nodes", "gpus_per_node", "batch_per_rank", "global_batch"};
    for (int i = 0; i < 5; i++) {
        hid_t mt = H5Tget_member_type(t, (unsigned)H5Tget_member_index(t, ints[i]));
        CHECK(H5Tget_class(mt) == H5T_INTEGER);
        H5Tclose(mt);
    }
    CHECK(H5Tget_member_index(t, "allreduce_busbw_GBps") >= 0 && H5Tget_member_index(t, "allreduce_busbw_gbps") < 0);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
}

TEST(provenance_is_at_the_root_on_system_and_per_rank)
{
    struct run_result runs[2];
    struct run_summary sums[2];
    struct config cfg;
    char path[128], err[512], text[256];
    fake_runs(runs, sums, &cfg);
    snprintf(path, sizeof path, "%s/prov.h5", g_dir);
    CHECK(h5out_write(path, &cfg, &g_sys, &(struct h5out_contents){NULL, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err) == 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    read_attr_text(f, "git_commit", text, sizeof text);
    CHECK(text[0] != '\0');
    read_attr_text(f, "command_line", text, sizeof text); /* quoted as a shell reads it back */
    CHECK(strcmp(text, "dpscale run '--run.system_label=rack 12, '\\''east'\\'''") == 0);
    read_attr_text(f, "system_label", text, sizeof text);
    CHECK(strcmp(text, "rack 12") == 0);
    read_attr_text(f, "started_utc", text, sizeof text);
    CHECK(strlen(text) == 20 && text[10] == 'T' && text[19] == 'Z');
    hid_t sys = H5Gopen2(f, "system", H5P_DEFAULT);
    read_attr_text(sys, "hdf5_version", text, sizeof text);
    CHECK(text[0] >= '1' && text[0] <= '9');
    read_attr_text(sys, "mpi_library_version", text, sizeof text);
    CHECK(text[0] != '\0');
    hid_t env = H5Gopen2(sys, "environment", H5P_DEFAULT);
    read_attr_text(env, "CUDA_VISIBLE_DEVICES", text, sizeof text);
    CHECK(strcmp(text, "0") == 0); /* rank 0's */
    H5Gclose(env);
    hid_t ranks = H5Dopen2(sys, "ranks", H5P_DEFAULT), space = H5Dget_space(ranks);
    CHECK(H5Sget_simple_extent_npoints(space) == 2);
    H5Sclose(space);
    H5Dclose(ranks);
    H5Gclose(sys);
    H5Fclose(f);
}

TEST(the_schema_names_units_and_former_names)
{
    CHECK(strcmp(schema_find(SCHEMA_SUMMARY, "allreduce_busbw_GBps")->units, "GB/s") == 0);
    CHECK(strcmp(schema_find(SCHEMA_TOPOLOGY, "nic_rate_Gbps")->units, "Gb/s") == 0);
    CHECK(strcmp(schema_find(SCHEMA_RUN, "step_s")->units, "s") == 0);
    CHECK(schema_find(SCHEMA_RUN, "allreduce_busbw_GBps") == NULL); /* a /summary column, not a run's dataset */
    CHECK(strcmp(schema_former_name("busbw_GBps"), "busbw_gbps") == 0);
    CHECK(schema_former_name("step_s") == NULL);
}

TEST(a_dataset_the_schema_does_not_define_is_refused)
{
    struct h5w w = {0};
    char path[128], err[512];
    hid_t fapl = -1;
    snprintf(path, sizeof path, "%s/unknown.h5", g_dir);
    hid_t f = h5file_open_image(&w, path, &fapl);
    double v = 1;
    hsize_t one[1] = {1};
    dataset_write(&w, f, SCHEMA_RUN, "throughput_gbps", H5T_NATIVE_DOUBLE, 1, one, &v);
    CHECK(w.failed);
    CHECK_CONTAINS(w.err, "throughput_gbps, which schema.h does not define");
    CHECK(h5file_close_and_write(&w, path, f, fapl, H5FILE_NEW, err, sizeof err) != 0);
    CHECK(access(path, F_OK) != 0);
}

TEST(the_host_path_is_written_host_and_read_back_as_host)
{
    /* --comm.path=host names the file's path as a run names it (train.c: config_value_name) */
    struct run_result runs[2];
    struct run_summary sums[2];
    struct config cfg;
    char path[128], err[512], *argv[] = {"run", "--model.layers=2", "--comm.path=host", NULL};
    fake_runs(runs, sums, &cfg);
    CHECK(config_load(&cfg, 3, argv, err, sizeof err) == 0);
    const char *asked = config_value_name(&cfg, "comm", "path");
    CHECK(strcmp(asked, "host") == 0);
    for (int k = 0; k < 2; k++) {
        snprintf(runs[k].library, sizeof runs[k].library, "nccl");
        snprintf(runs[k].path, sizeof runs[k].path, "%s", asked);
        snprintf(sums[k].library, sizeof sums[k].library, "nccl");
        snprintf(sums[k].path, sizeof sums[k].path, "%s", asked);
    }
    struct h5out_system sys = g_sys;
    sys.library = "nccl", sys.path = asked;
    snprintf(path, sizeof path, "%s/host.h5", g_dir);
    const struct model *m = test_model_of(2, 8, 16, 4);
    CHECK(h5out_write(path, &cfg, &sys, &(struct h5out_contents){m, runs, sums, 2, NULL, 0, NULL, 0, 0, NULL}, err, sizeof err) == 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    char text[64];
    hid_t g = H5Gopen2(f, "runs/nccl/host/n2", H5P_DEFAULT);
    CHECK(g >= 0);
    read_attr_text(g, "path", text, sizeof text);
    CHECK(strcmp(text, "host") == 0);
    H5Gclose(g);
    g = H5Gopen2(f, "config", H5P_DEFAULT);
    read_attr_text(g, "comm.path", text, sizeof text);
    CHECK(strcmp(text, "host") == 0);
    H5Gclose(g);
    H5Fclose(f);
    /* schema 6 writes host: the report reads it as it is (its pcie would be P2P over PCIe) */
    struct report_file rf;
    CHECK(result_read(path, &rf, err, sizeof err) == 0);
    CHECK(rf.nrows == 2 && strcmp(rf.rows[1].library, "nccl") == 0 && strcmp(rf.rows[1].path, "host") == 0);
    char label[256];
    report_system_label(&rf, &rf.rows[1], label, sizeof label);
    CHECK_CONTAINS(label, "nccl over host memory (P2P off)");
    report_free(&rf);
}

int main(void)
{
    fake_provenance();
    snprintf(g_dir, sizeof g_dir, "/tmp/dpscale-h5test-XXXXXX");
    if (mkdtemp(g_dir) == NULL) return 1;
    int rc = test_main("h5out");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 1;
    return rc;
}
