/* goldens/f16_bulk.c — see f16_bulk.h: fp16 <-> fp32 arrays, F16C when available. */
#include "f16_bulk.h"

#include "phasegate/tensor.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PG_F16C 1
#define PG_F16C_TARGET __attribute__((target("avx,f16c")))

static int have_f16c(void) {
  /* __builtin_cpu_supports reads data the runtime initialised before main: no state of ours */
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}

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
