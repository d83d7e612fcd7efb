/* h5out.c — a result file as a whole (h5out.h): the root's identity and provenance,
 * then each part in order (h5out_internal.h), built in memory and written out
 * all-or-nothing (h5file.h); and a projection's file, which copies its source's. */
#include "result/h5out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/checksum.h"
#include "result/h5out_internal.h"
#include "result/h5read.h"

/* The root: what the file is (schema, writer) and who ran what, when and how. */
void h5out_root(struct h5w *w, hid_t file, const struct provenance *p)
{
    attr_i64(w, file, "schema_version", H5OUT_SCHEMA_VERSION);
    attr_str(w, file, "writer", "dpscale");
    attr_str(w, file, "dpscale_version", p->dpscale_version);
    attr_str(w, file, "created_utc", p->started_utc);
    attr_str(w, file, "command_line", p->command_line);
    attr_strs(w, file, "argv", (const char *const *)p->argv, (size_t)p->argc);
    attr_str(w, file, "job_id", p->job_id);
#define LAUNCH_ATTR(name, bytes, meaning) attr_str(w, file, #name, p->name);
    SCHEMA_LAUNCH_ATTRS(LAUNCH_ATTR)
#undef LAUNCH_ATTR
}

/* The root's per-rank memory figures (memlimit.h): the largest memory plan of the
 * runs the rank took part in, its resident set before their buffers, and its peak
 * resident set (getrusage) when the file was written; int64 [world_size] each. */
static void memory_attrs(struct h5w *w, hid_t file, const double *mem, int nranks)
{
    static const char *const names[3] = {"memory_plan_bytes", "baseline_rss_bytes", "peak_rss_bytes"};
    int64_t *v = calloc((size_t)nranks + 1, sizeof *v);
    const hsize_t dims[1] = {(hsize_t)nranks};
    hid_t space = v != NULL ? CHECK_H5(w, H5Screate_simple(1, dims, NULL)) : -1;
    for (int k = 0; k < 3 && space >= 0; k++) {
        for (int r = 0; r < nranks; r++) v[r] = (int64_t)mem[(size_t)r * 3 + (size_t)k];
        hid_t a = CHECK_H5(w, H5Acreate2(file, names[k], H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT));
        if (a >= 0) CHECK_H5(w, H5Awrite(a, H5T_NATIVE_INT64, v));
        h5_close(a);
    }
    h5_close(space);
    free(v);
}

/* The checksum of every object, last (checksum.h): a reader can then tell a changed
 * file from the one written. */
static void seal(struct h5w *w, hid_t file)
{
    char why[256];
    if (file >= 0 && !w->failed && checksum_seal(file, why, sizeof why) != 0) h5w_fail(w, why, __LINE__);
}

int h5out_write(const char *path, const struct config *cfg, const struct h5out_system *sys,
                const struct h5out_contents *contents, char *err, size_t errlen)
{
    struct h5w w = {0};
    hid_t fapl = -1;
    hid_t file = h5file_open_image(&w, path, &fapl);
    if (file >= 0) {
        h5out_root(&w, file, sys->prov);
        /* a sweep's file is rewritten after each point: complete = 0 until the last one */
        attr_i64(&w, file, "complete", contents->points_total <= contents->nruns);
        attr_i64(&w, file, "points_completed", contents->nruns);
        attr_i64(&w, file, "points_planned", contents->points_total > 0 ? contents->points_total : contents->nruns);
        /* a sweep that stopped because a point diverged: which one, where, what (the
         * points before it are complete and kept) */
        if (contents->diverged != NULL && contents->diverged[0]) attr_str(&w, file, "diverged", contents->diverged);
        h5out_system(&w, file, sys);
        if (sys->memory != NULL) memory_attrs(&w, file, sys->memory, sys->world_size);
        h5out_config(&w, file, cfg);
        if (contents->model != NULL) h5out_model(&w, file, cfg, contents->model);
        if (contents->nruns > 0) {
            hid_t rg = h5_group_create(&w, file, "runs");
            for (int i = 0; i < contents->nruns; i++)
                h5out_run(&w, rg, cfg, &contents->runs[i], &contents->summaries[i]);
            h5_close(rg);
            const struct h5out_labels labels = {
                cfg->model_name, config_value_name(cfg, "train", "precision"), cfg->overlap ? "on" : "off",
                cfg->shard_optimizer ? "on" : "off", cfg->system_label, sys->ranks_per_node};
            h5out_summary(&w, file, contents->summaries, contents->nruns, &labels);
        }
        if (contents->dump != NULL) h5out_dump(&w, file, contents->dump);
        if (contents->ncollectives > 0) {
            hid_t cg = h5_group_create(&w, file, "collectives");
            for (int i = 0; i < contents->ncollectives; i++) h5out_collective(&w, cg, &contents->collectives[i]);
            h5_close(cg);
        }
    }
    seal(&w, file);
    return h5file_close_and_write(&w, path, file, fapl, contents->disk_mode, err, errlen);
}

/* Copy every attribute of `from` onto `to` (a projection keeps its source's identity). */
struct attr_copy {
    struct h5w *w;
    hid_t to;
};
static herr_t copy_attr(hid_t from, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    struct attr_copy *c = data;
    if (strcmp(name, CHECKSUM_ATTR) == 0 || strcmp(name, CHECKSUM_ALGORITHM_ATTR) == 0) return 0; /* the source's, not this file's */
    hid_t a = H5Aopen(from, name, H5P_DEFAULT), type = H5Aget_type(a), space = H5Aget_space(a);
    hid_t mtype = H5Tget_native_type(type, H5T_DIR_ASCEND);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t size = H5Tget_size(mtype);
    void *buf = n >= 0 ? calloc((size_t)n + 1, size) : NULL;
    if (buf != NULL && H5Aread(a, mtype, buf) >= 0) {
        hid_t b = CHECK_H5(c->w, H5Acreate2(c->to, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
        CHECK_H5(c->w, H5Awrite(b, mtype, buf));
        h5_close(b);
        H5Dvlen_reclaim(mtype, space, H5P_DEFAULT, buf);
    }
    free(buf);
    H5Tclose(mtype);
    H5Tclose(type);
    H5Sclose(space);
    H5Aclose(a);
    return 0;
}

/* The labels of a projection's rows, from its source's /config (schema 4 files have no system label). */
struct source_labels {
    char model[CONFIG_STR_LEN], precision[16], overlap[8], shard[8], system_label[CONFIG_STR_LEN];
};
static void read_source_labels(hid_t src, struct source_labels *l)
{
    memset(l, 0, sizeof *l);
    if (H5Lexists(src, "config", H5P_DEFAULT) <= 0) return;
    hid_t cfg = H5Gopen2(src, "config", H5P_DEFAULT);
    h5_attr_str(cfg, "model.name", l->model, sizeof l->model);
    h5_attr_str(cfg, "train.precision", l->precision, sizeof l->precision);
    h5_attr_str(cfg, "comm.overlap", l->overlap, sizeof l->overlap);
    h5_attr_str(cfg, "comm.shard_optimizer", l->shard, sizeof l->shard);
    h5_attr_str(cfg, "run.system_label", l->system_label, sizeof l->system_label);
    H5Gclose(cfg);
}

int h5out_write_projection(const char *path, const struct h5out_projection *p, char *err, size_t errlen)
{
    struct h5w w = {0};
    hid_t fapl = -1;
    hid_t src = H5Fopen(p->source, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (src < 0) {
        snprintf(err, errlen, "%s cannot be opened again to copy its /config, /system and /model", p->source);
        return -1;
    }
    struct provenance prov;
    provenance_local(&prov);
    struct source_labels sl;
    read_source_labels(src, &sl);
    hid_t file = h5file_open_image(&w, path, &fapl);
    if (file >= 0) {
        h5out_root(&w, file, &prov);
        const char *copied[] = {"config", "system", "model"};
        for (int i = 0; i < 3; i++)
            if (H5Lexists(src, copied[i], H5P_DEFAULT) > 0)
                CHECK_H5(&w, H5Ocopy(src, copied[i], file, copied[i], H5P_DEFAULT, H5P_DEFAULT));
        const struct h5out_labels labels = {sl.model, sl.precision, sl.overlap, sl.shard, sl.system_label, 0};
        h5out_summary(&w, file, p->rows, p->nrows, &labels);
        hid_t g = h5_group_create(&w, file, "projection");
        attr_str(&w, g, "source", p->source);
        attr_str(&w, g, "target", p->target);
        attr_str(&w, g, "compute", p->compute);
        attr_str(&w, g, "ready_times", p->ready_times);
        attr_f64(&w, g, "interference", p->interference);
        attr_f64(&w, g, "imbalance_s", p->imbalance_s);
        attr_str(&w, g, "note", "projected by dpscale project (docs/PROJECTION.md), not measured: /summary holds its rows, "
                                "library = proj");
        if (p->nrows > 0) {
            hsize_t n[1] = {(hsize_t)p->nrows};
            strings_write(&w, g, SCHEMA_PROJECTION, "curve_source", p->curve_sources, H5OUT_PROJECTION_TEXT, 1, n);
        }
        hid_t sg = h5_group_create(&w, g, "source");
        struct attr_copy c = {&w, sg};
        hsize_t at = 0;
        if (!w.failed) H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, &at, copy_attr, &c);
        h5_close(sg);
        h5_close(g);
    }
    seal(&w, file);
    H5Fclose(src);
    provenance_free(&prov);
    return h5file_close_and_write(&w, path, file, fapl, H5FILE_NEW, err, errlen);
}
