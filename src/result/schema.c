/* schema.c — the tables of schema.h, looked up by name at run time: the writer takes
 * a dataset's units from here, the readers a column's name before schema 5. */
#include "result/schema.h"

#include <string.h>

#define ENTRY(name, units, meaning) {#name, units, meaning},
static const struct schema_entry summary[] = {
    SCHEMA_SUMMARY_TEXT(ENTRY) SCHEMA_SUMMARY_INTS(ENTRY) SCHEMA_SUMMARY_REALS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry run[] = {SCHEMA_RUN_DATASETS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry collective[] = {SCHEMA_COLLECTIVE_DATASETS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry topology[] = {SCHEMA_TOPOLOGY_DATASETS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry system_[] = {SCHEMA_SYSTEM_DATASETS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry ranks[] = {
    SCHEMA_RANK_TEXT(ENTRY) SCHEMA_RANK_INTS(ENTRY) SCHEMA_RANK_REALS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry tensors[] = {SCHEMA_TENSOR_COLUMNS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry dump[] = {SCHEMA_DUMP_DATASETS(ENTRY) {NULL, NULL, NULL}};
static const struct schema_entry projection[] = {SCHEMA_PROJECTION_DATASETS(ENTRY) {NULL, NULL, NULL}};
#undef ENTRY

static const struct schema_entry *const tables[SCHEMA_NTABLES] = {
    [SCHEMA_SUMMARY] = summary, [SCHEMA_RUN] = run,         [SCHEMA_COLLECTIVE] = collective,
    [SCHEMA_TOPOLOGY] = topology, [SCHEMA_SYSTEM] = system_, [SCHEMA_RANKS] = ranks,
    [SCHEMA_TENSORS] = tensors,   [SCHEMA_DUMP] = dump,      [SCHEMA_PROJECTION] = projection,
};

const struct schema_entry *schema_find(enum schema_table t, const char *name)
{
    if ((int)t < 0 || t >= SCHEMA_NTABLES || name == NULL) return NULL;
    for (const struct schema_entry *e = tables[t]; e->name != NULL; e++)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

const char *schema_former_name(const char *name)
{
#define FORMER(old, current) \
    if (strcmp(name, #current) == 0) return #old;
    SCHEMA_FORMER_NAMES(FORMER)
#undef FORMER
    return NULL;
}
