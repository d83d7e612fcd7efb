/* table.h — the scaling table printed at the end of a run (rank 0 only). */
#ifndef DPSCALE_TABLE_H
#define DPSCALE_TABLE_H

#include <stdio.h>

#include "train/stats.h"

void table_print_scaling(FILE *out, const struct run_summary *runs, int n);

#endif
