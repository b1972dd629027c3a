/* fovea-bench edge --sms: the edge filter on CUDA green-context slices of
 * the GPU (bench_slice.c). */
#ifndef FOVEA_BENCH_SLICE_H
#define FOVEA_BENCH_SLICE_H

/* list: SM counts, "8,16". Prints the table; a slice that cannot be made is
 * skipped with the reason. Returns 0, or 1 (no CUDA context) or 2 (bad
 * list). */
int bench_edge_slices(const char *list, int device, int width, int height, int batch, int runs);

#endif
