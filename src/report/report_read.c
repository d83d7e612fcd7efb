/* report_read.c — open a result file for the report (report.h), refusing with a
 * clear reason a file that is missing, not HDF5, truncated, not written by dpscale,
 * or written by a newer dpscale, or changed since it was written (its checksums,
 * checksum.h, where it has them); read what every kind shares (device, first host,
 * creation time, whether its sweep ended early or diverged), then hand the file to
 * the reader of its kind: /summary (a run or a projection), /collectives (dpscale
 * comm), /system/topology alone (dpscale topo). A dpscale file with none of these
 * (dpscale dump) is read as REPORT_NONE. Strings are kept as the file holds them
 * (made UTF-8): each output escapes them its own way (report_format.c, csv.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "result/checksum.h"
#include "result/h5out.h"
#include "result/h5read.h"
#include "report/report.h"
#include "report/doc/report_doc.h"
#include "report/report_read.h"
#include "result/schema.h"
#include "base/utf8.h"

static int has_member(hid_t dset, const char *name)
{
    hid_t ft = H5Dget_type(dset);
    const int found = ft >= 0 && H5Tget_class(ft) == H5T_COMPOUND && H5Tget_member_index(ft, name) >= 0;
    if (ft >= 0) H5Tclose(ft);
    return found;
}

const char *report_name_in(hid_t loc, hid_t dset, const char *name)
{
    const char *former = schema_former_name(name);
    if (former == NULL) return name;
    if (dset >= 0) return !has_member(dset, name) && has_member(dset, former) ? former : name;
    return !h5_exists(loc, name) && h5_exists(loc, former) ? former : name;
}

void report_path_in(int schema, const char *written, char *path, size_t pathlen)
{
    utf8_copy(path, pathlen, schema < SCHEMA_PCIE_IS_P2P && strcmp(written, "pcie") == 0 ? "host" : written);
}

void report_schema1_transport(const char *transport, char *library, size_t liblen, char *path, size_t pathlen)
{
    const int is_path = strcmp(transport, "nvlink") == 0 || strcmp(transport, "pcie") == 0 || strcmp(transport, "net") == 0;
    utf8_copy(library, liblen, is_path ? "nccl" : transport);
    report_path_in(1, is_path ? transport : "auto", path, pathlen);
}

/* The first entry of /system/hosts (one host name per rank: variable-length UTF-8
 * from schema 5, fixed-length before). */
static void first_host(hid_t file, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!h5_exists(file, "system/hosts")) return;
    hid_t h = H5Dopen2(file, "system/hosts", H5P_DEFAULT);
    if (h < 0) return;
    hid_t ht = H5Dget_type(h), hs = H5Dget_space(h), mt = H5Tcopy(H5T_C_S1);
    char first[256] = "", *vfirst = NULL;
    hsize_t one = 1, zero = 0;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    const int vlen = H5Tis_variable_str(ht) > 0;
    H5Tset_cset(mt, H5Tget_cset(ht));
    H5Tset_size(mt, vlen ? H5T_VARIABLE : sizeof first - 1);
    if (H5Tget_class(ht) == H5T_STRING && (vlen || H5Tget_size(ht) < sizeof first) && H5Sget_simple_extent_npoints(hs) > 0 &&
        H5Sselect_hyperslab(hs, H5S_SELECT_SET, &zero, NULL, &one, NULL) >= 0 &&
        H5Dread(h, mt, ms, hs, H5P_DEFAULT, vlen ? (void *)&vfirst : (void *)first) >= 0) {
        utf8_copy(buf, len, vlen ? (vfirst != NULL ? vfirst : "") : first);
        if (vfirst != NULL) H5free_memory(vfirst);
    }
    H5Sclose(ms);
    H5Tclose(mt);
    H5Sclose(hs);
    H5Tclose(ht);
    H5Dclose(h);
}

/* Why the file cannot be opened as HDF5, in words; -1 when it cannot. */
static int check_openable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "a folder, not a result file");
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* opening a FIFO would wait for a writer, a device would read forever */
        snprintf(err, errlen, "not a regular file (%s), not a result file",
                 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
        return -1;
    }
    FILE *probe = fopen(path, "rb");
    if (probe == NULL) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    fclose(probe);
    if (st.st_size == 0) {
        snprintf(err, errlen, "an empty file (a launch that died before writing?), not a result file");
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        snprintf(err, errlen, "not an HDF5 file (truncated, or not a dpscale result)");
        return -1;
    }
    return 0;
}

int report_read(const char *path, struct report_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    utf8_copy(f->path, sizeof f->path, path);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (check_openable(path, err, errlen) != 0) return -1;
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        snprintf(err, errlen, "HDF5 cannot open it; it is damaged or truncated");
        return -1;
    }
    int rc = -1;
    char writer[32] = "", why[512];
    h5_attr_str(file, "writer", writer, sizeof writer);
    const double schema = h5_attr_double(file, "schema_version");
    if (strcmp(writer, "dpscale") != 0 || isnan(schema)) {
        snprintf(err, errlen, "not a dpscale result file (no writer = dpscale, schema_version attributes)");
        goto done;
    }
    if (schema != floor(schema) || schema < 1 || schema > H5OUT_SCHEMA_VERSION) {
        snprintf(err, errlen, "schema version %.0f, but this dpscale reads versions 1 to %d; %s", schema,
                 H5OUT_SCHEMA_VERSION, schema > H5OUT_SCHEMA_VERSION ? "update dpscale to read it" : "an unknown version");
        goto done;
    }
    f->schema = (int)schema;
    f->sealed = checksum_verify(file, why, sizeof why);
    if (f->sealed < 0) {
        snprintf(err, errlen, "corrupt: %s; the file was changed after it was written", why);
        rc = REPORT_CHANGED;
        goto done;
    }
    h5_attr_str(file, "created_utc", f->created, sizeof f->created);
    if (h5_attr_int(file, "complete", 1) == 0) { /* the points done before a crash, a time limit or a failed write */
        f->points_done = h5_attr_int(file, "points_completed", 0);
        f->points_planned = h5_attr_int(file, "points_planned", 0);
    }
    h5_attr_str(file, "system_label", f->system_label, sizeof f->system_label); /* schema 5; "" before */
    h5_attr_str(file, "diverged", f->diverged, sizeof f->diverged);             /* only where the training diverged */
    if (h5_exists(file, "system")) {
        hid_t sys = H5Gopen2(file, "system", H5P_DEFAULT);
        if (sys < 0) {
            snprintf(err, errlen, "damaged: /system cannot be read");
            goto done;
        }
        h5_attr_str(sys, "device_name", f->device, sizeof f->device);
        H5Gclose(sys);
    }
    first_host(file, f->host, sizeof f->host);
    if (h5_exists(file, "summary")) {
        f->kind = REPORT_RUNS;
        rc = report_read_runs(file, (int)schema, f, err, errlen);
    } else if (h5_exists(file, "collectives")) {
        f->kind = REPORT_COMM;
        rc = report_read_comm(file, (int)schema, f, err, errlen);
    } else if (h5_exists(file, "dump")) {
        f->kind = REPORT_NONE;
        rc = 0;
    } else if (h5_exists(file, "system/topology")) {
        f->kind = REPORT_TOPO;
        rc = report_read_topo(file, f, err, errlen);
    } else {
        snprintf(err, errlen, "damaged: a dpscale file with no /summary, /collectives, /dump or /system/topology");
    }
done:
    H5Fclose(file);
    if (rc != 0) report_free(f);
    return rc;
}

int report_require_seal(const struct report_file *f, char *err, size_t errlen)
{
    if (f->sealed || f->schema < CHECKSUM_SINCE_SCHEMA) return 0;
    snprintf(err, errlen, "corrupt: it has no checksums, yet dpscale has sealed every file of schema %d and later as it "
             "wrote it (this one is schema %d): they were removed, or its root is damaged, and nothing tells what else "
             "changed; if you edited it yourself and trust it, seal it again with `dpscale seal`", CHECKSUM_SINCE_SCHEMA,
             f->schema);
    return REPORT_CHANGED;
}

int report_check_figure(const char *what, double v, struct report_figure rule, char *err, size_t errlen)
{
    if (isnan(v) ? rule.nan_ok : isfinite(v) && v <= rule.most && (rule.positive ? v > 0 : v >= 0)) return 0;
    snprintf(err, errlen, "damaged: %s is %g; it must be %sa finite figure %s 0 and at most %g", what, v,
             rule.nan_ok ? "NaN (unknown) or " : "", rule.positive ? "above" : "from", rule.most);
    return -1;
}

void report_free(struct report_file *f)
{
    free(f->comm);
    free(f->topo);
    if (f->info != NULL) free(f->info->attrs); /* doc_free_info's work, without linking the document's reader */
    free(f->info);
    f->comm = NULL;
    f->topo = NULL;
    f->info = NULL;
}

void report_label(struct report_file *files, int n)
{
    const struct report_file *first = NULL; /* the tags set run files apart; comm and topo files have none */
    int overlaps_differ = 0;
    for (int i = 0; i < n; i++) {
        if (files[i].kind != REPORT_RUNS) continue;
        if (first == NULL) first = &files[i];
        overlaps_differ |= strcmp(files[i].overlap, first->overlap) != 0;
    }
    for (int i = 0; i < n; i++)
        snprintf(files[i].tag, sizeof files[i].tag, "%s%.7s", overlaps_differ && files[i].kind == REPORT_RUNS ? "overlap " : "",
                 overlaps_differ && files[i].kind == REPORT_RUNS ? files[i].overlap : "");
}
