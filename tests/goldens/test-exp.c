/* tests/goldens/test-exp.c — the e^x and sigmoid of the fp32 reference mode
 * (pg__exp_r32_n, pg__sigmoid_r32_n in goldens/kernels_common.c): accuracy against
 * expl over a dense sweep, special values and the subnormal range, identical bits
 * from the AVX2 and the two-lane path and the scalar helper, and the kernels that use
 * them (exp, sigmoid, silu, gelu-tanh, softmax) on NaN/inf placed at every position
 * of the vector blocks and the tails.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "kernels_internal.h"
#include "kt_util.h"
#include "pg_test.h"

#define SWEEP_BLOCK 1024

/* Float ulps between two floats of the same sign (0 when equal). */
static int64_t ulps_f(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  return ia > ib ? (int64_t)ia - ib : (int64_t)ib - ia;
}

PG_TEST(exp_r32_dense_sweep_vs_expl) {
  /* 2 million points over [-708, 709.78] (normal results) at an irrational step */
  static double buf[SWEEP_BLOCK], xs[SWEEP_BLOCK];
  double max_rel = 0, worst = 0;
  int64_t n = 0, float_diff = 0, max_ulps = 0;
  double x = -708.0;
  const double step = 7.0710678118654752e-4;
  while (x < 709.78) {
    for (int i = 0; i < SWEEP_BLOCK; i++, x += step) xs[i] = buf[i] = x < 709.78 ? x : 709.78;
    pg__exp_r32_n(buf, SWEEP_BLOCK);
    for (int i = 0; i < SWEEP_BLOCK; i++) {
      long double r = expl((long double)xs[i]);
      double rel = (double)fabsl(((long double)buf[i] - r) / r);
      if (rel > max_rel) max_rel = rel, worst = xs[i];
      if (xs[i] > -103.0 && xs[i] < 88.7) { /* float range: rounded as the golden stores it */
        int64_t u = ulps_f((float)buf[i], (float)r);
        float_diff += u != 0;
        if (u > max_ulps) max_ulps = u;
      }
      n++;
    }
  }
  printf("# exp_r32: %lld points, max relative error %.3g (2^%.1f) at x=%.6f; "
               "float results differing from the correctly rounded float: %lld (max %lld ulp)",
               (long long)n, max_rel, log2(max_rel), worst, (long long)float_diff,
               (long long)max_ulps);
  printf("\n");
  PG_CHECK(n > 2000000);
  PG_CHECK_MSG(max_rel < 0x1p-50, "max relative error %g at x=%.17g", max_rel, worst);
  PG_CHECK(max_ulps <= 1);
  PG_CHECK(float_diff * 1000000 <= n); /* at most one in a million, and by 1 ulp */
}

PG_TEST(exp_r32_subnormals_and_specials) {
  /* the subnormal range: absolute error within one subnormal step */
  double b[8];
  for (double x = -745.13; x < -708.0; x += 0.37) {
    for (int i = 0; i < 4; i++) b[i] = x;
    pg__exp_r32_n(b, 4);
    long double r = expl((long double)x);
    PG_CHECK_MSG(fabsl((long double)b[0] - r) <= 0x1p-1074L, "x=%.17g got %a want %La", x, b[0], r);
  }
  double in[8] = {NAN, -INFINITY, INFINITY, 0.0, -746.0, 709.78, 709.79, -0.0};
  memcpy(b, in, sizeof b);
  pg__exp_r32_n(b, 8);
  PG_CHECK(isnan(b[0]));
  PG_CHECK(b[1] == 0.0 && !signbit(b[1]));
  PG_CHECK(isinf(b[2]) && b[2] > 0);
  PG_CHECK(b[3] == 1.0 && b[7] == 1.0);
  PG_CHECK(b[4] == 0.0);
  PG_CHECK(isfinite(b[5]) && b[5] > 1.7e308);
  PG_CHECK(isinf(b[6]));
  PG_CHECK(pg__exp_r32(1.0) == b[3] * pg__exp_r32(1.0));
  /* sigmoid: both tails, NaN, infinities, the sign split */
  double s[8] = {NAN, -INFINITY, INFINITY, 0.0, -800.0, 800.0, -1e-300, 36.0};
  pg__sigmoid_r32_n(s, 8);
  PG_CHECK(isnan(s[0]));
  PG_CHECK(s[1] == 0.0 && s[2] == 1.0 && s[3] == 0.5);
  PG_CHECK(s[4] == 0.0 && s[5] == 1.0);
  PG_CHECK(s[6] == 0.5);
  PG_CHECK(s[7] < 1.0 && s[7] > 1.0 - 1e-15);
}

PG_TEST(exp_r32_same_bits_every_path) {
  /* AVX2 (when the CPU has it), two-lane and scalar: identical bits */
  static double a[4096], b[4096], c[4096], d[4096], e[4096];
  uint64_t u = 12345;
  for (int i = 0; i < 4096; i++) {
    u = u * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = ((double)(u >> 11) / 9007199254740992.0 - 0.5) * (i % 3 ? 40.0 : 1500.0);
  }
  memcpy(b, a, sizeof a);
  memcpy(c, a, sizeof a);
  pg__exp_r32_n(b, 4096);
  pg__exp_r32_n_portable(c, 4096);
  PG_CHECK(memcmp(b, c, sizeof b) == 0);
  int same_scalar = 1;
  for (int i = 0; i < 4096; i++) {
    double v = pg__exp_r32(a[i]);
    same_scalar &= memcmp(&v, &b[i], sizeof v) == 0;
  }
  PG_CHECK(same_scalar);
  memcpy(d, a, sizeof a);
  memcpy(e, a, sizeof a);
  pg__sigmoid_r32_n(d, 4096);
  pg__sigmoid_r32_n_portable(e, 4096);
  PG_CHECK(memcmp(d, e, sizeof d) == 0);
  /* and the sigmoid is the textbook one to double accuracy */
  double max_rel = 0;
  for (int i = 0; i < 4096; i++) {
    long double r = 1.0L / (1.0L + expl(-(long double)a[i]));
    if (r > 1e-300L) { /* normal results (below, relative error is not the measure) */
      double rel = (double)fabsl(((long double)d[i] - r) / r);
      if (rel > max_rel) max_rel = rel;
    }
  }
  PG_CHECK_MSG(max_rel < 0x1p-49, "sigmoid max relative error %g", max_rel);
}

/* exp/sigmoid/silu/gelu-tanh kernels in fp32 vs long double, with NaN and infinities
 * at every position of a 37-element tensor (vector blocks and the tail). */
PG_TEST(exp_kernels_f32_specials_at_every_position) {
  int64_t s[1] = {37};
  static const char *const ops[] = {"exp", "sigmoid", "silu", "gelu"};
  const float specials[3] = {NAN, INFINITY, -INFINITY};
  for (int o = 0; o < 4; o++)
    for (int sp = 0; sp < 3; sp++)
      for (int pos = 0; pos < 37; pos += 5) {
        struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 1, s, 100 + pos, -6, 6);
        ((float *)x->dl.data)[pos] = specials[sp];
        const struct pg_tensor *in[1] = {x};
        struct kt_attrs at;
        kt_attrs_init(&at, pg_kernel_find(ops[o]));
        struct kt_attrs *ap = NULL;
        if (o == 3) {
          kt_set_s(&at, "approximate", "tanh");
          ap = &at;
        }
        struct pg_tensor *out = kt_ok(ops[o], ap, 1, in);
        int bad = 0;
        for (int i = 0; i < 37; i++) {
          long double v = kt_get(x, i), r;
          if (o == 0) r = expl(v);
          else if (o == 1) r = 1.0L / (1.0L + expl(-v));
          else if (o == 2) r = isinf(v) ? (v > 0 ? v : 0.0L) : v / (1.0L + expl(-v));
          else {
            long double u = 2.0L * 0.7978845608028654L * (v + 0.044715L * v * v * v);
            r = isinf(v) ? (v > 0 ? v : 0.0L) : v / (1.0L + expl(-u));
          }
          long double g = kt_get(out, i);
          if (isnan(r)) bad += !isnan(g);
          else if (isinf(r)) bad += g != r;
          else bad += fabsl(g - r) > 3e-7L * fabsl(r) + 1e-37L;
        }
        PG_CHECK_MSG(bad == 0, "%s with %g at %d: %d wrong", ops[o], (double)specials[sp], pos, bad);
        kt_free(x);
        kt_free(out);
      }
}

/* softmax rows of length 1..21: NaN at any position gives an all-NaN row, one +inf
 * gives exactly one-hot, -inf elsewhere gives exact zeros (the vector max scan, its
 * tail and the scalar path). */
PG_TEST(softmax_f32_specials_at_every_position) {
  for (int64_t len = 1; len <= 21; len++)
    for (int64_t pos = 0; pos < len; pos++)
      for (int sp = 0; sp < 2; sp++) {
        int64_t s[2] = {2, len};
        struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 2, s, 7 + len, -3, 3);
        float *v = x->dl.data;
        v[pos] = sp ? INFINITY : NAN;
        if (len > 2) v[len + (pos + 1) % len] = -INFINITY;
        const struct pg_tensor *in[1] = {x};
        struct pg_tensor *o = kt_ok("softmax", NULL, 1, in);
        int bad = 0;
        for (int64_t j = 0; j < len; j++) {
          long double g = kt_get(o, j);
          if (sp == 0) bad += !isnan(g);
          else bad += g != (j == pos ? 1.0L : 0.0L);
        }
        /* the second row: finite apart from one -inf, sums to 1, the -inf cell is 0 */
        long double sum = 0;
        for (int64_t j = 0; j < len; j++) sum += kt_get(o, len + j);
        if (len > 2) bad += kt_get(o, len + (pos + 1) % len) != 0.0L;
        bad += fabsl(sum - 1.0L) > 1e-6L;
        PG_CHECK_MSG(bad == 0, "len %lld, %s at %lld", (long long)len, sp ? "inf" : "nan",
                     (long long)pos);
        kt_free(x);
        kt_free(o);
      }
}
