/* goldens/kernels_norm.c — reference kernels that normalise along an axis: softmax,
 * log_softmax, l2norm (one axis, torch `dim` semantics), layernorm and rmsnorm
 * (trailing axes from `axis` on, ONNX LayerNormalization semantics), and rope.
 *
 * Numerics: every reduction (max, sum of exps, mean, two-pass variance, sum of
 * squares) accumulates in double, also for float32 tensors; softmax subtracts the row
 * maximum; results are rounded once to the output dtype. In the fp32 reference mode
 * softmax/log_softmax take e^x from pg__exp_r32_n (kernels_internal.h: relative error
 * < 2^-51, vectorised) instead of libm; fp64 keeps libm exp. Rows are spread over threads
 * whole, so the summation order never depends on the thread count.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"

#define GRAIN_ELEMS (1 << 14) /* elements of work per thread, at least */

static int64_t grain_lines(int64_t len) {
  return len > 0 && GRAIN_ELEMS / len > 0 ? GRAIN_ELEMS / len : 1;
}

/* ================================================================ one-axis lines */

enum line_op { L_SOFTMAX, L_LOG_SOFTMAX, L_L2NORM };

/* Rows up to this length keep their exps on the worker's stack (16 KiB); longer ones
 * recompute them (same values: exp is deterministic). */
#define LINE_CACHE 2048

struct line_ctx {
  enum line_op op;
  enum pg_dtype dt;
  const void *x;
  void *y;
  int64_t len, inner;
  double eps;
};

#define LINE_BODY(T)                                                              \
  do {                                                                            \
    const T *x = (const T *)c->x + base;                                          \
    T *y = (T *)c->y + base;                                                      \
    if (c->op == L_L2NORM) {                                                      \
      double ss = 0.0;                                                            \
      for (int64_t j = 0; j < len; j++) ss += (double)x[j * st] * (double)x[j * st]; \
      double d = sqrt(ss);                                                        \
      if (!(d >= c->eps) && d == d) d = c->eps;                                   \
      for (int64_t j = 0; j < len; j++) y[j * st] = (T)((double)x[j * st] / d);   \
      break;                                                                      \
    }                                                                             \
    double m = -INFINITY;                                                         \
    for (int64_t j = 0; j < len; j++) {                                           \
      double v = (double)x[j * st];                                               \
      if (v > m || v != v) m = v;                                                 \
      if (m != m) break;                                                          \
    }                                                                             \
    /* rest = sum over all but one maximal element, whose term is exactly 1, so  \
     * log_softmax can use log1p(rest) without cancelling near 0 */               \
    double rest = 0.0;                                                            \
    int skipped = 0, cached = len <= LINE_CACHE;                                  \
    for (int64_t j = 0; j < len; j++) {                                           \
      double v = (double)x[j * st];                                               \
      if (!skipped && v == m) {                                                   \
        skipped = 1;                                                              \
        if (cached) cache[j] = 1.0;                                               \
        continue;                                                                 \
      }                                                                           \
      double e = exp(v - m);                                                      \
      if (cached) cache[j] = e;                                                   \
      rest += e;                                                                  \
    }                                                                             \
    if (!skipped) rest = NAN; /* a NaN in the row: all NaN */                    \
    if (c->op == L_SOFTMAX) {                                                     \
      double inv = 1.0 / (1.0 + rest);                                            \
      for (int64_t j = 0; j < len; j++)                                           \
        y[j * st] = (T)((cached ? cache[j] : exp((double)x[j * st] - m)) * inv);  \
    } else {                                                                      \
      double ls = log1p(rest);                                                    \
      for (int64_t j = 0; j < len; j++) y[j * st] = (T)(((double)x[j * st] - m) - ls); \
    }                                                                             \
  } while (0)

/* softmax / log_softmax of one float32 row (the fp32 reference mode): the same
 * algorithm as LINE_BODY, with e^x from pg__exp_r32_n over blocks of the row (no libm
 * call per element) and the sum of exps in four interleaved partial sums, combined
 * as (s0 + s1) + (s2 + s3). Each row is computed whole by one thread, so the result
 * does not depend on the thread count. buf holds LINE_CACHE + 4 doubles. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static void softmax_row_f32(const struct line_ctx *c, const float *x, float *y, int64_t len,
                            int64_t st, double *buf) {
  double m = -INFINITY;
  int64_t jm = -1, j = 0; /* jm: the one maximal element whose term (exactly 1) is left out */
  if (st == 1 && len >= 8) {
    /* four lanes of running maxima and a NaN flag: no data-dependent branch */
    v4f mx = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    v4i nan = {0, 0, 0, 0};
    for (; j + 4 <= len; j += 4) {
      v4f v;
      memcpy(&v, x + j, sizeof v);
      nan |= (v4i)(v != v);
      v4i gt = (v4i)(v > mx);
      mx = (v4f)(((v4i)v & gt) | ((v4i)mx & ~gt));
    }
    if (nan[0] | nan[1] | nan[2] | nan[3]) m = NAN;
    else
      for (int q = 0; q < 4; q++)
        if ((double)mx[q] > m) m = (double)mx[q];
  }
  for (; j < len && m == m; j++) {
    double v = (double)x[j * st];
    if (v > m || v != v) m = v;
  }
  for (j = 0; j < len && jm < 0; j++)
    if ((double)x[j * st] == m) jm = j;
  if (jm < 0) { /* a NaN in the row: all NaN, as LINE_BODY gives */
    for (j = 0; j < len; j++) y[j * st] = NAN;
    return;
  }
  m = (double)x[jm * st]; /* the first maximal element, as a sequential scan keeps it (±0) */
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t j0 = 0; j0 < len; j0 += LINE_CACHE) {
    int64_t n = len - j0 < LINE_CACHE ? len - j0 : LINE_CACHE, n4 = (n + 3) & ~(int64_t)3;
    for (int64_t j = 0; j < n; j++) buf[j] = (double)x[(j0 + j) * st] - m;
    for (int64_t j = n; j < n4; j++) buf[j] = -INFINITY; /* pads: e^-inf = 0 */
    pg__exp_r32_n(buf, n4);
    if (jm >= j0 && jm < j0 + n) buf[jm - j0] = 0.0;
    for (int64_t j = 0; j < n4; j += 4)
      for (int q = 0; q < 4; q++) s[q] += buf[j + q];
    if (jm >= j0 && jm < j0 + n) buf[jm - j0] = 1.0;
  }
  double rest = (s[0] + s[1]) + (s[2] + s[3]);
  if (c->op == L_LOG_SOFTMAX) {
    double ls = log1p(rest);
    for (int64_t j = 0; j < len; j++) y[j * st] = (float)(((double)x[j * st] - m) - ls);
    return;
  }
  double inv = 1.0 / (1.0 + rest);
  if (len <= LINE_CACHE) { /* buf still holds the row's exps */
    for (int64_t j = 0; j < len; j++) y[j * st] = (float)(buf[j] * inv);
    return;
  }
  for (int64_t j0 = 0; j0 < len; j0 += LINE_CACHE) {
    int64_t n = len - j0 < LINE_CACHE ? len - j0 : LINE_CACHE, n4 = (n + 3) & ~(int64_t)3;
    for (int64_t j = 0; j < n; j++) buf[j] = (double)x[(j0 + j) * st] - m;
    for (int64_t j = n; j < n4; j++) buf[j] = -INFINITY;
    pg__exp_r32_n(buf, n4);
    for (int64_t j = 0; j < n; j++) y[(j0 + j) * st] = (float)(buf[j] * inv);
  }
}

static void line_chunk(void *p, int64_t lb, int64_t le) {
  const struct line_ctx *c = p;
  double cache[LINE_CACHE + 4]; /* exps of one row, so softmax computes each exp once */
  int64_t len = c->len, st = c->inner;
  for (int64_t l = lb; l < le; l++) {
    int64_t base = (l / c->inner) * len * c->inner + l % c->inner;
    if (c->dt == PG_DTYPE_F64) LINE_BODY(double);
    else if (c->op == L_L2NORM) LINE_BODY(float);
    else softmax_row_f32(c, (const float *)c->x + base, (float *)c->y + base, len, st, cache);
  }
}

static const struct pg_attr_decl softmax_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = NULL}};
static const struct pg_attr_decl l2norm_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = "eps", .type = PG_ATTR_FLOAT, .default_value = {.type = PG_ATTR_FLOAT, .f = 1e-12}},
    {.name = NULL}};

static int line_infer(const char *op, const struct pg_attr_decl *decls,
                      const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                      struct pg_tensor_meta *out, int *axis, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs(op, "x", in, n, 1, 1, err));
  PG_RETURN_IF_ERROR(pg__norm_axis(op, "x", pg__attr_i(decls, attrs, 0), in[0].ndim, axis, err));
  out[0] = in[0];
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

static int line_run(const char *op, enum line_op lop, const struct pg_attr_decl *decls,
                    pg__infer_fn infer, const struct pg_kernel_args *args,
                    struct pg_tensor *const *outputs, struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, decls, infer, args, outputs, 1, 0, err));
  int axis = 0;
  struct pg_tensor_meta om;
  int rc = line_infer(op, decls, k.in, k.n_in, k.attrs, &om, &axis, err);
  if (rc == PG_OK && k.out_numel[0] > 0) {
    struct line_ctx c = {.op = lop, .dt = k.dt, .x = k.x[0], .y = k.y[0]};
    c.len = om.shape[axis];
    c.inner = pg__prod(om.shape, axis + 1, om.ndim);
    if (lop == L_L2NORM) c.eps = pg__attr_f(decls, k.attrs, 1);
    pg__parallel_for(k.out_numel[0] / c.len, grain_lines(c.len), k.n_threads, line_chunk, &c);
  }
  pg__kctx_end(&k);
  return rc;
}

#define LINE_KERNEL(NAME, L, DECLS, SUMMARY)                                                   \
  PG__KERNEL_WRAPPED(NAME, 1, 1, DECLS, SUMMARY,                                               \
                     (line_infer(#NAME, DECLS, in, n, attrs, out, &(int){0}, err)),            \
                     (line_run(#NAME, L, DECLS, infer_##NAME, args, outputs, err)));

LINE_KERNEL(softmax, L_SOFTMAX, softmax_attrs, "exp(x - max) / sum(exp(x - max)) along axis")
LINE_KERNEL(log_softmax, L_LOG_SOFTMAX, softmax_attrs,
            "(x - max) - log(sum(exp(x - max))) along axis")
LINE_KERNEL(l2norm, L_L2NORM, l2norm_attrs, "x / max(||x||_2, eps) along axis")

/* ================================================================ layernorm, rmsnorm */

struct norm_ctx {
  int rms;
  enum pg_dtype dt;
  const void *x;
  void *y;
  int64_t row;
  double eps;
  const double *w, *b; /* expanded to `row` entries, or NULL */
};

#define NORM_BODY(T)                                                              \
  do {                                                                            \
    const T *x = (const T *)c->x + r * n;                                         \
    T *y = (T *)c->y + r * n;                                                     \
    double mean = 0.0, var = 0.0;                                                 \
    if (!c->rms) {                                                                \
      for (int64_t j = 0; j < n; j++) mean += (double)x[j];                       \
      mean /= (double)n;                                                          \
    }                                                                             \
    for (int64_t j = 0; j < n; j++) {                                             \
      double d = (double)x[j] - mean;                                             \
      var += d * d;                                                               \
    }                                                                             \
    var /= (double)n;                                                             \
    double rstd = 1.0 / sqrt(var + c->eps);                                       \
    for (int64_t j = 0; j < n; j++) {                                             \
      double v = ((double)x[j] - mean) * rstd;                                    \
      if (c->w) v *= c->w[j];                                                     \
      if (c->b) v += c->b[j];                                                     \
      y[j] = (T)v;                                                                \
    }                                                                             \
  } while (0)

static void norm_chunk(void *p, int64_t rb, int64_t re) {
  const struct norm_ctx *c = p;
  int64_t n = c->row;
  for (int64_t r = rb; r < re; r++) {
    if (c->dt == PG_DTYPE_F64) NORM_BODY(double);
    else NORM_BODY(float);
  }
}

static const struct pg_attr_decl layernorm_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = "eps", .type = PG_ATTR_FLOAT, .default_value = {.type = PG_ATTR_FLOAT, .f = 1e-5}},
    {.name = NULL}};
static const struct pg_attr_decl rmsnorm_attrs[] = {
    {.name = "axis", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = -1}},
    {.name = "eps", .type = PG_ATTR_FLOAT, .default_value = {.type = PG_ATTR_FLOAT, .f = 1e-6}},
    {.name = NULL}};

static int norm_infer(const char *op, int rms, const struct pg_attr_decl *decls,
                      const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                      struct pg_tensor_meta *out, int *axis, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs(op, rms ? "x[, weight]" : "x[, weight[, bias]]", in, n, 1,
                                      rms ? 2 : 3, err));
  const struct pg_tensor_meta *x = &in[0];
  if (x->ndim < 1)
    return pg_error_set(err, PG_ESHAPE, "%s: x must have rank >= 1, got a scalar", op);
  PG_RETURN_IF_ERROR(pg__norm_axis(op, "x", pg__attr_i(decls, attrs, 0), x->ndim, axis, err));
  static const char *const names[] = {"x", "weight", "bias"};
  for (int i = 1; i < n; i++) {
    if (!pg__broadcasts_to(&in[i], x->ndim - *axis, x->shape + *axis)) {
      char sw[160], sn[160], sx[160];
      return pg_error_set(
          err, PG_ESHAPE, "%s: %s %s does not broadcast to the normalized shape %s of x %s", op,
          names[i], pg__shape_str(in[i].shape, in[i].ndim, sw, sizeof sw),
          pg__shape_str(x->shape + *axis, x->ndim - *axis, sn, sizeof sn),
          pg__shape_str(x->shape, x->ndim, sx, sizeof sx));
    }
  }
  out[0] = *x;
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

static int norm_run(const char *op, int rms, const struct pg_attr_decl *decls, pg__infer_fn infer,
                    const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                    struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, decls, infer, args, outputs, 1, 0, err));
  int axis = 0, rc;
  struct pg_tensor_meta om;
  double *wb[2] = {NULL, NULL};
  rc = norm_infer(op, rms, decls, k.in, k.n_in, k.attrs, &om, &axis, err);
  if (rc != PG_OK || k.out_numel[0] == 0) goto done;
  struct norm_ctx c = {.rms = rms, .dt = k.dt, .x = k.x[0], .y = k.y[0]};
  c.row = pg__prod(om.shape, axis, om.ndim);
  c.eps = pg__attr_f(decls, k.attrs, 1);
  /* weight and bias expanded once to a full row of doubles */
  struct pg_tensor_meta rowm = {.dtype = PG_DTYPE_F64, .ndim = om.ndim - axis};
  memcpy(rowm.shape, om.shape + axis, sizeof(int64_t) * (size_t)rowm.ndim);
  for (int i = 1; i < k.n_in; i++) {
    wb[i - 1] = malloc(sizeof(double) * (size_t)c.row);
    double *tmp = malloc(sizeof(double) * (size_t)(k.in_numel[i] ? k.in_numel[i] : 1));
    if (!wb[i - 1] || !tmp) {
      free(tmp);
      rc = pg_error_set(err, PG_ENOMEM, "%s: out of memory", op);
      goto done;
    }
    for (int64_t j = 0; j < k.in_numel[i]; j++) tmp[j] = pg_load_f64(k.x[i], k.dt, (size_t)j);
    pg__broadcast_copy(PG_DTYPE_F64, tmp, &k.in[i], wb[i - 1], &rowm);
    free(tmp);
  }
  c.w = wb[0];
  c.b = wb[1];
  pg__parallel_for(k.out_numel[0] / c.row, grain_lines(c.row), k.n_threads, norm_chunk, &c);
done:
  free(wb[0]);
  free(wb[1]);
  pg__kctx_end(&k);
  return rc;
}

/* RMS: 0 for layernorm, 1 for rmsnorm; MAX_INPUTS: x and the optional weight (and bias). */
#define NORM_KERNEL(NAME, RMS, MAX_INPUTS, DECLS, SUMMARY)                                     \
  PG__KERNEL_WRAPPED(NAME, 1, MAX_INPUTS, DECLS, SUMMARY,                                      \
                     (norm_infer(#NAME, RMS, DECLS, in, n, attrs, out, &(int){0}, err)),       \
                     (norm_run(#NAME, RMS, DECLS, infer_##NAME, args, outputs, err)));

NORM_KERNEL(layernorm, 0, 3, layernorm_attrs,
            "(x - mean) / sqrt(var + eps) * weight + bias over dims axis.. (two-pass)")
NORM_KERNEL(rmsnorm, 1, 2, rmsnorm_attrs, "x / sqrt(mean(x^2) + eps) * weight over dims axis..")

/* ================================================================ rope */

static const struct pg_attr_decl rope_attrs[] = {
    {.name = "base", .type = PG_ATTR_FLOAT,
     .default_value = {.type = PG_ATTR_FLOAT, .f = 10000.0}},
    {.name = "interleaved", .type = PG_ATTR_BOOL,
     .default_value = {.type = PG_ATTR_BOOL, .b = 0}},
    {.name = NULL}};

static int infer_rope(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                      struct pg_tensor_meta *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs("rope", "x[, positions]", in, n, 1, 2, err));
  const struct pg_tensor_meta *x = &in[0];
  if (x->ndim < 2)
    return pg_error_set(err, PG_ESHAPE, "rope: x must have rank >= 2 ([..., S, D]), got rank %d",
                        x->ndim);
  if (x->shape[x->ndim - 1] % 2 != 0)
    return pg_error_set(err, PG_ESHAPE, "rope: the last dim of x (D) must be even, got %" PRId64,
                        x->shape[x->ndim - 1]);
  double base = pg__attr_f(rope_attrs, attrs, 0);
  if (!(base > 0.0))
    return pg_error_set(err, PG_EINVAL, "rope: base must be > 0, got %g", base);
  if (n == 2 && !pg__broadcasts_to(&in[1], x->ndim - 1, x->shape)) {
    char sp[160], sl[160], sx[160];
    return pg_error_set(err, PG_ESHAPE,
                        "rope: positions %s does not broadcast to the leading shape %s of x %s",
                        pg__shape_str(in[1].shape, in[1].ndim, sp, sizeof sp),
                        pg__shape_str(x->shape, x->ndim - 1, sl, sizeof sl),
                        pg__shape_str(x->shape, x->ndim, sx, sizeof sx));
  }
  out[0] = *x;
  out[0].dtype = pg__result_dtype(in, 1); /* positions do not decide the precision */
  return PG_OK;
}

struct rope_ctx {
  enum pg_dtype dt;
  const void *x;
  void *y;
  int nd;                          /* rank of x without D */
  int64_t lead[PG_MAX_NDIM];       /* x.shape[:-1] */
  int64_t pstride[PG_MAX_NDIM];    /* positions strides over lead, or NULL positions */
  const void *pos;
  enum pg_dtype pos_dt;
  int64_t d;
  int interleaved;
  const double *inv_freq;          /* d/2 entries */
};

static void rope_chunk(void *p, int64_t rb, int64_t re) {
  const struct rope_ctx *c = p;
  int64_t half = c->d / 2;
  for (int64_t r = rb; r < re; r++) {
    double pos;
    if (c->pos) {
      int64_t off = 0, rem = r;
      for (int i = c->nd - 1; i >= 0; i--) {
        off += (rem % c->lead[i]) * c->pstride[i];
        rem /= c->lead[i];
      }
      pos = pg_load_f64(c->pos, c->pos_dt, (size_t)off);
    } else {
      pos = (double)(r % c->lead[c->nd - 1]); /* index along S */
    }
    for (int64_t i = 0; i < half; i++) {
      double th = pos * c->inv_freq[i], cs = cos(th), sn = sin(th);
      int64_t i0 = c->interleaved ? 2 * i : i, i1 = c->interleaved ? 2 * i + 1 : i + half;
      int64_t o0 = r * c->d + i0, o1 = r * c->d + i1;
      double x0 = pg_load_f64(c->x, c->dt, (size_t)o0), x1 = pg_load_f64(c->x, c->dt, (size_t)o1);
      pg_store_f64(c->y, c->dt, (size_t)o0, x0 * cs - x1 * sn);
      pg_store_f64(c->y, c->dt, (size_t)o1, x1 * cs + x0 * sn);
    }
  }
}

static int run_rope(const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                    struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, "rope", rope_attrs, infer_rope, args, outputs, 1,
                                    1u << 1, err));
  int rc = PG_OK;
  const struct pg_tensor_meta *xm = &k.in[0];
  struct rope_ctx c = {.dt = k.dt, .x = k.x[0], .y = k.y[0]};
  c.nd = xm->ndim - 1;
  memcpy(c.lead, xm->shape, sizeof(int64_t) * (size_t)c.nd);
  c.d = xm->shape[xm->ndim - 1];
  c.interleaved = pg__attr_b(rope_attrs, k.attrs, 1);
  if (k.n_in == 2) {
    c.pos = k.raw[1];
    c.pos_dt = k.in[1].dtype;
    pg__broadcast_strides(&k.in[1], c.nd, c.pstride);
  }
  double *inv = NULL;
  if (k.out_numel[0] > 0) {
    double base = pg__attr_f(rope_attrs, k.attrs, 0);
    inv = malloc(sizeof(double) * (size_t)(c.d / 2));
    if (!inv) {
      rc = pg_error_set(err, PG_ENOMEM, "rope: out of memory");
    } else {
      for (int64_t i = 0; i < c.d / 2; i++) inv[i] = pow(base, -2.0 * (double)i / (double)c.d);
      c.inv_freq = inv;
      pg__parallel_for(k.out_numel[0] / c.d, grain_lines(c.d * 8), k.n_threads, rope_chunk, &c);
    }
  }
  free(inv);
  pg__kctx_end(&k);
  return rc;
}

PG__KERNEL_DEF(rope, 1, 2, rope_attrs,
               "rotary position embedding of x [..., S, D] (rotate-half or interleaved pairs)");
