/* phasegate runner — the AVX-512F fill kernels: fill_simd.h eight Philox blocks per
 * vector (a zmm of 64-bit lanes), 64 elements per group, with masks instead of blends
 * and a three-way XOR in one instruction; the group stores finish with the AVX2
 * transposes of fill_x86.h. Tested bit-identical to the portable path in
 * tests/tensors/test-rng-simd.c. Empty unless PG_FILL_X86. */
#include "tensors/fill_x86.h"

#ifdef PG_FILL_X86

#define PG_AVX512 __attribute__((target("avx512f,avx2,f16c")))
#define PG_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx2,f16c")))

#define VW 8
#define VD __m512d
#define VI __m512i
#define VM __mmask8
#define V_SRLI64(a, n) _mm512_srli_epi64((a), (n)) /* a macro: n stays an immediate */
#define FN(name) avx512_##name
#define FN_EXPORT(name) pg__fill_avx512_##name
#define VATTR PG_AVX512
#define VINLINE PG_AVX512_INLINE

/* ---- lane operations for fill_simd.h ---- */

/* The same list as fill_avx2.c's, on zmm registers and mask registers: one such
 * table per instruction set is what lets fill_simd.h be written once. */

PG_AVX512_INLINE VD v_set1(double x) { return _mm512_set1_pd(x); }
PG_AVX512_INLINE VI v_set1_64(uint64_t x) { return _mm512_set1_epi64((long long)x); }
PG_AVX512_INLINE VI v_lanes(void) { return _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7); }
PG_AVX512_INLINE VD v_add(VD a, VD b) { return _mm512_add_pd(a, b); }
PG_AVX512_INLINE VD v_sub(VD a, VD b) { return _mm512_sub_pd(a, b); }
PG_AVX512_INLINE VD v_mul(VD a, VD b) { return _mm512_mul_pd(a, b); }
PG_AVX512_INLINE VD v_div(VD a, VD b) { return _mm512_div_pd(a, b); }
PG_AVX512_INLINE VD v_sqrt(VD a) { return _mm512_sqrt_pd(a); }
PG_AVX512_INLINE VD v_trunc(VD a) {
  return _mm512_roundscale_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}
PG_AVX512_INLINE VM v_cmplt(VD a, VD b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
PG_AVX512_INLINE VM v_cmpeq(VD a, VD b) { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
PG_AVX512_INLINE VM v_mor(VM a, VM b) { return (VM)(a | b); }
/* m ? b : a, lane by lane */
PG_AVX512_INLINE VD v_select(VM m, VD a, VD b) { return _mm512_mask_blend_pd(m, a, b); }
PG_AVX512_INLINE VD v_add_if(VM m, VD a, VD b) { return _mm512_mask_add_pd(a, m, a, b); }
PG_AVX512_INLINE VD v_sub_if(VM m, VD a, VD b) { return _mm512_mask_sub_pd(a, m, a, b); }
PG_AVX512_INLINE VD v_negate_if(VD x, VM m) {
  __m512i b = _mm512_castpd_si512(x);
  return _mm512_castsi512_pd(_mm512_mask_xor_epi64(b, m, b, _mm512_set1_epi64((long long)0x8000000000000000ull)));
}
PG_AVX512_INLINE VI v_d2i(VD a) { return _mm512_castpd_si512(a); }
PG_AVX512_INLINE VD v_i2d(VI a) { return _mm512_castsi512_pd(a); }
PG_AVX512_INLINE VI v_and_i(VI a, VI b) { return _mm512_and_si512(a, b); }
PG_AVX512_INLINE VI v_or_i(VI a, VI b) { return _mm512_or_si512(a, b); }
PG_AVX512_INLINE VI v_add64(VI a, VI b) { return _mm512_add_epi64(a, b); }
PG_AVX512_INLINE VI v_mul_epu32(VI a, VI b) { return _mm512_mul_epu32(a, b); }
PG_AVX512_INLINE VI v_xor3(VI a, VI b, VI c) { return _mm512_ternarylogic_epi64(a, b, c, 0x96); }
/* The double whose bits are 0x43300000 : (low half of each lane of w). */
PG_AVX512_INLINE VD v_lo_magic(VI w) {
  return _mm512_castsi512_pd(_mm512_mask_blend_epi32(0xAAAA, w, _mm512_set1_epi64(0x4330000000000000LL)));
}
PG_AVX512_INLINE void v_storeu_i(uint64_t *out, VI x) { _mm512_storeu_si512((void *)out, x); }
/* Lanes y[0], y[4], .., y[28]: one word slot of eight consecutive blocks. */
PG_AVX512_INLINE VI v_gather4(const uint32_t *y) {
  return _mm512_setr_epi64(y[0], y[4], y[8], y[12], y[16], y[20], y[24], y[28]);
}

/* ---- group stores: each half of the group (8 blocks) as AVX2 slot vectors ---- */

/* -> 64 floats in element order. */
PG_AVX512_INLINE void avx512_store_f32(float *out, VD v[2][4]) {
  for (int h = 0; h < 2; h++) {
    __m256 e[4];
    for (int k = 0; k < 4; k++) e[k] = _mm512_cvtpd_ps(v[h][k]);
    avx2_store_slots32(out + 32 * h, e);
  }
}

/* -> 64 doubles in element order (four 4 x 4 transposes). */
PG_AVX512_INLINE void avx512_store_f64(double *out, VD v[2][4]) {
  for (int h = 0; h < 2; h++)
    for (int half = 0; half < 2; half++) {
      __m256d x[4];
      for (int k = 0; k < 4; k++)
        x[k] = half ? _mm512_extractf64x4_pd(v[h][k], 1) : _mm512_castpd512_pd256(v[h][k]);
      avx2_store_4x4_pd(out + 32 * h + 16 * half, x);
    }
}

/* -> 64 fp16/bf16 values in element order, rounded once: truncate to float, and set the
 * last bit if inexact (round to odd, as pg__f64_to_f32_odd). Where the scalar keeps an
 * overflowing float at inf, this gives FLT_MAX|1, which fp16 and bf16 round to inf too. */
PG_AVX512_INLINE void avx512_store_f16(uint16_t *out, VD v[2][4], int bf16) {
  for (int h = 0; h < 2; h++) {
    __m256 e[4];
    for (int k = 0; k < 4; k++) {
      __m256 t = _mm512_cvt_roundpd_ps(v[h][k], _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), v[h][k], _CMP_NEQ_OQ);
      __m512i wide = _mm512_castsi256_si512(_mm256_castps_si256(t)); /* upper half unused */
      wide = _mm512_mask_or_epi32(wide, (__mmask16)inexact, wide, _mm512_set1_epi32(1));
      e[k] = _mm256_castsi256_ps(_mm512_castsi512_si256(wide));
    }
    avx2_store_slots16(out + 32 * h, e, bf16);
  }
}

/* int() values -> 64 int32 in element order (truncation is exact for them). */
PG_AVX512_INLINE void avx512_store_i32(int32_t *out, VD v[2][4]) {
  for (int h = 0; h < 2; h++) {
    __m256 e[4];
    for (int k = 0; k < 4; k++) e[k] = _mm256_castsi256_ps(_mm512_cvttpd_epi32(v[h][k]));
    avx2_store_slots32(out + 32 * h, e);
  }
}

#include "tensors/fill_simd.h"

#endif /* PG_FILL_X86 */
