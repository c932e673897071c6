/* goldens/kernels_elementwise.c — elementwise reference kernels: the unary math ops
 * (abs … tanh, gelu, scale, cast, identity), the numpy-broadcasting binary ops (add,
 * sub, mul, div, maximum, minimum) and causal_mask.
 *
 * Unary transcendental ops evaluate in double and round once to the output dtype, so
 * the float32 reference is (nearly always) correctly rounded; in the fp32 mode exp,
 * sigmoid, silu and gelu-tanh take e^x from the vectorised pg__exp_r32_n (relative
 * error < 2^-51) instead of libm. Binary ops compute in
 * the compute dtype itself, as numpy and torch do, so `add` in fp32 is bit-exact with
 * them. Work is split over threads by contiguous element ranges; every element is
 * computed by the same code whatever the split, so results never depend on threads.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "kernels_internal.h"

/* Below this many elements per thread, thread start-up costs more than it saves. */
#define GRAIN_CHEAP (1 << 16)
#define GRAIN_MATH (1 << 13)

static const struct pg_attr_decl no_attrs[] = {{.name = NULL}};

/* ================================================================ unary */

enum unop {
  U_ABS, U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_RELU, U_SIGMOID, U_SILU, U_TANH,
  U_GELU, U_SCALE, U_CAST, U_IDENTITY
};

struct unary_ctx {
  enum unop op;
  enum pg_dtype dt;
  const void *x;
  void *y;
  double factor;     /* scale */
  int gelu_tanh;     /* gelu approximate="tanh" */
  enum pg_dtype via; /* cast */
};

static double sigmoid_d(double v) {
  if (v >= 0) return 1.0 / (1.0 + exp(-v));
  double e = exp(v); /* no overflow for very negative v */
  return e / (1.0 + e);
}

/* Both forms are rewritten so that the negative tail does not cancel:
 * 0.5*(1 + erf(z)) = 0.5*erfc(-z) and 0.5*(1 + tanh(y)) = sigmoid(2y). */
static double gelu_d(double v, int tanh_approx) {
  if (tanh_approx) {
    const double k = 0.7978845608028654; /* sqrt(2/pi) */
    return v * sigmoid_d(2.0 * k * (v + 0.044715 * v * v * v));
  }
  return 0.5 * v * erfc(-v * 0.7071067811865476);
}

static double round_through(double v, enum pg_dtype via) {
  double tmp[1]; /* aligned for every dtype pg_store_f64 writes */
  pg_store_f64(tmp, via, 0, v);
  return pg_load_f64(tmp, via, 0);
}

#define UNARY_LOOP(T, EXPR)                                           \
  do {                                                                \
    const T *x = (const T *)c->x;                                     \
    T *y = (T *)c->y;                                                 \
    for (int64_t i = b; i < e; i++) {                                 \
      double v = (double)x[i];                                        \
      y[i] = (T)(EXPR);                                               \
    }                                                                 \
  } while (0)

#define UNARY_SWITCH(T)                                                          \
  switch (c->op) {                                                               \
    case U_ABS: UNARY_LOOP(T, fabs(v)); break;                                   \
    case U_NEG: UNARY_LOOP(T, -v); break;                                        \
    case U_EXP: UNARY_LOOP(T, exp(v)); break;                                    \
    case U_LOG: UNARY_LOOP(T, log(v)); break;                                    \
    case U_SQRT: UNARY_LOOP(T, sqrt(v)); break;                                  \
    case U_RSQRT: UNARY_LOOP(T, 1.0 / sqrt(v)); break;                           \
    case U_RELU: UNARY_LOOP(T, (v > 0 || v != v) ? v : 0.0); break;              \
    case U_SIGMOID: UNARY_LOOP(T, sigmoid_d(v)); break;                          \
    case U_SILU: UNARY_LOOP(T, v * sigmoid_d(v)); break;                         \
    case U_TANH: UNARY_LOOP(T, tanh(v)); break;                                  \
    case U_GELU: UNARY_LOOP(T, gelu_d(v, c->gelu_tanh)); break;                  \
    case U_SCALE: UNARY_LOOP(T, v * c->factor); break;                           \
    case U_CAST: UNARY_LOOP(T, round_through(v, c->via)); break;                 \
    case U_IDENTITY: memcpy(y_ + b, x_ + b, (size_t)(e - b) * sizeof(T)); break; \
  }

/* exp, sigmoid, silu and gelu-tanh of float32 data (the fp32 reference mode): e^x from
 * the vectorised pg__exp_r32_n / pg__sigmoid_r32_n (kernels_internal.h) over blocks
 * staged in double, with the same formulas as the scalar forms above; fp64 keeps libm. */
static int fast_f32(const struct unary_ctx *c) {
  return c->dt == PG_DTYPE_F32 && (c->op == U_EXP || c->op == U_SIGMOID || c->op == U_SILU ||
                                   (c->op == U_GELU && c->gelu_tanh));
}

#define FAST_BLOCK 512

static void unary_chunk_fast_f32(const struct unary_ctx *c, int64_t b, int64_t e) {
  const float *x = c->x;
  float *y = c->y;
  double buf[FAST_BLOCK];
  for (int64_t b0 = b; b0 < e; b0 += FAST_BLOCK) {
    int64_t n = e - b0 < FAST_BLOCK ? e - b0 : FAST_BLOCK, n4 = (n + 3) & ~(int64_t)3;
    const float *xb = x + b0;
    float *yb = y + b0;
    if (c->op == U_GELU) {
      const double k = 0.7978845608028654; /* sqrt(2/pi), as gelu_d */
      for (int64_t i = 0; i < n; i++) {
        double v = (double)xb[i];
        buf[i] = 2.0 * k * (v + 0.044715 * v * v * v);
      }
    } else {
      for (int64_t i = 0; i < n; i++) buf[i] = (double)xb[i];
    }
    for (int64_t i = n; i < n4; i++) buf[i] = 0.0; /* pads, never stored */
    if (c->op == U_EXP) pg__exp_r32_n(buf, n4);
    else pg__sigmoid_r32_n(buf, n4);
    if (c->op == U_EXP || c->op == U_SIGMOID)
      for (int64_t i = 0; i < n; i++) yb[i] = (float)buf[i];
    else /* silu, gelu: x * sigmoid(.) */
      for (int64_t i = 0; i < n; i++) yb[i] = (float)((double)xb[i] * buf[i]);
  }
}

static void unary_chunk(void *p, int64_t b, int64_t e) {
  const struct unary_ctx *c = p;
  if (fast_f32(c)) {
    unary_chunk_fast_f32(c, b, e);
  } else if (c->dt == PG_DTYPE_F64) {
    const double *x_ = c->x;
    double *y_ = c->y;
    UNARY_SWITCH(double)
  } else {
    const float *x_ = c->x;
    float *y_ = c->y;
    UNARY_SWITCH(float)
  }
}

/* attrs of the unary kernels that have some */
static const struct pg_attr_decl gelu_attrs[] = {
    {.name = "approximate", .type = PG_ATTR_STRING,
     .default_value = {.type = PG_ATTR_STRING, .s = "none"}},
    {.name = NULL}};
static const struct pg_attr_decl scale_attrs[] = {
    {.name = "factor", .type = PG_ATTR_FLOAT, .required = 1}, {.name = NULL}};
static const struct pg_attr_decl cast_attrs[] = {
    {.name = "dtype", .type = PG_ATTR_STRING, .required = 1}, {.name = NULL}};

static int unary_params(const char *op, enum unop u, const struct pg_attr_decl *decls,
                        const struct pg_attr_value *attrs, struct unary_ctx *c,
                        struct pg_error *err) {
  if (u == U_GELU) {
    const char *s = pg__attr(decls, attrs, 0)->s;
    if (strcmp(s, "none") == 0 || strcmp(s, "erf") == 0) c->gelu_tanh = 0;
    else if (strcmp(s, "tanh") == 0) c->gelu_tanh = 1;
    else
      return pg_error_set(err, PG_EINVAL, "%s: approximate must be \"none\" or \"tanh\", got \"%s\"",
                          op, s);
  } else if (u == U_SCALE) {
    if (pg__attr(decls, attrs, 0)->type == 0)
      return pg_error_set(err, PG_EINVAL, "%s: missing required attribute factor", op);
    c->factor = pg__attr_f(decls, attrs, 0);
  } else if (u == U_CAST) {
    const struct pg_attr_value *v = pg__attr(decls, attrs, 0);
    if (v->type == 0)
      return pg_error_set(err, PG_EINVAL, "%s: missing required attribute dtype", op);
    c->via = pg_dtype_parse(v->s);
    if (c->via == PG_DTYPE_INVALID)
      return pg_error_set(err, PG_EINVAL,
                          "%s: unknown dtype \"%s\" (float32, float16, bfloat16, float64, int8, "
                          "uint8, int32, int64, bool, int)",
                          op, v->s);
  }
  return PG_OK;
}

static int unary_infer(const char *op, enum unop u, const struct pg_attr_decl *decls,
                       const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                       struct pg_tensor_meta *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs(op, "x", in, n, 1, 1, err));
  struct unary_ctx c;
  memset(&c, 0, sizeof c);
  PG_RETURN_IF_ERROR(unary_params(op, u, decls, attrs, &c, err));
  out[0] = in[0];
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

static int unary_run(const char *op, enum unop u, const struct pg_attr_decl *decls,
                     pg__infer_fn infer, const struct pg_kernel_args *args,
                     struct pg_tensor *const *outputs, struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, decls, infer, args, outputs, 1, 0, err));
  struct unary_ctx c;
  memset(&c, 0, sizeof c);
  int rc = unary_params(op, u, decls, k.attrs, &c, err);
  if (rc == PG_OK) {
    c.op = u;
    c.dt = k.dt;
    c.x = k.x[0];
    c.y = k.y[0];
    int cheap = u == U_ABS || u == U_NEG || u == U_RELU || u == U_SCALE || u == U_IDENTITY;
    pg__parallel_for(k.out_numel[0], cheap ? GRAIN_CHEAP : GRAIN_MATH, k.n_threads, unary_chunk,
                     &c);
  }
  pg__kctx_end(&k);
  return rc;
}

#define UNARY_KERNEL(NAME, U, DECLS, SUMMARY)                                                  \
  PG__KERNEL_WRAPPED(NAME, 1, 1, DECLS, SUMMARY,                                               \
                     (unary_infer(#NAME, U, DECLS, in, n, attrs, out, err)),                   \
                     (unary_run(#NAME, U, DECLS, infer_##NAME, args, outputs, err)));

UNARY_KERNEL(abs, U_ABS, no_attrs, "|x|")
UNARY_KERNEL(neg, U_NEG, no_attrs, "-x")
UNARY_KERNEL(exp, U_EXP, no_attrs, "e^x")
UNARY_KERNEL(log, U_LOG, no_attrs, "natural logarithm")
UNARY_KERNEL(sqrt, U_SQRT, no_attrs, "square root")
UNARY_KERNEL(rsqrt, U_RSQRT, no_attrs, "1 / sqrt(x)")
UNARY_KERNEL(relu, U_RELU, no_attrs, "max(x, 0), NaN propagates")
UNARY_KERNEL(sigmoid, U_SIGMOID, no_attrs, "1 / (1 + e^-x), overflow-free form")
UNARY_KERNEL(silu, U_SILU, no_attrs, "x * sigmoid(x)")
UNARY_KERNEL(tanh, U_TANH, no_attrs, "hyperbolic tangent")
UNARY_KERNEL(gelu, U_GELU, gelu_attrs, "x * Phi(x) via erf, or the tanh approximation")
UNARY_KERNEL(scale, U_SCALE, scale_attrs, "x * factor")
UNARY_KERNEL(cast, U_CAST, cast_attrs, "round values through dtype and back (models storage)")
UNARY_KERNEL(identity, U_IDENTITY, no_attrs, "copy of x")

/* ================================================================ binary */

enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN };

struct binary_ctx {
  enum binop op;
  enum pg_dtype dt;
  const void *a, *b;
  void *y;
  int nd;                    /* coalesced rank, >= 1 */
  int64_t shape[PG_MAX_NDIM];
  int64_t sa[PG_MAX_NDIM], sb[PG_MAX_NDIM];
};

#define BIN_LOOP(T, EXPR)                                               \
  do {                                                                  \
    const T *A = (const T *)c->a + oa, *B = (const T *)c->b + ob;       \
    T *Y = (T *)c->y + r * inner;                                       \
    for (int64_t i = 0; i < inner; i++) {                               \
      T x = A[i * ia], z = B[i * ib];                                   \
      Y[i] = (EXPR);                                                    \
    }                                                                   \
  } while (0)

#define BIN_SWITCH(T)                                                  \
  switch (c->op) {                                                     \
    case B_ADD: BIN_LOOP(T, x + z); break;                             \
    case B_SUB: BIN_LOOP(T, x - z); break;                             \
    case B_MUL: BIN_LOOP(T, x * z); break;                             \
    case B_DIV: BIN_LOOP(T, x / z); break;                             \
    case B_MAX: BIN_LOOP(T, (x > z || x != x) ? x : z); break;         \
    case B_MIN: BIN_LOOP(T, (x < z || x != x) ? x : z); break;         \
  }

/* Items are rows of the innermost (coalesced) dim. */
static void binary_chunk(void *p, int64_t rb, int64_t re) {
  const struct binary_ctx *c = p;
  int nd = c->nd;
  int64_t inner = c->shape[nd - 1], ia = c->sa[nd - 1], ib = c->sb[nd - 1];
  int64_t idx[PG_MAX_NDIM] = {0}, oa = 0, ob = 0, rem = rb;
  for (int d = nd - 2; d >= 0; d--) {
    idx[d] = rem % c->shape[d];
    rem /= c->shape[d];
    oa += idx[d] * c->sa[d];
    ob += idx[d] * c->sb[d];
  }
  for (int64_t r = rb; r < re; r++) {
    if (c->dt == PG_DTYPE_F64) {
      BIN_SWITCH(double)
    } else {
      BIN_SWITCH(float)
    }
    /* next row; the same walk as batch_range's in kernels_blas.c, kept inline here: as a
     * shared helper GCC compiles this loop ~1% longer (valgrind) and slower */
    for (int d = nd - 2; d >= 0; d--) {
      idx[d]++;
      oa += c->sa[d];
      ob += c->sb[d];
      if (idx[d] < c->shape[d]) break;
      oa -= c->sa[d] * idx[d];
      ob -= c->sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

static int binary_infer(const char *op, const struct pg_tensor_meta *in, int n,
                        struct pg_tensor_meta *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs(op, "a, b", in, n, 2, 2, err));
  PG_RETURN_IF_ERROR(pg__broadcast(op, "a", &in[0], "b", &in[1], &out[0], err));
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

static int binary_run(const char *op, enum binop bop, pg__infer_fn infer,
                      const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                      struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, op, no_attrs, infer, args, outputs, 1, 0, err));
  struct binary_ctx c;
  memset(&c, 0, sizeof c);
  c.op = bop;
  c.dt = k.dt;
  c.a = k.x[0];
  c.b = k.x[1];
  c.y = k.y[0];
  const struct pg_tensor_meta *om = &k.out[0];
  int64_t sa[PG_MAX_NDIM], sb[PG_MAX_NDIM];
  pg__broadcast_strides(&k.in[0], om->ndim, sa);
  pg__broadcast_strides(&k.in[1], om->ndim, sb);
  /* Coalesce: drop size-1 dims, merge neighbours that are contiguous in both. */
  int nd = 0;
  for (int d = 0; d < om->ndim; d++) {
    if (om->shape[d] == 1) continue;
    if (nd > 0 && c.sa[nd - 1] == sa[d] * om->shape[d] && c.sb[nd - 1] == sb[d] * om->shape[d]) {
      c.shape[nd - 1] *= om->shape[d];
      c.sa[nd - 1] = sa[d];
      c.sb[nd - 1] = sb[d];
      continue;
    }
    c.shape[nd] = om->shape[d];
    c.sa[nd] = sa[d];
    c.sb[nd] = sb[d];
    nd++;
  }
  if (nd == 0) {
    c.shape[0] = 1;
    c.sa[0] = c.sb[0] = 0;
    nd = 1;
  }
  c.nd = nd;
  int64_t numel = k.out_numel[0];
  if (numel > 0) {
    int64_t inner = c.shape[nd - 1];
    int64_t grain = GRAIN_CHEAP / inner > 0 ? GRAIN_CHEAP / inner : 1;
    pg__parallel_for(numel / inner, grain, k.n_threads, binary_chunk, &c);
  }
  pg__kctx_end(&k);
  return PG_OK;
}

#define BINARY_KERNEL(NAME, B, SUMMARY)                                                        \
  PG__KERNEL_WRAPPED(NAME, 2, 2, no_attrs, SUMMARY,                                            \
                     (binary_infer(#NAME, in, n, out, err)),                                   \
                     (binary_run(#NAME, B, infer_##NAME, args, outputs, err)));

BINARY_KERNEL(add, B_ADD, "a + b, numpy broadcasting")
BINARY_KERNEL(sub, B_SUB, "a - b, numpy broadcasting")
BINARY_KERNEL(mul, B_MUL, "a * b, numpy broadcasting")
BINARY_KERNEL(div, B_DIV, "a / b, numpy broadcasting")
BINARY_KERNEL(maximum, B_MAX, "elementwise max, NaN propagates, numpy broadcasting")
BINARY_KERNEL(minimum, B_MIN, "elementwise min, NaN propagates, numpy broadcasting")

/* ================================================================ causal_mask */

static const struct pg_attr_decl causal_attrs[] = {
    {.name = "fill", .type = PG_ATTR_FLOAT,
     .default_value = {.type = PG_ATTR_FLOAT, .f = -INFINITY}},
    {.name = "offset", .type = PG_ATTR_INT, .default_value = {.type = PG_ATTR_INT, .i = 0}},
    {.name = NULL}};

static int infer_causal_mask(const struct pg_tensor_meta *in, int n,
                             const struct pg_attr_value *attrs, struct pg_tensor_meta *out,
                             struct pg_error *err) {
  (void)attrs;
  PG_RETURN_IF_ERROR(pg__check_inputs("causal_mask", "x", in, n, 1, 1, err));
  if (in[0].ndim < 2)
    return pg_error_set(err, PG_ESHAPE, "causal_mask: x must have rank >= 2 ([..., rows, cols]), got rank %d",
                        in[0].ndim);
  out[0] = in[0];
  out[0].dtype = pg__result_dtype(in, n);
  return PG_OK;
}

struct mask_ctx {
  enum pg_dtype dt;
  const void *x;
  void *y;
  int64_t rows, cols, offset;
  double fill;
};

static void mask_chunk(void *p, int64_t rb, int64_t re) {
  const struct mask_ctx *c = p;
  for (int64_t r = rb; r < re; r++) {
    int64_t row = r % c->rows;
    /* keep cols <= row + offset; clamp so huge offsets cannot overflow */
    int64_t keep = c->offset >= c->cols ? c->cols : row + c->offset + 1;
    if (keep < 0) keep = 0;
    if (keep > c->cols) keep = c->cols;
    if (c->dt == PG_DTYPE_F64) {
      const double *x = (const double *)c->x + r * c->cols;
      double *y = (double *)c->y + r * c->cols;
      for (int64_t j = 0; j < c->cols; j++) y[j] = j < keep ? x[j] : c->fill;
    } else {
      const float *x = (const float *)c->x + r * c->cols;
      float *y = (float *)c->y + r * c->cols;
      float f = (float)c->fill;
      for (int64_t j = 0; j < c->cols; j++) y[j] = j < keep ? x[j] : f;
    }
  }
}

static int run_causal_mask(const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                           struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(pg__kctx_begin(&k, "causal_mask", causal_attrs, infer_causal_mask, args,
                                    outputs, 1, 0, err));
  struct mask_ctx c = {.dt = k.dt, .x = k.x[0], .y = k.y[0]};
  const struct pg_tensor_meta *m = &k.out[0];
  c.rows = m->shape[m->ndim - 2];
  c.cols = m->shape[m->ndim - 1];
  c.fill = pg__attr_f(causal_attrs, k.attrs, 0);
  c.offset = pg__attr_i(causal_attrs, k.attrs, 1);
  if (c.offset < -((int64_t)1 << 62)) c.offset = -((int64_t)1 << 62);
  if (c.offset > ((int64_t)1 << 62)) c.offset = (int64_t)1 << 62;
  if (k.out_numel[0] > 0) {
    int64_t grain = GRAIN_CHEAP / c.cols > 0 ? GRAIN_CHEAP / c.cols : 1;
    pg__parallel_for(k.out_numel[0] / c.cols, grain, k.n_threads, mask_chunk, &c);
  }
  pg__kctx_end(&k);
  return PG_OK;
}

PG__KERNEL_DEF(causal_mask, 1, 1, causal_attrs,
               "x with elements where col > row + offset (last two dims) set to fill");
