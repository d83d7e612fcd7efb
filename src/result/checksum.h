/* checksum.h — a result file's contents checked against what its writer wrote.
 *
 * The writer seals a file (checksum_seal) with one 64-bit XXH64 hash per object:
 * the root, every group and every dataset, listed in the root attribute `checksums`
 * ("xxh64:<16 hex digits> <path>", one string per object, in name order). An
 * object's hash covers its attributes (name, type, shape, values), a dataset's type,
 * shape and values, and a group's member names, so every number and string the
 * report shows is covered, and a member that disappears or appears is too. Values
 * are hashed as HDF5 reads them, in one canonical form (integers as int64 or uint64,
 * floats as float64, little-endian; strings as their bytes), not as the file's raw
 * bytes: h5repack keeps the checksums valid, and any change of a value does not.
 *
 * Why not HDF5's Fletcher32 filter: it covers the data of chunked datasets only, not
 * attributes (the device, the model, every /config key, a sweep's rank count), nor
 * variable-length strings (/summary's labels live in the global heap), and a reader
 * learns only that a read failed, not that the file was changed.
 *
 * The report verifies a sealed file before reading it (checksum_verify) and names the
 * first object whose hash does not match. A file without `checksums` is one written
 * before dpscale sealed its files only when its schema is older than
 * CHECKSUM_SINCE_SCHEMA: the report reads those as before, with a note, and refuses
 * any later one as damaged (result_require_seal, result/result_read.h).
 *
 * The checksums tell a changed byte, not who changed it: anyone can seal a file
 * (dpscale seal), so the report checks the figures it reads all the same. */
#ifndef DPSCALE_CHECKSUM_H
#define DPSCALE_CHECKSUM_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#define CHECKSUM_ATTR "checksums"                     /* the root attribute that lists them */
#define CHECKSUM_ALGORITHM_ATTR "checksum_algorithm" /* beside it, "xxh64": either without the other is a damaged root */
/* The first schema of which every file was sealed by its writer. Sealing came with
 * the dpscale of schema 5, so files of schema 5 (and older, in results/) were written
 * without checksums; schema 6 came after it, and its writer has always sealed. A file
 * of schema 6 or later without checksums lost them: it is damaged, or was edited. */
#define CHECKSUM_SINCE_SCHEMA 6

/* XXH64 of len bytes (the reference algorithm, xxhash.com). */
uint64_t checksum_xxh64(const void *data, size_t len, uint64_t seed);

/* Hash every object of an open, writable file and (re)write the root's `checksums`.
 * Returns 0, or -1 with the reason in err. */
int checksum_seal(hid_t file, char *err, size_t errlen);

/* 1: every object matches its checksum; 0: the file has no checksums; -1: an object
 * does not match, is missing, was added or cannot be read, the list is not one
 * well-formed line per object ("xxh64:<16 hex digits> <path>"), or the root's
 * attributes cannot be read (so that whether it has checksums cannot be told), named
 * in err. */
int checksum_verify(hid_t file, char *err, size_t errlen);

/* A file's bytes (an HDF5 image of size bytes) sealed in memory (HDF5's core driver,
 * nothing on disk: a copy no other process can reach) and read back as the report will
 * verify it: the sealed image, malloc'ed, its size in *sealed_size; NULL with the reason
 * in err ("sealing it failed: ...", "the sealed copy does not verify: ..."). */
void *checksum_seal_image(void *buf, size_t size, size_t *sealed_size, char *err, size_t errlen);

#endif
