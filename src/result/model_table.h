/* model_table.h — what a result file's /model/tensors table says of the parameter arena
 * (written by h5out_model.c): here, the parameter count and the elements of the stage
 * backward finishes with, whose update is the one a 1-GPU run leaves after backward. */
#ifndef DPSCALE_MODEL_TABLE_H
#define DPSCALE_MODEL_TABLE_H

#include <hdf5.h>

/* 0 with *total (every tensor's elements) and *last (those of the stage that holds the
 * arena's last element: backward's last stage); -1 when the file has no readable table. */
int model_table_last_stage(hid_t file, double *last, double *total);

#endif
