/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "tensor_io.h"
int pg_npy_read(const char *path, struct pg_tensor *out, struct pg_error *err) { (void)out; return pg_error_set(err, PG_ENOTSUP, "%s: npy not built", path); }
int pg_npy_read_buffer(const void *data, size_t size, struct pg_tensor *out, struct pg_error *err) { (void)data; (void)size; (void)out; return pg_error_set(err, PG_ENOTSUP, "npy not built"); }
int pg_npy_write(const char *path, const struct pg_tensor *t, struct pg_error *err) { (void)t; return pg_error_set(err, PG_ENOTSUP, "%s: npy not built", path); }
int pg_tensor_file_read(const char *path, const char *name, struct pg_tensor *out, struct pg_error *err) { (void)name; return pg_npy_read(path, out, err); }
