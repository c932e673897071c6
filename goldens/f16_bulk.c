/* goldens/f16_bulk.c — see f16_bulk.h: fp16 <-> fp32 arrays, F16C when available. */
#include "f16_bulk.h"

#include "phasegate/tensor.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define PG_F16C 1
#define PG_F16C_TARGET __attribute__((target("avx,f16c")))

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

static int have_f16c(void) { return cpu_has(0); }

PG_F16C_TARGET static int64_t widen8(const uint16_t *in, float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
  return i;
}

PG_F16C_TARGET static int64_t narrow8(const float *in, uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

PG_F16C_TARGET static int64_t round8(float *p, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(p + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(p + i, _mm256_cvtph_ps(h));
  }
  return i;
}
#endif

void pg__f16_to_f32_n(const uint16_t *in, float *out, int64_t n) {
  int64_t i = 0;
#ifdef PG_F16C
  if (have_f16c()) i = widen8(in, out, n);
#endif
  for (; i < n; i++) out[i] = pg_f16_to_f32(in[i]);
}

void pg__f32_to_f16_n(const float *in, uint16_t *out, int64_t n) {
  int64_t i = 0;
#ifdef PG_F16C
  if (have_f16c()) i = narrow8(in, out, n);
#endif
  for (; i < n; i++) out[i] = pg_f32_to_f16(in[i]);
}

void pg__f32_round_f16_n(float *p, int64_t n) {
  int64_t i = 0;
#ifdef PG_F16C
  if (have_f16c()) i = round8(p, n);
#endif
  for (; i < n; i++) p[i] = pg_f16_to_f32(pg_f32_to_f16(p[i]));
}
