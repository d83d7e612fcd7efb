/* test_checksum.c — a result file's checksums (checksum.h): XXH64 gives the reference
 * values; a sealed file verifies; a changed value, attribute, name, an added or a
 * removed object is named; a file without checksums is read as before; a file's
 * image sealed in memory verifies; h5read never reads an array attribute into room for
 * one value; and an open file (result_in.h) reads by the path of its groups. */
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "result/checksum.h"
#include "result/h5read.h"
#include "result/result_in.h"
#include "check.h"

static char g_path[64];

TEST(xxh64_gives_the_reference_values)
{
    CHECK(checksum_xxh64("", 0, 0) == 0xEF46DB3751D8E999ULL);
    CHECK(checksum_xxh64("abc", 3, 0) == 0x44BC2CF5AD770999ULL);
    const char *s = "Nobody inspects the spammish repetition"; /* 39 bytes: the four lanes, then the tail */
    CHECK(checksum_xxh64(s, strlen(s), 0) == 0xFBCEA83C8A378BF1ULL);
}

static void attr_text(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, &value);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

/* A small file of what dpscale writes: attributes of every kind, a [2 x 3] dataset
 * of doubles, a compound table with a text column, groups within groups. */
static void write_file(int seal)
{
    hid_t f = H5Fcreate(g_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    attr_text(f, "writer", "dpscale");
    hid_t s1 = H5Screate(H5S_SCALAR);
    const int64_t schema = 5;
    hid_t a = H5Acreate2(f, "schema_version", H5T_STD_I64LE, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &schema);
    H5Aclose(a);
    hid_t g = H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t r = H5Gcreate2(g, "n2", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const double two = 2;
    a = H5Acreate2(r, "nranks", H5T_IEEE_F64LE, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, &two);
    H5Aclose(a);
    hsize_t dims[2] = {2, 3};
    hid_t s2 = H5Screate_simple(2, dims, NULL);
    const double v[6] = {1, 2, 3, 4, 5, 6};
    hid_t d = H5Dcreate2(r, "step_s", H5T_IEEE_F64LE, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    attr_text(d, "units", "s");
    H5Dclose(d);
    struct row {
        const char *library;
        double step;
    } rows[2] = {{"nccl", 0.5}, {"mpi", 0.25}};
    hid_t text = H5Tcopy(H5T_C_S1);
    H5Tset_size(text, H5T_VARIABLE);
    hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(struct row));
    H5Tinsert(ct, "library", offsetof(struct row, library), text);
    H5Tinsert(ct, "step_median_s", offsetof(struct row, step), H5T_NATIVE_DOUBLE);
    hsize_t two_rows = 2;
    hid_t s3 = H5Screate_simple(1, &two_rows, NULL);
    d = H5Dcreate2(f, "summary", ct, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows);
    H5Dclose(d);
    char err[256] = "";
    if (seal) CHECK(checksum_seal(f, err, sizeof err) == 0);
    H5Sclose(s3);
    H5Tclose(ct);
    H5Tclose(text);
    H5Sclose(s2);
    H5Sclose(s1);
    H5Gclose(r);
    H5Gclose(g);
    H5Fclose(f);
}

/* checksum_verify of the file as it is now, its message in err. */
static int verify(char *err, size_t len)
{
    hid_t f = H5Fopen(g_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    err[0] = '\0';
    const int rc = checksum_verify(f, err, len);
    H5Fclose(f);
    return rc;
}

TEST(a_sealed_file_verifies_and_one_without_checksums_is_read_as_before)
{
    char err[512];
    write_file(1);
    CHECK(verify(err, sizeof err) == 1);
    write_file(0);
    CHECK(verify(err, sizeof err) == 0);
}

TEST(sealing_twice_gives_the_same_list)
{
    write_file(1);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    char first[4096] = "", again[4096] = "", err[256];
    h5_attr_str(f, CHECKSUM_ATTR, first, sizeof first);
    CHECK(checksum_seal(f, err, sizeof err) == 0);
    h5_attr_str(f, CHECKSUM_ATTR, again, sizeof again);
    H5Fclose(f);
    CHECK(first[0] != '\0' && strcmp(first, again) == 0);
    CHECK_CONTAINS(first, " /runs/n2/step_s\n");
}

TEST(a_changed_number_names_its_dataset)
{
    char err[512];
    write_file(1);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "runs/n2/step_s", H5P_DEFAULT);
    const double v[6] = {1, 2, 3, 4, 5, 6.000001};
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "the checksum of /runs/n2/step_s does not match");
}

TEST(a_changed_attribute_or_text_names_its_object)
{
    char err[512];
    write_file(1);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "runs/n2", H5P_DEFAULT);
    H5Adelete(g, "nranks");
    attr_text(g, "nranks", "2");
    H5Gclose(g);
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "the checksum of /runs/n2 does not match");
    write_file(1);
    f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "writer");
    attr_text(f, "writer", "dpscalf");
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "the checksum of / does not match");
}

TEST(an_added_or_removed_object_is_named)
{
    char err[512];
    write_file(1);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "summary", H5P_DEFAULT);
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "the checksum of / does not match"); /* the root lists its members */
    write_file(1);
    f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "runs/n2/extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "/runs/n2");
}

TEST(a_list_without_its_algorithm_is_a_damaged_root)
{
    char err[512];
    write_file(1);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, CHECKSUM_ALGORITHM_ATTR);
    H5Fclose(f);
    CHECK(verify(err, sizeof err) == -1);
    CHECK_CONTAINS(err, "without " CHECKSUM_ALGORITHM_ATTR);
}

TEST(an_array_attribute_is_never_read_as_one_value)
{
    hid_t f = H5Fcreate(g_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 1000;
    hid_t s = H5Screate_simple(1, &n, NULL);
    double *v = calloc(n, sizeof *v);
    hid_t a = H5Acreate2(f, "nranks", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, v);
    H5Aclose(a);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    a = H5Acreate2(f, "device_name", t, s, H5P_DEFAULT, H5P_DEFAULT);
    char *text = calloc(n, 8);
    H5Awrite(a, t, text);
    H5Aclose(a);
    char buf[16];
    CHECK(isnan(h5_attr_double(f, "nranks")));
    CHECK(h5_attr_str(f, "device_name", buf, sizeof buf) == -1 && buf[0] == '\0');
    free(text);
    free(v);
    H5Tclose(t);
    H5Sclose(s);
    H5Fclose(f);
}

TEST(an_image_sealed_in_memory_verifies_and_the_file_is_untouched)
{
    char err[512] = "";
    write_file(0);
    FILE *in = fopen(g_path, "rb");
    CHECK(in != NULL);
    static char bytes[1 << 20];
    const size_t size = fread(bytes, 1, sizeof bytes, in);
    fclose(in);
    size_t sealed_size = 0;
    void *sealed = checksum_seal_image(bytes, size, &sealed_size, err, sizeof err);
    CHECK(sealed != NULL && sealed_size > 0);
    CHECK(verify(err, sizeof err) == 0); /* the file on disk still has none */
    FILE *out = fopen(g_path, "wb");
    CHECK(out != NULL && fwrite(sealed, 1, sealed_size, out) == sealed_size);
    fclose(out);
    free(sealed);
    CHECK(verify(err, sizeof err) == 1);
}

TEST(an_open_file_reads_by_group_path)
{
    char err[512] = "", text[64];
    write_file(1);
    struct result_in *in = result_in_open(g_path, err, sizeof err);
    CHECK(in != NULL);
    CHECK(result_in_attr_int(in, "", "schema_version", 0) == 5);
    CHECK(result_in_attr_str(in, "", "writer", text, sizeof text) == 0 && strcmp(text, "dpscale") == 0);
    double v = -1;
    CHECK(result_in_attr_first(in, "runs/n2", "nranks", &v) == 1 && v == 2);
    CHECK(result_in_attr_first(in, "runs/n2", "none", &v) == 0 && v == 2);
    CHECK(result_in_attr_first(in, "nowhere", "nranks", &v) == 0);
    CHECK(result_in_is_group(in, "runs/n2") && !result_in_is_group(in, "summary"));
    char names[4][RESULT_NAME_LEN];
    CHECK(result_in_children(in, "runs", names, 4) == 1 && strcmp(names[0], "n2") == 0);
    CHECK(result_count_of("n2") == 2 && result_count_of("n") == 0 && result_count_of("n2x") == 0);
    size_t n = 0, dims[3];
    double *step = result_in_figures(in, "runs/n2", "step_s", 2, &n, dims, err, sizeof err);
    CHECK(step != NULL && n == 6 && dims[0] == 2 && dims[1] == 3 && dims[2] == 1 && step[5] == 6);
    free(step);
    CHECK(result_in_figures(in, "runs/n2", "absent_s", 2, &n, dims, err, sizeof err) == NULL && err[0] == '\0');
    CHECK(result_in_figures(in, "runs/n2", "step_s", 1, &n, dims, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "damaged: /runs/n2/step_s has 2 dimensions; it must have 1 to 1");
    result_in_close(in);
    CHECK(result_in_open("/nonexistent/file.h5", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "cannot open it: ");
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(g_path, sizeof g_path, "/tmp/dpscale-test-checksum-%ld.h5", (long)getpid());
    const int rc = test_main("checksum");
    unlink(g_path);
    return rc;
}
