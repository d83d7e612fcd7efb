/* result_read.c — a result file read whole and checked (result_read.h): opened
 * (result_in.c), refused when dpscale did not write it, a newer dpscale did, or it
 * changed since it was written (its checksums, checksum.h, where it has them); what
 * every kind shares (device, first host, creation time, whether its sweep ended early
 * or diverged) read, then the file handed to the reader of its kind: /summary (a run or
 * a projection), /collectives (dpscale comm), /system/topology alone (dpscale topo). A
 * dpscale file with none of these (dpscale dump) is read as REPORT_NONE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/checksum.h"
#include "result/h5out.h"
#include "result/h5read.h"
#include "result/result_read_internal.h"
#include "base/utf8.h"

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

int result_read(const char *path, struct report_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    utf8_copy(f->path, sizeof f->path, path);
    struct result_in *in = result_in_open(path, err, errlen);
    if (in == NULL) return -1;
    const hid_t file = in->file;
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
        rc = result_read_runs(file, (int)schema, f, err, errlen);
    } else if (h5_exists(file, "collectives")) {
        f->kind = REPORT_COMM;
        rc = result_read_comm(file, (int)schema, f, err, errlen);
    } else if (h5_exists(file, "dump")) {
        f->kind = REPORT_NONE;
        rc = 0;
    } else if (h5_exists(file, "system/topology")) {
        f->kind = REPORT_TOPO;
        rc = result_read_topo(file, f, err, errlen);
    } else {
        snprintf(err, errlen, "damaged: a dpscale file with no /summary, /collectives, /dump or /system/topology");
    }
done:
    result_in_close(in);
    if (rc != 0) result_free(f);
    return rc;
}

int result_require_seal(const struct report_file *f, char *err, size_t errlen)
{
    if (f->sealed || f->schema < CHECKSUM_SINCE_SCHEMA) return 0;
    snprintf(err, errlen, "corrupt: it has no checksums, yet dpscale has sealed every file of schema %d and later as it "
             "wrote it (this one is schema %d): they were removed, or its root is damaged, and nothing tells what else "
             "changed; if you edited it yourself and trust it, seal it again with `dpscale seal`", CHECKSUM_SINCE_SCHEMA,
             f->schema);
    return REPORT_CHANGED;
}

void result_free(struct report_file *f)
{
    free(f->comm);
    free(f->topo);
    f->comm = NULL;
    f->topo = NULL;
}
