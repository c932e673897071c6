/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "tensor_io.h"
int pg_safetensors_read(const char *path, struct pg_tensor **t, int *n, struct pg_error *err) { (void)t; (void)n; return pg_error_set(err, PG_ENOTSUP, "%s: safetensors not built", path); }
int pg_safetensors_write(const char *path, const struct pg_tensor *t, int n, struct pg_error *err) { (void)t; (void)n; return pg_error_set(err, PG_ENOTSUP, "%s: safetensors not built", path); }
void pg_tensor_list_free(struct pg_tensor *t, int n) { (void)t; (void)n; }
