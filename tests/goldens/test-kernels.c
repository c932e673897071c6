/* tests/goldens/test-kernels.c — every reference kernel against an
 * independent naive implementation written here (long double, plain loops, numpy's
 * rules re-derived from scratch), on odd shapes (1, primes, non-multiples of block
 * sizes, broadcast edge cases, 0-size dims), in float32 and float64, with outputs
 * pre-filled with NaN as the runner does. Also: thread-count independence, input
 * widening, the registry's contents.
 */
#include "kt_util.h"

static const enum pg_dtype DTS[2] = {PG_DTYPE_F32, PG_DTYPE_F64};

/* ================================================================ registry */

PG_TEST(registry_has_every_design_op) {
  static const char *const names[] = {
      "matmul", "softmax", "log_softmax", "layernorm", "rmsnorm", "gelu", "silu", "sigmoid",
      "tanh", "relu", "exp", "log", "sqrt", "rsqrt", "neg", "abs", "add", "sub", "mul", "div",
      "maximum", "minimum", "scale", "cast", "transpose", "permute", "reshape", "sum", "mean",
      "max", "cumsum", "causal_mask", "rope", "l2norm", "identity"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const struct pg_kernel_def *d = pg_kernel_find(names[i]);
    PG_CHECK_MSG(d != NULL, "missing kernel %s", names[i]);
    PG_CHECK_EQ_STR(names[i], d->name);
  }
  PG_CHECK(pg_kernel_find("nope") == NULL);
  PG_CHECK(pg_kernel_find(NULL) == NULL);
  const struct pg_kernel_def *const *defs;
  int n = pg_kernel_list(&defs);
  PG_CHECK_EQ_INT(35, n);
  for (int i = 0; i < n; i++) {
    PG_CHECK(defs[i]->infer && defs[i]->run && defs[i]->summary && defs[i]->attrs);
    PG_CHECK(defs[i]->min_inputs >= 1 && defs[i]->min_inputs <= defs[i]->max_inputs);
    PG_CHECK(defs[i]->max_inputs <= PG_KERNEL_MAX_INPUTS && defs[i]->n_outputs == 1);
    int na = 0;
    while (defs[i]->attrs[na].name) na++;
    PG_CHECK(na <= PG_KERNEL_MAX_ATTRS);
    if (i > 0) PG_CHECK_MSG(strcmp(defs[i - 1]->name, defs[i]->name) < 0, "not sorted at %s", defs[i]->name);
  }
  PG_CHECK_EQ_INT(2, pg_kernel_attr_index(pg_kernel_find("matmul"), "alpha"));
  PG_CHECK_EQ_INT(-1, pg_kernel_attr_index(pg_kernel_find("matmul"), "gamma"));
}

/* ================================================================ matmul */

struct mm {
  int an, bn, cn;
  int64_t as[4], bs[4], cs[4];
  int ta, tb;
  double alpha, beta;
  int on;
  int64_t os[4]; /* numpy's result shape, written out by hand */
};

static void mm_check(enum pg_dtype dt, const struct mm *c, uint64_t seed) {
  struct pg_tensor *a = kt_tensor(dt, c->an, c->as, seed, -1, 1);
  struct pg_tensor *b = kt_tensor(dt, c->bn, c->bs, seed + 1, -1, 1);
  struct pg_tensor *cc = c->cn >= 0 ? kt_tensor(dt, c->cn, c->cs, seed + 2, -1, 1) : NULL;
  const struct pg_tensor *in[3] = {a, b, cc};
  struct kt_attrs at;
  kt_attrs_init(&at, pg_kernel_find("matmul"));
  kt_set_b(&at, "trans_a", c->ta);
  kt_set_b(&at, "trans_b", c->tb);
  kt_set_f(&at, "alpha", c->alpha);
  kt_set_f(&at, "beta", c->beta);
  struct pg_tensor *o = kt_ok("matmul", &at, cc ? 3 : 2, in);
  kt_check_shape(o, c->on, c->os);
  /* naive: logical A[m][k], B[k][n] per batch element */
  int a1 = c->an == 1, b1 = c->bn == 1;
  int64_t ar = a1 ? 1 : c->as[c->an - 2], acn = c->as[c->an - 1];
  int64_t br = b1 ? c->bs[0] : c->bs[c->bn - 2], bcn = b1 ? 1 : c->bs[c->bn - 1];
  int64_t M = a1 ? 1 : (c->ta ? acn : ar), K = a1 ? c->as[0] : (c->ta ? ar : acn);
  int64_t N = b1 ? 1 : (c->tb ? br : bcn);
  int abn = a1 ? 0 : c->an - 2, bbn = b1 ? 0 : c->bn - 2;
  int nb = c->on - (a1 ? 0 : 1) - (b1 ? 0 : 1);
  int64_t n = kt_numel(c->on, c->os);
  long double *ref = calloc((size_t)(n ? n : 1), sizeof *ref);
  long double *scale = calloc((size_t)(n ? n : 1), sizeof *scale);
  for (int64_t f = 0; f < n; f++) {
    int64_t idx[8], bidx[8];
    kt_unravel(f, c->on, c->os, idx);
    int64_t m = a1 ? 0 : idx[nb], nn = b1 ? 0 : idx[c->on - 1];
    for (int i = 0; i < nb; i++) bidx[i] = idx[i];
    int64_t aoff = kt_bcast_offset(nb, bidx, abn, c->as) * (a1 ? 0 : ar * acn);
    int64_t boff = kt_bcast_offset(nb, bidx, bbn, c->bs) * (b1 ? 0 : br * bcn);
    long double s = 0, sa = 0;
    for (int64_t k = 0; k < K; k++) {
      int64_t ai = a1 ? k : (c->ta ? k * acn + m : m * acn + k);
      int64_t bi = b1 ? k : (c->tb ? nn * bcn + k : k * bcn + nn);
      long double p = kt_get(a, aoff + ai) * kt_get(b, boff + bi);
      s += p;
      sa += fabsl(p);
    }
    ref[f] = (long double)c->alpha * s;
    scale[f] = fabsl((long double)c->alpha) * sa;
    if (cc) {
      long double cv = kt_get(cc, kt_bcast_offset(c->on, idx, c->cn, c->cs));
      ref[f] += (long double)c->beta * cv;
      scale[f] += fabsl((long double)c->beta * cv);
    }
  }
  kt_check_close(o, ref, scale, n, dt == PG_DTYPE_F64 ? 1e-13 : 4e-6, 1e-30);
  (void)M;
  (void)N;
  free(ref);
  free(scale);
  kt_free(a);
  kt_free(b);
  kt_free(cc);
  kt_free(o);
}

PG_TEST(matmul_vs_naive) {
  static const struct mm cases[] = {
      /* plain 2-D, primes and block-unfriendly sizes */
      {2, 2, -1, {7, 13}, {13, 5}, {0}, 0, 0, 1, 0, 2, {7, 5}},
      {2, 2, -1, {1, 1}, {1, 1}, {0}, 0, 0, 1, 0, 2, {1, 1}},
      {2, 2, -1, {67, 131}, {131, 33}, {0}, 0, 0, 1, 0, 2, {67, 33}},
      /* transposes */
      {2, 2, -1, {13, 7}, {13, 5}, {0}, 1, 0, 0.5, 0, 2, {7, 5}},
      {2, 2, -1, {7, 13}, {5, 13}, {0}, 0, 1, 1, 0, 2, {7, 5}},
      {2, 2, -1, {13, 7}, {5, 13}, {0}, 1, 1, -2, 0, 2, {7, 5}},
      /* batched, broadcast batch dims */
      {4, 4, -1, {2, 3, 5, 7}, {2, 3, 7, 11}, {0}, 0, 0, 1, 0, 4, {2, 3, 5, 11}},
      {4, 3, -1, {2, 1, 5, 7}, {3, 7, 4}, {0}, 0, 0, 1, 0, 4, {2, 3, 5, 4}},
      {3, 2, -1, {3, 5, 7}, {7, 4}, {0}, 0, 0, 1, 0, 3, {3, 5, 4}},   /* folds into one gemm */
      {3, 2, -1, {3, 7, 5}, {7, 4}, {0}, 1, 0, 1, 0, 3, {3, 5, 4}},   /* cannot fold */
      {2, 3, -1, {5, 7}, {3, 7, 4}, {0}, 0, 0, 1, 0, 3, {3, 5, 4}},
      {4, 4, -1, {2, 3, 5, 6}, {2, 3, 7, 6}, {0}, 0, 1, 0.125, 0, 4, {2, 3, 5, 7}},
      /* 1-D operands, numpy rules */
      {1, 1, -1, {9}, {9}, {0}, 0, 0, 1, 0, 0, {0}},
      {1, 2, -1, {9}, {9, 4}, {0}, 0, 0, 1, 0, 1, {4}},
      {2, 1, -1, {4, 9}, {9}, {0}, 0, 0, 1, 0, 1, {4}},
      {1, 3, -1, {9}, {2, 9, 4}, {0}, 0, 0, 1, 0, 2, {2, 4}},
      {3, 1, -1, {2, 4, 9}, {9}, {0}, 0, 0, 1, 0, 2, {2, 4}},
      {2, 1, -1, {9, 4}, {9}, {0}, 1, 0, 1, 0, 1, {4}},
      /* beta * c, c broadcast */
      {2, 2, 2, {7, 13}, {13, 5}, {7, 5}, 0, 0, 1, 1, 2, {7, 5}},
      {3, 3, 1, {2, 7, 13}, {2, 13, 5}, {5}, 0, 0, 0.5, -3, 3, {2, 7, 5}},
      {3, 2, 3, {2, 7, 3}, {3, 5}, {1, 7, 1}, 0, 0, 1, 0.25, 3, {2, 7, 5}},
      {2, 2, 0, {3, 4}, {4, 5}, {0}, 0, 0, 1, 2, 2, {3, 5}},
      /* 0-size dims */
      {2, 2, -1, {0, 5}, {5, 3}, {0}, 0, 0, 1, 0, 2, {0, 3}},
      {2, 2, -1, {4, 0}, {0, 3}, {0}, 0, 0, 1, 0, 2, {4, 3}},
      {2, 2, 2, {4, 0}, {0, 3}, {4, 3}, 0, 0, 1, 2, 2, {4, 3}},
      {3, 3, -1, {0, 4, 5}, {1, 5, 3}, {0}, 0, 0, 1, 0, 3, {0, 4, 3}},
  };
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) mm_check(DTS[d], &cases[i], i);
}

PG_TEST(matmul_large_uses_blas_threads_and_stays_exact_on_ints) {
  /* int(-3,3) fills: every product and sum is exact in fp32, as benchdnn relies on */
  int64_t as[2] = {129, 257}, bs[2] = {257, 65};
  for (int d = 0; d < 2; d++) {
    struct pg_tensor *a = kt_tensor(DTS[d], 2, as, 5, -3, 4), *b = kt_tensor(DTS[d], 2, bs, 6, -3, 4);
    for (int64_t i = 0; i < a->numel; i++)
      pg_store_f64(a->dl.data, a->dtype, (size_t)i, floor(pg_load_f64(a->dl.data, a->dtype, (size_t)i)));
    for (int64_t i = 0; i < b->numel; i++)
      pg_store_f64(b->dl.data, b->dtype, (size_t)i, floor(pg_load_f64(b->dl.data, b->dtype, (size_t)i)));
    const struct pg_tensor *in[2] = {a, b};
    struct pg_tensor *o = kt_ok("matmul", NULL, 2, in);
    for (int64_t m = 0; m < 129; m++)
      for (int64_t n = 0; n < 65; n++) {
        long double s = 0;
        for (int64_t k = 0; k < 257; k++) s += kt_get(a, m * 257 + k) * kt_get(b, k * 65 + n);
        PG_CHECK_MSG(kt_get(o, m * 65 + n) == s, "(%lld, %lld) not exact", (long long)m, (long long)n);
      }
    kt_free(a);
    kt_free(b);
    kt_free(o);
  }
}

/* ================================================================ unary */

static long double ref_unary(const char *op, long double x, double p) {
  if (!strcmp(op, "abs")) return fabsl(x);
  if (!strcmp(op, "neg")) return -x;
  if (!strcmp(op, "exp")) return expl(x);
  if (!strcmp(op, "log")) return logl(x);
  if (!strcmp(op, "sqrt")) return sqrtl(x);
  if (!strcmp(op, "rsqrt")) return 1.0L / sqrtl(x);
  if (!strcmp(op, "relu")) return x > 0 ? x : 0.0L;
  if (!strcmp(op, "sigmoid")) return 1.0L / (1.0L + expl(-x));
  if (!strcmp(op, "silu")) return x / (1.0L + expl(-x));
  if (!strcmp(op, "tanh")) return tanhl(x);
  if (!strcmp(op, "gelu")) return x * 0.5L * erfcl(-x / sqrtl(2.0L)); /* = x*Phi(x) */
  if (!strcmp(op, "gelu_tanh")) {
    /* 0.5*(1 + tanh(y)) written as 1/(1 + e^-2y) so the reference does not cancel */
    long double k = sqrtl(2.0L / 3.14159265358979323846264338327950288L);
    return x / (1.0L + expl(-2.0L * k * (x + 0.044715L * x * x * x)));
  }
  if (!strcmp(op, "scale")) return x * (long double)p;
  if (!strcmp(op, "identity")) return x;
  return NAN;
}

PG_TEST(unary_vs_naive) {
  static const char *const ops[] = {"abs", "neg", "exp", "log", "sqrt", "rsqrt", "relu",
                                    "sigmoid", "silu", "tanh", "gelu", "gelu_tanh", "scale",
                                    "identity"};
  static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {1, 0, 4}, {2, 1, 97}};
  for (int d = 0; d < 2; d++)
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
      for (size_t si = 0; si < 4; si++) {
        const char *op = ops[oi];
        int positive = !strcmp(op, "log") || !strcmp(op, "sqrt") || !strcmp(op, "rsqrt");
        struct pg_tensor *x = kt_tensor(DTS[d], 3, shapes[si], oi * 10 + si, positive ? 0.01 : -9,
                                        positive ? 50 : 9);
        const char *kname = !strcmp(op, "gelu_tanh") ? "gelu" : op;
        struct kt_attrs at;
        kt_attrs_init(&at, pg_kernel_find(kname));
        if (!strcmp(op, "gelu_tanh")) kt_set_s(&at, "approximate", "tanh");
        if (!strcmp(op, "scale")) kt_set_f(&at, "factor", -0.3);
        const struct pg_tensor *in[1] = {x};
        struct pg_tensor *o = kt_ok(kname, &at, 1, in);
        kt_check_shape(o, 3, shapes[si]);
        long double ref[4096];
        for (int64_t i = 0; i < x->numel; i++) ref[i] = ref_unary(op, kt_get(x, i), -0.3);
        /* exp(9) etc.: relative checks; tiny results need an absolute floor */
        /* fp64: gelu's erfc(-x/sqrt2) amplifies the rounding of its argument ~2x^2 times */
        kt_check_close(o, ref, NULL, x->numel, DTS[d] == PG_DTYPE_F64 ? 3e-14 : 1.2e-7,
                       DTS[d] == PG_DTYPE_F64 ? 1e-300 : 1e-40);
        kt_free(x);
        kt_free(o);
      }
}

PG_TEST(unary_special_values) {
  static const double vals[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, -800.0, 800.0};
  int64_t shape[1] = {7};
  for (int d = 0; d < 2; d++) {
    struct pg_tensor *x = kt_tensor(DTS[d], 1, shape, 1, 0, 1);
    for (int i = 0; i < 7; i++) pg_store_f64(x->dl.data, x->dtype, (size_t)i, vals[i]);
    const struct pg_tensor *in[1] = {x};
    struct pg_tensor *s = kt_ok("sigmoid", NULL, 1, in), *r = kt_ok("relu", NULL, 1, in);
    struct pg_tensor *g = kt_ok("gelu", NULL, 1, in);
    PG_CHECK(isnan((double)kt_get(s, 0)) && isnan((double)kt_get(r, 0)));
    PG_CHECK(kt_get(s, 1) == 1 && kt_get(s, 2) == 0 && kt_get(s, 5) == 0 && kt_get(s, 6) == 1);
    PG_CHECK(kt_get(r, 1) == INFINITY && kt_get(r, 2) == 0 && kt_get(r, 5) == 0);
    PG_CHECK(kt_get(g, 1) == INFINITY && kt_get(g, 6) == 800 && kt_get(g, 5) == 0);
    kt_free(x);
    kt_free(s);
    kt_free(r);
    kt_free(g);
  }
}

/* Independent fp16 / bf16 rounding: round the significand with nearbyint (ties to
 * even in the default mode), handle the subnormal step and overflow explicitly. */
static long double ref_round(long double v, int mant_bits, int emin, double maxv) {
  if (v != v || isinf(v) || v == 0) return v;
  int e;
  frexpl(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
  int q = e - mant_bits;          /* quantum exponent */
  if (q < emin - mant_bits + 1) q = emin - mant_bits + 1; /* subnormal: fixed quantum */
  long double r = ldexpl(nearbyintl(ldexpl(v, -q)), q);
  if (fabsl(r) > maxv) return v > 0 ? INFINITY : -INFINITY;
  return r;
}

PG_TEST(cast_rounds_through_dtype) {
  int64_t shape[1] = {4001};
  for (int d = 0; d < 2; d++) {
    struct pg_tensor *x = kt_tensor(DTS[d], 1, shape, 3, -70000, 70000);
    /* a spread of magnitudes including fp16 subnormals */
    for (int64_t i = 0; i < 4001; i++) {
      double v = pg_load_f64(x->dl.data, x->dtype, (size_t)i);
      pg_store_f64(x->dl.data, x->dtype, (size_t)i, v * pow(2.0, -(double)(i % 40)));
    }
    const struct pg_tensor *in[1] = {x};
    struct kt_attrs at;
    kt_attrs_init(&at, pg_kernel_find("cast"));
    kt_set_s(&at, "dtype", "float16");
    struct pg_tensor *h = kt_ok("cast", &at, 1, in);
    kt_set_s(&at, "dtype", "bfloat16");
    struct pg_tensor *b = kt_ok("cast", &at, 1, in);
    kt_set_s(&at, "dtype", "int8");
    struct pg_tensor *i8 = kt_ok("cast", &at, 1, in);
    for (int64_t i = 0; i < 4001; i++) {
      long double v = kt_get(x, i);
      long double rh = ref_round(v, 11, -14, 65504.0);
      long double rb = ref_round(v, 8, -126, 3.3895313892515355e38);
      long double ri = truncl(v) > 127 ? 127 : truncl(v) < -128 ? -128 : truncl(v);
      PG_CHECK_MSG(kt_get(h, i) == rh, "fp16 of %.17Lg: got %.17Lg want %.17Lg", v, kt_get(h, i), rh);
      PG_CHECK_MSG(kt_get(b, i) == rb, "bf16 of %.17Lg: got %.17Lg want %.17Lg", v, kt_get(b, i), rb);
      PG_CHECK_MSG(kt_get(i8, i) == ri, "int8 of %.17Lg", v);
    }
    kt_free(x);
    kt_free(h);
    kt_free(b);
    kt_free(i8);
  }
}

/* ================================================================ binary */

static long double ref_binary(const char *op, long double a, long double b) {
  if (!strcmp(op, "add")) return a + b;
  if (!strcmp(op, "sub")) return a - b;
  if (!strcmp(op, "mul")) return a * b;
  if (!strcmp(op, "div")) return a / b;
  if (!strcmp(op, "maximum")) return a >= b ? a : b;
  return a <= b ? a : b;
}

PG_TEST(binary_broadcast_vs_naive) {
  static const char *const ops[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  struct bc {
    int an, bn, on;
    int64_t as[4], bs[4], os[4];
  };
  static const struct bc cases[] = {
      {3, 3, 3, {1, 3, 1}, {5, 1, 7}, {5, 3, 7}},
      {1, 2, 2, {4}, {3, 1}, {3, 4}},
      {0, 2, 2, {0}, {2, 3}, {2, 3}},
      {2, 0, 2, {2, 3}, {0}, {2, 3}},
      {0, 0, 0, {0}, {0}, {0}},
      {2, 2, 2, {0, 3}, {1, 3}, {0, 3}},
      {3, 1, 3, {2, 1, 5}, {1}, {2, 1, 5}},
      {4, 4, 4, {2, 3, 5, 7}, {2, 3, 5, 7}, {2, 3, 5, 7}},
      {4, 3, 4, {2, 1, 5, 1}, {3, 1, 1}, {2, 3, 5, 1}},
      {2, 3, 3, {13, 1}, {1, 1, 11}, {1, 13, 11}},
  };
  for (int d = 0; d < 2; d++)
    for (size_t oi = 0; oi < 6; oi++)
      for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct bc *c = &cases[ci];
        struct pg_tensor *a = kt_tensor(DTS[d], c->an, c->as, ci, -3, 3);
        struct pg_tensor *b = kt_tensor(DTS[d], c->bn, c->bs, ci + 100, 0.5, 3);
        const struct pg_tensor *in[2] = {a, b};
        struct pg_tensor *o = kt_ok(ops[oi], NULL, 2, in);
        kt_check_shape(o, c->on, c->os);
        int64_t n = kt_numel(c->on, c->os);
        long double ref[1024];
        for (int64_t f = 0; f < n; f++) {
          int64_t idx[8];
          kt_unravel(f, c->on, c->os, idx);
          long double va = kt_get(a, kt_bcast_offset(c->on, idx, c->an, c->as));
          long double vb = kt_get(b, kt_bcast_offset(c->on, idx, c->bn, c->bs));
          ref[f] = ref_binary(ops[oi], va, vb);
        }
        /* computed in the tensor dtype: exactly the rounded long double result */
        kt_check_close(o, ref, NULL, n, DTS[d] == PG_DTYPE_F64 ? 1.2e-16 : 6e-8, 0);
        kt_free(a);
        kt_free(b);
        kt_free(o);
      }
}

PG_TEST(binary_nan_propagates_in_maximum_minimum) {
  int64_t s[1] = {3};
  struct pg_tensor *a = kt_tensor(PG_DTYPE_F32, 1, s, 1, 0, 1), *b = kt_tensor(PG_DTYPE_F32, 1, s, 2, 0, 1);
  ((float *)a->dl.data)[0] = NAN;
  ((float *)b->dl.data)[1] = NAN;
  const struct pg_tensor *in[2] = {a, b};
  struct pg_tensor *mx = kt_ok("maximum", NULL, 2, in), *mn = kt_ok("minimum", NULL, 2, in);
  PG_CHECK(isnan((double)kt_get(mx, 0)) && isnan((double)kt_get(mx, 1)) && !isnan((double)kt_get(mx, 2)));
  PG_CHECK(isnan((double)kt_get(mn, 0)) && isnan((double)kt_get(mn, 1)) && !isnan((double)kt_get(mn, 2)));
  kt_free(a);
  kt_free(b);
  kt_free(mx);
  kt_free(mn);
}

/* ================================================================ along-an-axis ops */

/* Calls fn(line values, len, out) for every line along `axis` of shape, naive. */
typedef void (*kt_line_fn)(const long double *x, int64_t n, long double *y, double p);

static void ref_lines(const struct pg_tensor *x, int axis, kt_line_fn fn, double p, long double *out) {
  int nd = x->dl.ndim;
  int64_t len = x->shape[axis], inner = 1, outer = 1;
  for (int i = axis + 1; i < nd; i++) inner *= x->shape[i];
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  long double *buf = malloc(sizeof *buf * (size_t)(len + 1)), *res = malloc(sizeof *res * (size_t)(len + 1));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t j = 0; j < len; j++) buf[j] = kt_get(x, (o * len + j) * inner + i);
      fn(buf, len, res, p);
      for (int64_t j = 0; j < len; j++) out[(o * len + j) * inner + i] = res[j];
    }
  free(buf);
  free(res);
}

static void ln_softmax(const long double *x, int64_t n, long double *y, double p) {
  (void)p;
  long double s = 0;
  for (int64_t j = 0; j < n; j++) s += expl(x[j]);
  for (int64_t j = 0; j < n; j++) y[j] = expl(x[j]) / s;
}
static void ln_log_softmax(const long double *x, int64_t n, long double *y, double p) {
  (void)p;
  long double s = 0;
  for (int64_t j = 0; j < n; j++) s += expl(x[j]);
  for (int64_t j = 0; j < n; j++) y[j] = x[j] - logl(s);
}
static void ln_l2norm(const long double *x, int64_t n, long double *y, double eps) {
  long double s = 0;
  for (int64_t j = 0; j < n; j++) s += x[j] * x[j];
  long double d = sqrtl(s) > eps ? sqrtl(s) : eps;
  for (int64_t j = 0; j < n; j++) y[j] = x[j] / d;
}
static void ln_cumsum(const long double *x, int64_t n, long double *y, double p) {
  (void)p;
  long double s = 0;
  for (int64_t j = 0; j < n; j++) y[j] = (s += x[j]);
}

PG_TEST(softmax_log_softmax_l2norm_cumsum_vs_naive) {
  static const int64_t shapes[][3] = {{3, 5, 7}, {1, 1, 1}, {2, 1, 131}, {2, 0, 3}, {5, 17, 1}};
  static const struct {
    const char *op;
    kt_line_fn fn;
  } ops[] = {{"softmax", ln_softmax}, {"log_softmax", ln_log_softmax}, {"l2norm", ln_l2norm},
             {"cumsum", ln_cumsum}};
  for (int d = 0; d < 2; d++)
    for (size_t oi = 0; oi < 4; oi++)
      for (size_t si = 0; si < 5; si++)
        for (int axis = -3; axis < 3; axis++) {
          /* large offsets: without max subtraction exp() would overflow */
          double lo = !strcmp(ops[oi].op, "softmax") || !strcmp(ops[oi].op, "log_softmax") ? 80 : -4;
          struct pg_tensor *x = kt_tensor(DTS[d], 3, shapes[si], si, lo, lo + 8);
          struct kt_attrs at;
          kt_attrs_init(&at, pg_kernel_find(ops[oi].op));
          kt_set_i(&at, "axis", axis);
          const struct pg_tensor *in[1] = {x};
          struct pg_tensor *o = kt_ok(ops[oi].op, &at, 1, in);
          kt_check_shape(o, 3, shapes[si]);
          long double ref[4096];
          /* reference on shifted values for softmax (mathematically identical) */
          /* no max subtraction needed in long double: expl(88) is far from overflow */
          ref_lines(x, axis < 0 ? axis + 3 : axis, ops[oi].fn, 1e-12, ref);
          double rt = DTS[d] == PG_DTYPE_F64 ? 1e-13 : 3e-7;
          /* cumsum cancels: its error is relative to sum |x|, hence an absolute floor */
          double atol_ = !strcmp(ops[oi].op, "cumsum") ? 1e-13 : DTS[d] == PG_DTYPE_F64 ? 1e-300 : 1e-30;
          kt_check_close(o, ref, NULL, x->numel, rt, atol_);
          kt_free(x);
          kt_free(o);
        }
}

PG_TEST(softmax_rows_sum_to_one_with_huge_values) {
  int64_t s[2] = {3, 1000};
  struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 2, s, 9, 1e30, 3e38);
  const struct pg_tensor *in[1] = {x};
  struct pg_tensor *o = kt_ok("softmax", NULL, 1, in);
  for (int r = 0; r < 3; r++) {
    double sum = 0;
    for (int j = 0; j < 1000; j++) {
      double v = (double)kt_get(o, r * 1000 + j);
      PG_CHECK(v == v && v >= 0 && v <= 1);
      sum += v;
    }
    PG_CHECK_NEAR(1.0, sum, 1e-5);
  }
  kt_free(x);
  kt_free(o);
}

static void red_ref(const struct pg_tensor *x, int axis, const char *op, long double *out) {
  int nd = x->dl.ndim;
  int64_t len = x->shape[axis], inner = 1, outer = 1;
  for (int i = axis + 1; i < nd; i++) inner *= x->shape[i];
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      long double s = 0, m = -INFINITY;
      for (int64_t j = 0; j < len; j++) {
        long double v = kt_get(x, (o * len + j) * inner + i);
        s += v;
        if (v > m) m = v;
      }
      out[o * inner + i] = !strcmp(op, "sum") ? s : !strcmp(op, "mean") ? s / len : m;
    }
}

PG_TEST(sum_mean_max_vs_naive_with_keepdims) {
  static const int64_t shapes[][3] = {{3, 5, 7}, {1, 1, 1}, {2, 1, 131}, {2, 0, 3}, {4, 9, 2}};
  static const char *const ops[] = {"sum", "mean", "max"};
  for (int d = 0; d < 2; d++)
    for (int oi = 0; oi < 3; oi++)
      for (int si = 0; si < 5; si++)
        for (int axis = -3; axis < 3; axis++)
          for (int keep = 0; keep < 2; keep++) {
            int ax = axis < 0 ? axis + 3 : axis;
            struct pg_tensor *x = kt_tensor(DTS[d], 3, shapes[si], si + 3, -5, 5);
            struct kt_attrs at;
            kt_attrs_init(&at, pg_kernel_find(ops[oi]));
            kt_set_i(&at, "axis", axis);
            kt_set_b(&at, "keepdims", keep);
            const struct pg_tensor *in[1] = {x};
            struct pg_tensor *o = NULL;
            struct pg_error err;
            int rc = kt_run(ops[oi], &at, 1, in, 0, &o, &err);
            if (shapes[si][ax] == 0 && !strcmp(ops[oi], "max")) {
              PG_CHECK_EQ_INT(PG_ESHAPE, rc);
              kt_free(x);
              continue;
            }
            PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
            int64_t os[3];
            int on = 0;
            for (int i = 0; i < 3; i++) {
              if (i == ax && !keep) continue;
              os[on++] = i == ax ? 1 : shapes[si][i];
            }
            kt_check_shape(o, on, os);
            long double ref[4096];
            red_ref(x, ax, ops[oi], ref);
            kt_check_close(o, ref, NULL, kt_numel(on, os), kt_rtol(DTS[d]), 1e-12);
            kt_free(x);
            kt_free(o);
          }
}

/* ================================================================ norms */

PG_TEST(layernorm_rmsnorm_vs_naive) {
  static const int64_t xs[][3] = {{3, 5, 7}, {1, 1, 1}, {2, 3, 129}, {2, 0, 3}};
  for (int d = 0; d < 2; d++)
    for (int rms = 0; rms < 2; rms++)
      for (int si = 0; si < 4; si++)
        for (int axis = -2; axis < 0; axis++)
          for (int nin = 1; nin <= (rms ? 2 : 3); nin++) {
            const char *op = rms ? "rmsnorm" : "layernorm";
            int ax = axis + 3;
            /* offset mean: a one-pass variance would lose digits here */
            struct pg_tensor *x = kt_tensor(DTS[d], 3, xs[si], si, 1000, 1001);
            int64_t ws[2] = {xs[si][1], xs[si][2]};
            int wn = ax == 1 ? 2 : 1;
            const int64_t *wsh = ax == 1 ? ws : ws + 1;
            struct pg_tensor *w = kt_tensor(DTS[d], wn, wsh, 77, 0.5, 2);
            struct pg_tensor *b = kt_tensor(DTS[d], wn, wsh, 78, -1, 1);
            struct kt_attrs at;
            kt_attrs_init(&at, pg_kernel_find(op));
            kt_set_i(&at, "axis", axis);
            kt_set_f(&at, "eps", 1e-3);
            const struct pg_tensor *in[3] = {x, w, b};
            struct pg_tensor *o = kt_ok(op, &at, nin, in);
            int64_t row = 1, n = x->numel;
            for (int i = ax; i < 3; i++) row *= xs[si][i];
            long double ref[4096];
            for (int64_t r = 0; row > 0 && r < n / row; r++) {
              long double mean = 0, var = 0;
              if (!rms) {
                for (int64_t j = 0; j < row; j++) mean += kt_get(x, r * row + j);
                mean /= row;
              }
              for (int64_t j = 0; j < row; j++) {
                long double dv = kt_get(x, r * row + j) - mean;
                var += dv * dv;
              }
              var /= row;
              for (int64_t j = 0; j < row; j++) {
                long double v = (kt_get(x, r * row + j) - mean) / sqrtl(var + 1e-3L);
                if (nin > 1) v *= kt_get(w, j);
                if (nin > 2) v += kt_get(b, j);
                ref[r * row + j] = v;
              }
            }
            kt_check_close(o, ref, NULL, n, DTS[d] == PG_DTYPE_F64 ? 1e-10 : 2e-6,
                           DTS[d] == PG_DTYPE_F64 ? 1e-10 : 2e-6);
            kt_free(x);
            kt_free(w);
            kt_free(b);
            kt_free(o);
          }
}

/* ================================================================ layout */

PG_TEST(transpose_permute_reshape_vs_naive) {
  int64_t s[4] = {2, 3, 5, 7};
  for (int d = 0; d < 2; d++) {
    struct pg_tensor *x = kt_tensor(DTS[d], 4, s, 4, -1, 1);
    const struct pg_tensor *in[1] = {x};
    /* permute [2, 0, 3, 1] */
    int64_t perm[4] = {2, 0, 3, 1};
    struct kt_attrs at;
    kt_attrs_init(&at, pg_kernel_find("permute"));
    kt_set_ints(&at, "perm", 4, perm);
    struct pg_tensor *p = kt_ok("permute", &at, 1, in);
    int64_t ps[4] = {5, 2, 7, 3};
    kt_check_shape(p, 4, ps);
    for (int64_t f = 0; f < p->numel; f++) {
      int64_t oi[4], ii[4];
      kt_unravel(f, 4, ps, oi);
      for (int k = 0; k < 4; k++) ii[perm[k]] = oi[k];
      int64_t src = ((ii[0] * 3 + ii[1]) * 5 + ii[2]) * 7 + ii[3];
      PG_CHECK(kt_get(p, f) == kt_get(x, src));
    }
    /* transpose default: last two; dim0/dim1; negative perm entries */
    struct pg_tensor *t = kt_ok("transpose", NULL, 1, in);
    int64_t ts[4] = {2, 3, 7, 5};
    kt_check_shape(t, 4, ts);
    for (int64_t f = 0; f < t->numel; f++) {
      int64_t oi[4];
      kt_unravel(f, 4, ts, oi);
      PG_CHECK(kt_get(t, f) == kt_get(x, ((oi[0] * 3 + oi[1]) * 5 + oi[3]) * 7 + oi[2]));
    }
    kt_attrs_init(&at, pg_kernel_find("transpose"));
    kt_set_i(&at, "dim0", 0);
    kt_set_i(&at, "dim1", -2);
    struct pg_tensor *t2 = kt_ok("transpose", &at, 1, in);
    int64_t t2s[4] = {5, 3, 2, 7};
    kt_check_shape(t2, 4, t2s);
    for (int64_t f = 0; f < t2->numel; f++) {
      int64_t oi[4];
      kt_unravel(f, 4, t2s, oi);
      PG_CHECK(kt_get(t2, f) == kt_get(x, ((oi[2] * 3 + oi[1]) * 5 + oi[0]) * 7 + oi[3]));
    }
    /* reshape with -1 keeps C order */
    int64_t rs[3] = {6, -1, 5};
    kt_attrs_init(&at, pg_kernel_find("reshape"));
    kt_set_ints(&at, "shape", 3, rs);
    struct pg_tensor *r = kt_ok("reshape", &at, 1, in);
    int64_t rse[3] = {6, 7, 5};
    kt_check_shape(r, 3, rse);
    PG_CHECK(memcmp(r->dl.data, x->dl.data, x->nbytes) == 0);
    kt_free(x);
    kt_free(p);
    kt_free(t);
    kt_free(t2);
    kt_free(r);
  }
  /* 0-size and rank-0 */
  int64_t z[3] = {0, 4, 1};
  struct pg_tensor *x0 = kt_tensor(PG_DTYPE_F32, 3, z, 1, 0, 1);
  const struct pg_tensor *in0[1] = {x0};
  struct pg_tensor *t0 = kt_ok("transpose", NULL, 1, in0);
  int64_t t0s[3] = {0, 1, 4};
  kt_check_shape(t0, 3, t0s);
  struct kt_attrs at;
  int64_t rs0[2] = {3, 0};
  kt_attrs_init(&at, pg_kernel_find("reshape"));
  kt_set_ints(&at, "shape", 2, rs0);
  struct pg_tensor *r0 = kt_ok("reshape", &at, 1, in0);
  kt_check_shape(r0, 2, rs0);
  kt_free(x0);
  kt_free(t0);
  kt_free(r0);
}

/* ================================================================ causal_mask, rope */

PG_TEST(causal_mask_vs_naive) {
  int64_t s[3] = {2, 5, 7};
  for (int d = 0; d < 2; d++)
    for (int off = -6; off <= 8; off += 2) {
      struct pg_tensor *x = kt_tensor(DTS[d], 3, s, 2, -1, 1);
      struct kt_attrs at;
      kt_attrs_init(&at, pg_kernel_find("causal_mask"));
      kt_set_i(&at, "offset", off);
      if (off == 0) kt_set_f(&at, "fill", -1e4);
      const struct pg_tensor *in[1] = {x};
      struct pg_tensor *o = kt_ok("causal_mask", &at, 1, in);
      long double ref[70];
      for (int64_t f = 0; f < 70; f++) {
        int64_t row = (f / 7) % 5, col = f % 7;
        ref[f] = col > row + off ? (off == 0 ? -1e4L : -INFINITY) : kt_get(x, f);
      }
      kt_check_close(o, ref, NULL, 70, 0, 0);
      kt_free(x);
      kt_free(o);
    }
}

PG_TEST(rope_vs_naive) {
  int64_t s[4] = {2, 3, 5, 8};
  for (int d = 0; d < 2; d++)
    for (int inter = 0; inter < 2; inter++)
      for (int withpos = 0; withpos < 3; withpos++) {
        struct pg_tensor *x = kt_tensor(DTS[d], 4, s, 6, -1, 1);
        /* positions: none (0..S-1), [S] int64, [2, 1, 5] float broadcast */
        int64_t ps1[1] = {5}, ps3[3] = {2, 1, 5};
        struct pg_tensor *pos = NULL;
        if (withpos == 1) {
          pos = kt_tensor(PG_DTYPE_I64, 1, ps1, 0, 0, 1);
          for (int i = 0; i < 5; i++) ((int64_t *)pos->dl.data)[i] = 100 + 7 * i;
        } else if (withpos == 2) {
          pos = kt_tensor(PG_DTYPE_F32, 3, ps3, 0, 0, 1);
          for (int i = 0; i < 10; i++) ((float *)pos->dl.data)[i] = (float)(3 * i + 1);
        }
        struct kt_attrs at;
        kt_attrs_init(&at, pg_kernel_find("rope"));
        kt_set_b(&at, "interleaved", inter);
        kt_set_f(&at, "base", 500.0);
        const struct pg_tensor *in[2] = {x, pos};
        struct pg_tensor *o = kt_ok("rope", &at, pos ? 2 : 1, in);
        long double ref[240];
        for (int64_t r = 0; r < 30; r++) {
          int64_t b = r / 15, si = r % 5;
          long double p = withpos == 0 ? si : withpos == 1 ? 100 + 7 * si : 3 * (b * 5 + si) + 1;
          for (int i = 0; i < 4; i++) {
            long double th = p * powl(500.0L, -(long double)(2 * i) / 8.0L);
            int j0 = inter ? 2 * i : i, j1 = inter ? 2 * i + 1 : i + 4;
            long double x0 = kt_get(x, r * 8 + j0), x1 = kt_get(x, r * 8 + j1);
            ref[r * 8 + j0] = x0 * cosl(th) - x1 * sinl(th);
            ref[r * 8 + j1] = x1 * cosl(th) + x0 * sinl(th);
          }
        }
        kt_check_close(o, ref, NULL, 240, 0, DTS[d] == PG_DTYPE_F64 ? 1e-12 : 1e-6);
        kt_free(x);
        kt_free(pos);
        kt_free(o);
      }
}

/* ================================================================ cross-cutting */

PG_TEST(results_do_not_depend_on_thread_count) {
  int64_t s[2] = {301, 1031}; /* ~310k elements: several threads kick in */
  static const char *const ops[] = {"softmax", "add", "gelu", "sum", "layernorm", "transpose",
                                    "cumsum", "exp"};
  for (int d = 0; d < 2; d++)
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
      struct pg_tensor *x = kt_tensor(DTS[d], 2, s, 11, -3, 3);
      int64_t bs[1] = {1031};
      struct pg_tensor *b = kt_tensor(DTS[d], 1, bs, 12, -3, 3);
      const struct pg_tensor *in[2] = {x, b};
      int nin = !strcmp(ops[oi], "add") ? 2 : 1;
      struct pg_tensor *o1 = NULL, *o4 = NULL, *o7 = NULL;
      struct pg_error err;
      PG_CHECK_OK(kt_run(ops[oi], NULL, nin, in, 1, &o1, &err));
      PG_CHECK_OK(kt_run(ops[oi], NULL, nin, in, 4, &o4, &err));
      PG_CHECK_OK(kt_run(ops[oi], NULL, nin, in, 7, &o7, &err));
      PG_CHECK_MSG(memcmp(o1->dl.data, o4->dl.data, o1->nbytes) == 0, "%s: 1 vs 4 threads", ops[oi]);
      PG_CHECK_MSG(memcmp(o1->dl.data, o7->dl.data, o1->nbytes) == 0, "%s: 1 vs 7 threads", ops[oi]);
      kt_free(x);
      kt_free(b);
      kt_free(o1);
      kt_free(o4);
      kt_free(o7);
    }
}

PG_TEST(inputs_are_widened_and_f64_wins) {
  int64_t s[2] = {3, 4};
  struct pg_tensor *h = kt_tensor(PG_DTYPE_F16, 2, s, 1, -2, 2);
  struct pg_tensor *i = kt_tensor(PG_DTYPE_I32, 2, s, 2, -5, 5);
  struct pg_tensor *f = kt_tensor(PG_DTYPE_F32, 2, s, 3, -2, 2);
  struct pg_tensor *g = kt_tensor(PG_DTYPE_F64, 2, s, 4, -2, 2);
  const struct pg_tensor *hi[2] = {h, i}, *fg[2] = {f, g};
  struct pg_tensor *o1 = kt_ok("mul", NULL, 2, hi), *o2 = kt_ok("add", NULL, 2, fg);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, o1->dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_F64, o2->dtype);
  for (int64_t k = 0; k < 12; k++) {
    PG_CHECK(kt_get(o1, k) == (long double)(float)(kt_get(h, k) * kt_get(i, k)));
    PG_CHECK(kt_get(o2, k) == (long double)(double)(kt_get(f, k) + kt_get(g, k)));
  }
  kt_free(h);
  kt_free(i);
  kt_free(f);
  kt_free(g);
  kt_free(o1);
  kt_free(o2);
}

PG_TEST(invoke_allocates_and_fills_defaults) {
  int64_t s[2] = {4, 6};
  struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 2, s, 1, -2, 2);
  const struct pg_tensor *in[1] = {x};
  struct pg_tensor out;
  pg_tensor_init(&out);
  struct pg_error err;
  PG_CHECK_OK(pg_kernel_invoke(pg_kernel_find("softmax"), in, 1, NULL, 0, 0, &out, &err));
  for (int r = 0; r < 4; r++) {
    double sum = 0;
    for (int j = 0; j < 6; j++) sum += (double)kt_get(&out, r * 6 + j);
    PG_CHECK_NEAR(1.0, sum, 1e-6);
  }
  pg_tensor_reset(&out);
  /* a required attribute left absent is a clear error, not a crash */
  int rc = pg_kernel_invoke(pg_kernel_find("reshape"), in, 1, NULL, 0, 0, &out, &err);
  PG_CHECK_EQ_INT(PG_EINVAL, rc);
  PG_CHECK_EQ_STR("reshape: missing required attribute shape", err.message);
  PG_CHECK(out.dl.data == NULL);
  kt_free(x);
}

PG_TEST(softmax_special_rows) {
  int64_t s[2] = {3, 2};
  struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 2, s, 1, 0, 1);
  float *v = x->dl.data;
  v[0] = -INFINITY, v[1] = -INFINITY; /* all masked: NaN, as torch */
  v[2] = 1.0f, v[3] = NAN;            /* NaN poisons the row */
  v[4] = -INFINITY, v[5] = 0.0f;      /* one masked: exactly [0, 1] */
  const struct pg_tensor *in[1] = {x};
  struct pg_tensor *o = kt_ok("softmax", NULL, 1, in), *l = kt_ok("log_softmax", NULL, 1, in);
  for (int i = 0; i < 4; i++) PG_CHECK(isnan((double)kt_get(o, i)) && isnan((double)kt_get(l, i)));
  PG_CHECK(kt_get(o, 4) == 0 && kt_get(o, 5) == 1);
  PG_CHECK(kt_get(l, 4) == -INFINITY && kt_get(l, 5) == 0);
  kt_free(x);
  kt_free(o);
  kt_free(l);
}

PG_TEST(softmax_long_rows_vs_naive) {
  /* rows longer than the per-thread exp cache take the recompute path */
  int64_t s[2] = {2, 2503};
  for (int d = 0; d < 2; d++)
    for (int lg = 0; lg < 2; lg++) {
      const char *op = lg ? "log_softmax" : "softmax";
      struct pg_tensor *x = kt_tensor(DTS[d], 2, s, 21, -30, 30);
      const struct pg_tensor *in[1] = {x};
      struct pg_tensor *o = kt_ok(op, NULL, 1, in);
      static long double ref[2 * 2503];
      ref_lines(x, 1, lg ? ln_log_softmax : ln_softmax, 0, ref);
      kt_check_close(o, ref, NULL, 2 * 2503, DTS[d] == PG_DTYPE_F64 ? 1e-13 : 3e-7, 1e-300);
      kt_free(x);
      kt_free(o);
    }
}
