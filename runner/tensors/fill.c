/* phasegate runner — the fill generator (pg_fill_generate) on top of Philox-4x32-10
 * (philox.c): deterministic, multithreaded, bit-identical on every path.
 *
 * Element i depends only on (seed, input name, i): block i/4 of the value stream gives
 * four 32-bit words, word i%4 feeds element i (Box–Muller pairs words 0/1 and 2/3);
 * special values use an independent stream of the same family. log and sincos are
 * implemented here with plain IEEE double arithmetic so the bits do not depend on the
 * platform's libm. That scalar code is the definition; on x86-64 the same arithmetic
 * also runs in the AVX2 / AVX-512F kernels of fill_avx2.c / fill_avx512.c (one body,
 * fill_simd.h), picked at run time here and tested bit-identical in
 * tests/tensors/test-rng-simd.c. This file holds the definition, the portable loops,
 * the threads and the choice of path. The fill grammar (pg_fill_parse) is in
 * runner/opdir/fill_spec.c. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tensors/fill_internal.h"

#ifdef PG_FILL_X86
#include <cpuid.h>
#endif

/* ------------------------------------------------------------------ portable math */

/* The cores are static inline so the batched normal path (normal16) can interleave
 * eight independent evaluations; the exported wrappers use the very same arithmetic. */

/* log(m * 2^e) for m in [0.5, 1): 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716 after
 * folding m below sqrt(1/2); the series to s^23 (log_k) is far below double precision. */
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

/* The values of a normal, uniform or int fill from one block's four words: the
 * definition. block_values and pg__rng_values_from_words (the portable path) use them;
 * normal16, fill_range_f32 and the SIMD kernels (fill_simd.h) repeat the very same
 * expressions in batched, faster forms. */
static inline void normal_values(const struct pg_fill *f, const uint32_t w[4], double v[4]) {
  for (int k = 0; k < 4; k += 2) {
    double r = sqrt(-2.0 * log_normal(pg_rng_u01(w[k]))), s, c;
    sincos_core(pg_rng_u01(w[k + 1]), &s, &c);
    v[k] = f->a + f->b * (r * c);
    v[k + 1] = f->a + f->b * (r * s);
  }
}

static inline void uniform_values(const struct pg_fill *f, const uint32_t w[4], double v[4]) {
  for (int k = 0; k < 4; k++) v[k] = f->a + (f->b - f->a) * pg_rng_u01(w[k]);
}

static inline void int_values(const struct pg_fill *f, const uint32_t w[4], double v[4]) {
  uint64_t range = (uint64_t)(f->b - f->a) + 1u; /* 1 .. 2^32 */
  for (int k = 0; k < 4; k++) v[k] = f->a + (double)(((uint64_t)w[k] * range) >> 32);
}

/* The four values of block b: the definition every path must reproduce. */
static void block_values(const struct fill_job *j, uint64_t b, double v[4]) {
  const struct pg_fill *f = j->fill;
  uint32_t w[4];
  switch (f->kind) {
    case PG_FILL_NORMAL:
      pg_rng_block(&j->values, b, w);
      normal_values(f, w, v);
      return;
    case PG_FILL_UNIFORM:
      pg_rng_block(&j->values, b, w);
      uniform_values(f, w, v);
      return;
    case PG_FILL_INT:
      pg_rng_block(&j->values, b, w);
      int_values(f, w, v);
      return;
    case PG_FILL_ZEROS: v[0] = v[1] = v[2] = v[3] = 0.0; return;
    case PG_FILL_ONES: v[0] = v[1] = v[2] = v[3] = 1.0; return;
    case PG_FILL_CONST: v[0] = v[1] = v[2] = v[3] = f->a; return;
    case PG_FILL_ARANGE:
      for (int k = 0; k < 4; k++) v[k] = f->a + f->b * (double)(b * 4 + (uint64_t)k);
      return;
  }
}

/* Element value v, or the special value that u (the specials stream's word for the
 * element, in (0, 1)) selects: the first kind whose running sum of fractions exceeds u. */
static double special_value(const struct fill_job *j, double u, double v) {
  const double *fr = j->fill->special;
  double acc = 0;
  for (int k = 0; k < PG_SPECIAL_COUNT; k++) {
    acc += fr[k];
    if (u < acc) return k == PG_SPECIAL_DENORMAL ? j->denormal : pg__fill_special_vals[k];
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
  for (size_t k = 0; k < n; k++) pg__fill_store(j->data, j->dtype, i0 + k, v[k]);
}

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

#ifdef PG_FILL_X86
/* The SIMD path's whole groups of a normal/uniform/int job from element i0 on; returns
 * where they stop. Out of line: calling the kernels (in other files) from fill_range
 * itself changed how GCC compiles its portable loops, ~5% slower (portable int fill). */
__attribute__((noinline)) static size_t simd_range(const struct fill_job *j, size_t i0) {
  if (j->fill->kind != PG_FILL_NORMAL && j->fill->kind != PG_FILL_UNIFORM &&
      j->fill->kind != PG_FILL_INT)
    return i0;
  if (j->isa == PG__FILL_ISA_AVX512) i0 = pg__fill_avx512_range(j, i0);
  return pg__fill_avx2_range(j, i0); /* AVX-512: a 32-element rest */
}
#endif

/* Elements [j->begin, j->end) of the job: the SIMD path's whole groups, then the
 * portable loops for the rest (all of it on the portable path). */
static void fill_range(const struct fill_job *j) {
  double v[16];
  const int batch = j->fill->kind == PG_FILL_NORMAL ? 16 : 4;
  size_t start = j->begin;
#ifdef PG_FILL_X86
  /* SIMD paths: whole 32-element groups of normal/uniform/int, any dtype; the
   * portable loops below only finish the last < 32 elements */
  if (j->isa >= PG__FILL_ISA_AVX2) start = simd_range(j, start);
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

/* ------------------------------------------------------------------ paths */

#ifdef PG_FILL_X86
/* F16C (vcvtps2ph) comes with every AVX2 CPU, but say so: cpuid leaf 1, ecx bit 29. */
static int cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

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
    pg__fill_avx512_blocks(s, b0, n_blocks, out);
    return PG_OK;
  }
  if (isa == PG__FILL_ISA_AVX2) {
    pg__fill_avx2_blocks(s, b0, n_blocks, out);
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
    pg__fill_avx512_from_words(fill, words, n_blocks, out);
    return PG_OK;
  }
  if (isa >= PG__FILL_ISA_AVX2) {
    pg__fill_avx2_from_words(fill, words, n_blocks, out);
    return PG_OK;
  }
#endif
  /* the scalar definition, as block_values computes it */
  for (size_t b = 0; b < n_blocks; b++) {
    if (fill->kind == PG_FILL_UNIFORM) uniform_values(fill, words + 4 * b, out + 4 * b);
    else if (fill->kind == PG_FILL_INT) int_values(fill, words + 4 * b, out + 4 * b);
    else normal_values(fill, words + 4 * b, out + 4 * b);
  }
  return PG_OK;
}

/* ------------------------------------------------------------------ entry points */

static double exact_int_limit(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F16: return 2048.0;
    case PG_DTYPE_BF16: return 256.0;
    case PG_DTYPE_F32: return 16777216.0;
    case PG_DTYPE_F64: return 9007199254740992.0;
    default: return 0;
  }
}

/* Can dtype t hold every integer of int(lo, hi) exactly? */
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

/* Sets up the job for the whole of t (its range is left empty), or says why the fill
 * cannot be generated in t's dtype. */
static int job_init(struct fill_job *job, struct pg_tensor *t, const struct pg_fill *fill,
                    uint64_t seed, const char *name, enum pg__fill_isa isa,
                    struct pg_error *err) {
  enum pg_dtype dt = t->dtype;
  if (!isa_available(isa))
    return pg_error_set(err, PG_ENOTSUP, "fill path %d is not available on this CPU", (int)isa);
  if (pg_dtype_size(dt) == 0) return pg_error_set(err, PG_EDTYPE, "input '%s': invalid dtype", name);
  memset(job, 0, sizeof *job);
  job->data = t->dl.data;
  job->dtype = dt;
  job->fill = fill;
  job->isa = isa_resolve(isa);
  pg_rng_stream_init(&job->values, seed, name, PG_RNG_VALUES);
  pg_rng_stream_init(&job->specials, seed, name, PG_RNG_SPECIALS);
  for (int k = 0; k < PG_SPECIAL_COUNT; k++)
    if (fill->special[k] > 0) job->has_specials = 1;
  if (job->has_specials && !pg_dtype_is_float(dt))
    return pg_error_set(err, PG_EDTYPE,
                        "input '%s': special values (nan, inf, denormal, -0) need a floating "
                        "dtype, not %s", name, pg_dtype_name(dt));
  switch (dt) {
    case PG_DTYPE_F16: job->denormal = 0x1p-20; break; /* fp16 normals start at 2^-14 */
    case PG_DTYPE_F64: job->denormal = 0x1p-1050; break;
    default: job->denormal = 0x1p-130; break; /* f32 and bf16 normals start at 2^-126 */
  }
  if (fill->kind == PG_FILL_INT && !int_range_ok(dt, fill->a, fill->b))
    return pg_error_set(err, PG_EDTYPE,
                        "input '%s': int(%.17g, %.17g) is not exactly representable in %s", name,
                        fill->a, fill->b, pg_dtype_name(dt));
  return PG_OK;
}

#define PG_FILL_MIN_PER_THREAD ((size_t)1 << 16)
#define PG_FILL_MAX_THREADS 64

/* Elements [0, n) of the job on up to n_threads threads (0 = online CPUs), the calling
 * thread one of them. */
static void fill_parallel(const struct fill_job *job, size_t n, int n_threads) {
  long nt = n_threads > 0 ? n_threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > PG_FILL_MAX_THREADS) nt = PG_FILL_MAX_THREADS;
  if ((size_t)nt > n / PG_FILL_MIN_PER_THREAD) nt = (long)(n / PG_FILL_MIN_PER_THREAD);
  if (nt <= 1) {
    struct fill_job all = *job;
    all.begin = 0;
    all.end = n;
    fill_range(&all);
    return;
  }
  /* Chunks aligned to whole Philox blocks: each block is computed once. */
  size_t chunk = (n + (size_t)nt - 1) / (size_t)nt;
  chunk = (chunk + 63) / 64 * 64; /* whole SIMD groups (64 elements) and normal16 batches */
  struct fill_job jobs[PG_FILL_MAX_THREADS];
  pthread_t tids[PG_FILL_MAX_THREADS];
  int started[PG_FILL_MAX_THREADS] = {0};
  for (long k = 0; k < nt; k++) {
    jobs[k] = *job;
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
}

int pg_fill_generate(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                     const char *name, int n_threads, struct pg_error *err) {
  return pg__fill_generate_isa(t, fill, seed, name, n_threads, PG__FILL_ISA_AUTO, err);
}

int pg__fill_generate_isa(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                          const char *name, int n_threads, enum pg__fill_isa isa,
                          struct pg_error *err) {
  struct fill_job job;
  PG_RETURN_IF_ERROR(job_init(&job, t, fill, seed, name, isa, err));
  size_t n = (size_t)t->numel;
  if (n > 0) fill_parallel(&job, n, n_threads);
  return PG_OK;
}
