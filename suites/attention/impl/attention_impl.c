/* attention_impl — an emulated-device implementation of the bundled `attention` op,
 * written the way an accelerator kernel computes, so that phasegate compares it with
 * the CPU goldens under realistic (not bit-exact) differences:
 *   - inputs are read as fp16 (or whatever dtype the case gives), widened to fp32;
 *   - matmuls accumulate in fp32 over tiles (32 along D for q·kᵀ, 64 along S for p·v),
 *     adding the tile partial sums at the end: a different summation order than BLAS;
 *   - softmax uses a fast exp (range reduction + degree-4 polynomial, ~4e-5 relative),
 *     row sums in tiles of 64, and stores probabilities as fp16 before p·v.
 * On x86-64 with AVX2/FMA/F16C (checked at run time) the same computation runs on
 * 8-wide vectors, as a device's vector and cube units would: hardware fp16 conversion
 * (same round-to-nearest-even), fused multiply-add, the same tiles and tile-sum order
 * per element, and softmax tile sums kept as 8 lane partials added at the tile's end.
 * Other machines and shapes (S not a multiple of 32, D not a multiple of 8) take the
 * portable loops below.
 * Exports attention_module1_wrapper (scores), attention_module12_wrapper (probs),
 * attention_module123_wrapper (out). Modes: `sim` always runs; `npu` returns
 * PG_UNAVAILABLE unless PHASEGATE_EMULATE_NPU=1 (then it runs the same emulation);
 * any other mode is unavailable.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

PG_IMPL_EXPORT int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                     int32_t n_out, const pg_call *call);
PG_IMPL_EXPORT int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                      int32_t n_out, const pg_call *call);
PG_IMPL_EXPORT int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                       int32_t n_out, const pg_call *call);

enum { TILE_D = 32, TILE_S = 64 };

static int mode_ok(const pg_call *call) {
  if (strcmp(call->mode, "sim") == 0) return 1;
  if (strcmp(call->mode, "npu") == 0) {
    const char *e = getenv("PHASEGATE_EMULATE_NPU");
    return e && strcmp(e, "1") == 0;
  }
  return 0;
}

static int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* Widens any supported dtype to a fresh fp32 array. */
static float *to_f32(const DLTensor *t) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  int64_t n = numel(t);
  float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
  if (!f || dt == PG_DTYPE_INVALID) {
    free(f);
    return NULL;
  }
  if (dt == PG_DTYPE_F16)
    for (int64_t i = 0; i < n; i++) f[i] = pg_f16_to_f32(((const uint16_t *)t->data)[i]);
  else
    for (int64_t i = 0; i < n; i++) f[i] = (float)pg_load_f64(t->data, dt, (size_t)i);
  return f;
}

static void store(DLTensor *t, const float *f) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  int64_t n = numel(t);
  if (dt == PG_DTYPE_F32) memcpy(t->data, f, (size_t)n * sizeof *f);
  else if (dt == PG_DTYPE_F16)
    for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = pg_f32_to_f16(f[i]);
  else
    for (int64_t i = 0; i < n; i++) pg_store_f64(t->data, dt, (size_t)i, f[i]);
}

/* exp(x) for x <= 0 (softmax after max subtraction): 2^n · e^(f·ln2), |f| <= 1/2. */
static float fast_exp(float x) {
  float y = x * 1.44269504f;
  if (y < -126.0f) return 0.0f;
  float n = floorf(y + 0.5f);
  float t = (y - n) * 0.69314718f;
  float p = 1.0f + t * (1.0f + t * (0.5f + t * (0.16666667f + t * 0.04166667f)));
  union { uint32_t u; float f; } s;
  s.u = (uint32_t)((int32_t)n + 127) << 23;
  return p * s.f;
}

struct dims {
  int64_t B, H, S, D;
};

static int check_inputs(const DLTensor *in, int32_t n_in, struct dims *d) {
  if (n_in != 3) return 2;
  for (int i = 0; i < 3; i++)
    if (in[i].ndim != 4) return 2;
  d->B = in[0].shape[0], d->H = in[0].shape[1], d->S = in[0].shape[2], d->D = in[0].shape[3];
  for (int i = 1; i < 3; i++)
    for (int a = 0; a < 4; a++)
      if (in[i].shape[a] != in[0].shape[a]) return 2;
  return 0;
}

/* scores = q kᵀ / sqrt(D), fp32 partial sums per D tile. k is transposed first so
 * the inner loop runs over keys (vectorisable, as a cube unit would tile it). */
static float *qk(const DLTensor *in, const struct dims *d) {
  float *q = to_f32(&in[0]), *k = to_f32(&in[1]);
  float *s = malloc((size_t)(d->B * d->H * d->S * d->S) * sizeof *s);
  float *kt = malloc((size_t)(d->S * d->D) * sizeof *kt);
  float *part = malloc((size_t)d->S * sizeof *part);
  if (!q || !k || !s || !kt || !part) {
    free(q), free(k), free(s), free(kt), free(part);
    return NULL;
  }
  const float scale = 1.0f / sqrtf((float)d->D);
  const int64_t S = d->S, D = d->D;
  for (int64_t bh = 0; bh < d->B * d->H; bh++) {
    const float *qb = q + bh * S * D, *kb = k + bh * S * D;
    float *sb = s + bh * S * S;
    for (int64_t j = 0; j < S; j++)
      for (int64_t t = 0; t < D; t++) kt[t * S + j] = kb[j * D + t];
    for (int64_t i = 0; i < S; i++) {
      float *row = sb + i * S;
      for (int64_t j = 0; j < S; j++) row[j] = 0.0f;
      for (int64_t t0 = 0; t0 < D; t0 += TILE_D) {
        int64_t t1 = t0 + TILE_D < D ? t0 + TILE_D : D;
        for (int64_t j = 0; j < S; j++) part[j] = 0.0f;
        for (int64_t t = t0; t < t1; t++) {
          const float qv = qb[i * D + t], *kr = kt + t * S;
          for (int64_t j = 0; j < S; j++) part[j] += qv * kr[j];
        }
        for (int64_t j = 0; j < S; j++) row[j] += part[j];
      }
      for (int64_t j = 0; j < S; j++) row[j] *= scale;
    }
  }
  free(q);
  free(k);
  free(kt);
  free(part);
  return s;
}

/* In-place row softmax; the result is rounded through fp16 storage. */
static void softmax_rows(float *s, const struct dims *d) {
  for (int64_t r = 0; r < d->B * d->H * d->S; r++) {
    float *row = s + r * d->S;
    float m = row[0];
    for (int64_t j = 1; j < d->S; j++) m = row[j] > m ? row[j] : m;
    float sum = 0.0f;
    for (int64_t t0 = 0; t0 < d->S; t0 += TILE_S) {
      float part = 0.0f;
      int64_t t1 = t0 + TILE_S < d->S ? t0 + TILE_S : d->S;
      for (int64_t j = t0; j < t1; j++) {
        row[j] = fast_exp(row[j] - m);
        part += row[j];
      }
      sum += part;
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < d->S; j++) row[j] = pg_f16_to_f32(pg_f32_to_f16(row[j] * inv));
  }
}


/* ---- the vector path ---- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define ATT_VEC 1
#define ATT_TARGET __attribute__((target("avx2,fma,f16c")))

/* CPUID: AVX (with the OS saving YMM state), F16C, and optionally FMA and AVX2.
 * (__builtin_cpu_supports lacks "f16c" in older clang.) */
static int cpu_has(int want_fma_avx2) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  int avx = (c >> 28) & 1, osxsave = (c >> 27) & 1, f16c = (c >> 29) & 1, fma = (c >> 12) & 1;
  if (!avx || !osxsave || !f16c) return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  if ((lo & 6u) != 6u) return 0; /* XMM and YMM state enabled */
  if (!want_fma_avx2) return 1;
  if (!fma || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b >> 5) & 1; /* AVX2 */
}

static int vec_ok(const struct dims *d) {
  return d->S % 32 == 0 && d->D % 8 == 0 && d->D <= 512 && cpu_has(1);
}

ATT_TARGET static void f16_to_f32_vec(const uint16_t *h, float *f, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
  for (; i < n; i++) f[i] = pg_f16_to_f32(h[i]);
}

ATT_TARGET static void f32_to_f16_vec(const float *f, uint16_t *h, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(h + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) h[i] = pg_f32_to_f16(f[i]);
}

/* Elements [off, off + n) of t, widened to fp32 (fp16 through the converter). */
ATT_TARGET static void load_range(const DLTensor *t, int64_t off, int64_t n, float *f) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  if (dt == PG_DTYPE_F16) f16_to_f32_vec((const uint16_t *)t->data + off, f, n);
  else if (dt == PG_DTYPE_F32) memcpy(f, (const float *)t->data + off, (size_t)n * sizeof *f);
  else
    for (int64_t i = 0; i < n; i++) f[i] = (float)pg_load_f64(t->data, dt, (size_t)(off + i));
}

/* Stores f into elements [off, off + n) of t, rounding to its dtype. */
ATT_TARGET static void store_range(DLTensor *t, int64_t off, int64_t n, const float *f) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  if (dt == PG_DTYPE_F16) f32_to_f16_vec(f, (uint16_t *)t->data + off, n);
  else if (dt == PG_DTYPE_F32) memcpy((float *)t->data + off, f, (size_t)n * sizeof *f);
  else
    for (int64_t i = 0; i < n; i++) pg_store_f64(t->data, dt, (size_t)(off + i), f[i]);
}

/* 8 x fast_exp, the same range reduction and polynomial. */
ATT_TARGET static __m256 fast_exp8(__m256 x) {
  __m256 y = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504f));
  __m256 under = _mm256_cmp_ps(y, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
  __m256 n = _mm256_floor_ps(_mm256_add_ps(y, _mm256_set1_ps(0.5f)));
  __m256 t = _mm256_mul_ps(_mm256_sub_ps(y, n), _mm256_set1_ps(0.69314718f));
  __m256 p = _mm256_fmadd_ps(t, _mm256_set1_ps(0.04166667f), _mm256_set1_ps(0.16666667f));
  p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(under, r);
}

/* One head's scores sb = qb kbᵀ · scale: per 32 keys, per D tile of 32, fp32 partials
 * in registers (FMA), added to the row accumulator at the end of each tile. */
ATT_TARGET static void qk_head(const float *qb, const float *kb, float *kt, float *sb,
                               int64_t S, int64_t D) {
  const __m256 scale = _mm256_set1_ps(1.0f / sqrtf((float)D));
  for (int64_t j = 0; j < S; j++)
    for (int64_t t = 0; t < D; t++) kt[t * S + j] = kb[j * D + t];
  for (int64_t i = 0; i < S; i++) {
    const float *qi = qb + i * D;
    for (int64_t j0 = 0; j0 < S; j0 += 32) {
      __m256 r0 = _mm256_setzero_ps(), r1 = r0, r2 = r0, r3 = r0;
      for (int64_t t0 = 0; t0 < D; t0 += TILE_D) {
        int64_t t1 = t0 + TILE_D < D ? t0 + TILE_D : D;
        __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
        for (int64_t t = t0; t < t1; t++) {
          const float *kr = kt + t * S + j0;
          __m256 qv = _mm256_broadcast_ss(qi + t);
          p0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr), p0);
          p1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr + 8), p1);
          p2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr + 16), p2);
          p3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr + 24), p3);
        }
        r0 = _mm256_add_ps(r0, p0), r1 = _mm256_add_ps(r1, p1);
        r2 = _mm256_add_ps(r2, p2), r3 = _mm256_add_ps(r3, p3);
      }
      float *row = sb + i * S + j0;
      _mm256_storeu_ps(row, _mm256_mul_ps(r0, scale));
      _mm256_storeu_ps(row + 8, _mm256_mul_ps(r1, scale));
      _mm256_storeu_ps(row + 16, _mm256_mul_ps(r2, scale));
      _mm256_storeu_ps(row + 24, _mm256_mul_ps(r3, scale));
    }
  }
}

ATT_TARGET static float hsum8(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

ATT_TARGET static float hmax8(__m256 v) {
  __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  a = _mm_max_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

/* In-place softmax of `rows` rows of S (a multiple of 32), rounded through fp16. */
ATT_TARGET static void softmax_rows_vec(float *s, int64_t rows, int64_t S) {
  for (int64_t r = 0; r < rows; r++) {
    float *row = s + r * S;
    __m256 mv = _mm256_loadu_ps(row);
    for (int64_t j = 8; j < S; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(row + j));
    const __m256 m = _mm256_set1_ps(hmax8(mv));
    float sum = 0.0f;
    for (int64_t t0 = 0; t0 < S; t0 += TILE_S) {
      int64_t t1 = t0 + TILE_S < S ? t0 + TILE_S : S;
      __m256 part = _mm256_setzero_ps();
      for (int64_t j = t0; j < t1; j += 8) {
        __m256 e = fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), m));
        _mm256_storeu_ps(row + j, e);
        part = _mm256_add_ps(part, e);
      }
      sum += hsum8(part);
    }
    const __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (int64_t j = 0; j < S; j += 8) {
      __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(row + j), inv),
                                  _MM_FROUND_TO_NEAREST_INT);
      _mm256_storeu_ps(row + j, _mm256_cvtph_ps(h));
    }
  }
}

/* One head's ob = pb vb: per row, up to 8 register partials (64 columns) per S tile of
 * 64, added to the accumulator at the tile's end. */
ATT_TARGET static void pv_head(const float *pb, const float *vb, float *ob, int64_t S,
                               int64_t D) {
  const int64_t nv = D / 8;
  for (int64_t i = 0; i < S; i++) {
    const float *pi = pb + i * S;
    for (int64_t c0 = 0; c0 < nv; c0 += 8) {
      int64_t nc = nv - c0 < 8 ? nv - c0 : 8;
      __m256 acc[8], part[8];
      for (int64_t c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
      for (int64_t t0 = 0; t0 < S; t0 += TILE_S) {
        int64_t t1 = t0 + TILE_S < S ? t0 + TILE_S : S;
        for (int64_t c = 0; c < 8; c++) part[c] = _mm256_setzero_ps();
        for (int64_t j = t0; j < t1; j++) {
          const __m256 pij = _mm256_broadcast_ss(pi + j);
          const float *vr = vb + j * D + c0 * 8;
          if (nc == 8) {
            for (int64_t c = 0; c < 8; c++)
              part[c] = _mm256_fmadd_ps(pij, _mm256_loadu_ps(vr + c * 8), part[c]);
          } else {
            for (int64_t c = 0; c < nc; c++)
              part[c] = _mm256_fmadd_ps(pij, _mm256_loadu_ps(vr + c * 8), part[c]);
          }
        }
        for (int64_t c = 0; c < 8; c++) acc[c] = _mm256_add_ps(acc[c], part[c]);
      }
      for (int64_t c = 0; c < nc; c++) _mm256_storeu_ps(ob + i * D + (c0 + c) * 8, acc[c]);
    }
  }
}

/* The whole call on the vector path, one (batch, head) at a time as a device streams
 * heads through its local memory: a few hundred KiB of working set, reused. */
ATT_TARGET static int run_vec(const DLTensor *in, DLTensor *out, const struct dims *d, int phase) {
  const int64_t S = d->S, D = d->D, SD = S * D, SS = S * S;
  float *buf = malloc((size_t)(5 * SD + SS) * sizeof *buf);
  if (!buf) return 12;
  float *q = buf, *k = q + SD, *v = k + SD, *kt = v + SD, *o = kt + SD, *s = o + SD;
  for (int64_t bh = 0; bh < d->B * d->H; bh++) {
    load_range(&in[0], bh * SD, SD, q);
    load_range(&in[1], bh * SD, SD, k);
    qk_head(q, k, kt, s, S, D);
    if (phase == 1) {
      store_range(&out[0], bh * SS, SS, s);
      continue;
    }
    softmax_rows_vec(s, S, S);
    if (phase == 2) {
      store_range(&out[0], bh * SS, SS, s);
      continue;
    }
    load_range(&in[2], bh * SD, SD, v);
    pv_head(s, v, o, S, D);
    store_range(&out[0], bh * SD, SD, o);
  }
  free(buf);
  return 0;
}
#endif

static int check_out(const DLTensor *o, int64_t a, int64_t b, int64_t c, int64_t e) {
  return o->ndim == 4 && o->shape[0] == a && o->shape[1] == b && o->shape[2] == c &&
         o->shape[3] == e;
}

static int run(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
               const pg_call *call, int phase) {
  if (!mode_ok(call)) return PG_UNAVAILABLE;
  struct dims d;
  if (check_inputs(in, n_in, &d) != 0 || n_out != 1) return 2;
  int64_t last = phase == 3 ? d.D : d.S;
  if (!check_out(&out[0], d.B, d.H, d.S, last)) return 2;
  if (phase == 3 && d.D > 512) {
    call->log(call, PG_LOG_ERROR, "attention_impl: D > 512 is not supported by the p·v tile");
    return 2;
  }
#ifdef ATT_VEC
  if (vec_ok(&d)) return run_vec(in, out, &d, phase);
#endif
  float *s = qk(in, &d);
  if (!s) return 12;
  if (phase == 1) {
    store(&out[0], s);
    free(s);
    return 0;
  }
  softmax_rows(s, &d);
  if (phase == 2) {
    store(&out[0], s);
    free(s);
    return 0;
  }
  float *v = to_f32(&in[2]);
  float *o = malloc((size_t)(d.B * d.H * d.S * d.D) * sizeof *o);
  if (!v || !o) {
    free(s), free(v), free(o);
    return 12;
  }
  for (int64_t bh = 0; bh < d.B * d.H; bh++) {
    const float *p = s + bh * d.S * d.S, *vb = v + bh * d.S * d.D;
    float *ob = o + bh * d.S * d.D;
    for (int64_t i = 0; i < d.S; i++) {
      for (int64_t c = 0; c < d.D; c++) ob[i * d.D + c] = 0.0f;
      for (int64_t t0 = 0; t0 < d.S; t0 += TILE_S) {
        float part[512];
        int64_t dd = d.D < 512 ? d.D : 512;
        for (int64_t c = 0; c < dd; c++) part[c] = 0.0f;
        int64_t t1 = t0 + TILE_S < d.S ? t0 + TILE_S : d.S;
        for (int64_t j = t0; j < t1; j++) {
          float pij = p[i * d.S + j];
          for (int64_t c = 0; c < dd; c++) part[c] += pij * vb[j * d.D + c];
        }
        for (int64_t c = 0; c < dd; c++) ob[i * d.D + c] += part[c];
      }
    }
  }
  store(&out[0], o);
  free(s);
  free(v);
  free(o);
  return 0;
}

int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                              const pg_call *call) {
  return run(in, n_in, out, n_out, call, 1);
}

int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                               const pg_call *call) {
  return run(in, n_in, out, n_out, call, 2);
}

int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                                const pg_call *call) {
  return run(in, n_in, out, n_out, call, 3);
}
