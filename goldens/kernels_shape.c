/* goldens/kernels_shape.c — layout and reduction reference kernels: transpose,
 * permute, reshape (data movement, exact), sum / mean / max over one axis (with
 * keepdims) and cumsum. Sums accumulate in double, sequentially along the axis, for
 * float32 too; each output line belongs to one thread, so results are independent
 * of the thread count.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "kernels_internal.h"

#define GRAIN_ELEMS (1 << 15)

static int64_t grain_for(int64_t per_item) {
  return per_item > 0 && GRAIN_ELEMS / per_item > 0 ? GRAIN_ELEMS / per_item : 1;
}

/* ================================================================ transpose / permute */

enum { T_PERM, T_DIM0, T_DIM1 };

static const struct pg_attr_decl transpose_attrs[] = {
    {.name = "perm", .type = PG_ATTR_INTS, .default_value = {.type = PG_ATTR_INTS, .n_ints = 0}},
    {.name = "dim0", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -2}},
    {.name = "dim1", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = NULL}};
static const struct pg_attr_decl permute_attrs[] = {
    {.name = "perm", .type = PG_ATTR_INTS, .required = 1}, {.name = NULL}};

/* perm[d] = input axis that becomes output axis d. */
static int perm_of(const char *op, const struct pg_attr_decl *decls,
                   const struct pg_attr_value *attrs, int ndim, int *perm, struct pg_error *err) {
  const struct pg_attr_value *pv = pg__attr(decls, attrs, T_PERM);
  int is_permute = decls == permute_attrs;
  if (is_permute && pv->type == 0)
    return pg_error_set(err, PG_EINVAL, "%s: missing required attribute perm", op);
  if (pv->type == PG_ATTR_INTS && (pv->n_ints > 0 || is_permute)) {
    char sp[160];
    if (pv->n_ints != ndim)
      return pg_error_set(err, PG_EINVAL, "%s: perm %s has %d entries, x has rank %d", op,
                          pg__shape_str(pv->ints, pv->n_ints < 0 ? 0 : pv->n_ints, sp, sizeof sp),
                          pv->n_ints, ndim);
    int seen[PG_MAX_NDIM] = {0};
    for (int d = 0; d < ndim; d++) {
      int64_t a = pv->ints[d];
      if (a < -(int64_t)ndim || a >= ndim || seen[a < 0 ? a + ndim : a])
        return pg_error_set(err, PG_EINVAL, "%s: perm %s is not a permutation of 0..%d", op,
                            pg__shape_str(pv->ints, pv->n_ints, sp, sizeof sp), ndim - 1);
      perm[d] = (int)(a < 0 ? a + ndim : a);
      seen[perm[d]] = 1;
    }
    return PG_OK;
  }
  int d0, d1;
  PG_RETURN_IF_ERROR(pg__norm_axis(op, "x", pg__attr_i(decls, attrs, T_DIM0), ndim, &d0, err));
  PG_RETURN_IF_ERROR(pg__norm_axis(op, "x", pg__attr_i(decls, attrs, T_DIM1), ndim, &d1, err));
  for (int d = 0; d < ndim; d++) perm[d] = d;
  perm[d0] = d1;
  perm[d1] = d0;
  return PG_OK;
}

static int permute_infer(const char *op, const struct pg_attr_decl *decls,
                         const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                         struct pg_tensor_meta *out, int *perm, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs(op, "x", in, n, 1, 1, err));
  PG_RETURN_IF_ERROR(perm_of(op, decls, attrs, in[0].ndim, perm, err));
  out[0].ndim = in[0].ndim;
  for (int d = 0; d < in[0].ndim; d++) out[0].shape[d] = in[0].shape[perm[d]];
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

struct perm_ctx {
  enum pg_dtype dt;
  const void *x;
  void *y;
  int nd;
  int64_t shape[PG_MAX_NDIM], st[PG_MAX_NDIM]; /* output shape, input stride per out dim */
};

static void perm_chunk(void *p, int64_t rb, int64_t re) {
  const struct perm_ctx *c = p;
  int nd = c->nd;
  int64_t inner = c->shape[nd - 1], is = c->st[nd - 1];
  int64_t idx[PG_MAX_NDIM] = {0}, off = 0, rem = rb;
  for (int d = nd - 2; d >= 0; d--) {
    idx[d] = rem % c->shape[d];
    rem /= c->shape[d];
    off += idx[d] * c->st[d];
  }
  for (int64_t r = rb; r < re; r++) {
    if (c->dt == PG_DTYPE_F64) {
      const double *x = (const double *)c->x + off;
      double *y = (double *)c->y + r * inner;
      for (int64_t i = 0; i < inner; i++) y[i] = x[i * is];
    } else {
      const float *x = (const float *)c->x + off;
      float *y = (float *)c->y + r * inner;
      for (int64_t i = 0; i < inner; i++) y[i] = x[i * is];
    }
    for (int d = nd - 2; d >= 0; d--) {
      idx[d]++;
      off += c->st[d];
      if (idx[d] < c->shape[d]) break;
      off -= c->st[d] * idx[d];
      idx[d] = 0;
    }
  }
}

static int permute_run(const char *op, const struct pg_attr_decl *decls, pg__infer_fn infer,
                       const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                       struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, decls, infer, args, outputs, 1, 0, err));
  int perm[PG_MAX_NDIM];
  struct pg_tensor_meta om;
  int rc = permute_infer(op, decls, k.in, k.n_in, k.attrs, &om, perm, err);
  if (rc == PG_OK && k.out_numel[0] > 0) {
    struct perm_ctx c = {.dt = k.dt, .x = k.x[0], .y = k.y[0], .nd = om.ndim};
    int64_t in_st[PG_MAX_NDIM], s = 1;
    for (int d = k.in[0].ndim - 1; d >= 0; d--) {
      in_st[d] = s;
      s *= k.in[0].shape[d];
    }
    for (int d = 0; d < om.ndim; d++) {
      c.shape[d] = om.shape[d];
      c.st[d] = in_st[perm[d]];
    }
    if (c.nd == 0) {
      c.nd = 1;
      c.shape[0] = 1;
      c.st[0] = 1;
    }
    int64_t inner = c.shape[c.nd - 1];
    pg__parallel_for(k.out_numel[0] / inner, grain_for(inner), k.n_threads, perm_chunk, &c);
  }
  pg__kctx_end(&k);
  return rc;
}

#define PERMUTE_KERNEL(NAME, DECLS, SUMMARY)                                                   \
  PG__KERNEL_WRAPPED(NAME, 1, 1, DECLS, SUMMARY,                                               \
                     (permute_infer(#NAME, DECLS, in, n, attrs, out, (int[PG_MAX_NDIM]){0}, err)), \
                     (permute_run(#NAME, DECLS, infer_##NAME, args, outputs, err)));

PERMUTE_KERNEL(transpose, transpose_attrs,
               "swap dims dim0, dim1 (default the last two), or apply perm when given")
PERMUTE_KERNEL(permute, permute_attrs, "out axis d = x axis perm[d] (numpy transpose(x, perm))")

/* ================================================================ reshape */

static const struct pg_attr_decl reshape_attrs[] = {
    {.name = "shape", .type = PG_ATTR_INTS, .required = 1}, {.name = NULL}};

static int infer_reshape(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                         struct pg_tensor_meta *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs("reshape", "x", in, n, 1, 1, err));
  const struct pg_attr_value *sv = pg__attr(reshape_attrs, attrs, 0);
  if (sv->type == 0) return pg_error_set(err, PG_EINVAL, "reshape: missing required attribute shape");
  if (sv->n_ints < 0 || sv->n_ints > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "reshape: shape has %d entries, at most %d allowed",
                        sv->n_ints, PG_MAX_NDIM);
  int64_t numel = pg__prod(in[0].shape, 0, in[0].ndim), known = 1;
  int infer_at = -1;
  char ss[160], sx[160];
  pg__shape_str(sv->ints, sv->n_ints, ss, sizeof ss);
  pg__shape_str(in[0].shape, in[0].ndim, sx, sizeof sx);
  for (int d = 0; d < sv->n_ints; d++) {
    int64_t v = sv->ints[d];
    if (v == -1) {
      if (infer_at >= 0)
        return pg_error_set(err, PG_EINVAL, "reshape: shape %s has more than one -1", ss);
      infer_at = d;
      continue;
    }
    if (v < 0)
      return pg_error_set(err, PG_EINVAL, "reshape: shape %s has a negative dimension %" PRId64,
                          ss, v);
    if (v != 0 && known > INT64_MAX / v)
      return pg_error_set(err, PG_EOVERFLOW, "reshape: shape %s overflows", ss);
    known *= v;
  }
  out[0].ndim = sv->n_ints;
  memcpy(out[0].shape, sv->ints, sizeof(int64_t) * (size_t)sv->n_ints);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      return pg_error_set(err, PG_ESHAPE,
                          "reshape: cannot reshape x %s (%" PRId64 " elements) into %s", sx, numel,
                          ss);
    out[0].shape[infer_at] = numel / known;
  } else if (known != numel) {
    return pg_error_set(err, PG_ESHAPE,
                        "reshape: cannot reshape x %s (%" PRId64 " elements) into %s (%" PRId64
                        " elements)",
                        sx, numel, ss, known);
  }
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

static int run_reshape(const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                       struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(
      pg__kctx_begin(&k, "reshape", reshape_attrs, infer_reshape, args, outputs, 1, 0, err));
  if (k.out_numel[0] > 0)
    memcpy(k.y[0], k.x[0], (size_t)k.out_numel[0] * pg_dtype_size(k.dt));
  pg__kctx_end(&k);
  return PG_OK;
}

PG__KERNEL_DEF(reshape, 1, 1, reshape_attrs,
               "same elements in C order, new shape (one -1 inferred)");

/* ================================================================ reductions, cumsum */

enum red_op { R_SUM, R_MEAN, R_MAX, R_CUMSUM };

static const struct pg_attr_decl reduce_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = "keepdims", .type = PG_ATTR_BOOL, .default_value = {.type = PG_ATTR_BOOL, .b = 0}},
    {.name = NULL}};
static const struct pg_attr_decl cumsum_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = NULL}};

static int reduce_infer(const char *op, enum red_op r, const struct pg_tensor_meta *in, int n,
                        const struct pg_attr_value *attrs, struct pg_tensor_meta *out, int *axis,
                        struct pg_error *err) {
  const struct pg_attr_decl *decls = r == R_CUMSUM ? cumsum_attrs : reduce_attrs;
  PG_RETURN_IF_ERROR(pg__check_inputs(op, "x", in, n, 1, 1, err));
  PG_RETURN_IF_ERROR(pg__norm_axis(op, "x", pg__attr_i(decls, attrs, 0), in[0].ndim, axis, err));
  out[0] = in[0];
  out[0].dtype = pg__result_dtype(in, n);
  if (r == R_CUMSUM) return PG_OK;
  if (r == R_MAX && in[0].shape[*axis] == 0) {
    char sx[160];
    return pg_error_set(err, PG_ESHAPE, "%s: axis %d of x %s is empty and max has no identity",
                        op, *axis, pg__shape_str(in[0].shape, in[0].ndim, sx, sizeof sx));
  }
  if (pg__attr_b(decls, attrs, 1)) {
    out[0].shape[*axis] = 1;
  } else {
    for (int d = *axis; d + 1 < in[0].ndim; d++) out[0].shape[d] = in[0].shape[d + 1];
    out[0].ndim--;
  }
  return PG_OK;
}

struct red_ctx {
  enum red_op op;
  enum pg_dtype dt;
  const void *x;
  void *y;
  int64_t len, inner;
};

#define RED_BODY(T)                                                        \
  do {                                                                     \
    const T *x = (const T *)c->x + base;                                   \
    if (c->op == R_CUMSUM) {                                               \
      T *y = (T *)c->y + base;                                             \
      double acc = 0.0;                                                    \
      for (int64_t j = 0; j < len; j++) {                                  \
        acc += (double)x[j * st];                                          \
        y[j * st] = (T)acc;                                                \
      }                                                                    \
      break;                                                               \
    }                                                                      \
    T *y = (T *)c->y + l;                                                  \
    if (c->op == R_MAX) {                                                  \
      T m = x[0];                                                          \
      for (int64_t j = 1; j < len && m == m; j++)                          \
        if (x[j * st] > m || x[j * st] != x[j * st]) m = x[j * st];        \
      *y = m;                                                              \
      break;                                                               \
    }                                                                      \
    double acc = 0.0;                                                      \
    for (int64_t j = 0; j < len; j++) acc += (double)x[j * st];            \
    *y = (T)(c->op == R_MEAN ? acc / (double)len : acc);                   \
  } while (0)

/* Items are lines along the axis; a reduced line l writes output element l. */
static void red_chunk(void *p, int64_t lb, int64_t le) {
  const struct red_ctx *c = p;
  int64_t len = c->len, st = c->inner;
  for (int64_t l = lb; l < le; l++) {
    int64_t base = (l / c->inner) * len * c->inner + l % c->inner;
    if (c->dt == PG_DTYPE_F64) RED_BODY(double);
    else RED_BODY(float);
  }
}

static int reduce_run(const char *op, enum red_op r, pg__infer_fn infer,
                      const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                      struct pg_error *err) {
  struct pg__kctx k;
  const struct pg_attr_decl *decls = r == R_CUMSUM ? cumsum_attrs : reduce_attrs;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, decls, infer, args, outputs, 1, 0, err));
  int axis = 0;
  struct pg_tensor_meta om;
  int rc = reduce_infer(op, r, k.in, k.n_in, k.attrs, &om, &axis, err);
  if (rc == PG_OK) {
    struct red_ctx c = {.op = r, .dt = k.dt, .x = k.x[0], .y = k.y[0]};
    c.len = k.in[0].shape[axis];
    c.inner = pg__prod(k.in[0].shape, axis + 1, k.in[0].ndim);
    int64_t lines = pg__prod(k.in[0].shape, 0, axis) * c.inner;
    pg__parallel_for(lines, grain_for(c.len > 0 ? c.len : 1), k.n_threads, red_chunk, &c);
  }
  pg__kctx_end(&k);
  return rc;
}

#define REDUCE_KERNEL(NAME, R, DECLS, SUMMARY)                                                 \
  PG__KERNEL_WRAPPED(NAME, 1, 1, DECLS, SUMMARY,                                               \
                     (reduce_infer(#NAME, R, in, n, attrs, out, &(int){0}, err)),              \
                     (reduce_run(#NAME, R, infer_##NAME, args, outputs, err)));

REDUCE_KERNEL(sum, R_SUM, reduce_attrs, "sum over axis (double accumulator)")
REDUCE_KERNEL(mean, R_MEAN, reduce_attrs, "mean over axis (double accumulator)")
REDUCE_KERNEL(max, R_MAX, reduce_attrs, "maximum over axis, NaN propagates")
REDUCE_KERNEL(cumsum, R_CUMSUM, cumsum_attrs, "inclusive prefix sum along axis")
