/* goldens/ private: what the reference kernels (goldens/kernels_*.c) share —
 * argument checking and messages for `infer`, numpy broadcasting, axis handling,
 * attribute access with defaults, the per-call preparation of `run` (validation of
 * the caller's tensors, widening of inputs to the compute dtype) and a small
 * deterministic parallel-for. Not part of any public header.
 */
#ifndef PHASEGATE_KERNELS_INTERNAL_H
#define PHASEGATE_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/kernels.h"

/* Every kernel's def, one extern per name; kernels_registry.c lists them. */
#define PG__KERNEL_NAMES(X)                                                             \
  X(abs) X(add) X(cast) X(causal_mask) X(cumsum) X(div) X(exp) X(gelu) X(identity)      \
  X(l2norm) X(layernorm) X(log) X(log_softmax) X(matmul) X(max) X(maximum) X(mean)      \
  X(minimum) X(mul) X(neg) X(permute) X(relu) X(reshape) X(rmsnorm) X(rope) X(rsqrt)    \
  X(scale) X(sigmoid) X(silu) X(softmax) X(sqrt) X(sub) X(sum) X(tanh) X(transpose)

#define PG__KERNEL_EXTERN(n) extern const struct pg_kernel_def pg__kdef_##n;
PG__KERNEL_NAMES(PG__KERNEL_EXTERN)
#undef PG__KERNEL_EXTERN

/* ---- messages ---- */

/* "[2, 4, 128]" into buf (always NUL-terminated); returns buf. */
const char *pg__shape_str(const int64_t *shape, int ndim, char *buf, size_t size);

/* ---- infer helpers ---- */

/* Arity (min..max, naming the arguments, e.g. "a, b[, c]") and valid dtypes. */
int pg__check_inputs(const char *op, const char *arg_list, const struct pg_tensor_meta *in,
                     int n, int min, int max, struct pg_error *err);

/* The compute dtype of a kernel: F64 if any float input is F64, else F32. */
enum pg_dtype pg__result_dtype(const struct pg_tensor_meta *in, int n);

/* Normalises a possibly negative axis against rank `ndim` (error names op and arg). */
int pg__norm_axis(const char *op, const char *arg, int64_t axis, int ndim, int *out,
                  struct pg_error *err);

/* numpy broadcasting of two shapes (error names both arguments and the dim). */
int pg__broadcast(const char *op, const char *an, const struct pg_tensor_meta *a,
                  const char *bn, const struct pg_tensor_meta *b, struct pg_tensor_meta *out,
                  struct pg_error *err);

/* Is `from` broadcastable to exactly `to` (unidirectional)? */
int pg__broadcasts_to(const struct pg_tensor_meta *from, int to_ndim, const int64_t *to_shape);

/* Element strides of `from` laid over the `ndim` dims of a target shape, 0 where
 * broadcast (from must broadcast to the target). */
void pg__broadcast_strides(const struct pg_tensor_meta *from, int ndim, int64_t *strides);

/* Product of shape[lo..hi). */
int64_t pg__prod(const int64_t *shape, int lo, int hi);

/* ---- attributes ---- */

/* The attr at `idx` (def order), or the declared default when attrs is NULL or the
 * value's type is 0 (absent). Values of another numeric type are converted. */
const struct pg_attr_value *pg__attr(const struct pg_attr_decl *decls,
                                     const struct pg_attr_value *attrs, int idx);
double pg__attr_f(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);
int64_t pg__attr_i(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);
int pg__attr_b(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);

/* ---- run preparation ---- */

typedef int (*pg__infer_fn)(const struct pg_tensor_meta *inputs, int n_inputs,
                            const struct pg_attr_value *attrs, struct pg_tensor_meta *outputs,
                            struct pg_error *err);

struct pg__kctx {
  const char *op;
  int n_in, n_out, n_threads;
  enum pg_dtype dt;                                  /* compute dtype: F32 or F64 */
  struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS];   /* complete, defaults filled */
  struct pg_tensor_meta in[PG_KERNEL_MAX_INPUTS];
  struct pg_tensor_meta out[PG_KERNEL_MAX_OUTPUTS];
  const void *x[PG_KERNEL_MAX_INPUTS];   /* input data in `dt` */
  const void *raw[PG_KERNEL_MAX_INPUTS]; /* input data as given, dtype in[i].dtype */
  void *y[PG_KERNEL_MAX_OUTPUTS];        /* output data (dtype dt) */
  int64_t in_numel[PG_KERNEL_MAX_INPUTS], out_numel[PG_KERNEL_MAX_OUTPUTS];
  void *owned[PG_KERNEL_MAX_INPUTS];     /* widened copies to free */
};

/* Validates args/outputs against `infer`, fills defaults, widens inputs whose dtype
 * is not the compute dtype (except those in keep_raw_mask, read via raw[]).
 * On error nothing needs releasing; on PG_OK call pg__kctx_end. */
int pg__kctx_begin(struct pg__kctx *k, const char *op, const struct pg_attr_decl *decls,
                   pg__infer_fn infer, const struct pg_kernel_args *args,
                   struct pg_tensor *const *outputs, int n_outputs, unsigned keep_raw_mask,
                   struct pg_error *err);
void pg__kctx_end(struct pg__kctx *k);

/* ---- deterministic parallel-for ---- */

/* Work items [begin, end) of one chunk. Must not fail or allocate. */
typedef void (*pg__range_fn)(void *ctx, int64_t begin, int64_t end);

/* Splits [0, n) into contiguous chunks of at least `grain` items over up to
 * `n_threads` threads (0 = default: online CPUs, at most 8) and runs fn on each.
 * Every item is computed by exactly one call with the same code path whatever the
 * split, so results do not depend on the thread count. Falls back to the calling
 * thread when a thread cannot be created. */
void pg__parallel_for(int64_t n, int64_t grain, int n_threads, pg__range_fn fn, void *ctx);

/* Copies `src` (meta sm, dtype dt) broadcast to the shape of `dm` into dst. */
void pg__broadcast_copy(enum pg_dtype dt, const void *src, const struct pg_tensor_meta *sm,
                        void *dst, const struct pg_tensor_meta *dm);

#endif /* PHASEGATE_KERNELS_INTERNAL_H */
