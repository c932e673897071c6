/* phasegate runner — the tensors room (docs/design.md §2): tensor files (.npy 1.0/2.0/3.0
 * and safetensors; readers never over-read and refuse lies in headers, large files are
 * mmap()ed), Philox, fills and one tensor's generation (materialize.h). Knows nothing
 * about impls, contracts or cases (a case's inputs are run/inputs.h's). */
#ifndef PHASEGATE_TENSORS_H
#define PHASEGATE_TENSORS_H

#include "phasegate/error.h"
#include "phasegate/tensor.h"
#include "tensors/materialize.h"
#include "tensors/rng.h" /* Philox and the fills, for the rooms above */

/* Reads a .npy file into `out` (pg_tensor_init'ed). On PG_OK `out` owns its data
 * (possibly mmap-backed) and is released with pg_tensor_reset. */
int pg_npy_read(const char *path, struct pg_tensor *out, struct pg_error *err);
int pg_npy_read_buffer(const void *data, size_t size, struct pg_tensor *out,
                       struct pg_error *err);
/* Writes atomically (temp file + rename). bfloat16: see docs/tensors.md. */
int pg_npy_write(const char *path, const struct pg_tensor *t, struct pg_error *err);

/* safetensors: all tensors of a file. On PG_OK *tensors is an array of *count
 * tensors (free with pg_tensor_list_free). */
int pg_safetensors_read(const char *path, struct pg_tensor **tensors, int *count,
                        struct pg_error *err);
int pg_safetensors_write(const char *path, const struct pg_tensor *tensors, int count,
                         struct pg_error *err);
void pg_tensor_list_free(struct pg_tensor *tensors, int count);

/* By extension: .npy, or .safetensors (`name` picks a tensor; NULL = the only one). */
int pg_tensor_file_read(const char *path, const char *name, struct pg_tensor *out,
                        struct pg_error *err);

/* ---- extensions (additive) ---- */

/* pg_npy_read_ex flags. '<u2' always reads as bfloat16 (phasegate has no uint16);
 * '<V2' / '|V2' (what numpy writes for ml_dtypes.bfloat16) only with this flag. */
#define PG_NPY_ACCEPT_V2_AS_BF16 1u
#define PG_NPY_NO_MMAP 2u /* always read into an owned buffer */
int pg_npy_read_ex(const char *path, unsigned flags, struct pg_tensor *out,
                   struct pg_error *err);
int pg_npy_read_buffer_ex(const void *data, size_t size, unsigned flags, struct pg_tensor *out,
                          struct pg_error *err);

/* The same from a file the caller opened (fd stays the caller's; `what` names the file
 * in messages): a caller that must not follow symlinks or block on a FIFO opens it
 * itself (the impl adapters read impl-written outputs this way). */
int pg_npy_read_fd(int fd, const char *what, unsigned flags, struct pg_tensor *out,
                   struct pg_error *err);
int pg_safetensors_read_fd(int fd, const char *what, struct pg_tensor **tensors, int *count,
                           struct pg_error *err);

/* pg_tensor_file_read with pg_npy_read_ex flags for .npy files (e.g. pass
 * PG_NPY_ACCEPT_V2_AS_BF16 when the contract expects a bfloat16 output). */
int pg_tensor_file_read_ex(const char *path, const char *name, unsigned npy_flags,
                           struct pg_tensor *out, struct pg_error *err);

/* safetensors from memory (the fuzz harness, embedded data); tensors are copied. */
int pg_safetensors_read_buffer(const void *data, size_t size, const char *src,
                               struct pg_tensor **tensors, int *count, struct pg_error *err);

/* Internal: writes head + parts to path via a temp file in the same directory and
 * rename(). Shared by the .npy and safetensors writers. */
int pg__atomic_write(const char *path, const void *head, size_t head_len,
                     const void *const *parts, const size_t *lens, int n_parts,
                     struct pg_error *err);

#endif
