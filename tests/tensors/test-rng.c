/* tests/tensors — Philox-4x32-10 known answers (Random123 kat_vectors), the portable
 * log/sincos against libm, fill-spec parsing, and the fills: determinism across thread
 * counts, statistics, exact integers and special-value injection. */
#include <math.h>
#include <string.h>

#include "opdir/opdir.h"
#include "tensors/tensors.h"
#include "pg_test.h"
#include "tensors/rng.h"

static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3) {
  uint32_t ctr[4] = {c0, c1, c2, c3}, key[2] = {k0, k1}, out[4];
  pg_philox4x32_10(ctr, key, out);
  PG_CHECK_MSG(out[0] == e0 && out[1] == e1 && out[2] == e2 && out[3] == e3,
               "philox4x32_10 got %08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
}

PG_TEST(philox_known_answers) {
  kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
      0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
      0x94fdcceb, 0x5001e420, 0x24126ea1);
}

PG_TEST(fnv1a_known_answers) {
  PG_CHECK(pg_fnv1a64("") == 0xcbf29ce484222325ull);
  PG_CHECK(pg_fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  PG_CHECK(pg_fnv1a64("foobar") == 0x85944171f73967e8ull);
}

PG_TEST(portable_log_and_sincos_match_libm) {
  for (int i = 0; i < 200000; i++) {
    double u = pg_rng_u01((uint32_t)(i * 2654435761u));
    double l = pg__rng_log(u), ref = log(u);
    PG_CHECK_MSG(fabs(l - ref) <= 2e-15 * fabs(ref) + 1e-300, "log(%.17g) = %.17g vs %.17g", u,
                 l, ref);
    double s, c;
    pg__rng_sincos2pi(u, &s, &c);
    double rs = sin(2 * M_PI * u), rc = cos(2 * M_PI * u);
    PG_CHECK_MSG(fabs(s - rs) < 1e-15 && fabs(c - rc) < 1e-15, "sincos2pi(%.17g)", u);
  }
  PG_CHECK_NEAR(0.0, pg__rng_log(1.0), 0);
  PG_CHECK_NEAR(log(1e300), pg__rng_log(1e300), 1e-12);
  PG_CHECK_NEAR(log(4.9e-324), pg__rng_log(4.9e-324), 1e-12);
  PG_CHECK(isinf(pg__rng_log(0.0)) && pg__rng_log(0.0) < 0);
  PG_CHECK(isnan(pg__rng_log(-1.0)));
}

/* ---- parser ---- */

static void parse_ok(const char *text, enum pg_fill_kind kind, double a, double b) {
  struct pg_fill f;
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_fill_parse(text, &f, &err);
  PG_CHECK_MSG(rc == PG_OK, "'%s': %s", text, err.message);
  PG_CHECK_MSG(f.kind == kind && f.a == a && f.b == b, "'%s' parsed as %d(%g, %g)", text,
               (int)f.kind, f.a, f.b);
}

static void parse_bad(const char *text, int column, const char *needle) {
  struct pg_fill f;
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_fill_parse(text, &f, &err);
  PG_CHECK_MSG(rc == PG_EPARSE, "'%s' should not parse", text);
  PG_CHECK_MSG(err.column == column, "'%s': column %d, expected %d (%s)", text, err.column,
               column, err.message);
  PG_CHECK_MSG(strstr(err.message, needle), "'%s': message '%s' lacks '%s'", text, err.message,
               needle);
}

PG_TEST(fill_parse_accepts_the_grammar) {
  parse_ok("normal(0, 1)", PG_FILL_NORMAL, 0, 1);
  parse_ok("  normal ( -1e3 ,2.5E-1 )  ", PG_FILL_NORMAL, -1e3, 0.25);
  parse_ok("uniform(-1, 1)", PG_FILL_UNIFORM, -1, 1);
  parse_ok("uniform(.5, 1.)", PG_FILL_UNIFORM, 0.5, 1);
  parse_ok("int(-3, 3)", PG_FILL_INT, -3, 3);
  parse_ok("zeros", PG_FILL_ZEROS, 0, 0);
  parse_ok("ones", PG_FILL_ONES, 0, 0);
  parse_ok("arange", PG_FILL_ARANGE, 0, 1);
  parse_ok("arange(2, 0.5)", PG_FILL_ARANGE, 2, 0.5);
  parse_ok("const(+7)", PG_FILL_CONST, 7, 0);
  parse_ok("arange with nan:0.5", PG_FILL_ARANGE, 0, 1);
  parse_ok("zeros with -0:1", PG_FILL_ZEROS, 0, 0);
  parse_ok("arange (1, 2) with inf:0.1", PG_FILL_ARANGE, 1, 2);
  struct pg_fill f;
  PG_CHECK_OK(pg_fill_parse("uniform(-1, 1) with nan:0.01,-0:0.05 , inf:0, -inf : 1e-3, "
                            "denormal:0.1", &f, NULL));
  PG_CHECK(f.special[PG_SPECIAL_NAN] == 0.01 && f.special[PG_SPECIAL_NEG_ZERO] == 0.05);
  PG_CHECK(f.special[PG_SPECIAL_INF] == 0 && f.special[PG_SPECIAL_NEG_INF] == 1e-3);
  PG_CHECK(f.special[PG_SPECIAL_DENORMAL] == 0.1);
}

PG_TEST(fill_parse_rejects_with_columns) {
  parse_bad("", 1, "expected a fill name");
  parse_bad("gauss(0, 1)", 1, "unknown fill 'gauss'");
  parse_bad("normal(0 1)", 10, "expected ','");
  parse_bad("normal(0, 1", 12, "expected ')'");
  parse_bad("normal(0, 1, 2)", 12, "expected ')'");
  parse_bad("normal(0, -1)", 1, "sigma >= 0");
  parse_bad("normal(a, 1)", 8, "expected a number");
  parse_bad("normal(1e, 1)", 10, "exponent digits");
  parse_bad("normal(1x, 1)", 9, "unexpected character");
  parse_bad("uniform(1, -1)", 1, "lo <= hi");
  parse_bad("int(0.5, 3)", 1, "integer bounds");
  parse_bad("int(0, 1e10)", 1, "2^32");
  parse_bad("zeros(3)", 6, "unexpected text");
  parse_bad("ones with", 10, "expected a special value");
  parse_bad("ones with nan", 14, "expected ':'");
  parse_bad("ones with nan:2", 15, "fraction must be in [0, 1]");
  parse_bad("ones with nan:0.1,nan:0.2", 19, "given twice");
  parse_bad("ones with nan:0.6,inf:0.6", 5, "more than 1");
  parse_bad("ones with nan:0.1 inf:0.1", 19, "expected ','");
  parse_bad("ones withnan:0.1", 6, "unexpected text");
  parse_bad("arangewith nan:0.1", 1, "unknown fill 'arangewith'");
  parse_bad("arange nan:0.1", 8, "unexpected text");
  parse_bad("normal(1e999, 1)", 8, "out of range");
  parse_bad("const()", 7, "expected a number");
}

/* ---- generation ---- */

static void gen(struct pg_tensor *t, enum pg_dtype dt, int64_t n, const char *spec, uint64_t seed,
                const char *name, int threads) {
  struct pg_fill f;
  struct pg_error err;
  pg_tensor_init(t);
  PG_CHECK_OK(pg_fill_parse(spec, &f, &err));
  PG_CHECK_OK(pg_tensor_alloc(t, dt, 1, &n, &err));
  int rc = pg_fill_generate(t, &f, seed, name, threads, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
}

PG_TEST(fill_identical_for_any_thread_count) {
  const char *specs[] = {"normal(0, 1) with nan:0.01,denormal:0.01", "uniform(-2, 3)",
                         "int(-5, 5)"};
  enum pg_dtype dts[] = {PG_DTYPE_F32, PG_DTYPE_BF16, PG_DTYPE_F16};
  for (int s = 0; s < 3; s++) {
    struct pg_tensor ref;
    int64_t n = 300001; /* not a multiple of 4 or of any thread count */
    gen(&ref, dts[s], n, specs[s], 42, "q", 1);
    for (int th = 2; th <= 7; th++) {
      struct pg_tensor t;
      gen(&t, dts[s], n, specs[s], 42, "q", th);
      PG_CHECK_MSG(memcmp(t.dl.data, ref.dl.data, ref.nbytes) == 0, "%s differs with %d threads",
                   specs[s], th);
      pg_tensor_reset(&t);
    }
    /* A prefix is the same whatever the total length: element i depends only on i. */
    struct pg_tensor p;
    gen(&p, dts[s], 1001, specs[s], 42, "q", 3);
    PG_CHECK(memcmp(p.dl.data, ref.dl.data, p.nbytes) == 0);
    pg_tensor_reset(&p);
    pg_tensor_reset(&ref);
  }
}

PG_TEST(fill_f32_fast_path_matches_f64_rounded) {
  /* float32 without specials takes a separate loop; it must equal (float) of the f64
   * values, which go through the generic loop, for every length tail and thread count */
  const char *specs[] = {"normal(0.5, 2)", "uniform(-3, 7)"};
  for (int s = 0; s < 2; s++)
    for (int64_t n = 131089; n <= 131095; n += 3)
      for (int th = 1; th <= 3; th++) {
        struct pg_tensor f, d;
        gen(&f, PG_DTYPE_F32, n, specs[s], 11, "w", th);
        gen(&d, PG_DTYPE_F64, n, specs[s], 11, "w", 1);
        for (int64_t i = 0; i < n; i++)
          PG_CHECK_MSG(((float *)f.dl.data)[i] == (float)((double *)d.dl.data)[i],
                       "%s n=%lld threads=%d element %lld", specs[s], (long long)n, th, (long long)i);
        pg_tensor_reset(&f);
        pg_tensor_reset(&d);
      }
}

PG_TEST(fill_depends_on_seed_and_name) {
  struct pg_tensor a, b, c;
  gen(&a, PG_DTYPE_F32, 1000, "normal(0, 1)", 1, "q", 1);
  gen(&b, PG_DTYPE_F32, 1000, "normal(0, 1)", 2, "q", 1);
  gen(&c, PG_DTYPE_F32, 1000, "normal(0, 1)", 1, "k", 1);
  PG_CHECK(memcmp(a.dl.data, b.dl.data, a.nbytes) != 0);
  PG_CHECK(memcmp(a.dl.data, c.dl.data, a.nbytes) != 0);
  /* Pinned bits: the generator is a format; changing it silently breaks repro files. */
  const float *x = a.dl.data;
  uint32_t h = 2166136261u;
  for (int i = 0; i < 1000; i++) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    h = (h ^ u) * 16777619u;
  }
  printf("# normal f32 seed 1 'q' hash %08x, x[0..3] = %.9g %.9g %.9g %.9g\n", h, x[0], x[1],
         x[2], x[3]);
  PG_CHECK_MSG(h == 0x7cc8f886u, "the generator's output changed (hash %08x)", h);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  pg_tensor_reset(&c);
}

static void moments(const struct pg_tensor *t, double *mean, double *var, double *lo,
                    double *hi) {
  double s = 0, s2 = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = pg_load_f64(t->dl.data, t->dtype, (size_t)i);
    s += v;
    s2 += v * v;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
  *mean = s / (double)t->numel;
  *var = s2 / (double)t->numel - *mean * *mean;
}

PG_TEST(fill_statistics) {
  struct pg_tensor t;
  double m, v, lo, hi;
  gen(&t, PG_DTYPE_F64, 1000000, "normal(3, 2)", 9, "x", 0);
  moments(&t, &m, &v, &lo, &hi);
  PG_CHECK_NEAR(3.0, m, 0.01);
  PG_CHECK_NEAR(4.0, v, 0.03);
  PG_CHECK(lo > 3 - 2 * 7 && hi < 3 + 2 * 7 && lo < 3 - 2 * 4 && hi > 3 + 2 * 4);
  /* tail share: P(|z| > 2) = 0.0455 */
  int64_t tail = 0;
  for (int64_t i = 0; i < t.numel; i++) tail += fabs(((double *)t.dl.data)[i] - 3) > 4;
  PG_CHECK_NEAR(0.0455, (double)tail / 1e6, 0.002);
  pg_tensor_reset(&t);

  gen(&t, PG_DTYPE_F32, 1000000, "uniform(-1, 3)", 9, "x", 0);
  moments(&t, &m, &v, &lo, &hi);
  PG_CHECK_NEAR(1.0, m, 0.01);
  PG_CHECK_NEAR(16.0 / 12.0, v, 0.01);
  PG_CHECK(lo >= -1 && hi <= 3 && lo < -0.999 && hi > 2.999);
  pg_tensor_reset(&t);

  gen(&t, PG_DTYPE_I32, 1000000, "int(-3, 4)", 9, "x", 0);
  int64_t counts[8] = {0};
  for (int64_t i = 0; i < t.numel; i++) {
    int32_t x = ((int32_t *)t.dl.data)[i];
    PG_CHECK(x >= -3 && x <= 4);
    counts[x + 3]++;
  }
  for (int k = 0; k < 8; k++) PG_CHECK_NEAR(125000.0, (double)counts[k], 2500);
  pg_tensor_reset(&t);

  /* every value of int(lo, hi) in a narrow dtype appears and is exact */
  gen(&t, PG_DTYPE_F16, 100000, "int(-2048, 2047)", 3, "x", 2);
  static int seen[4096];
  memset(seen, 0, sizeof seen);
  for (int64_t i = 0; i < t.numel; i++) {
    double x = pg_load_f64(t.dl.data, t.dtype, (size_t)i);
    PG_CHECK(x == floor(x) && x >= -2048 && x <= 2047);
    seen[(int)x + 2048] = 1;
  }
  for (int k = 0; k < 4096; k++) PG_CHECK_MSG(seen[k], "int fill never produced %d", k - 2048);
  pg_tensor_reset(&t);
}

PG_TEST(fill_constant_kinds) {
  struct pg_tensor t;
  gen(&t, PG_DTYPE_F16, 10, "arange(1, 0.5)", 0, "x", 1);
  for (int i = 0; i < 10; i++) PG_CHECK(pg_load_f64(t.dl.data, t.dtype, (size_t)i) == 1 + 0.5 * i);
  pg_tensor_reset(&t);
  gen(&t, PG_DTYPE_I64, 7, "arange", 0, "x", 1);
  for (int i = 0; i < 7; i++) PG_CHECK(((int64_t *)t.dl.data)[i] == i);
  pg_tensor_reset(&t);
  gen(&t, PG_DTYPE_BF16, 5, "const(-2.5)", 0, "x", 1);
  for (int i = 0; i < 5; i++) PG_CHECK(pg_load_f64(t.dl.data, t.dtype, (size_t)i) == -2.5);
  pg_tensor_reset(&t);
  gen(&t, PG_DTYPE_U8, 5, "ones", 0, "x", 1);
  for (int i = 0; i < 5; i++) PG_CHECK(((uint8_t *)t.dl.data)[i] == 1);
  pg_tensor_reset(&t);
  gen(&t, PG_DTYPE_F64, 5, "zeros", 0, "x", 1);
  for (int i = 0; i < 5; i++) PG_CHECK(((double *)t.dl.data)[i] == 0 && !signbit(((double *)t.dl.data)[i]));
  pg_tensor_reset(&t);
}

PG_TEST(fill_special_injection) {
  struct pg_tensor t;
  const int64_t n = 200000;
  enum pg_dtype dts[] = {PG_DTYPE_F32, PG_DTYPE_F16, PG_DTYPE_BF16, PG_DTYPE_F64};
  for (int d = 0; d < 4; d++) {
    gen(&t, dts[d], n, "uniform(1, 2) with nan:0.1,inf:0.05,-inf:0.05,denormal:0.1,-0:0.2", 5,
        "x", 2);
    int64_t c[6] = {0};
    for (int64_t i = 0; i < n; i++) {
      double v = pg_load_f64(t.dl.data, t.dtype, (size_t)i);
      if (isnan(v)) c[0]++;
      else if (isinf(v) && v > 0) c[1]++;
      else if (isinf(v)) c[2]++;
      else if (v == 0 && signbit(v)) c[4]++;
      else if (v > 0 && v < (dts[d] == PG_DTYPE_F16 ? 6.1e-5 : dts[d] == PG_DTYPE_F64 ? 2.3e-308 : 1.2e-38)) c[3]++;
      else if (v >= 1 && v <= 2) c[5]++;
      else PG_CHECK_MSG(0, "unexpected value %g", v);
    }
    PG_CHECK_NEAR(0.1, c[0] / (double)n, 0.005);
    PG_CHECK_NEAR(0.05, c[1] / (double)n, 0.005);
    PG_CHECK_NEAR(0.05, c[2] / (double)n, 0.005);
    PG_CHECK_NEAR(0.1, c[3] / (double)n, 0.005);
    PG_CHECK_NEAR(0.2, c[4] / (double)n, 0.005);
    PG_CHECK_NEAR(0.5, c[5] / (double)n, 0.005);
    pg_tensor_reset(&t);
  }
}

PG_TEST(fill_refuses_unrepresentable) {
  struct pg_fill f;
  struct pg_tensor t;
  struct pg_error err;
  int64_t n = 4;
  pg_tensor_init(&t);
  PG_CHECK_OK(pg_tensor_alloc(&t, PG_DTYPE_I32, 1, &n, &err));
  PG_CHECK_OK(pg_fill_parse("normal(0, 1) with nan:0.1", &f, &err));
  PG_CHECK_EQ_INT(PG_EDTYPE, pg_fill_generate(&t, &f, 0, "idx", 1, &err));
  PG_CHECK(strstr(err.message, "idx") && strstr(err.message, "int32"));
  pg_tensor_reset(&t);
  PG_CHECK_OK(pg_tensor_alloc(&t, PG_DTYPE_F16, 1, &n, &err));
  PG_CHECK_OK(pg_fill_parse("int(0, 4096)", &f, &err));
  PG_CHECK_EQ_INT(PG_EDTYPE, pg_fill_generate(&t, &f, 0, "x", 1, &err));
  PG_CHECK(strstr(err.message, "float16"));
  pg_tensor_reset(&t);
}
