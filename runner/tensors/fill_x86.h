/* phasegate runner — x86-64 pieces shared by the SIMD fill kernels (fill_avx2.c,
 * fill_avx512.c; private to them): how a group is written to the dtype, the
 * special-value table, Philox round keys, and the AVX2 transposes and half-precision
 * stores that the AVX-512 kernels finish with.
 *
 * The kernels are the scalar definition in fill.c evaluated several lanes at a time:
 * the same IEEE double operations in the same order (add, mul, div and sqrt are
 * correctly rounded in every lane), selections done with blends and sign flips that
 * give the very bits of the scalar "* 2.0" and "* -1.0", and no FMA: the target
 * attributes leave "fma" out, so the compiler cannot fuse a multiply into an add even
 * if asked to contract. */
#ifndef PHASEGATE_FILL_X86_H
#define PHASEGATE_FILL_X86_H

#include "tensors/fill_internal.h"

#ifdef PG_FILL_X86
#include <immintrin.h>

#define PG_AVX2 __attribute__((target("avx2,f16c")))
#define PG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))

/* How a SIMD group is written. Specials (floating dtypes only) are applied in the
 * registers first. int32 is direct only for int(): its values are integers the dtype
 * holds (int_range_ok in fill.c), where truncation equals pg_store_f64's
 * clamp-and-truncate. */
enum fill_store {
  FILL_STORE_SCALAR, /* through pg__fill_store (other integer dtypes) */
  FILL_STORE_F32,
  FILL_STORE_F64,
  FILL_STORE_F16,
  FILL_STORE_BF16,
  FILL_STORE_I32 /* straight from the registers */
};

static inline enum fill_store fill_store_of(const struct fill_job *j) {
  switch (j->dtype) {
    case PG_DTYPE_I32: return j->fill->kind == PG_FILL_INT ? FILL_STORE_I32 : FILL_STORE_SCALAR;
    case PG_DTYPE_F32: return FILL_STORE_F32;
    case PG_DTYPE_F64: return FILL_STORE_F64;
    case PG_DTYPE_F16: return FILL_STORE_F16;
    case PG_DTYPE_BF16: return FILL_STORE_BF16;
    default: return FILL_STORE_SCALAR;
  }
}

/* special_value (fill.c) as a table for the SIMD paths: the same running sums of the
 * fractions; kinds with fraction 0 can never be the first whose sum exceeds u, so they
 * are left out. Applied from the last kind to the first, the first kind with u < acc
 * wins. */
struct special_table {
  int n;
  double acc[PG_SPECIAL_COUNT], val[PG_SPECIAL_COUNT];
};

static inline void special_table_init(const struct fill_job *j, struct special_table *t) {
  const double *fr = j->fill->special;
  double acc = 0;
  t->n = 0;
  for (int k = 0; k < PG_SPECIAL_COUNT; k++) {
    acc += fr[k];
    if (!(fr[k] > 0)) continue;
    t->acc[t->n] = acc;
    t->val[t->n] = k == PG_SPECIAL_DENORMAL ? j->denormal : pg__fill_special_vals[k];
    t->n++;
  }
}

/* Round keys of Philox: key + r * (W0, W1), wrapping. */
static inline void philox_round_keys(const uint32_t key[2], uint32_t k0[10], uint32_t k1[10]) {
  for (int r = 0; r < 10; r++) {
    k0[r] = key[0] + (uint32_t)r * 0x9E3779B9u;
    k1[r] = key[1] + (uint32_t)r * 0xBB67AE85u;
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

/* Slot vectors e[k] of 32-bit values (floats, or int32 bits) -> 32 values in element
 * order at out. */
PG_AVX2_INLINE void avx2_store_slots32(void *out, const __m256 e[4]) {
  __m256 r[4];
  avx2_transpose_8x4(e, r);
  for (int q = 0; q < 4; q++) _mm256_storeu_ps((float *)out + 8 * q, r[q]);
}

/* Slot vectors e[k] of floats (rounded to odd) -> 32 fp16 or bf16 values in element
 * order. */
PG_AVX2_INLINE void avx2_store_slots16(uint16_t *out, const __m256 e[4], int bf16) {
  __m256 r[4];
  avx2_transpose_8x4(e, r);
  avx2_store_halves(out, r, bf16);
}

/* Slot vectors x[k] (k = 0..3, lanes = blocks 0..3) of doubles -> 16 doubles in
 * element order: a 4 x 4 transpose. */
PG_AVX2_INLINE void avx2_store_4x4_pd(double *out, const __m256d x[4]) {
  __m256d t0 = _mm256_unpacklo_pd(x[0], x[1]), t1 = _mm256_unpackhi_pd(x[0], x[1]);
  __m256d t2 = _mm256_unpacklo_pd(x[2], x[3]), t3 = _mm256_unpackhi_pd(x[2], x[3]);
  _mm256_storeu_pd(out, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(out + 4, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(out + 8, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(out + 12, _mm256_permute2f128_pd(t1, t3, 0x31));
}
#endif /* PG_FILL_X86 */

#endif
