/* tests/tensors — the fp16/bf16 conversions in include/phasegate/tensor.h against a
 * second, independent implementation: values built with ldexp from the bit fields,
 * and rounding done by enumerating the two neighbours of x and picking the nearer
 * (ties: even significand). x - lo and hi - x are exact by Sterbenz's lemma
 * (lo <= x <= hi <= 2 lo), so the reference needs no rounding mode tricks.
 * Inputs: every bit pattern, every midpoint, and midpoints +- 1 ulp of f32 and f64. */
#include <math.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/tensor.h"

struct fmt {
  const char *name;
  int man_bits, exp_bits, bias;
  uint16_t (*from_f32)(float);
  uint16_t (*from_f64)(double);
  float (*to_f32)(uint16_t);
};

static const struct fmt F16 = {"fp16", 10, 5, 15, pg_f32_to_f16, pg_f64_to_f16, pg_f16_to_f32};
static const struct fmt BF16 = {"bf16", 7, 8, 127, pg_f32_to_bf16, pg_f64_to_bf16, pg_bf16_to_f32};

/* Value of a bit pattern, from the fields (NaN -> NAN, sign kept). */
static double ref_value(const struct fmt *f, uint16_t b) {
  int sign = b >> 15;
  int e = (b >> f->man_bits) & ((1 << f->exp_bits) - 1);
  int m = b & ((1 << f->man_bits) - 1);
  double v;
  if (e == (1 << f->exp_bits) - 1) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp((double)m, 1 - f->bias - f->man_bits);
  else v = ldexp((double)(m + (1 << f->man_bits)), e - f->bias - f->man_bits);
  return sign ? -v : v;
}

static uint16_t inf_bits(const struct fmt *f) {
  return (uint16_t)(((1 << f->exp_bits) - 1) << f->man_bits);
}

/* Round |x| (finite or inf, not NaN) to the format by neighbour enumeration. */
static uint16_t ref_round(const struct fmt *f, double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  uint16_t inf = inf_bits(f);
  if (isinf(a)) return sign | inf;
  /* largest pattern with value <= a: binary search over positive patterns */
  uint16_t lo = 0, hi = (uint16_t)(inf - 1);
  if (a >= ref_value(f, hi)) {
    lo = hi;
  } else {
    while (hi - lo > 1) { /* invariant: value(lo) <= a < value(hi) */
      uint16_t mid = (uint16_t)((lo + hi) / 2);
      if (ref_value(f, mid) <= a) lo = mid;
      else hi = mid;
    }
  }
  double vlo = ref_value(f, lo);
  if (vlo == a) return sign | lo;
  uint16_t up = (uint16_t)(lo + 1);
  /* beyond the largest finite value the next "neighbour" is max + 1 ulp (-> inf) */
  double vup = up == inf ? vlo + ldexp(1.0, (f->bias) - f->man_bits) : ref_value(f, up);
  double dlo = a - vlo, dup = vup - a;
  uint16_t r;
  if (dlo < dup) r = lo;
  else if (dup < dlo) r = up;
  else r = (lo & 1) ? up : lo;
  return sign | r;
}

static void check_widen(const struct fmt *f) {
  for (uint32_t b = 0; b < 65536; b++) {
    double ref = ref_value(f, (uint16_t)b);
    float got = f->to_f32((uint16_t)b);
    if (isnan(ref)) {
      PG_CHECK_MSG(isnan(got) && !!signbit(got) == !!(b & 0x8000), "%s 0x%04x -> NaN", f->name, b);
      continue;
    }
    PG_CHECK_MSG((double)got == ref && !!signbit(got) == !!signbit(ref),
                 "%s 0x%04x -> %.9g, expected %.17g", f->name, b, got, ref);
    /* and back: every value survives the round trip bit-exactly */
    PG_CHECK_MSG(f->from_f32(got) == b, "%s 0x%04x -> f32 -> 0x%04x", f->name, b, f->from_f32(got));
    PG_CHECK_MSG(f->from_f64((double)got) == b, "%s 0x%04x -> f64 -> 0x%04x", f->name, b,
                 f->from_f64((double)got));
  }
}

static long n_checked;

static void check_f32(const struct fmt *f, float x) {
  uint16_t got = f->from_f32(x);
  if (isnan(x)) {
    PG_CHECK_MSG(isnan(ref_value(f, got)) && !!(got & 0x8000) == !!signbit(x), "%s(NaN)", f->name);
    return;
  }
  uint16_t want = ref_round(f, (double)x);
  PG_CHECK_MSG(got == want, "%s(f32 %a) = 0x%04x, expected 0x%04x", f->name, (double)x, got, want);
  n_checked++;
}

static void check_f64(const struct fmt *f, double x) {
  uint16_t got = f->from_f64(x);
  if (isnan(x)) {
    PG_CHECK_MSG(isnan(ref_value(f, got)) && !!(got & 0x8000) == !!signbit(x), "%s(NaN)", f->name);
    return;
  }
  uint16_t want = ref_round(f, x);
  PG_CHECK_MSG(got == want, "%s(f64 %a) = 0x%04x, expected 0x%04x", f->name, x, got, want);
  n_checked++;
}

static void check_around(const struct fmt *f, double m) {
  for (int s = 0; s < 2; s++) {
    double x = s ? -m : m;
    float xf = (float)x;
    if ((double)xf == x) { /* midpoints of fp16/bf16 are exact in f32 */
      check_f32(f, xf);
      check_f32(f, nextafterf(xf, INFINITY));
      check_f32(f, nextafterf(xf, -INFINITY));
    }
    check_f64(f, x);
    check_f64(f, nextafter(x, INFINITY));
    check_f64(f, nextafter(x, -INFINITY));
  }
}

static void check_round(const struct fmt *f) {
  uint16_t inf = inf_bits(f);
  for (uint32_t b = 0; b < inf; b++) {
    double v = ref_value(f, (uint16_t)b);
    check_around(f, v);
    double next = b + 1 < inf ? ref_value(f, (uint16_t)(b + 1))
                              : v + ldexp(1.0, f->bias - f->man_bits); /* overflow midpoint */
    check_around(f, (v + next) / 2); /* exact in double */
  }
  /* specials and far-away values */
  float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, 1e-45f, -1e-45f,
                      3.4028235e38f, -3.4028235e38f, 1.17549435e-38f, 65504.0f, 65519.996f,
                      65520.0f, 1e10f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f};
  for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
    check_f32(f, specials[i]);
    check_f64(f, (double)specials[i]);
  }
  double dspecials[] = {1e300, -1e300, 4.9e-324, -4.9e-324, 1e-40, 3.4028235677973366e38,
                        3.3961775292304884e38, 3.3961775292304889e38};
  for (size_t i = 0; i < sizeof dspecials / sizeof *dspecials; i++) check_f64(f, dspecials[i]);
  /* a sweep of f32 bit patterns (every 1021st) */
  for (uint64_t u = 0; u < 0x100000000ull; u += 1021) {
    float x;
    uint32_t b = (uint32_t)u;
    memcpy(&x, &b, 4);
    check_f32(f, x);
  }
}

PG_TEST(fp16_widen_all_patterns) { check_widen(&F16); }
PG_TEST(bf16_widen_all_patterns) { check_widen(&BF16); }

PG_TEST(fp16_round_exhaustive) {
  n_checked = 0;
  check_round(&F16);
  printf("# %ld fp16 roundings checked\n", n_checked);
}

PG_TEST(bf16_round_exhaustive) {
  n_checked = 0;
  check_round(&BF16);
  printf("# %ld bf16 roundings checked\n", n_checked);
}

PG_TEST(store_and_load_f64) {
  unsigned char buf[16];
  pg_store_f64(buf, PG_DTYPE_I8, 0, 300.7);
  PG_CHECK_EQ_INT(127, ((int8_t *)buf)[0]);
  pg_store_f64(buf, PG_DTYPE_I8, 0, -2.9);
  PG_CHECK_EQ_INT(-2, ((int8_t *)buf)[0]);
  pg_store_f64(buf, PG_DTYPE_U8, 0, -5);
  PG_CHECK_EQ_INT(0, ((uint8_t *)buf)[0]);
  pg_store_f64(buf, PG_DTYPE_I32, 0, NAN);
  PG_CHECK_EQ_INT(0, ((int32_t *)buf)[0]);
  pg_store_f64(buf, PG_DTYPE_I64, 0, 1e30);
  PG_CHECK(((int64_t *)buf)[0] == INT64_MAX - 1023);
  pg_store_f64(buf, PG_DTYPE_I64, 0, -1e30);
  PG_CHECK(((int64_t *)buf)[0] == INT64_MIN);
  pg_store_f64(buf, PG_DTYPE_BOOL, 0, NAN);
  PG_CHECK_EQ_INT(0, buf[0]);
  pg_store_f64(buf, PG_DTYPE_BOOL, 0, -0.5);
  PG_CHECK_EQ_INT(1, buf[0]);
  /* double rounding: 1 + 2^-11 + 2^-40 must round up in fp16 (not tie to even) */
  pg_store_f64(buf, PG_DTYPE_F16, 0, 1.0 + 0x1p-11 + 0x1p-40);
  PG_CHECK_EQ_INT(0x3c01, ((uint16_t *)buf)[0]);
  PG_CHECK(pg_load_f64(buf, PG_DTYPE_F16, 0) == 1.0 + 0x1p-10);
  pg_store_f64(buf, PG_DTYPE_BF16, 0, 1.0 + 0x1p-8 + 0x1p-40);
  PG_CHECK_EQ_INT(0x3f81, ((uint16_t *)buf)[0]);
}
