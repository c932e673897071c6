/* tests/compare/test-compare-kernels.c — the SIMD block kernels of compare/ against a
 * plain scalar reference written from the definitions in docs/compare.md: every
 * length 0..70 at unaligned starts (so ASan sees any read past a tensor), hot-path
 * blocks (multiples of 16 elements) with and without NaN/Inf, sign differences in an
 * otherwise hot block (the ULP shortcut must not apply), every rule, every float
 * dtype, every SIMD variant (PHASEGATE_SIMD caps the choice) and 1/3 threads, plus
 * the lazily computed half of cpu_reproducer_candidate and max_abs ties across chunks.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/compare.h"

/* ---- scalar reference ----------------------------------------------------- */

struct ref {
  int64_t mism, mism_nf, n_finite, nan_a, nan_b, inf_a, inf_b, w3, w53, zeros, bal;
  double max_abs, max_rel, sum_abs, sum_sq, sum_ab, sum_aa, sum_bb;
  int64_t max_abs_at, max_rel_at;
  uint64_t max_ulp;
  int nonconst, large, large_bad;
  int n_first;
  int64_t first[PG_CMP_FIRST_MISMATCHES];
};

static int64_t ordered(enum pg_dtype t, const void *p, int64_t i) {
  switch (t) {
    case PG_DTYPE_F32: {
      uint32_t u;
      memcpy(&u, (const char *)p + 4 * i, 4);
      int64_t m = u & 0x7fffffffu;
      return (u >> 31) ? -m : m;
    }
    case PG_DTYPE_F64: {
      uint64_t u;
      memcpy(&u, (const char *)p + 8 * i, 8);
      int64_t m = (int64_t)(u & 0x7fffffffffffffffull);
      return (u >> 63) ? -m : m;
    }
    default: {
      uint16_t u;
      memcpy(&u, (const char *)p + 2 * i, 2);
      int64_t m = u & 0x7fff;
      return (u >> 15) ? -m : m;
    }
  }
}

static uint64_t ulp_dist(enum pg_dtype t, const void *pa, const void *pb, int64_t i) {
  int64_t x = ordered(t, pa, i), y = ordered(t, pb, i);
  return x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

static int elem_pass(const struct pg_cmp_rule *r, double a, double b, uint64_t u) {
  int nanpair = r->equal_nan && isnan(a) && isnan(b);
  int fin = isfinite(a) && isfinite(b);
  switch (r->kind) {
    case PG_RULE_EXACT: return a == b || nanpair;
    case PG_RULE_ULP: return (fin && u <= (uint64_t)r->ulp) || a == b || nanpair;
    default: return (fin && fabs(a - b) <= r->atol + r->rtol * fabs(b)) || a == b || nanpair;
  }
}

static void reference(enum pg_dtype t, const void *pa, const void *pb, int64_t n,
                      const struct pg_cmp_rule *r, struct ref *o) {
  memset(o, 0, sizeof *o);
  o->max_abs = o->max_rel = -1;
  o->max_abs_at = o->max_rel_at = -1;
  double large = r->rtol > 0 ? r->atol / r->rtol : INFINITY;
  double b0 = n ? pg_load_f64(pb, t, 0) : 0;
  for (int64_t i = 0; i < n; i++) {
    double a = pg_load_f64(pa, t, (size_t)i), b = pg_load_f64(pb, t, (size_t)i);
    uint64_t u = ulp_dist(t, pa, pb, i);
    int fin = isfinite(a) && isfinite(b);
    int pass = elem_pass(r, a, b, u);
    if (!pass) {
      o->mism++;
      if (!fin) o->mism_nf++;
      if (o->n_first < PG_CMP_FIRST_MISMATCHES) o->first[o->n_first++] = i;
    }
    o->nan_a += isnan(a) != 0;
    o->nan_b += isnan(b) != 0;
    o->inf_a += isinf(a) != 0;
    o->inf_b += isinf(b) != 0;
    o->zeros += b == 0;
    o->bal += (a > b) - (a < b);
    if (!(b == b0)) o->nonconst = 1;
    double d = fabs(a - b), den = fabs(b) + 1e-8;
    if (fin) {
      o->n_finite++;
      o->sum_abs += d;
      o->sum_sq += d * d;
      o->sum_ab += a * b;
      o->sum_aa += a * a;
      o->sum_bb += b * b;
      if (d > o->max_abs) o->max_abs = d, o->max_abs_at = i;
      if (d / den > o->max_rel) o->max_rel = d / den, o->max_rel_at = i;
      if (u > o->max_ulp) o->max_ulp = u;
      if (fabs(b) >= large) {
        o->large = 1;
        if (d > den * (r->rtol / 100.0)) o->large_bad = 1;
      }
    }
    o->w3 += (fin && d <= den * 1e-3) || a == b;
    o->w53 += (fin && d <= den * 5e-3) || a == b;
  }
}

static int near(double x, double y) { return fabs(x - y) <= 1e-12 * fmax(fabs(x), fabs(y)) + 1e-300; }

/* pg_tensor_compare on data at pa/pb (any alignment of the element type) against the
 * reference o (NULL: computed here); returns the number of failed checks so callers
 * can name the case. */
static int check_ref(enum pg_dtype t, void *pa, void *pb, int64_t n, const struct pg_cmp_rule *r,
                     int threads, const struct ref *op) {
  int64_t shape[1] = {n};
  DLTensor da, db;
  memset(&da, 0, sizeof da);
  da.data = pa;
  da.device.device_type = kDLCPU;
  da.ndim = 1;
  da.shape = shape;
  da.dtype = pg_dtype_to_dl(t);
  db = da;
  db.data = pb;
  struct pg_cmp_result res;
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_tensor_compare(&da, &db, r, threads, &res, &err) != PG_OK) return 1;
  struct ref o;
  if (op) o = *op;
  else reference(t, pa, pb, n, r, &o);
  int bad = 0;
  bad += res.mismatches != o.mism;
  bad += res.mismatches_nonfinite != o.mism_nf;
  bad += res.n_finite != o.n_finite;
  bad += res.nan_impl != o.nan_a || res.nan_ref != o.nan_b;
  bad += res.inf_impl != o.inf_a || res.inf_ref != o.inf_b;
  bad += res.zeros_ref != o.zeros;
  if (n) {
    bad += res.error_balance != (double)o.bal / (double)n;
    bad += res.share_within_1e3 != (double)o.w3 / (double)n;
    bad += res.share_within_5e3 != (double)o.w53 / (double)n;
  }
  bad += res.max_ulp != (double)o.max_ulp;
  if (o.max_abs_at >= 0) {
    bad += res.max_abs_diff != o.max_abs || res.max_abs_flat != o.max_abs_at;
    bad += res.max_rel_diff != o.max_rel || res.max_rel_flat != o.max_rel_at;
    double nf = (double)o.n_finite;
    bad += !near(res.mean_abs_diff, o.sum_abs / nf);
    bad += !near(res.rmse, sqrt(o.sum_sq / nf));
    double na = sqrt(o.sum_aa), nb = sqrt(o.sum_bb);
    double cs = na == 0 && nb == 0 ? 1.0 : (na == 0 || nb == 0) ? 0.0 : o.sum_ab / na / nb;
    bad += fabs(res.cosine_similarity - cs) > 1e-12;
  } else {
    bad += res.max_abs_flat != -1 || res.max_rel_flat != -1;
  }
  bad += res.n_first != o.n_first;
  for (int i = 0; i < o.n_first && i < res.n_first; i++) bad += res.first_flat[i] != o.first[i];
  int passed = r->kind == PG_RULE_RATIO ? (double)o.mism <= r->ratio * (double)n : o.mism == 0;
  bad += res.passed != passed;
  int cand = !passed && (r->kind == PG_RULE_ALLCLOSE || r->kind == PG_RULE_RATIO) && r->rtol > 0 &&
             o.mism > 0 && o.mism_nf == 0 && o.large && !o.large_bad &&
             o.max_abs <= r->rtol * sqrt(o.sum_bb / (double)o.n_finite);
  bad += res.cpu_reproducer_candidate != cand;
  int mistrust = n >= 10 && (o.zeros * 10 >= n * 3 || (o.nan_b == 0 && !o.nonconst));
  bad += res.mistrusted != mistrust;
  return bad;
}

static int check_one(enum pg_dtype t, void *pa, void *pb, int64_t n, const struct pg_cmp_rule *r,
                     int threads) {
  return check_ref(t, pa, pb, n, r, threads, NULL);
}

/* ---- data ----------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t x = *s ^ (*s >> 29);
  return x * 0xbf58476d1ce4e5b9ull ^ (x >> 32);
}

static double uni(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }

/* b and a = b + small noise, with a sprinkling of the special cases the kernels
 * branch on: (flags & 1) NaN/Inf, (flags & 2) sign flips, -0 and exact zeros,
 * (flags & 4) a few tolerance failures, (flags & 8) relative noise 1e-7 with rare
 * outliers at 2e-4 .. 0.5 (blocks start in a tight mode and must fall back). */
static void fill(enum pg_dtype t, void *pa, void *pb, int64_t n, uint64_t seed, int flags) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; i++) {
    double b = (uni(&s) * 4 - 2) * (uni(&s) < 0.1 ? 1e-6 : 1.0);
    double a = b * (1 + (uni(&s) - 0.5) * 2e-3) + (uni(&s) - 0.5) * 1e-9;
    double k = uni(&s);
    if (flags & 8) { /* quiet data (the tight hot modes) with rare outliers */
      static const double out[5] = {2e-4, 5e-4, 1e-3, 2e-3, 6e-3};
      a = b * (1 + (uni(&s) - 0.5) * 2e-7);
      if (k < 3e-4) a = b * (1 + out[rng_next(&s) % 5]);
      if (k < 3e-6) a = b * 1.5;
      k = uni(&s) * 0.015 + 0.985 * (uni(&s) < 0.9995 ? 0 : 1); /* NaN/Inf: rare */
    }
    if (flags & 2) {
      if (k < 0.02) a = -b;
      else if (k < 0.04) a = -0.0, b = 0.0;
      else if (k < 0.06) b = 0.0;
    }
    if ((flags & 4) && k > 0.97) a = b + 0.5;
    if ((flags & 1) && k > 0.985) {
      double sp[4] = {NAN, INFINITY, -INFINITY, NAN};
      if (uni(&s) < 0.5) a = sp[rng_next(&s) & 3];
      else b = sp[rng_next(&s) & 3];
    }
    pg_store_f64(pb, t, (size_t)i, b);
    pg_store_f64(pa, t, (size_t)i, a);
  }
}

static const enum pg_dtype k_types[4] = {PG_DTYPE_F32, PG_DTYPE_F16, PG_DTYPE_BF16, PG_DTYPE_F64};
static const char *const k_simd[3] = {"base", "avx2", "avx512"};

static struct pg_cmp_rule rule_of(int k, enum pg_dtype t) {
  struct pg_cmp_rule r;
  pg_cmp_rule_init(&r, t);
  r.atol = 1e-6;
  r.rtol = t == PG_DTYPE_BF16 ? 1e-2 : 1e-3;
  switch (k) {
    case 1: r.kind = PG_RULE_EXACT; break;
    case 2: r.kind = PG_RULE_ULP, r.ulp = 3; break;
    case 3: r.kind = PG_RULE_RATIO, r.ratio = 0.05; break;
    case 4: r.equal_nan = 1; break;
    default: break;
  }
  return r;
}

/* Every length 0..70 at element offsets 0..3 from a 64-byte boundary, copied into a
 * heap block of exactly that size so ASan flags any read past either tensor. */
PG_TEST(odd_lengths_unaligned_starts) {
  {
    for (int ti = 0; ti < 4; ti++) {
      enum pg_dtype t = k_types[ti];
      size_t es = pg_dtype_size(t);
      for (int n = 0; n <= 70; n++) {
        for (int off = 0; off < 4; off++) {
          size_t bytes = (size_t)(n + off) * es;
          char *ba = malloc(bytes ? bytes : 1), *bb = malloc(bytes ? bytes : 1);
          PG_CHECK(ba && bb);
          void *pa = ba + (size_t)off * es, *pb = bb + (size_t)off * es;
          int flags = (n + off) % 8;
          fill(t, pa, pb, n, (uint64_t)(n * 4 + off), flags);
          for (int k = 0; k < 5; k++) {
            struct pg_cmp_rule r = rule_of(k, t);
            struct ref o;
            reference(t, pa, pb, n, &r, &o);
            for (int v = 0; v < 3; v++) {
              setenv("PHASEGATE_SIMD", k_simd[v], 1);
              int bad = check_ref(t, pa, pb, n, &r, 1, &o);
              PG_CHECK_MSG(bad == 0, "%s %s n=%d off=%d flags=%d rule=%d: %d checks differ",
                           k_simd[v], pg_dtype_name(t), n, off, flags, k, bad);
            }
          }
          free(ba);
          free(bb);
        }
      }
    }
  }
  unsetenv("PHASEGATE_SIMD");
}

/* Multi-block, multi-chunk tensors: hot blocks, NaN/Inf blocks, sign-flip blocks
 * (exact ULP recomputation), failing blocks; 1 and 3 threads; every variant. */
PG_TEST(blocks_and_chunks_match_reference) {
  const int64_t sizes[3] = {1024 * 3 + 16, 65536 + 2048 + 7, 65536 + 48};
  for (int ti = 0; ti < 4; ti++) {
    enum pg_dtype t = k_types[ti];
    for (int si = 0; si < 3; si++) {
      int64_t n = sizes[si];
      size_t es = pg_dtype_size(t);
      char *ba = malloc((size_t)n * es + 8), *bb = malloc((size_t)n * es + 8);
      PG_CHECK(ba && bb);
      void *pa = ba + es, *pb = bb + es; /* unaligned start */
      int flags = (si * 3 + ti) % 8;
      fill(t, pa, pb, n - 1, (uint64_t)(si * 10 + ti), flags);
      for (int k = 0; k < 5; k++) {
        struct pg_cmp_rule r = rule_of(k, t);
        struct ref o;
        reference(t, pa, pb, n - 1, &r, &o);
        for (int v = 0; v < 3; v++) {
          setenv("PHASEGATE_SIMD", k_simd[v], 1);
          for (int th = 1; th <= 3; th += 2) {
            int bad = check_ref(t, pa, pb, n - 1, &r, th, &o);
            PG_CHECK_MSG(bad == 0, "%s %s n=%lld flags=%d rule=%d threads=%d: %d checks differ",
                         k_simd[v], pg_dtype_name(t), (long long)(n - 1), flags, k, th, bad);
          }
        }
      }
      free(ba);
      free(bb);
    }
  }
  unsetenv("PHASEGATE_SIMD");
}

/* One opposite-sign pair inside an otherwise same-sign block holds the largest ULP
 * distance: the same-sign shortcut must hand the block to the exact recomputation. */
PG_TEST(sign_difference_sets_max_ulp) {
  for (int ti = 0; ti < 3; ti++) {
    enum pg_dtype t = k_types[ti];
    size_t es = pg_dtype_size(t);
    int64_t n = 2048;
    char *pa = calloc((size_t)n, es), *pb = calloc((size_t)n, es);
    PG_CHECK(pa && pb);
    for (int64_t i = 0; i < n; i++) {
      pg_store_f64(pb, t, (size_t)i, 1.0 + (double)(i % 7) / 8);
      pg_store_f64(pa, t, (size_t)i, 1.0 + (double)(i % 7) / 8);
    }
    pg_store_f64(pb, t, 1500, 0.5);
    pg_store_f64(pa, t, 1500, -0.5); /* ULP distance 2 * ordered(0.5) */
    uint64_t want = 2 * (uint64_t)ordered(t, pb, 1500);
    for (int v = 0; v < 3; v++) {
      setenv("PHASEGATE_SIMD", k_simd[v], 1);
      struct pg_cmp_rule r;
      pg_cmp_rule_init(&r, t);
      r.kind = PG_RULE_ULP;
      r.ulp = (int64_t)want - 1; /* fails by one ulp */
      struct pg_cmp_result res;
      int64_t shape[1] = {n};
      DLTensor da;
      memset(&da, 0, sizeof da);
      da.device.device_type = kDLCPU;
      da.ndim = 1;
      da.shape = shape;
      da.dtype = pg_dtype_to_dl(t);
      DLTensor db = da;
      da.data = pa;
      db.data = pb;
      PG_CHECK_OK(pg_tensor_compare(&da, &db, &r, 1, &res, NULL));
      PG_CHECK(res.max_ulp == (double)want);
      PG_CHECK_EQ_INT(1, res.mismatches);
      PG_CHECK_EQ_INT(1500, res.first_flat[0]);
      PG_CHECK_EQ_INT(-1, (int64_t)(res.error_balance * (double)n));
      r.ulp = (int64_t)want;
      PG_CHECK_OK(pg_tensor_compare(&da, &db, &r, 1, &res, NULL));
      PG_CHECK(res.passed && res.max_ulp == (double)want);
      /* +0 against -0: equal, 0 ulp apart, a sign difference all the same */
      pg_store_f64(pb, t, 1500, 0.0);
      pg_store_f64(pa, t, 1500, -0.0);
      r.ulp = 0;
      PG_CHECK_OK(pg_tensor_compare(&da, &db, &r, 1, &res, NULL));
      PG_CHECK(res.passed && res.max_ulp == 0 && res.error_balance == 0);
      pg_store_f64(pb, t, 1500, 0.5);
      pg_store_f64(pa, t, 1500, -0.5);
    }
    unsetenv("PHASEGATE_SIMD");
    free(pa);
    free(pb);
  }
}

/* The largest |a-b| occurs twice, in different chunks, and is discovered by a later
 * chunk first under 2 threads: the earliest index must still win. */
PG_TEST(max_abs_ties_across_chunks) {
  int64_t n = 65536 * 4;
  for (int ti = 0; ti < 3; ti++) {
    enum pg_dtype t = k_types[ti];
    size_t es = pg_dtype_size(t);
    char *pa = calloc((size_t)n, es), *pb = calloc((size_t)n, es);
    PG_CHECK(pa && pb);
    for (int64_t i = 0; i < n; i++) {
      pg_store_f64(pb, t, (size_t)i, 1.0);
      pg_store_f64(pa, t, (size_t)i, i % 3 ? 1.0 : 1.0 + 1.0 / 64);
    }
    pg_store_f64(pa, t, 65536 * 3 + 99, 3.0);
    pg_store_f64(pa, t, 65536 * 1 + 7, 3.0);
    pg_store_f64(pa, t, 65536 * 2 + 5, 3.0);
    for (int v = 1; v < 3; v++) {
      setenv("PHASEGATE_SIMD", k_simd[v], 1);
      for (int th = 1; th <= 4; th++) {
        struct pg_cmp_rule r;
        pg_cmp_rule_init(&r, t);
        PG_CHECK_EQ_INT(0, check_one(t, pa, pb, n, &r, th));
      }
    }
    unsetenv("PHASEGATE_SIMD");
    free(pa);
    free(pb);
  }
}

/* cpu_reproducer_candidate needs "no large cell is bad", found by a separate pass:
 * true when the only failures are small-|b| cells, false when one large cell far
 * from any block with a failure is 1 % off, under every thread count. */
PG_TEST(cpu_reproducer_candidate_lazy_pass) {
  int64_t n = 65536 * 3 + 100;
  enum pg_dtype t = PG_DTYPE_F32;
  float *pa = malloc((size_t)n * 4), *pb = malloc((size_t)n * 4);
  PG_CHECK(pa && pb);
  for (int64_t i = 0; i < n; i++) {
    pb[i] = i % 2 ? 10.0f + (float)(i % 100) : 1e-7f;
    pa[i] = pb[i];
  }
  pa[70000] = 3e-5f; /* |b| small: fails only through atol */
  struct pg_cmp_rule r;
  pg_cmp_rule_init(&r, t);
  r.atol = 1e-5;
  r.rtol = 1e-3;
  for (int v = 0; v < 3; v++) {
    setenv("PHASEGATE_SIMD", k_simd[v], 1);
    for (int th = 1; th <= 3; th++) PG_CHECK_EQ_INT(0, check_one(t, pa, pb, n, &r, th));
  }
  pa[65536 * 2 + 11] = pb[65536 * 2 + 11] * 1.00002f; /* large, passes, but not 100x inside */
  for (int v = 0; v < 3; v++) {
    setenv("PHASEGATE_SIMD", k_simd[v], 1);
    for (int th = 1; th <= 3; th++) {
      PG_CHECK_EQ_INT(0, check_one(t, pa, pb, n, &r, th));
      struct pg_cmp_result res;
      int64_t shape[1] = {n};
      DLTensor da;
      memset(&da, 0, sizeof da);
      da.device.device_type = kDLCPU;
      da.ndim = 1;
      da.shape = shape;
      da.dtype = pg_dtype_to_dl(t);
      DLTensor db = da;
      da.data = pa;
      db.data = pb;
      PG_CHECK_OK(pg_tensor_compare(&da, &db, &r, th, &res, NULL));
      PG_CHECK(!res.passed && !res.cpu_reproducer_candidate);
    }
  }
  unsetenv("PHASEGATE_SIMD");
  free(pa);
  free(pb);
}

/* Quiet data puts the hot kernels in their tight modes (no within / allclose tests
 * while max_rel stays small); rare outliers, sometimes failing, sometimes only
 * beyond 1e-3, must send their block back to the full kernel with exact counts. */
PG_TEST(tight_modes_fall_back_exactly) {
  int64_t n = 65536 + 4096;
  for (int ti = 0; ti < 4; ti++) {
    enum pg_dtype t = k_types[ti];
    size_t es = pg_dtype_size(t);
    char *pa = malloc((size_t)n * es), *pb = malloc((size_t)n * es);
    PG_CHECK(pa && pb);
    for (int run = 0; run < 2; run++) {
      int flags = 8 | (run & 1);
      fill(t, pa, pb, n, (uint64_t)(run + 100 * ti), flags);
      for (int k = 0; k < 6; k++) {
        struct pg_cmp_rule r = rule_of(k % 5, t);
        if (k == 0) r.atol = 1e-5, r.rtol = 1e-2; /* outliers up to 6e-3 pass */
        if (k == 5) r.atol = 1e-6, r.rtol = 1e-4; /* outliers from 2e-4 up fail */
        struct ref o;
        reference(t, pa, pb, n, &r, &o);
        for (int v = 0; v < 3; v++) {
          setenv("PHASEGATE_SIMD", k_simd[v], 1);
          for (int th = 1; th <= 3; th += 2) {
            int bad = check_ref(t, pa, pb, n, &r, th, &o);
            PG_CHECK_MSG(bad == 0, "%s %s run=%d rule=%d threads=%d: %d checks differ", k_simd[v],
                         pg_dtype_name(t), run, k, th, bad);
          }
        }
      }
    }
    unsetenv("PHASEGATE_SIMD");
    free(pa);
    free(pb);
  }
}
