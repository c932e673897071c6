/* tests/goldens — helpers shared by the kernel tests: deterministic random
 * tensors, attribute setting by name, running a kernel the way the step engine does
 * (infer, caller-allocated NaN-prefilled outputs, run), and closeness checks against
 * a naive reference held in long double.
 */
#ifndef KT_UTIL_H
#define KT_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

/* splitmix64-based uniform in [lo, hi) */
static inline double kt_rand(uint64_t *s, double lo, double hi) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * ((double)(z >> 11) / 9007199254740992.0);
}

/* A tensor of dtype dt and the given shape, filled uniformly in [lo, hi). */
static inline struct pg_tensor *kt_tensor(enum pg_dtype dt, int ndim, const int64_t *shape,
                                          uint64_t seed, double lo, double hi) {
  struct pg_tensor *t = malloc(sizeof *t);
  PG_CHECK(t != NULL);
  pg_tensor_init(t);
  struct pg_error err;
  int rc = pg_tensor_alloc(t, dt, ndim, shape, &err);
  PG_CHECK_MSG(rc == PG_OK, "alloc: %s", err.message);
  uint64_t s = seed * 7919u + 17u;
  for (int64_t i = 0; i < t->numel; i++) pg_store_f64(t->dl.data, dt, (size_t)i, kt_rand(&s, lo, hi));
  return t;
}

static inline void kt_free(struct pg_tensor *t) {
  if (!t) return;
  pg_tensor_reset(t);
  free(t);
}

static inline long double kt_get(const struct pg_tensor *t, int64_t i) {
  return (long double)pg_load_f64(t->dl.data, t->dtype, (size_t)i);
}

struct kt_attrs {
  const struct pg_kernel_def *def;
  struct pg_attr_value v[PG_KERNEL_MAX_ATTRS];
  int n;
};

static inline void kt_attrs_init(struct kt_attrs *a, const struct pg_kernel_def *def) {
  memset(a, 0, sizeof *a);
  a->def = def;
  a->n = pg_kernel_attrs_default(def, a->v);
}
static inline struct pg_attr_value *kt_attr(struct kt_attrs *a, const char *name) {
  int i = pg_kernel_attr_index(a->def, name);
  PG_CHECK_MSG(i >= 0, "kernel %s has no attribute %s", a->def->name, name);
  return &a->v[i];
}
static inline void kt_set_f(struct kt_attrs *a, const char *n, double f) {
  struct pg_attr_value *v = kt_attr(a, n);
  v->type = PG_ATTR_FLOAT;
  v->f = f;
}
static inline void kt_set_i(struct kt_attrs *a, const char *n, int64_t i) {
  struct pg_attr_value *v = kt_attr(a, n);
  v->type = PG_ATTR_INT;
  v->i = i;
}
static inline void kt_set_b(struct kt_attrs *a, const char *n, int b) {
  struct pg_attr_value *v = kt_attr(a, n);
  v->type = PG_ATTR_BOOL;
  v->b = b;
}
static inline void kt_set_s(struct kt_attrs *a, const char *n, const char *s) {
  struct pg_attr_value *v = kt_attr(a, n);
  v->type = PG_ATTR_STRING;
  snprintf(v->s, sizeof v->s, "%s", s);
}
static inline void kt_set_ints(struct kt_attrs *a, const char *n, int cnt, const int64_t *vals) {
  struct pg_attr_value *v = kt_attr(a, n);
  v->type = PG_ATTR_INTS;
  v->n_ints = cnt;
  for (int i = 0; i < cnt; i++) v->ints[i] = vals[i];
}

/* infer + allocate (NaN-prefilled, as the runner does) + run. Returns the kernel's
 * status; on PG_OK *out is a new tensor. */
static inline int kt_run(const char *op, struct kt_attrs *a, int n_in,
                         const struct pg_tensor *const *in, int n_threads,
                         struct pg_tensor **out, struct pg_error *err) {
  const struct pg_kernel_def *def = pg_kernel_find(op);
  PG_CHECK_MSG(def != NULL, "no kernel %s", op);
  struct kt_attrs local;
  if (!a) {
    kt_attrs_init(&local, def);
    a = &local;
  }
  struct pg_tensor_meta m[PG_KERNEL_MAX_INPUTS], om[PG_KERNEL_MAX_OUTPUTS];
  for (int i = 0; i < n_in; i++) {
    m[i].dtype = in[i]->dtype;
    m[i].ndim = in[i]->dl.ndim;
    memcpy(m[i].shape, in[i]->shape, sizeof m[i].shape);
  }
  int rc = def->infer(m, n_in, a->v, om, err);
  if (rc != PG_OK) return rc;
  struct pg_tensor *t = malloc(sizeof *t);
  PG_CHECK(t != NULL);
  pg_tensor_init(t);
  PG_CHECK_OK(pg_tensor_alloc(t, om[0].dtype, om[0].ndim, om[0].shape, err));
  for (int64_t i = 0; i < t->numel; i++) pg_store_f64(t->dl.data, t->dtype, (size_t)i, NAN);
  struct pg_kernel_args args;
  memset(&args, 0, sizeof args);
  args.n_inputs = n_in;
  for (int i = 0; i < n_in; i++) args.inputs[i] = in[i];
  args.n_attrs = a->n;
  memcpy(args.attrs, a->v, sizeof args.attrs);
  args.n_threads = n_threads;
  struct pg_tensor *outs[1] = {t};
  rc = def->run(&args, outs, err);
  if (rc != PG_OK) {
    kt_free(t);
    return rc;
  }
  *out = t;
  return PG_OK;
}

/* Runs and fails the test on error. */
static inline struct pg_tensor *kt_ok(const char *op, struct kt_attrs *a, int n_in,
                                      const struct pg_tensor *const *in) {
  struct pg_error err;
  struct pg_tensor *out = NULL;
  pg_error_clear(&err);
  int rc = kt_run(op, a, n_in, in, 0, &out, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s failed (%d): %s", op, rc, err.message);
  return out;
}

static inline int kt_same_nan(long double a, long double b) { return a != a && b != b; }

/* |got - ref| <= atol + rtol * scale (scale defaults to |ref|); NaN matches NaN,
 * equal infinities match. Reports the first offending index. */
static inline void kt_check_close_(const char *file, int line, const struct pg_tensor *got,
                                   const long double *ref, const long double *scale,
                                   int64_t n, double rtol, double atol) {
  if (got->numel != n)
    pg_test_fail(file, line, "numel %lld, expected %lld", (long long)got->numel, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    long double g = kt_get(got, i), r = ref[i];
    if (kt_same_nan(g, r) || (isinf(g) && g == r)) continue;
    long double s = scale ? scale[i] : fabsl(r);
    if (!(fabsl(g - r) <= atol + rtol * s))
      pg_test_fail(file, line, "element %lld: got %.17Lg, expected %.17Lg (scale %.3Lg)",
                   (long long)i, g, r, s);
  }
}
#define kt_check_close(got, ref, scale, n, rtol, atol) \
  kt_check_close_(__FILE__, __LINE__, got, ref, scale, n, rtol, atol)

static inline void kt_check_shape_(const char *file, int line, const struct pg_tensor *t,
                                   int ndim, const int64_t *shape) {
  int ok = t->dl.ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
  if (!ok) pg_test_fail(file, line, "unexpected output shape (rank %d)", t->dl.ndim);
}
#define kt_check_shape(t, ndim, shape) kt_check_shape_(__FILE__, __LINE__, t, ndim, shape)

/* Tolerances for a result computed in dt (the reference is exact-ish long double). */
static inline double kt_rtol(enum pg_dtype dt) { return dt == PG_DTYPE_F64 ? 1e-13 : 2e-6; }

static inline int64_t kt_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

/* Offset in a tensor of shape `s` (rank sn) broadcast to out-rank `nd` for the out
 * multi-index `idx` — the naive numpy rule, written independently of the library. */
static inline int64_t kt_bcast_offset(int nd, const int64_t *idx, int sn, const int64_t *s) {
  int64_t off = 0;
  for (int i = 0; i < sn; i++) {
    int64_t d = s[i], j = idx[nd - sn + i];
    off = off * d + (d == 1 ? 0 : j);
  }
  return off;
}

static inline void kt_unravel(int64_t flat, int nd, const int64_t *shape, int64_t *idx) {
  for (int i = nd - 1; i >= 0; i--) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
}

#endif
