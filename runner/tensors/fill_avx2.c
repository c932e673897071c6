/* phasegate runner — the AVX2 (+ F16C) fill kernels: fill_simd.h four Philox blocks
 * per vector (one per 64-bit lane of a ymm register), 32 elements per group, and the
 * stores of a group to float32/64, fp16/bf16 and int32. Tested bit-identical to the
 * portable path in tests/tensors/test-rng-simd.c. Empty unless PG_FILL_X86. */
#include "tensors/fill_x86.h"

#ifdef PG_FILL_X86

#define VW 4
#define VD __m256d
#define VI __m256i
#define VM __m256d /* all-ones / all-zeros lanes */
#define V_SRLI64(a, n) _mm256_srli_epi64((a), (n)) /* a macro: n stays an immediate */
#define FN(name) avx2_##name
#define FN_EXPORT(name) pg__fill_avx2_##name
#define VATTR PG_AVX2
#define VINLINE PG_AVX2_INLINE

/* ---- lane operations for fill_simd.h ---- */

PG_AVX2_INLINE VD v_set1(double x) { return _mm256_set1_pd(x); }
PG_AVX2_INLINE VI v_set1_64(uint64_t x) { return _mm256_set1_epi64x((long long)x); }
PG_AVX2_INLINE VI v_lanes(void) { return _mm256_setr_epi64x(0, 1, 2, 3); }
PG_AVX2_INLINE VD v_add(VD a, VD b) { return _mm256_add_pd(a, b); }
PG_AVX2_INLINE VD v_sub(VD a, VD b) { return _mm256_sub_pd(a, b); }
PG_AVX2_INLINE VD v_mul(VD a, VD b) { return _mm256_mul_pd(a, b); }
PG_AVX2_INLINE VD v_div(VD a, VD b) { return _mm256_div_pd(a, b); }
PG_AVX2_INLINE VD v_sqrt(VD a) { return _mm256_sqrt_pd(a); }
PG_AVX2_INLINE VD v_trunc(VD a) { return _mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
PG_AVX2_INLINE VM v_cmplt(VD a, VD b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
PG_AVX2_INLINE VM v_cmpeq(VD a, VD b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
PG_AVX2_INLINE VM v_mor(VM a, VM b) { return _mm256_or_pd(a, b); }
/* m ? b : a, lane by lane */
PG_AVX2_INLINE VD v_select(VM m, VD a, VD b) { return _mm256_blendv_pd(a, b, m); }
PG_AVX2_INLINE VD v_add_if(VM m, VD a, VD b) { return _mm256_blendv_pd(a, _mm256_add_pd(a, b), m); }
PG_AVX2_INLINE VD v_sub_if(VM m, VD a, VD b) { return _mm256_blendv_pd(a, _mm256_sub_pd(a, b), m); }
PG_AVX2_INLINE VD v_negate_if(VD x, VM m) { return _mm256_xor_pd(x, _mm256_and_pd(m, _mm256_set1_pd(-0.0))); }
PG_AVX2_INLINE VI v_d2i(VD a) { return _mm256_castpd_si256(a); }
PG_AVX2_INLINE VD v_i2d(VI a) { return _mm256_castsi256_pd(a); }
PG_AVX2_INLINE VI v_and_i(VI a, VI b) { return _mm256_and_si256(a, b); }
PG_AVX2_INLINE VI v_or_i(VI a, VI b) { return _mm256_or_si256(a, b); }
PG_AVX2_INLINE VI v_add64(VI a, VI b) { return _mm256_add_epi64(a, b); }
PG_AVX2_INLINE VI v_mul_epu32(VI a, VI b) { return _mm256_mul_epu32(a, b); }
PG_AVX2_INLINE VI v_xor3(VI a, VI b, VI c) { return _mm256_xor_si256(_mm256_xor_si256(a, b), c); }
/* The double whose bits are 0x43300000 : (low half of each lane of w). */
PG_AVX2_INLINE VD v_lo_magic(VI w) {
  return _mm256_castsi256_pd(_mm256_blend_epi32(w, _mm256_set1_epi64x(0x4330000000000000LL), 0xAA));
}
PG_AVX2_INLINE void v_storeu_i(uint64_t *out, VI x) { _mm256_storeu_si256((__m256i *)out, x); }
/* Lanes y[0], y[4], y[8], y[12]: one word slot of four consecutive blocks. */
PG_AVX2_INLINE VI v_gather4(const uint32_t *y) { return _mm256_setr_epi64x(y[0], y[4], y[8], y[12]); }

/* ---- group stores ---- */

/* e[k] = slot k of both halves of the group, each narrowed to four 32-bit values by
 * cvt (a __m256d -> __m128 conversion): lanes = blocks 0..7. */
#define PG_AVX2_SLOTS(e, cvt, v)                                                           \
  for (int k = 0; k < 4; k++)                                                              \
    (e)[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(cvt((v)[0][k])), cvt((v)[1][k]), 1)

/* -> 32 floats in element order, rounded as (float) rounds. */
PG_AVX2_INLINE void avx2_store_f32(float *out, VD v[2][4]) {
  __m256 e[4];
  PG_AVX2_SLOTS(e, _mm256_cvtpd_ps, v);
  avx2_store_slots32(out, e);
}

/* pg__f64_to_f32_odd on four doubles -> their float bits: round to nearest, then, if
 * that was inexact (and d is not NaN and the float finite), step toward zero when it
 * rounded away, and set the last bit. */
PG_AVX2_INLINE __m128 avx2_f32_odd(__m256d d) {
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
  return _mm_castsi128_ps(_mm_or_si128(u, _mm_and_si128(fix32, _mm_set1_epi32(1))));
}

/* -> 32 fp16/bf16 values in element order, rounded once (pg_f64_to_f16/bf16). */
PG_AVX2_INLINE void avx2_store_f16(uint16_t *out, VD v[2][4], int bf16) {
  __m256 e[4];
  PG_AVX2_SLOTS(e, avx2_f32_odd, v);
  avx2_store_slots16(out, e, bf16);
}

/* int() values -> 32 int32 in element order (truncation is exact for them). */
PG_AVX2_INLINE void avx2_store_i32(int32_t *out, VD v[2][4]) {
  __m256 e[4];
  for (int k = 0; k < 4; k++) /* as PG_AVX2_SLOTS, in the integer domain */
    e[k] = _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvttpd_epi32(v[0][k])),
                                                       _mm256_cvttpd_epi32(v[1][k]), 1));
  avx2_store_slots32(out, e);
}

/* -> 32 doubles in element order: two 4 x 4 transposes. */
PG_AVX2_INLINE void avx2_store_f64(double *out, VD v[2][4]) {
  for (int h = 0; h < 2; h++) avx2_store_4x4_pd(out + 16 * h, v[h]);
}

#include "tensors/fill_simd.h"

#endif /* PG_FILL_X86 */
