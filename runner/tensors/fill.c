/* phasegate runner — fill specs: the strict parser (pg_fill_parse, grammar in
 * docs/interfaces.md) and the deterministic, multithreaded generator
 * (pg_fill_generate) on top of Philox-4x32-10 (philox.c).
 *
 * Element i depends only on (seed, input name, i): block i/4 of the value stream gives
 * four 32-bit words, word i%4 feeds element i (Box–Muller pairs words 0/1 and 2/3);
 * special values use an independent stream of the same family. log and sincos are
 * implemented here with plain IEEE double arithmetic so the bits do not depend on the
 * platform's libm. That scalar code is the definition; on x86-64 the same arithmetic
 * also runs in AVX2 / AVX-512F kernels picked at run time (tested bit-identical in
 * tests/tensor/test-rng-simd.c). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensors/tensors.h"
#include "tensors/rng.h"

/* Fused multiply-add would change low bits between platforms. ISO C mode (the
 * project's -std=c11) already keeps gcc from contracting; these also hold when this
 * file is built with -std=gnu11 or -ffp-contract=fast (tests/tensor checks both). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ------------------------------------------------------------------ parser */

struct cursor {
  const char *text;
  size_t pos;
  struct pg_error *err;
};

static int perr(struct cursor *c, size_t pos, const char *what) {
  int rc = pg_error_set(c->err, PG_EPARSE, "invalid fill '%s' at column %zu: %s", c->text,
                        pos + 1, what);
  if (c->err) c->err->column = (int)pos + 1;
  return rc;
}

static void skip_ws(struct cursor *c) {
  while (c->text[c->pos] == ' ' || c->text[c->pos] == '\t' || c->text[c->pos] == '\n' ||
         c->text[c->pos] == '\r')
    c->pos++;
}

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static int is_alpha(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* num := [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)? */
static int parse_num(struct cursor *c, double *out) {
  skip_ws(c);
  size_t start = c->pos, p = c->pos;
  const char *s = c->text;
  if (s[p] == '+' || s[p] == '-') p++;
  size_t int_digits = 0, frac_digits = 0;
  while (is_digit(s[p])) p++, int_digits++;
  if (s[p] == '.') {
    p++;
    while (is_digit(s[p])) p++, frac_digits++;
  }
  if (int_digits + frac_digits == 0) return perr(c, start, "expected a number");
  if (s[p] == 'e' || s[p] == 'E') {
    size_t q = p + 1, exp_digits = 0;
    if (s[q] == '+' || s[q] == '-') q++;
    while (is_digit(s[q])) q++, exp_digits++;
    if (exp_digits == 0) return perr(c, q, "expected exponent digits");
    p = q;
  }
  if (is_alpha(s[p]) || s[p] == '_') return perr(c, p, "unexpected character in a number");
  char buf[128];
  if (p - start >= sizeof buf) return perr(c, start, "number literal too long");
  memcpy(buf, s + start, p - start);
  buf[p - start] = '\0';
  errno = 0;
  char *end = NULL;
  double v = strtod(buf, &end);
  if (!end || *end != '\0') return perr(c, start, "expected a number");
  if (!isfinite(v)) return perr(c, start, "number out of range");
  *out = v;
  c->pos = p;
  return PG_OK;
}

static int expect(struct cursor *c, char ch, const char *what) {
  skip_ws(c);
  if (c->text[c->pos] != ch) return perr(c, c->pos, what);
  c->pos++;
  return PG_OK;
}

static int parse_args(struct cursor *c, int n, double *a, double *b, const char *fn) {
  char what[96];
  snprintf(what, sizeof what, "expected '(' after '%s'", fn);
  PG_RETURN_IF_ERROR(expect(c, '(', what));
  PG_RETURN_IF_ERROR(parse_num(c, a));
  if (n == 2) {
    snprintf(what, sizeof what, "expected ',' between the two parameters of %s()", fn);
    PG_RETURN_IF_ERROR(expect(c, ',', what));
    PG_RETURN_IF_ERROR(parse_num(c, b));
  }
  snprintf(what, sizeof what, "expected ')' closing %s() (it takes %d parameter%s)", fn, n,
           n == 1 ? "" : "s");
  return expect(c, ')', what);
}

static size_t read_word(const struct cursor *c, size_t p) {
  while (is_alpha(c->text[p]) || is_digit(c->text[p]) || c->text[p] == '_') p++;
  return p;
}

static int word_is(const struct cursor *c, size_t start, size_t end, const char *w) {
  return strlen(w) == end - start && memcmp(c->text + start, w, end - start) == 0;
}

static int parse_base(struct cursor *c, struct pg_fill *f) {
  skip_ws(c);
  size_t start = c->pos, end = read_word(c, c->pos);
  if (end == start) return perr(c, start, "expected a fill name (normal, uniform, int, zeros, "
                                          "ones, arange, const)");
  c->pos = end;
  if (word_is(c, start, end, "normal")) {
    f->kind = PG_FILL_NORMAL;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "normal"));
    if (f->b < 0) return perr(c, start, "normal(mu, sigma) needs sigma >= 0");
  } else if (word_is(c, start, end, "uniform")) {
    f->kind = PG_FILL_UNIFORM;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "uniform"));
    if (!(f->a <= f->b)) return perr(c, start, "uniform(lo, hi) needs lo <= hi");
    if (!isfinite(f->b - f->a)) return perr(c, start, "uniform(lo, hi) range overflows");
  } else if (word_is(c, start, end, "int")) {
    f->kind = PG_FILL_INT;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "int"));
    if (f->a != floor(f->a) || f->b != floor(f->b))
      return perr(c, start, "int(lo, hi) needs integer bounds");
    if (!(f->a <= f->b)) return perr(c, start, "int(lo, hi) needs lo <= hi");
    if (f->b - f->a >= 4294967296.0)
      return perr(c, start, "int(lo, hi) range is limited to 2^32 values");
  } else if (word_is(c, start, end, "zeros")) {
    f->kind = PG_FILL_ZEROS;
  } else if (word_is(c, start, end, "ones")) {
    f->kind = PG_FILL_ONES;
  } else if (word_is(c, start, end, "arange")) {
    f->kind = PG_FILL_ARANGE;
    f->a = 0.0;
    f->b = 1.0;
    size_t after = c->pos; /* keep the whitespace: "arange with nan:0.1" */
    skip_ws(c);
    if (c->text[c->pos] == '(') PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "arange"));
    else c->pos = after;
  } else if (word_is(c, start, end, "const")) {
    f->kind = PG_FILL_CONST;
    PG_RETURN_IF_ERROR(parse_args(c, 1, &f->a, NULL, "const"));
  } else {
    char what[160];
    snprintf(what, sizeof what, "unknown fill '%.*s' (expected normal, uniform, int, zeros, "
             "ones, arange, const)", (int)(end - start > 40 ? 40 : end - start), c->text + start);
    return perr(c, start, what);
  }
  return PG_OK;
}

static int parse_special(struct cursor *c, struct pg_fill *f, int seen[PG_SPECIAL_COUNT]) {
  skip_ws(c);
  size_t start = c->pos, p = c->pos;
  int neg = 0;
  if (c->text[p] == '-') neg = 1, p++;
  size_t end = read_word(c, p);
  int kind = -1;
  if (!neg && word_is(c, p, end, "nan")) kind = PG_SPECIAL_NAN;
  else if (!neg && word_is(c, p, end, "inf")) kind = PG_SPECIAL_INF;
  else if (neg && word_is(c, p, end, "inf")) kind = PG_SPECIAL_NEG_INF;
  else if (!neg && word_is(c, p, end, "denormal")) kind = PG_SPECIAL_DENORMAL;
  else if (neg && word_is(c, p, end, "0")) kind = PG_SPECIAL_NEG_ZERO;
  if (kind < 0)
    return perr(c, start, "expected a special value (nan, inf, -inf, denormal, -0)");
  if (seen[kind]) return perr(c, start, "special value given twice");
  seen[kind] = 1;
  c->pos = end;
  PG_RETURN_IF_ERROR(expect(c, ':', "expected ':' and a fraction after the special value"));
  skip_ws(c);
  size_t numpos = c->pos;
  double frac;
  PG_RETURN_IF_ERROR(parse_num(c, &frac));
  if (!(frac >= 0.0 && frac <= 1.0)) return perr(c, numpos, "fraction must be in [0, 1]");
  f->special[kind] = frac;
  return PG_OK;
}

int pg_fill_parse(const char *text, struct pg_fill *out, struct pg_error *err) {
  struct pg_fill f;
  memset(&f, 0, sizeof f);
  if (!text) text = "";
  struct cursor c = {text, 0, err};
  PG_RETURN_IF_ERROR(parse_base(&c, &f));
  size_t after_base = c.pos;
  skip_ws(&c);
  if (c.text[c.pos] != '\0') {
    size_t end = read_word(&c, c.pos);
    if (!word_is(&c, c.pos, end, "with") || c.pos == after_base)
      return perr(&c, c.pos, "unexpected text after the fill (special values follow ' with ')");
    c.pos = end;
    int seen[PG_SPECIAL_COUNT] = {0};
    double sum = 0;
    for (;;) {
      size_t at = c.pos;
      PG_RETURN_IF_ERROR(parse_special(&c, &f, seen));
      (void)at;
      skip_ws(&c);
      if (c.text[c.pos] == ',') {
        c.pos++;
        continue;
      }
      if (c.text[c.pos] != '\0') return perr(&c, c.pos, "expected ',' or the end of the fill");
      break;
    }
    for (int k = 0; k < PG_SPECIAL_COUNT; k++) sum += f.special[k];
    if (sum > 1.0) return perr(&c, after_base, "special-value fractions add up to more than 1");
  }
  *out = f;
  return PG_OK;
}

/* ------------------------------------------------------------------ portable math */

/* The cores are static inline so the batched normal path (normal16) can interleave
 * eight independent evaluations; the exported wrappers use the very same arithmetic. */

/* log(m * 2^e) for m in [0.5, 1): 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716 after
 * folding m below sqrt(1/2); the series to s^23 is far below double precision. */
/* Constants shared by the scalar definition and the SIMD kernels (same literals, same
 * doubles). */
#define PG_SQRT1_2 0.70710678118654752440
#define PG_LN2 0.69314718055994530942
#define PG_2PI 6.28318530717958647692
#define PG_INV_FACT17 (1.0 / 355687428096000.0)
#define PG_INV_FACT18 (1.0 / 6402373705728000.0)

static const double log_k[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                               1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};

static inline double log_core(double m, int e) {
  /* branchless (random inputs would mispredict half the time); *1 and *2 are exact */
  int lt = m < PG_SQRT1_2;
  m *= (double)(1 + lt);
  e -= lt;
  double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double p = log_k[0];
  for (size_t i = 1; i < sizeof log_k / sizeof *log_k; i++) p = p * s2 + log_k[i];
  return (double)e * PG_LN2 + 2.0 * s * p;
}

/* For normal positive x: split the fields directly (frexp is a libm call). */
static inline double log_normal(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int e = (int)(bits >> 52) - 1022;
  bits = (bits & 0x000fffffffffffffull) | 0x3fe0000000000000ull;
  double m;
  memcpy(&m, &bits, sizeof m); /* exact: m in [0.5, 1) */
  return log_core(m, e);
}

double pg__rng_log(double x) {
  if (!(x > 0)) return x == 0 ? -INFINITY : NAN;
  if (isinf(x)) return x;
  if (x >= 0x1p-1022) return log_normal(x);
  int e;
  double m = frexp(x, &e);
  return log_core(m, e);
}

static const double sin_k[] = {-1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,
                               1.0 / 362880.0,         -1.0 / 5040.0,      1.0 / 120.0,
                               -1.0 / 6.0,             1.0};
static const double cos_k[] = {-1.0 / 20922789888000.0, 1.0 / 87178291200.0, -1.0 / 479001600.0,
                               1.0 / 3628800.0,         -1.0 / 40320.0,      1.0 / 720.0,
                               -1.0 / 24.0,             0.5};

/* sin and cos of 2 pi u for u in (0, 1). Quarter turns are removed exactly: u - q/4
 * is exact, leaving |2 pi r| <= pi/4 for the Taylor polynomials (to t^17 / t^18). */
static inline void sincos_core(double u, double *sn, double *cs) {
  int q = (int)(u * 4.0 + 0.5);
  double r = u - (double)q * 0.25;
  double t = r * PG_2PI, t2 = t * t;
  double sp = PG_INV_FACT17;
  for (size_t i = 0; i < sizeof sin_k / sizeof *sin_k; i++) sp = sp * t2 + sin_k[i];
  double s = sp * t;
  double cp = PG_INV_FACT18;
  for (size_t i = 0; i < sizeof cos_k / sizeof *cos_k; i++) cp = cp * t2 + cos_k[i];
  double c = 1.0 - cp * t2;
  /* rotate by q quarter turns: q&1 swaps sin and cos, signs follow the quadrant;
   * selected by index rather than a (randomly mispredicted) switch */
  int odd = q & 1;
  double a = odd ? c : s, b = odd ? s : c;
  *sn = a * (double)(1 - 2 * ((q >> 1) & 1));       /* * +-1: exact */
  *cs = b * (double)(1 - 2 * (((q + 1) >> 1) & 1));
}

void pg__rng_sincos2pi(double u, double *sn, double *cs) {
  if (!(u > 0.0 && u < 1.0)) u -= floor(u); /* the fills only pass u in (0, 1) */
  sincos_core(u, sn, cs);
}

/* ------------------------------------------------------------------ generator */

struct fill_job {
  void *data;
  enum pg_dtype dtype;
  const struct pg_fill *fill;
  struct pg_rng_stream values, specials;
  int has_specials;
  double denormal;
  size_t begin, end; /* element range, begin % 4 == 0 */
  enum pg__fill_isa isa; /* resolved: never AUTO */
};

static inline void store(void *data, enum pg_dtype t, size_t i, double v) {
  if (t == PG_DTYPE_F32) ((float *)data)[i] = (float)v;
  else if (t == PG_DTYPE_F64) ((double *)data)[i] = v;
  else pg_store_f64(data, t, i, v);
}

static void block_values(const struct fill_job *j, uint64_t b, double v[4]) {
  const struct pg_fill *f = j->fill;
  uint32_t w[4];
  switch (f->kind) {
    case PG_FILL_NORMAL:
      pg_rng_block(&j->values, b, w);
      for (int k = 0; k < 4; k += 2) {
        double r = sqrt(-2.0 * log_normal(pg_rng_u01(w[k]))), s, c;
        sincos_core(pg_rng_u01(w[k + 1]), &s, &c);
        v[k] = f->a + f->b * (r * c);
        v[k + 1] = f->a + f->b * (r * s);
      }
      return;
    case PG_FILL_UNIFORM:
      pg_rng_block(&j->values, b, w);
      for (int k = 0; k < 4; k++) v[k] = f->a + (f->b - f->a) * pg_rng_u01(w[k]);
      return;
    case PG_FILL_INT: {
      pg_rng_block(&j->values, b, w);
      uint64_t range = (uint64_t)(f->b - f->a) + 1u; /* 1 .. 2^32 */
      for (int k = 0; k < 4; k++) v[k] = f->a + (double)(((uint64_t)w[k] * range) >> 32);
      return;
    }
    case PG_FILL_ZEROS: v[0] = v[1] = v[2] = v[3] = 0.0; return;
    case PG_FILL_ONES: v[0] = v[1] = v[2] = v[3] = 1.0; return;
    case PG_FILL_CONST: v[0] = v[1] = v[2] = v[3] = f->a; return;
    case PG_FILL_ARANGE:
      for (int k = 0; k < 4; k++) v[k] = f->a + f->b * (double)(b * 4 + (uint64_t)k);
      return;
  }
}

static double special_value(const struct fill_job *j, double u, double v) {
  const double *fr = j->fill->special;
  double acc = 0;
  static const double vals[PG_SPECIAL_COUNT] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  for (int k = 0; k < PG_SPECIAL_COUNT; k++) {
    acc += fr[k];
    if (u < acc) return k == PG_SPECIAL_DENORMAL ? j->denormal : vals[k];
  }
  return v;
}

/* normal(): 16 elements (4 Philox blocks, 8 Box–Muller pairs) at once, so the eight
 * independent polynomial chains overlap instead of waiting on each other. Same
 * arithmetic, same bits as block_values. */
static void normal16(const struct fill_job *j, uint64_t b0, double v[16]) {
  uint32_t w[16];
  double u1[8], u2[8], lg[8], r[8], s[8], c[8];
  for (int k = 0; k < 4; k++) pg_rng_block(&j->values, b0 + (uint64_t)k, w + 4 * k);
  for (int p = 0; p < 8; p++) { /* pairs (0,1), (2,3) of each block */
    u1[p] = pg_rng_u01(w[(p / 2) * 4 + (p % 2) * 2]);
    u2[p] = pg_rng_u01(w[(p / 2) * 4 + (p % 2) * 2 + 1]);
  }
  /* separate simple loops: the compiler may run them two or four lanes wide */
  for (int p = 0; p < 8; p++) lg[p] = log_normal(u1[p]);
  for (int p = 0; p < 8; p++) r[p] = sqrt(-2.0 * lg[p]);
  for (int p = 0; p < 8; p++) sincos_core(u2[p], &s[p], &c[p]);
  const double mu = j->fill->a, sigma = j->fill->b;
  for (int p = 0; p < 8; p++) {
    int k = (p / 2) * 4 + (p % 2) * 2;
    v[k] = mu + sigma * (r[p] * c[p]);
    v[k + 1] = mu + sigma * (r[p] * s[p]);
  }
}

/* Elements i0 .. i0+n-1 (i0 a block boundary) with values v[0 .. n-1]: special-value
 * injection, then rounding to the dtype. */
static void finish_group(const struct fill_job *j, size_t i0, size_t n, double *v) {
  if (j->has_specials)
    for (size_t q = 0; 4 * q < n; q++) {
      uint32_t w[4];
      pg_rng_block(&j->specials, i0 / 4 + q, w);
      for (size_t k = 0; k < 4 && 4 * q + k < n; k++)
        v[4 * q + k] = special_value(j, pg_rng_u01(w[k]), v[4 * q + k]);
    }
  for (size_t k = 0; k < n; k++) store(j->data, j->dtype, i0 + k, v[k]);
}

/* ------------------------------------------------------------------ SIMD kernels */

/* x86-64 paths (AVX2, AVX-512F) for the normal, uniform and int fills, picked at run
 * time; -DPG_FILL_NO_SIMD builds the portable path alone. They are the scalar
 * definition above evaluated several lanes at a time: the same IEEE double
 * operations in the same order (add, mul, div and sqrt are correctly rounded in every
 * lane), selections done with blends and sign flips that give the very bits of the
 * scalar "* 2.0" and "* -1.0", and no FMA: the target attributes leave "fma" out, so
 * the compiler cannot fuse a multiply into an add even if asked to contract. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PG_FILL_NO_SIMD)
#define PG_FILL_X86 1
#include <immintrin.h>

#include <cpuid.h>

#define PG_AVX2 __attribute__((target("avx2,f16c")))
#define PG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))

/* How a SIMD group is written: 0 = through the scalar store (other integer dtypes), 1
 * float32, 2 float64, 3 float16, 4 bfloat16, 5 int32 straight from the registers.
 * Specials (floating dtypes only) are applied in the registers first. int32 is direct
 * only for int(): its values are integers the dtype holds (int_range_ok), where
 * truncation equals pg_store_f64's clamp-and-truncate. */
static int direct_store(const struct fill_job *j) {
  switch (j->dtype) {
    case PG_DTYPE_I32: return j->fill->kind == PG_FILL_INT ? 5 : 0;
    case PG_DTYPE_F32: return 1;
    case PG_DTYPE_F64: return 2;
    case PG_DTYPE_F16: return 3;
    case PG_DTYPE_BF16: return 4;
    default: return 0;
  }
}

/* special_value as a table for the SIMD paths: the same running sums of the fractions;
 * kinds with fraction 0 can never be the first whose sum exceeds u, so they are left
 * out. Applied from the last kind to the first, the first kind with u < acc wins. */
struct special_table {
  int n;
  double acc[PG_SPECIAL_COUNT], val[PG_SPECIAL_COUNT];
};

static void special_table_init(const struct fill_job *j, struct special_table *t) {
  static const double vals[PG_SPECIAL_COUNT] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  const double *fr = j->fill->special;
  double acc = 0;
  t->n = 0;
  for (int k = 0; k < PG_SPECIAL_COUNT; k++) {
    acc += fr[k];
    if (!(fr[k] > 0)) continue;
    t->acc[t->n] = acc;
    t->val[t->n] = k == PG_SPECIAL_DENORMAL ? j->denormal : vals[k];
    t->n++;
  }
}

/* F16C (vcvtps2ph) comes with every AVX2 CPU, but say so: cpuid leaf 1, ecx bit 29. */
static int cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

/* Round keys of Philox: key + r * (W0, W1), wrapping. */
static void philox_round_keys(const uint32_t key[2], uint32_t k0[10], uint32_t k1[10]) {
  for (int r = 0; r < 10; r++) {
    k0[r] = key[0] + (uint32_t)r * 0x9E3779B9u;
    k1[r] = key[1] + (uint32_t)r * 0xBB67AE85u;
  }
}

struct avx2_philox {
  __m256i k0[10], k1[10], tag0, tag1;
};

PG_AVX2 static void avx2_philox_init(struct avx2_philox *p, const struct pg_rng_stream *s) {
  uint32_t k0[10], k1[10];
  philox_round_keys(s->key, k0, k1);
  for (int r = 0; r < 10; r++) {
    p->k0[r] = _mm256_set1_epi64x((long long)k0[r]);
    p->k1[r] = _mm256_set1_epi64x((long long)k1[r]);
  }
  p->tag0 = _mm256_set1_epi64x((long long)s->tag[0]);
  p->tag1 = _mm256_set1_epi64x((long long)s->tag[1]);
}

/* Blocks b .. b+3, one per 64-bit lane: word k of block b+l is the low half of lane l
 * of w[k]. The high halves are don't-care (vpmuludq reads only the low halves), which
 * spares the shuffles a packed 32-bit layout needs. */
PG_AVX2_INLINE void avx2_philox4(const struct avx2_philox *p, uint64_t b, __m256i w[4]) {
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
  __m256i ctr = _mm256_add_epi64(_mm256_set1_epi64x((long long)b), _mm256_setr_epi64x(0, 1, 2, 3));
  __m256i c0 = ctr, c1 = _mm256_srli_epi64(ctr, 32), c2 = p->tag0, c3 = p->tag1;
  for (int r = 0; r < 10; r++) {
    __m256i p0 = _mm256_mul_epu32(c0, m0), p1 = _mm256_mul_epu32(c2, m1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), c1), p->k0[r]);
    c2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), c3), p->k1[r]);
    c1 = p1;
    c3 = p0;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

/* pg_rng_u01 of the low halves: the bits 0x43300000:w are the double 2^52 + w, and
 * subtracting 2^52 - 0.5 leaves w + 0.5 exactly. */
PG_AVX2_INLINE __m256d avx2_u01(__m256i w) {
  __m256d x = _mm256_castsi256_pd(_mm256_blend_epi32(w, _mm256_set1_epi64x(0x4330000000000000LL), 0xAA));
  x = _mm256_sub_pd(x, _mm256_set1_pd(4503599627370495.5));
  return _mm256_mul_pd(x, _mm256_set1_pd(1.0 / 4294967296.0));
}

/* Box–Muller on words (wa, wb): r * cos and r * sin, as block_values computes them. */
PG_AVX2_INLINE void avx2_boxmuller(__m256i wa, __m256i wb, __m256d *rc, __m256d *rs) {
  const __m256d one = _mm256_set1_pd(1.0);
  __m256d u1 = avx2_u01(wa), u2 = avx2_u01(wb);
  /* log_normal(u1): exponent and mantissa fields; (double)e via the 2^52 trick */
  __m256i bits = _mm256_castpd_si256(u1);
  __m256d e = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(0x4330000000000000LL)));
  e = _mm256_sub_pd(e, _mm256_set1_pd(4503599627370496.0 + 1022.0));
  __m256d m = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000fffffffffffffLL)),
                      _mm256_set1_epi64x(0x3fe0000000000000LL)));
  __m256d lt = _mm256_cmp_pd(m, _mm256_set1_pd(PG_SQRT1_2), _CMP_LT_OQ);
  m = _mm256_blendv_pd(m, _mm256_add_pd(m, m), lt); /* m + m == m * 2.0, exactly */
  e = _mm256_blendv_pd(e, _mm256_sub_pd(e, one), lt);
  __m256d s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
  __m256d s2 = _mm256_mul_pd(s, s), p = _mm256_set1_pd(log_k[0]);
  for (size_t i = 1; i < sizeof log_k / sizeof *log_k; i++)
    p = _mm256_add_pd(_mm256_mul_pd(p, s2), _mm256_set1_pd(log_k[i]));
  __m256d lg = _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(PG_LN2)),
                             _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), s), p));
  __m256d r = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), lg));
  /* sincos_core(u2) */
  __m256d q = _mm256_round_pd(_mm256_add_pd(_mm256_mul_pd(u2, _mm256_set1_pd(4.0)), _mm256_set1_pd(0.5)),
                              _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m256d t = _mm256_mul_pd(_mm256_sub_pd(u2, _mm256_mul_pd(q, _mm256_set1_pd(0.25))),
                            _mm256_set1_pd(PG_2PI));
  __m256d t2 = _mm256_mul_pd(t, t), sp = _mm256_set1_pd(PG_INV_FACT17), cp = _mm256_set1_pd(PG_INV_FACT18);
  for (size_t i = 0; i < sizeof sin_k / sizeof *sin_k; i++) {
    sp = _mm256_add_pd(_mm256_mul_pd(sp, t2), _mm256_set1_pd(sin_k[i]));
    cp = _mm256_add_pd(_mm256_mul_pd(cp, t2), _mm256_set1_pd(cos_k[i]));
  }
  __m256d sn = _mm256_mul_pd(sp, t), cs = _mm256_sub_pd(one, _mm256_mul_pd(cp, t2));
  __m256d q1 = _mm256_cmp_pd(q, one, _CMP_EQ_OQ), q2 = _mm256_cmp_pd(q, _mm256_set1_pd(2.0), _CMP_EQ_OQ),
          q3 = _mm256_cmp_pd(q, _mm256_set1_pd(3.0), _CMP_EQ_OQ), sign = _mm256_set1_pd(-0.0);
  __m256d odd = _mm256_or_pd(q1, q3);
  __m256d a = _mm256_blendv_pd(sn, cs, odd), c = _mm256_blendv_pd(cs, sn, odd);
  a = _mm256_xor_pd(a, _mm256_and_pd(_mm256_or_pd(q2, q3), sign)); /* == a * -1.0 */
  c = _mm256_xor_pd(c, _mm256_and_pd(_mm256_or_pd(q1, q2), sign));
  *rc = _mm256_mul_pd(r, c);
  *rs = _mm256_mul_pd(r, a);
}

/* 8 blocks of words (w[0]: blocks 0-3, w[1]: blocks 4-7) -> their 32 values in
 * double, v[h][k] = element slot k of blocks 4h .. 4h+3, as block_values computes them. */
PG_AVX2_INLINE void avx2_values(const struct pg_fill *f, __m256i w[2][4], __m256d v[2][4]) {
  const __m256d a = _mm256_set1_pd(f->a);
  if (f->kind == PG_FILL_UNIFORM) {
    const __m256d d = _mm256_set1_pd(f->b - f->a);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) v[h][k] = _mm256_add_pd(a, _mm256_mul_pd(d, avx2_u01(w[h][k])));
  } else if (f->kind == PG_FILL_INT) {
    /* lo + ((w * range) >> 32); range = 2^32 is w itself (vpmuludq takes 32-bit operands) */
    const uint64_t range = (uint64_t)(f->b - f->a) + 1u;
    const __m256i rv = _mm256_set1_epi64x((long long)range);
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) {
        __m256i x = range >> 32 ? w[h][k] : _mm256_srli_epi64(_mm256_mul_epu32(w[h][k], rv), 32);
        __m256d xd = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_blend_epi32(x, magic, 0xAA)),
                                   _mm256_set1_pd(4503599627370496.0)); /* (double)x, exact */
        v[h][k] = _mm256_add_pd(a, xd);
      }
  } else {
    const __m256d sigma = _mm256_set1_pd(f->b);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k += 2) {
        __m256d rc, rs;
        avx2_boxmuller(w[h][k], w[h][k + 1], &rc, &rs);
        v[h][k] = _mm256_add_pd(a, _mm256_mul_pd(sigma, rc));
        v[h][k + 1] = _mm256_add_pd(a, _mm256_mul_pd(sigma, rs));
      }
  }
}

/* Slot vectors e[k] (k = 0..3, lanes = blocks 0..7) -> the 32 floats in element order,
 * r[0] = elements 0..7, ... */
PG_AVX2_INLINE void avx2_transpose_8x4(const __m256 e[4], __m256 r[4]) {
  __m256 t0 = _mm256_unpacklo_ps(e[0], e[1]), t1 = _mm256_unpackhi_ps(e[0], e[1]);
  __m256 t2 = _mm256_unpacklo_ps(e[2], e[3]), t3 = _mm256_unpackhi_ps(e[2], e[3]);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u1, 0x20);
  r[1] = _mm256_permute2f128_ps(u2, u3, 0x20);
  r[2] = _mm256_permute2f128_ps(u0, u1, 0x31);
  r[3] = _mm256_permute2f128_ps(u2, u3, 0x31);
}

/* -> 32 floats in element order, rounded as (float) rounds. */
PG_AVX2_INLINE void avx2_store_f32(float *out, __m256d v[2][4]) {
  __m256 e[4], r[4];
  for (int k = 0; k < 4; k++)
    e[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(v[0][k])),
                                _mm256_cvtpd_ps(v[1][k]), 1);
  avx2_transpose_8x4(e, r);
  for (int q = 0; q < 4; q++) _mm256_storeu_ps(out + 8 * q, r[q]);
}

/* pg__f64_to_f32_odd on four doubles -> their float bits: round to nearest, then, if
 * that was inexact (and d is not NaN and the float finite), step toward zero when it
 * rounded away, and set the last bit. */
PG_AVX2_INLINE __m128i avx2_f32_odd(__m256d d) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  __m128 t = _mm256_cvtpd_ps(d);
  __m256d back = _mm256_cvtps_pd(t), aback = _mm256_and_pd(back, abs_mask);
  __m256d fix = _mm256_and_pd(_mm256_cmp_pd(back, d, _CMP_NEQ_OQ),
                              _mm256_cmp_pd(aback, _mm256_set1_pd(INFINITY), _CMP_LT_OQ));
  __m256d away = _mm256_and_pd(fix, _mm256_cmp_pd(aback, _mm256_and_pd(d, abs_mask), _CMP_GT_OQ));
  /* 64-bit all-ones/zero lanes -> 32-bit ones: take the low half of each lane */
  const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  __m128i fix32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(fix), pick));
  __m128i away32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(away), pick));
  __m128i u = _mm_add_epi32(_mm_castps_si128(t), away32); /* + (-1): toward zero */
  return _mm_or_si128(u, _mm_and_si128(fix32, _mm_set1_epi32(1)));
}

/* Eight float bit patterns -> pg_f32_to_bf16 (no NaN reaches here) -> eight halves in
 * the low 16 bits of each lane. */
PG_AVX2_INLINE __m256i avx2_bf16_bits(__m256i x) {
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
}

/* Element-ordered float vectors r[0..3] (rounded to odd) -> 32 fp16 or bf16 values. */
PG_AVX2_INLINE void avx2_store_halves(uint16_t *out, const __m256 r[4], int bf16) {
  if (!bf16) { /* F16C: round to nearest even, subnormals and overflow as pg_f32_to_f16 */
    for (int q = 0; q < 4; q++)
      _mm_storeu_si128((__m128i *)(out + 8 * q),
                       _mm256_cvtps_ph(r[q], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return;
  }
  for (int q = 0; q < 4; q += 2) {
    __m256i a = avx2_bf16_bits(_mm256_castps_si256(r[q])), b = avx2_bf16_bits(_mm256_castps_si256(r[q + 1]));
    __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    _mm256_storeu_si256((__m256i *)(out + 8 * q), p);
  }
}

/* -> 32 fp16/bf16 values in element order, rounded once (pg_f64_to_f16/bf16). */
PG_AVX2_INLINE void avx2_store_f16(uint16_t *out, __m256d v[2][4], int bf16) {
  __m256 e[4], r[4];
  for (int k = 0; k < 4; k++)
    e[k] = _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(avx2_f32_odd(v[0][k])),
                                                       avx2_f32_odd(v[1][k]), 1));
  avx2_transpose_8x4(e, r);
  avx2_store_halves(out, r, bf16);
}

/* int() values -> 32 int32 in element order (truncation is exact for them). */
PG_AVX2_INLINE void avx2_store_i32(int32_t *out, __m256d v[2][4]) {
  __m256 e[4], r[4];
  for (int k = 0; k < 4; k++)
    e[k] = _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvttpd_epi32(v[0][k])),
                                                       _mm256_cvttpd_epi32(v[1][k]), 1));
  avx2_transpose_8x4(e, r);
  for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(out + 8 * q), _mm256_castps_si256(r[q]));
}

/* -> 32 doubles in element order: two 4 x 4 transposes. */
PG_AVX2_INLINE void avx2_store_f64(double *out, __m256d v[2][4]) {
  for (int h = 0; h < 2; h++) {
    __m256d t0 = _mm256_unpacklo_pd(v[h][0], v[h][1]), t1 = _mm256_unpackhi_pd(v[h][0], v[h][1]);
    __m256d t2 = _mm256_unpacklo_pd(v[h][2], v[h][3]), t3 = _mm256_unpackhi_pd(v[h][2], v[h][3]);
    double *o = out + 16 * h;
    _mm256_storeu_pd(o, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(o + 4, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(o + 8, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(o + 12, _mm256_permute2f128_pd(t1, t3, 0x31));
  }
}

/* Normal/uniform elements [i0, end) of the job in whole 32-element groups, written in
 * its dtype; returns where it stopped. i0 is a multiple of 4 (a block boundary).
 * float32/float64 without specials are stored straight from the registers; the rest
 * goes through finish_group (specials, then the scalar rounding to the dtype). */
PG_AVX2 static size_t avx2_fill(const struct fill_job *j, size_t i0) {
  struct avx2_philox p, ps;
  struct special_table st;
  avx2_philox_init(&p, &j->values);
  avx2_philox_init(&ps, &j->specials);
  special_table_init(j, &st);
  const int direct = direct_store(j);
  for (; i0 + 32 <= j->end; i0 += 32) {
    __m256i w[2][4];
    __m256d v[2][4];
    avx2_philox4(&p, i0 / 4, w[0]);
    avx2_philox4(&p, i0 / 4 + 4, w[1]);
    avx2_values(j->fill, w, v);
    if (j->has_specials) { /* as special_value, on the specials stream's same blocks */
      avx2_philox4(&ps, i0 / 4, w[0]);
      avx2_philox4(&ps, i0 / 4 + 4, w[1]);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
          __m256d u = avx2_u01(w[h][k]);
          for (int q = st.n - 1; q >= 0; q--)
            v[h][k] = _mm256_blendv_pd(v[h][k], _mm256_set1_pd(st.val[q]),
                                       _mm256_cmp_pd(u, _mm256_set1_pd(st.acc[q]), _CMP_LT_OQ));
        }
    }
    if (direct == 1) avx2_store_f32((float *)j->data + i0, v);
    else if (direct == 2) avx2_store_f64((double *)j->data + i0, v);
    else if (direct == 5) avx2_store_i32((int32_t *)j->data + i0, v);
    else if (direct >= 3) avx2_store_f16((uint16_t *)j->data + i0, v, direct == 4);
    else {
      double tmp[32];
      avx2_store_f64(tmp, v);
      for (size_t k = 0; k < 32; k++) store(j->data, j->dtype, i0 + k, tmp[k]);
    }
  }
  return i0;
}

PG_AVX2 static void avx2_blocks(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                                uint32_t *out) {
  struct avx2_philox p;
  avx2_philox_init(&p, s);
  for (size_t b = 0; b < n_blocks; b += 4) {
    __m256i w[4];
    uint64_t lanes[4];
    avx2_philox4(&p, b0 + b, w);
    for (int k = 0; k < 4; k++) {
      _mm256_storeu_si256((__m256i *)lanes, w[k]);
      for (int l = 0; l < 4; l++) out[4 * (b + (size_t)l) + (size_t)k] = (uint32_t)lanes[l];
    }
  }
}

PG_AVX2 static void avx2_from_words(const struct pg_fill *f, const uint32_t *words,
                                    size_t n_blocks, double *out) {
  for (size_t b = 0; b < n_blocks; b += 8) {
    __m256i w[2][4];
    __m256d v[2][4];
    const uint32_t *x = words + 4 * b;
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++)
        w[h][k] = _mm256_setr_epi64x(x[16 * h + k], x[16 * h + 4 + k], x[16 * h + 8 + k],
                                     x[16 * h + 12 + k]);
    avx2_values(f, w, v);
    avx2_store_f64(out + 4 * b, v);
  }
}

/* AVX-512F: the same kernels eight blocks per vector (a zmm of 64-bit lanes), masks
 * instead of blends, a three-way XOR in one instruction. */
#define PG_AVX512 __attribute__((target("avx512f,avx2,f16c")))
#define PG_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx2,f16c")))

struct avx512_philox {
  __m512i k0[10], k1[10], tag0, tag1;
};

PG_AVX512 static void avx512_philox_init(struct avx512_philox *p, const struct pg_rng_stream *s) {
  uint32_t k0[10], k1[10];
  philox_round_keys(s->key, k0, k1);
  for (int r = 0; r < 10; r++) {
    p->k0[r] = _mm512_set1_epi64((long long)k0[r]);
    p->k1[r] = _mm512_set1_epi64((long long)k1[r]);
  }
  p->tag0 = _mm512_set1_epi64((long long)s->tag[0]);
  p->tag1 = _mm512_set1_epi64((long long)s->tag[1]);
}

/* Blocks b .. b+7, one per 64-bit lane, as avx2_philox4. */
PG_AVX512_INLINE void avx512_philox8(const struct avx512_philox *p, uint64_t b, __m512i w[4]) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57);
  __m512i ctr = _mm512_add_epi64(_mm512_set1_epi64((long long)b), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
  __m512i c0 = ctr, c1 = _mm512_srli_epi64(ctr, 32), c2 = p->tag0, c3 = p->tag1;
  for (int r = 0; r < 10; r++) {
    __m512i p0 = _mm512_mul_epu32(c0, m0), p1 = _mm512_mul_epu32(c2, m1);
    c0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1, p->k0[r], 0x96); /* a^b^c */
    c2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3, p->k1[r], 0x96);
    c1 = p1;
    c3 = p0;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

PG_AVX512_INLINE __m512d avx512_u01(__m512i w) {
  __m512d x = _mm512_castsi512_pd(_mm512_mask_blend_epi32(0xAAAA, w, _mm512_set1_epi64(0x4330000000000000LL)));
  x = _mm512_sub_pd(x, _mm512_set1_pd(4503599627370495.5));
  return _mm512_mul_pd(x, _mm512_set1_pd(1.0 / 4294967296.0));
}

PG_AVX512_INLINE __m512d avx512_negate_if(__m512d x, __mmask8 k) {
  __m512i b = _mm512_castpd_si512(x);
  return _mm512_castsi512_pd(_mm512_mask_xor_epi64(b, k, b, _mm512_set1_epi64((long long)0x8000000000000000ull)));
}

/* Box–Muller as avx2_boxmuller. */
PG_AVX512_INLINE void avx512_boxmuller(__m512i wa, __m512i wb, __m512d *rc, __m512d *rs) {
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d u1 = avx512_u01(wa), u2 = avx512_u01(wb);
  __m512i bits = _mm512_castpd_si512(u1);
  __m512d e = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(0x4330000000000000LL)));
  e = _mm512_sub_pd(e, _mm512_set1_pd(4503599627370496.0 + 1022.0));
  __m512d m = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi64(0x000fffffffffffffLL)),
                      _mm512_set1_epi64(0x3fe0000000000000LL)));
  __mmask8 lt = _mm512_cmp_pd_mask(m, _mm512_set1_pd(PG_SQRT1_2), _CMP_LT_OQ);
  m = _mm512_mask_add_pd(m, lt, m, m); /* m + m == m * 2.0, exactly */
  e = _mm512_mask_sub_pd(e, lt, e, one);
  __m512d s = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
  __m512d s2 = _mm512_mul_pd(s, s), p = _mm512_set1_pd(log_k[0]);
  for (size_t i = 1; i < sizeof log_k / sizeof *log_k; i++)
    p = _mm512_add_pd(_mm512_mul_pd(p, s2), _mm512_set1_pd(log_k[i]));
  __m512d lg = _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(PG_LN2)),
                             _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), s), p));
  __m512d r = _mm512_sqrt_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), lg));
  __m512d q = _mm512_roundscale_pd(_mm512_add_pd(_mm512_mul_pd(u2, _mm512_set1_pd(4.0)), _mm512_set1_pd(0.5)),
                                   _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m512d t = _mm512_mul_pd(_mm512_sub_pd(u2, _mm512_mul_pd(q, _mm512_set1_pd(0.25))),
                            _mm512_set1_pd(PG_2PI));
  __m512d t2 = _mm512_mul_pd(t, t), sp = _mm512_set1_pd(PG_INV_FACT17), cp = _mm512_set1_pd(PG_INV_FACT18);
  for (size_t i = 0; i < sizeof sin_k / sizeof *sin_k; i++) {
    sp = _mm512_add_pd(_mm512_mul_pd(sp, t2), _mm512_set1_pd(sin_k[i]));
    cp = _mm512_add_pd(_mm512_mul_pd(cp, t2), _mm512_set1_pd(cos_k[i]));
  }
  __m512d sn = _mm512_mul_pd(sp, t), cs = _mm512_sub_pd(one, _mm512_mul_pd(cp, t2));
  __mmask8 q1 = _mm512_cmp_pd_mask(q, one, _CMP_EQ_OQ),
           q2 = _mm512_cmp_pd_mask(q, _mm512_set1_pd(2.0), _CMP_EQ_OQ),
           q3 = _mm512_cmp_pd_mask(q, _mm512_set1_pd(3.0), _CMP_EQ_OQ);
  __mmask8 odd = (__mmask8)(q1 | q3);
  __m512d a = _mm512_mask_blend_pd(odd, sn, cs), c = _mm512_mask_blend_pd(odd, cs, sn);
  a = avx512_negate_if(a, (__mmask8)(q2 | q3)); /* == a * -1.0 */
  c = avx512_negate_if(c, (__mmask8)(q1 | q2));
  *rc = _mm512_mul_pd(r, c);
  *rs = _mm512_mul_pd(r, a);
}

/* 16 blocks (w[0]: blocks 0-7, w[1]: 8-15) -> v[h][k] = slot k of blocks 8h .. 8h+7. */
PG_AVX512_INLINE void avx512_values(const struct pg_fill *f, __m512i w[2][4], __m512d v[2][4]) {
  const __m512d a = _mm512_set1_pd(f->a);
  if (f->kind == PG_FILL_UNIFORM) {
    const __m512d d = _mm512_set1_pd(f->b - f->a);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) v[h][k] = _mm512_add_pd(a, _mm512_mul_pd(d, avx512_u01(w[h][k])));
  } else if (f->kind == PG_FILL_INT) {
    const uint64_t range = (uint64_t)(f->b - f->a) + 1u;
    const __m512i rv = _mm512_set1_epi64((long long)range);
    const __m512i magic = _mm512_set1_epi64(0x4330000000000000LL);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) {
        __m512i x = range >> 32 ? w[h][k] : _mm512_srli_epi64(_mm512_mul_epu32(w[h][k], rv), 32);
        __m512d xd = _mm512_sub_pd(_mm512_castsi512_pd(_mm512_mask_blend_epi32(0xAAAA, x, magic)),
                                   _mm512_set1_pd(4503599627370496.0));
        v[h][k] = _mm512_add_pd(a, xd);
      }
  } else {
    const __m512d sigma = _mm512_set1_pd(f->b);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k += 2) {
        __m512d rc, rs;
        avx512_boxmuller(w[h][k], w[h][k + 1], &rc, &rs);
        v[h][k] = _mm512_add_pd(a, _mm512_mul_pd(sigma, rc));
        v[h][k + 1] = _mm512_add_pd(a, _mm512_mul_pd(sigma, rs));
      }
  }
}

/* -> 64 floats in element order (two 8 x 4 transposes). */
PG_AVX512_INLINE void avx512_store_f32(float *out, __m512d v[2][4]) {
  for (int h = 0; h < 2; h++) {
    __m256 e0 = _mm512_cvtpd_ps(v[h][0]), e1 = _mm512_cvtpd_ps(v[h][1]);
    __m256 e2 = _mm512_cvtpd_ps(v[h][2]), e3 = _mm512_cvtpd_ps(v[h][3]);
    __m256 t0 = _mm256_unpacklo_ps(e0, e1), t1 = _mm256_unpackhi_ps(e0, e1);
    __m256 t2 = _mm256_unpacklo_ps(e2, e3), t3 = _mm256_unpackhi_ps(e2, e3);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    float *o = out + 32 * h;
    _mm256_storeu_ps(o, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
    _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
    _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
  }
}

/* -> 64 doubles in element order (four 4 x 4 transposes). */
PG_AVX512_INLINE void avx512_store_f64(double *out, __m512d v[2][4]) {
  for (int h = 0; h < 2; h++)
    for (int half = 0; half < 2; half++) {
      __m256d x[4];
      for (int k = 0; k < 4; k++)
        x[k] = half ? _mm512_extractf64x4_pd(v[h][k], 1) : _mm512_castpd512_pd256(v[h][k]);
      __m256d t0 = _mm256_unpacklo_pd(x[0], x[1]), t1 = _mm256_unpackhi_pd(x[0], x[1]);
      __m256d t2 = _mm256_unpacklo_pd(x[2], x[3]), t3 = _mm256_unpackhi_pd(x[2], x[3]);
      double *o = out + 32 * h + 16 * half;
      _mm256_storeu_pd(o, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(o + 4, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(o + 8, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(o + 12, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
}

/* -> 64 fp16/bf16 values in element order, rounded once: truncate to float, and set the
 * last bit if inexact (round to odd, as pg__f64_to_f32_odd). Where the scalar keeps an
 * overflowing float at inf, this gives FLT_MAX|1, which fp16 and bf16 round to inf too. */
PG_AVX512_INLINE void avx512_store_f16(uint16_t *out, __m512d v[2][4], int bf16) {
  for (int h = 0; h < 2; h++) {
    __m256 e[4], r[4];
    for (int k = 0; k < 4; k++) {
      __m256 t = _mm512_cvt_roundpd_ps(v[h][k], _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), v[h][k], _CMP_NEQ_OQ);
      __m512i wide = _mm512_castsi256_si512(_mm256_castps_si256(t)); /* upper half unused */
      wide = _mm512_mask_or_epi32(wide, (__mmask16)inexact, wide, _mm512_set1_epi32(1));
      e[k] = _mm256_castsi256_ps(_mm512_castsi512_si256(wide));
    }
    avx2_transpose_8x4(e, r);
    avx2_store_halves(out + 32 * h, r, bf16);
  }
}

/* As avx2_fill, in whole 64-element groups. */
PG_AVX512 static size_t avx512_fill(const struct fill_job *j, size_t i0) {
  struct avx512_philox p, ps;
  struct special_table st;
  avx512_philox_init(&p, &j->values);
  avx512_philox_init(&ps, &j->specials);
  special_table_init(j, &st);
  const int direct = direct_store(j);
  for (; i0 + 64 <= j->end; i0 += 64) {
    __m512i w[2][4];
    __m512d v[2][4];
    avx512_philox8(&p, i0 / 4, w[0]);
    avx512_philox8(&p, i0 / 4 + 8, w[1]);
    avx512_values(j->fill, w, v);
    if (j->has_specials) {
      avx512_philox8(&ps, i0 / 4, w[0]);
      avx512_philox8(&ps, i0 / 4 + 8, w[1]);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
          __m512d u = avx512_u01(w[h][k]);
          for (int q = st.n - 1; q >= 0; q--)
            v[h][k] = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(u, _mm512_set1_pd(st.acc[q]), _CMP_LT_OQ),
                                           v[h][k], _mm512_set1_pd(st.val[q]));
        }
    }
    if (direct == 1) avx512_store_f32((float *)j->data + i0, v);
    else if (direct == 2) avx512_store_f64((double *)j->data + i0, v);
    else if (direct == 5)
      for (int h = 0; h < 2; h++) { /* two halves of 8 blocks, as avx2_store_i32 */
        __m256 e[4], r[4];
        for (int k = 0; k < 4; k++) e[k] = _mm256_castsi256_ps(_mm512_cvttpd_epi32(v[h][k]));
        avx2_transpose_8x4(e, r);
        for (int q = 0; q < 4; q++)
          _mm256_storeu_si256((__m256i *)((int32_t *)j->data + i0 + 32 * (size_t)h + 8 * (size_t)q),
                              _mm256_castps_si256(r[q]));
      }
    else if (direct >= 3) avx512_store_f16((uint16_t *)j->data + i0, v, direct == 4);
    else {
      double tmp[64];
      avx512_store_f64(tmp, v);
      for (size_t k = 0; k < 64; k++) store(j->data, j->dtype, i0 + k, tmp[k]);
    }
  }
  return i0;
}

PG_AVX512 static void avx512_blocks(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                                    uint32_t *out) {
  struct avx512_philox p;
  avx512_philox_init(&p, s);
  for (size_t b = 0; b < n_blocks; b += 8) {
    __m512i w[4];
    uint64_t lanes[8];
    avx512_philox8(&p, b0 + b, w);
    for (int k = 0; k < 4; k++) {
      _mm512_storeu_si512((void *)lanes, w[k]);
      for (int l = 0; l < 8; l++) out[4 * (b + (size_t)l) + (size_t)k] = (uint32_t)lanes[l];
    }
  }
}

/* n_blocks: a multiple of 16. */
PG_AVX512 static void avx512_from_words(const struct pg_fill *f, const uint32_t *words,
                                        size_t n_blocks, double *out) {
  for (size_t b = 0; b < n_blocks; b += 16) {
    __m512i w[2][4];
    __m512d v[2][4];
    const uint32_t *x = words + 4 * b;
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) {
        const uint32_t *y = x + 32 * h + k;
        w[h][k] = _mm512_setr_epi64(y[0], y[4], y[8], y[12], y[16], y[20], y[24], y[28]);
      }
    avx512_values(f, w, v);
    avx512_store_f64(out + 4 * b, v);
  }
}
#endif /* x86-64 */


/* float32 without specials, the common case, in loops the compiler keeps tight. Same
 * expressions as block_values/normal16, so the same bits. Returns the element index
 * where it stopped (a multiple of 4); the generic loop does the rest. */
static size_t fill_range_f32(const struct fill_job *j) {
  const struct pg_fill *f = j->fill;
  float *out = j->data;
  size_t i0 = j->begin, end = j->end;
  if (f->kind == PG_FILL_UNIFORM) {
    const double lo = f->a, d = f->b - f->a;
    uint32_t w[4];
    for (; i0 + 4 <= end; i0 += 4) {
      pg_rng_block(&j->values, i0 / 4, w);
      for (int k = 0; k < 4; k++) out[i0 + (size_t)k] = (float)(lo + d * pg_rng_u01(w[k]));
    }
  } else if (f->kind == PG_FILL_NORMAL) {
    double v[16];
    for (; i0 + 16 <= end; i0 += 16) {
      normal16(j, i0 / 4, v);
      for (int k = 0; k < 16; k++) out[i0 + (size_t)k] = (float)v[k];
    }
  }
  return i0;
}

static void fill_range(const struct fill_job *j) {
  double v[16];
  const int batch = j->fill->kind == PG_FILL_NORMAL ? 16 : 4;
  size_t start = j->begin;
#ifdef PG_FILL_X86
  /* SIMD paths: whole 32-element groups of normal/uniform, any dtype; the portable
   * loops below only finish the last < 32 elements */
  if (j->fill->kind == PG_FILL_NORMAL || j->fill->kind == PG_FILL_UNIFORM ||
      j->fill->kind == PG_FILL_INT) {
    if (j->isa == PG__FILL_ISA_AVX512) start = avx512_fill(j, start);
    if (j->isa >= PG__FILL_ISA_AVX2) start = avx2_fill(j, start); /* AVX-512: a 32-element rest */
  }
#endif
  if (j->dtype == PG_DTYPE_F32 && !j->has_specials) {
    struct fill_job rest = *j;
    rest.begin = start;
    start = fill_range_f32(&rest);
  }
  for (size_t i0 = start; i0 < j->end; i0 += (size_t)batch) {
    uint64_t b = i0 / 4;
    if (batch == 16) normal16(j, b, v);
    else block_values(j, b, v);
    size_t n = j->end - i0 < (size_t)batch ? j->end - i0 : (size_t)batch;
    finish_group(j, i0, n, v);
  }
}

static void *fill_thread(void *arg) {
  fill_range(arg);
  return NULL;
}

static double exact_int_limit(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F16: return 2048.0;
    case PG_DTYPE_BF16: return 256.0;
    case PG_DTYPE_F32: return 16777216.0;
    case PG_DTYPE_F64: return 9007199254740992.0;
    default: return 0;
  }
}

static int int_range_ok(enum pg_dtype t, double lo, double hi) {
  switch (t) {
    case PG_DTYPE_I8: return lo >= -128 && hi <= 127;
    case PG_DTYPE_U8: return lo >= 0 && hi <= 255;
    case PG_DTYPE_I32: return lo >= -2147483648.0 && hi <= 2147483647.0;
    case PG_DTYPE_I64: return 1;
    case PG_DTYPE_BOOL: return lo >= 0 && hi <= 1;
    default: return fabs(lo) <= exact_int_limit(t) && fabs(hi) <= exact_int_limit(t);
  }
}

#define PG_FILL_MIN_PER_THREAD ((size_t)1 << 16)
#define PG_FILL_MAX_THREADS 64

static int isa_available(enum pg__fill_isa isa) {
  switch (isa) {
    case PG__FILL_ISA_AUTO:
    case PG__FILL_ISA_PORTABLE: return 1;
#ifdef PG_FILL_X86
    case PG__FILL_ISA_AVX2: return __builtin_cpu_supports("avx2") && cpu_has_f16c();
    case PG__FILL_ISA_AVX512: /* its kernels finish with AVX2 ones */
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && cpu_has_f16c();
#endif
    default: return 0;
  }
}

enum pg__fill_isa pg__fill_isa_best(void) {
#ifdef PG_FILL_X86
  if (isa_available(PG__FILL_ISA_AVX512)) return PG__FILL_ISA_AVX512;
  if (isa_available(PG__FILL_ISA_AVX2)) return PG__FILL_ISA_AVX2;
#endif
  return PG__FILL_ISA_PORTABLE;
}

static enum pg__fill_isa isa_resolve(enum pg__fill_isa isa) {
  return isa == PG__FILL_ISA_AUTO ? pg__fill_isa_best() : isa;
}

int pg__rng_blocks_isa(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                       enum pg__fill_isa isa, uint32_t *out) {
  if (!isa_available(isa) || n_blocks % 8 != 0) return PG_ENOTSUP;
  isa = isa_resolve(isa);
#ifdef PG_FILL_X86
  if (isa == PG__FILL_ISA_AVX512) {
    avx512_blocks(s, b0, n_blocks, out);
    return PG_OK;
  }
  if (isa == PG__FILL_ISA_AVX2) {
    avx2_blocks(s, b0, n_blocks, out);
    return PG_OK;
  }
#endif
  for (size_t b = 0; b < n_blocks; b++) pg_rng_block(s, b0 + b, out + 4 * b);
  return PG_OK;
}

int pg__rng_values_from_words(const struct pg_fill *fill, const uint32_t *words,
                              size_t n_blocks, enum pg__fill_isa isa, double *out) {
  if (!isa_available(isa) || n_blocks % 8 != 0 ||
      (fill->kind != PG_FILL_NORMAL && fill->kind != PG_FILL_UNIFORM && fill->kind != PG_FILL_INT))
    return PG_ENOTSUP;
  isa = isa_resolve(isa);
#ifdef PG_FILL_X86
  if (isa == PG__FILL_ISA_AVX512 && n_blocks % 16 == 0) {
    avx512_from_words(fill, words, n_blocks, out);
    return PG_OK;
  }
  if (isa >= PG__FILL_ISA_AVX2) {
    avx2_from_words(fill, words, n_blocks, out);
    return PG_OK;
  }
#endif
  /* the scalar definition, as block_values computes it */
  for (size_t b = 0; b < n_blocks; b++) {
    const uint32_t *w = words + 4 * b;
    double *o = out + 4 * b;
    if (fill->kind == PG_FILL_UNIFORM) {
      for (int k = 0; k < 4; k++) o[k] = fill->a + (fill->b - fill->a) * pg_rng_u01(w[k]);
    } else if (fill->kind == PG_FILL_INT) {
      uint64_t range = (uint64_t)(fill->b - fill->a) + 1u;
      for (int k = 0; k < 4; k++) o[k] = fill->a + (double)(((uint64_t)w[k] * range) >> 32);
    } else {
      for (int k = 0; k < 4; k += 2) {
        double r = sqrt(-2.0 * log_normal(pg_rng_u01(w[k]))), sn, cs;
        sincos_core(pg_rng_u01(w[k + 1]), &sn, &cs);
        o[k] = fill->a + fill->b * (r * cs);
        o[k + 1] = fill->a + fill->b * (r * sn);
      }
    }
  }
  return PG_OK;
}

int pg_fill_generate(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                     const char *name, int n_threads, struct pg_error *err) {
  return pg__fill_generate_isa(t, fill, seed, name, n_threads, PG__FILL_ISA_AUTO, err);
}

int pg__fill_generate_isa(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                          const char *name, int n_threads, enum pg__fill_isa isa,
                          struct pg_error *err) {
  enum pg_dtype dt = t->dtype;
  if (!isa_available(isa))
    return pg_error_set(err, PG_ENOTSUP, "fill path %d is not available on this CPU", (int)isa);
  if (pg_dtype_size(dt) == 0) return pg_error_set(err, PG_EDTYPE, "input '%s': invalid dtype", name);
  struct fill_job job;
  memset(&job, 0, sizeof job);
  job.data = t->dl.data;
  job.dtype = dt;
  job.fill = fill;
  job.isa = isa_resolve(isa);
  pg_rng_stream_init(&job.values, seed, name, PG_RNG_VALUES);
  pg_rng_stream_init(&job.specials, seed, name, PG_RNG_SPECIALS);
  for (int k = 0; k < PG_SPECIAL_COUNT; k++)
    if (fill->special[k] > 0) job.has_specials = 1;
  if (job.has_specials && !pg_dtype_is_float(dt))
    return pg_error_set(err, PG_EDTYPE,
                        "input '%s': special values (nan, inf, denormal, -0) need a floating "
                        "dtype, not %s", name, pg_dtype_name(dt));
  switch (dt) {
    case PG_DTYPE_F16: job.denormal = 0x1p-20; break; /* fp16 normals start at 2^-14 */
    case PG_DTYPE_F64: job.denormal = 0x1p-1050; break;
    default: job.denormal = 0x1p-130; break; /* f32 and bf16 normals start at 2^-126 */
  }
  if (fill->kind == PG_FILL_INT && !int_range_ok(dt, fill->a, fill->b))
    return pg_error_set(err, PG_EDTYPE,
                        "input '%s': int(%.17g, %.17g) is not exactly representable in %s", name,
                        fill->a, fill->b, pg_dtype_name(dt));
  size_t n = (size_t)t->numel;
  if (n == 0) return PG_OK;
  long nt = n_threads > 0 ? n_threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > PG_FILL_MAX_THREADS) nt = PG_FILL_MAX_THREADS;
  if ((size_t)nt > n / PG_FILL_MIN_PER_THREAD) nt = (long)(n / PG_FILL_MIN_PER_THREAD);
  if (nt <= 1) {
    job.begin = 0;
    job.end = n;
    fill_range(&job);
    return PG_OK;
  }
  /* Chunks aligned to whole Philox blocks: each block is computed once. */
  size_t chunk = (n + (size_t)nt - 1) / (size_t)nt;
  chunk = (chunk + 63) / 64 * 64; /* whole SIMD groups (64 elements) and normal16 batches */
  struct fill_job jobs[PG_FILL_MAX_THREADS];
  pthread_t tids[PG_FILL_MAX_THREADS];
  int started[PG_FILL_MAX_THREADS] = {0};
  for (long k = 0; k < nt; k++) {
    jobs[k] = job;
    jobs[k].begin = (size_t)k * chunk < n ? (size_t)k * chunk : n;
    jobs[k].end = jobs[k].begin + chunk < n ? jobs[k].begin + chunk : n;
    if (k == 0) continue; /* the calling thread does chunk 0 */
    started[k] = pthread_create(&tids[k], NULL, fill_thread, &jobs[k]) == 0;
  }
  fill_range(&jobs[0]);
  for (long k = 1; k < nt; k++) {
    if (started[k]) pthread_join(tids[k], NULL);
    else fill_range(&jobs[k]); /* could not start a thread: same bits, just slower */
  }
  return PG_OK;
}
