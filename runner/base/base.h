/* phasegate runner — the floor every room stands on: paths, directories, clocks,
 * strings, shape text and whole-file reads, written once (docs/design.md §2). Nothing
 * here knows about contracts, tensors' contents, impls or verdicts, and nothing here
 * prints.
 *
 * Paths are built on the heap (pg_path_join / pg_path_fmt), never in fixed buffers,
 * so a deep build tree or a long case id can never truncate a path silently.
 */
#ifndef PHASEGATE_BASE_H
#define PHASEGATE_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/error.h"

/* Monotonic milliseconds (for durations only). */
double pg_now_ms(void);
/* The wall clock in ms since the epoch (report times; pg_now_ms measures durations). */
double pg_wall_ms(void);
/* t (ms since the epoch) as "2026-11-28T22:44:43.123Z" into buf. */
void pg_wall_format(double t, char *buf, size_t size);

/* strdup that accepts NULL (returns NULL) and goes through malloc. */
char *pg_strdup(const char *s);

/* Room for one more element in a growable array (*items holding count of *capacity
 * elements of elem_size bytes): doubles the capacity (from 16) when it is full. 0, or
 * -1 when out of memory (the array is left as it was). */
int pg_array_reserve(void *items, int *capacity, int count, size_t elem_size);

/* mkdir -p with mode 0777 (umask applies). 0, or -1 with errno set. Paths of any length. */
int pg_mkdir_p(const char *path);

/* 1 when path names a regular file / a directory (following links), else 0. */
int pg_is_file(const char *path);
int pg_is_dir(const char *path);

/* rm -rf, best effort; never follows symbolic links out of the tree. */
void pg_remove_tree(const char *path);

/* "a/b" as a new malloc'ed string (NULL on allocation failure); b may be NULL. */
char *pg_path_join(const char *a, const char *b);

/* printf into a new malloc'ed string (NULL on allocation failure). */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
char *pg_path_fmt(const char *fmt, ...);

/* "[2, 4, 128]" into buf (truncated with the closing bracket kept when buf is small). */
void pg_shape_format(int ndim, const int64_t *shape, char *buf, size_t size);

/* v as short as it reads back the same as %g: "1e-3" rather than "0.001", "0.5"
 * rather than "5e-1" (tolerances on the console and in summaries). */
void pg_num_short(double v, char *buf, size_t size);

/* The whole file at path (a regular file, a pipe or a device; not a directory) into
 * *out, a new NUL-terminated buffer of *len bytes (+ the NUL): the one whole-file read
 * of the runner. At most `limit` bytes are accepted (SIZE_MAX: no limit). Errors, each
 * naming the file (path is never NULL here):
 *   PG_ENOENT / PG_EIO  "<path>: cannot open: <strerror>"
 *   PG_EIO              "<path>: cannot read: <strerror>" (a directory: Is a directory)
 *   PG_EIO              "<path>: short read: <got> of <size> bytes" (shrank while read)
 *   PG_ELIMIT           "<path>: larger than <limit> bytes" (or "<N> MiB"); *len: the size
 *                       (a stream's: limit + 1, what was read), so a caller can say it
 *   PG_ENOMEM           "<path>: out of memory reading <n> bytes"
 * A regular file over the limit is refused from its size, before a byte is read. */
int pg_read_file(const char *path, size_t limit, char **out, size_t *len, struct pg_error *err);

#endif
