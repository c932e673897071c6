/* compare/cmp_hot.h — the "hot" block kernels of compare.c for float32, float16 and
 * bfloat16 on x86-64 (AVX-512 and AVX2 + FMA + F16C), written with intrinsics.
 *
 * A hot kernel does only what every block of a typical comparison needs, with as few
 * instructions as possible: the five sums (FMA: a*b of two widened 16/32-bit floats
 * is exact in double, so fma(a, b, s) == s + a*b), the block's max |a-b| (value only),
 * exact counts of mismatches, within-1e-3/5e-3, reference zeros and the error
 * balance (compare masks added into integer lanes), min/max of the reference (for
 * "constant reference" and "some |b| >= atol/rtol"), and the max ULP distance straight
 * from the sign-magnitude bits: |bits(a) - bits(b)| when the signs agree, |a|bits +
 * |b|bits when they differ (one masked add / blend). Everything index-carrying or
 * rare is left to the caller (cmp_kernel.h, hot_merge) as flags: a NaN/Inf in the
 * block (the block is redone by the general kernel), a pair that may raise max_rel.
 * Only [0, m) is read, m a multiple of the step.
 * Comparisons, counts, maxima are exact; sums are added in a fixed per-block order.
 */
#ifndef PG_CMP_HOT_H
#define PG_CMP_HOT_H

/* What one hot block hands back (see pg__hot_merge in cmp_kernel.h). */
struct pg__hot {
  double sum[5]; /* |a-b|, (a-b)^2, a*b, a*a, b*b */
  double max_abs;
  int64_t mis, w3, w53, zeros, bal; /* bal = #(a > b) - #(a < b) */
  double minb, maxb;
  uint64_t max_ulp;
  int rel;    /* some |a-b| > den * r0: re-scan for max_rel */
  int nonfin; /* some pair is not finite: nothing else is valid */
};

/* How much a hot kernel evaluates. While the largest max_rel seen so far is small,
 * a pair that does not raise it (|a-b| <= den * r0, the re-scan test every mode runs)
 * is within 1e-3 and 5e-3 relative, and, when r0 is also below rtol and atol/1e-8,
 * passes allclose; the tight modes then skip those tests and count every pair. A
 * block where some pair fails the re-scan test is redone in PG__HOT_FULL (see
 * pg__hot_mode / the chunk loop in cmp_kernel.h). */
enum pg__hot_mode {
  PG__HOT_FULL,   /* everything */
  PG__HOT_TIGHT,  /* no within-1e-3/5e-3 tests */
  PG__HOT_TIGHTER /* no within tests, no allclose test (the rule is allclose) */
};

/* The mode a block may use given the re-scan threshold r0 (pg__rel_r0). The margins
 * (2^-40 relative, atol >= 2^-900 so fl(rtol*|b|) underflow cannot matter) make
 * "|a-b| <= fl(den*r0)" imply the skipped tests despite rounding. */
static inline enum pg__hot_mode pg__hot_mode(const struct pg__kparams *kp, double r0) {
  const double m = 1.0 - 0x1p-40;
  if (!(r0 <= 1e-3 * m)) return PG__HOT_FULL;
  if (kp->kind == PG__K_CLOSE &&
      (r0 == 0.0 || (r0 <= kp->rtol * m && 1e-8 * r0 <= kp->atol * m && kp->atol >= 0x1p-900)))
    return PG__HOT_TIGHTER;
  return PG__HOT_TIGHT;
}

/* Bytes ahead the hot loops prefetch on both streams. */
#define PG__HOT_PF 2048

/* The body of a hot kernel entry point: one call of FN per (dtype, rule, mode), each a
 * specialisation of the always-inline FN, so the block loop has no run-time branches.
 * Expects kp, mode, pa, pb, m, r0 and out in scope. */
#define PG__HOT_MODES(FN, DT, K)                                                        \
  switch (mode) {                                                                       \
    case PG__HOT_FULL: FN(kp, DT, K, PG__HOT_FULL, pa, pb, m, r0, out); return;         \
    case PG__HOT_TIGHT: FN(kp, DT, K, PG__HOT_TIGHT, pa, pb, m, r0, out); return;       \
    default: FN(kp, DT, K, PG__HOT_TIGHTER, pa, pb, m, r0, out); return;                \
  }
#define PG__HOT_KINDS(FN, DT)                                                           \
  switch (kp->kind) {                                                                   \
    case PG__K_CLOSE: PG__HOT_MODES(FN, DT, PG__K_CLOSE)                                \
    case PG__K_EXACT: PG__HOT_MODES(FN, DT, PG__K_EXACT)                                \
    default: PG__HOT_MODES(FN, DT, PG__K_ULP)                                           \
  }
#define PG__HOT_DISPATCH(FN)                                                            \
  switch (kp->dtype) {                                                                  \
    case PG_DTYPE_F32: PG__HOT_KINDS(FN, PG_DTYPE_F32)                                  \
    case PG_DTYPE_F16: PG__HOT_KINDS(FN, PG_DTYPE_F16)                                  \
    default: PG__HOT_KINDS(FN, PG_DTYPE_BF16)                                           \
  }

/* ---- AVX-512 (16 elements per step) ---------------------------------------- */

#define PG__A512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,f16c,fma")))
#define PG__A512I PG__A512 __attribute__((always_inline)) static inline

PG__A512I __m512 pg__h512_load(enum pg_dtype dt, const void *p, int i, __m256i *raw) {
  if (dt == PG_DTYPE_F32) return _mm512_loadu_ps((const float *)p + i);
  __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)p + i));
  *raw = r;
  if (dt == PG_DTYPE_F16) return _mm512_cvtph_ps(r);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(r), 16));
}

/* Elements [i + 8h, i + 8h + 8) as doubles: float32 straight from memory (with
 * GCC; clang 14 rebuilds that load lane by lane, so it widens the register). */
PG__A512I __m512d pg__h512_pd(enum pg_dtype dt, const void *p, int i, __m512 f, int h) {
#ifndef __clang__
  if (dt == PG_DTYPE_F32) return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + i + 8 * h));
#else
  (void)dt, (void)p, (void)i;
#endif
  if (h == 0) return _mm512_cvtps_pd(_mm512_castps512_ps256(f));
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
}

PG__A512I void pg__h512(const struct pg__kparams *kp, enum pg_dtype dt, enum pg__kind kind,
                        enum pg__hot_mode mode, const void *pa, const void *pb, int m, double r0,
                        struct pg__hot *out) {
  const __m512d absm = _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MAX));
  const __m512d vat = _mm512_set1_pd(kp->atol), vrt = _mm512_set1_pd(kp->rtol);
  const __m512d vr0 = _mm512_set1_pd(r0), e8 = _mm512_set1_pd(1e-8);
  const __m512d e3 = _mm512_set1_pd(1e-3), e53 = _mm512_set1_pd(5e-3);
  const __m512i one64 = _mm512_set1_epi64(1), one32 = _mm512_set1_epi32(1);
  const uint32_t ucap = dt == PG_DTYPE_F32 ? UINT32_MAX : UINT16_MAX;
  const uint32_t ulim = kp->ulp > ucap ? ucap : (uint32_t)kp->ulp;
  const __m512i vulp32 = _mm512_set1_epi32((int)ulim);
  const __m256i vulp16 = _mm256_set1_epi16((short)ulim);
  __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, mx = s0;
  __m512i c_mis64 = _mm512_setzero_si512(), c3 = c_mis64, c53 = c_mis64;
  __m512i c_mis32 = c_mis64, c_zero = c_mis64, c_bal = c_mis64, u32 = c_mis64;
  const __m512i mag32 = _mm512_set1_epi32(INT32_MAX);
  const __m256i mag16 = _mm256_set1_epi16(INT16_MAX);
  __m256i u16 = _mm256_setzero_si256();
  __m512 minb = _mm512_set1_ps(INFINITY), maxb = _mm512_set1_ps(-INFINITY);
  unsigned rel = 0;
  for (int i = 0; i < m; i += 16) {
    _mm_prefetch((const char *)pa + (size_t)i * pg_dtype_size(dt) + PG__HOT_PF, _MM_HINT_T0);
    _mm_prefetch((const char *)pb + (size_t)i * pg_dtype_size(dt) + PG__HOT_PF, _MM_HINT_T0);
    __m256i ra = _mm256_setzero_si256(), rb = ra;
    __m512 fa = pg__h512_load(dt, pa, i, &ra), fb = pg__h512_load(dt, pb, i, &rb);
    /* ULP distance: |ia - ib| for equal signs, |a| + |b| in bits for different ones
     * (both < 2^32 / 2^16 for finite values, so unsigned lanes hold them) */
    __mmask16 kul;
    if (dt == PG_DTYPE_F32) {
      __m512i ia = _mm512_castps_si512(fa), ib = _mm512_castps_si512(fb);
      __m512i t = _mm512_abs_epi32(_mm512_sub_epi32(ia, ib));
      __mmask16 ks = _mm512_movepi32_mask(_mm512_xor_si512(ia, ib));
      t = _mm512_mask_add_epi32(t, ks, _mm512_and_si512(ia, mag32), _mm512_and_si512(ib, mag32));
      u32 = _mm512_max_epu32(u32, t);
      kul = _mm512_cmpgt_epu32_mask(t, vulp32);
    } else {
      __m256i t = _mm256_abs_epi16(_mm256_sub_epi16(ra, rb));
      __mmask16 ks = _mm256_movepi16_mask(_mm256_xor_si256(ra, rb));
      t = _mm256_mask_add_epi16(t, ks, _mm256_and_si256(ra, mag16), _mm256_and_si256(rb, mag16));
      u16 = _mm256_max_epu16(u16, t);
      kul = _mm256_cmpgt_epu16_mask(t, vulp16);
    }
    __mmask16 kz = _mm512_cmp_ps_mask(fb, _mm512_setzero_ps(), _CMP_EQ_OQ);
    c_zero = _mm512_mask_add_epi32(c_zero, kz, c_zero, one32);
    __mmask16 kgt = _mm512_cmp_ps_mask(fa, fb, _CMP_GT_OQ);
    __mmask16 klt = _mm512_cmp_ps_mask(fa, fb, _CMP_LT_OQ);
    c_bal = _mm512_mask_add_epi32(c_bal, kgt, c_bal, one32);
    c_bal = _mm512_mask_sub_epi32(c_bal, klt, c_bal, one32);
    minb = _mm512_min_ps(minb, fb);
    maxb = _mm512_max_ps(maxb, fb);
    if (kind == PG__K_EXACT)
      c_mis32 = _mm512_mask_add_epi32(c_mis32, (__mmask16)(kgt | klt), c_mis32, one32);
    else if (kind == PG__K_ULP)
      c_mis32 = _mm512_mask_add_epi32(c_mis32, kul, c_mis32, one32);
    for (int h = 0; h < 2; h++) {
      __m512d a = pg__h512_pd(dt, pa, i, fa, h), b = pg__h512_pd(dt, pb, i, fb, h);
      __m512d ad = _mm512_and_pd(_mm512_sub_pd(a, b), absm), ab = _mm512_and_pd(b, absm);
      s0 = _mm512_add_pd(s0, ad);
      s1 = _mm512_fmadd_pd(ad, ad, s1);
      s2 = _mm512_fmadd_pd(a, b, s2);
      s3 = _mm512_fmadd_pd(a, a, s3);
      s4 = _mm512_fmadd_pd(b, b, s4);
      mx = _mm512_max_pd(mx, ad);
      __m512d den = _mm512_add_pd(ab, e8);
      if (kind == PG__K_CLOSE && mode != PG__HOT_TIGHTER) {
        __mmask8 km = _mm512_cmp_pd_mask(ad, _mm512_add_pd(vat, _mm512_mul_pd(vrt, ab)), _CMP_GT_OQ);
        c_mis64 = _mm512_mask_add_epi64(c_mis64, km, c_mis64, one64);
      }
      if (mode == PG__HOT_FULL) {
        __mmask8 k3 = _mm512_cmp_pd_mask(ad, _mm512_mul_pd(den, e3), _CMP_LE_OQ);
        c3 = _mm512_mask_add_epi64(c3, k3, c3, one64);
        __mmask8 k53 = _mm512_cmp_pd_mask(ad, _mm512_mul_pd(den, e53), _CMP_LE_OQ);
        c53 = _mm512_mask_add_epi64(c53, k53, c53, one64);
      }
      rel |= _mm512_cmp_pd_mask(ad, _mm512_mul_pd(den, vr0), _CMP_GT_OQ);
    }
  }
  out->sum[0] = _mm512_reduce_add_pd(s0);
  out->sum[1] = _mm512_reduce_add_pd(s1);
  out->sum[2] = _mm512_reduce_add_pd(s2);
  out->sum[3] = _mm512_reduce_add_pd(s3);
  out->sum[4] = _mm512_reduce_add_pd(s4);
  out->nonfin = !isfinite(out->sum[0]);
  out->max_abs = _mm512_reduce_max_pd(mx);
  out->mis = _mm512_reduce_add_epi64(c_mis64) + _mm512_reduce_add_epi32(c_mis32);
  out->w3 = mode == PG__HOT_FULL ? _mm512_reduce_add_epi64(c3) : m; /* valid if !rel */
  out->w53 = mode == PG__HOT_FULL ? _mm512_reduce_add_epi64(c53) : m;
  out->zeros = _mm512_reduce_add_epi32(c_zero);
  out->bal = _mm512_reduce_add_epi32(c_bal);
  out->minb = _mm512_reduce_min_ps(minb);
  out->maxb = _mm512_reduce_max_ps(maxb);
  out->rel = rel != 0;
  if (dt == PG_DTYPE_F32) {
    out->max_ulp = _mm512_reduce_max_epu32(u32);
  } else {
    uint16_t uu[16];
    _mm256_storeu_si256((__m256i *)(void *)uu, u16);
    uint32_t um = 0;
    for (int l = 0; l < 16; l++) um = uu[l] > um ? uu[l] : um;
    out->max_ulp = um;
  }
}

PG__A512 static void pg__hot_avx512(const struct pg__kparams *kp, enum pg__hot_mode mode,
                                    const void *pa, const void *pb, int m, double r0,
                                    struct pg__hot *out) {
  PG__HOT_DISPATCH(pg__h512)
}

/* ---- AVX2 + FMA + F16C (8 elements per step, two passes) -------------------- */

/* 16 ymm registers cannot hold the ~16 accumulators plus temporaries of one fused
 * loop, so the block is walked twice: the double-precision metrics first, then the
 * float/integer ones over the same (now L1-resident) elements. */
/* pg__h2_load / pg__h2_pd are pg__h512_load / pg__h512_pd at half width: kept as twins
 * (not one macro body) because the register types, F16C forms and the clang
 * workaround differ per width. */
#define PG__A2 __attribute__((target("avx2,fma,f16c")))
#define PG__A2I PG__A2 __attribute__((always_inline)) static inline

PG__A2I __m256 pg__h2_load(enum pg_dtype dt, const void *p, int i, __m128i *raw) {
  if (dt == PG_DTYPE_F32) return _mm256_loadu_ps((const float *)p + i);
  __m128i r = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p + i));
  *raw = r;
  if (dt == PG_DTYPE_F16) return _mm256_cvtph_ps(r);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(r), 16));
}

PG__A2I __m256d pg__h2_pd(enum pg_dtype dt, const void *p, int i, __m256 f, int h) {
  if (dt == PG_DTYPE_F32) return _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + i + 4 * h));
  if (h == 0) return _mm256_cvtps_pd(_mm256_castps256_ps128(f));
  return _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

PG__A2I double pg__h2_sum(__m256d v) {
  __m128d l = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(l, _mm_unpackhi_pd(l, l)));
}

PG__A2I int64_t pg__h2_sum64(__m256i v) {
  int64_t x[4];
  _mm256_storeu_si256((__m256i *)(void *)x, v);
  return x[0] + x[1] + x[2] + x[3];
}

PG__A2I int64_t pg__h2_sum32(__m256i v) {
  int32_t x[8];
  _mm256_storeu_si256((__m256i *)(void *)x, v);
  int64_t s = 0;
  for (int l = 0; l < 8; l++) s += x[l];
  return s;
}

/* Pass 1: sums, max |a-b|, allclose mismatches, within shares, max_rel candidates;
 * stops after the sums when some pair is not finite (out->nonfin). */
PG__A2I void pg__h2_pass1(const struct pg__kparams *kp, enum pg_dtype dt, enum pg__kind kind,
                          enum pg__hot_mode mode, const void *pa, const void *pb, int m,
                          double r0, struct pg__hot *out) {
  const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
  const __m256d vat = _mm256_set1_pd(kp->atol), vrt = _mm256_set1_pd(kp->rtol);
  const __m256d vr0 = _mm256_set1_pd(r0), e8 = _mm256_set1_pd(1e-8);
  const __m256d e3 = _mm256_set1_pd(1e-3), e53 = _mm256_set1_pd(5e-3);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, mx = s0;
  __m256i c_mis = _mm256_setzero_si256(), c3 = c_mis, c53 = c_mis;
  __m256d rel = _mm256_setzero_pd();
  for (int i = 0; i < m; i += 8) {
    _mm_prefetch((const char *)pa + (size_t)i * pg_dtype_size(dt) + PG__HOT_PF, _MM_HINT_T0);
    _mm_prefetch((const char *)pb + (size_t)i * pg_dtype_size(dt) + PG__HOT_PF, _MM_HINT_T0);
    __m128i ra, rb;
    __m256 fa = _mm256_setzero_ps(), fb = fa;
    if (dt != PG_DTYPE_F32) fa = pg__h2_load(dt, pa, i, &ra), fb = pg__h2_load(dt, pb, i, &rb);
    for (int h = 0; h < 2; h++) {
      __m256d a = pg__h2_pd(dt, pa, i, fa, h), b = pg__h2_pd(dt, pb, i, fb, h);
      __m256d ad = _mm256_and_pd(_mm256_sub_pd(a, b), absm), ab = _mm256_and_pd(b, absm);
      s0 = _mm256_add_pd(s0, ad);
      s1 = _mm256_fmadd_pd(ad, ad, s1);
      s2 = _mm256_fmadd_pd(a, b, s2);
      s3 = _mm256_fmadd_pd(a, a, s3);
      s4 = _mm256_fmadd_pd(b, b, s4);
      mx = _mm256_max_pd(mx, ad);
      __m256d den = _mm256_add_pd(ab, e8);
      if (kind == PG__K_CLOSE && mode != PG__HOT_TIGHTER)
        c_mis = _mm256_sub_epi64(c_mis, _mm256_castpd_si256(_mm256_cmp_pd(
                                            ad, _mm256_add_pd(vat, _mm256_mul_pd(vrt, ab)), _CMP_GT_OQ)));
      if (mode == PG__HOT_FULL) {
        c3 = _mm256_sub_epi64(c3, _mm256_castpd_si256(_mm256_cmp_pd(ad, _mm256_mul_pd(den, e3), _CMP_LE_OQ)));
        c53 = _mm256_sub_epi64(c53, _mm256_castpd_si256(_mm256_cmp_pd(ad, _mm256_mul_pd(den, e53), _CMP_LE_OQ)));
      }
      rel = _mm256_or_pd(rel, _mm256_cmp_pd(ad, _mm256_mul_pd(den, vr0), _CMP_GT_OQ));
    }
  }
  out->sum[0] = pg__h2_sum(s0);
  out->sum[1] = pg__h2_sum(s1);
  out->sum[2] = pg__h2_sum(s2);
  out->sum[3] = pg__h2_sum(s3);
  out->sum[4] = pg__h2_sum(s4);
  out->nonfin = !isfinite(out->sum[0]);
  if (out->nonfin) return; /* the caller redoes the block */
  __m128d m2 = _mm_max_pd(_mm256_castpd256_pd128(mx), _mm256_extractf128_pd(mx, 1));
  m2 = _mm_max_sd(m2, _mm_unpackhi_pd(m2, m2));
  out->max_abs = _mm_cvtsd_f64(m2);
  out->mis = pg__h2_sum64(c_mis);
  out->w3 = mode == PG__HOT_FULL ? pg__h2_sum64(c3) : m; /* valid if !rel */
  out->w53 = mode == PG__HOT_FULL ? pg__h2_sum64(c53) : m;
  out->rel = _mm256_movemask_pd(rel) != 0;
}

/* Pass 2: ULP distance, zeros, balance, min/max b, exact/ulp mismatches (added to
 * pass 1's). */
PG__A2I void pg__h2_pass2(const struct pg__kparams *kp, enum pg_dtype dt, enum pg__kind kind,
                          const void *pa, const void *pb, int m, struct pg__hot *out) {
  const __m256i flip32 = _mm256_set1_epi32(INT32_MIN);
  const __m128i flip16 = _mm_set1_epi16(INT16_MIN);
  const uint32_t ucap = dt == PG_DTYPE_F32 ? UINT32_MAX : UINT16_MAX;
  const uint32_t ulim = kp->ulp > ucap ? ucap : (uint32_t)kp->ulp;
  const __m256i vulp32 = _mm256_set1_epi32((int)(ulim ^ 0x80000000u)); /* biased for signed cmp */
  const __m128i vulp16 = _mm_set1_epi16((short)(ulim ^ 0x8000u));
  const __m256i mag32 = _mm256_set1_epi32(INT32_MAX);
  const __m128i mag16 = _mm_set1_epi16(INT16_MAX);
  __m256i u32 = _mm256_setzero_si256(), c_zero = u32, c_bal = u32, c_mis = u32;
  __m128i u16 = _mm_setzero_si128();
  __m256 minb = _mm256_set1_ps(INFINITY), maxb = _mm256_set1_ps(-INFINITY);
  for (int i = 0; i < m; i += 8) {
    __m128i ra = _mm_setzero_si128(), rb = ra;
    __m256 fa = pg__h2_load(dt, pa, i, &ra), fb = pg__h2_load(dt, pb, i, &rb);
    __m256i kul;
    if (dt == PG_DTYPE_F32) {
      __m256i ia = _mm256_castps_si256(fa), ib = _mm256_castps_si256(fb);
      __m256i t = _mm256_abs_epi32(_mm256_sub_epi32(ia, ib));
      __m256i sum = _mm256_add_epi32(_mm256_and_si256(ia, mag32), _mm256_and_si256(ib, mag32));
      /* blendv picks by the sign bit of each lane of ia ^ ib */
      t = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(t), _mm256_castsi256_ps(sum),
                                               _mm256_castsi256_ps(_mm256_xor_si256(ia, ib))));
      u32 = _mm256_max_epu32(u32, t);
      kul = _mm256_cmpgt_epi32(_mm256_xor_si256(t, flip32), vulp32);
    } else {
      __m128i t = _mm_abs_epi16(_mm_sub_epi16(ra, rb));
      __m128i sum = _mm_add_epi16(_mm_and_si128(ra, mag16), _mm_and_si128(rb, mag16));
      t = _mm_blendv_epi8(t, sum, _mm_srai_epi16(_mm_xor_si128(ra, rb), 15));
      u16 = _mm_max_epu16(u16, t);
      kul = _mm256_cvtepi16_epi32(_mm_cmpgt_epi16(_mm_xor_si128(t, flip16), vulp16));
    }
    __m256 gt = _mm256_cmp_ps(fa, fb, _CMP_GT_OQ), lt = _mm256_cmp_ps(fa, fb, _CMP_LT_OQ);
    c_zero = _mm256_sub_epi32(c_zero, _mm256_castps_si256(_mm256_cmp_ps(fb, _mm256_setzero_ps(), _CMP_EQ_OQ)));
    c_bal = _mm256_add_epi32(c_bal, _mm256_sub_epi32(_mm256_castps_si256(lt), _mm256_castps_si256(gt)));
    minb = _mm256_min_ps(minb, fb);
    maxb = _mm256_max_ps(maxb, fb);
    if (kind == PG__K_EXACT) c_mis = _mm256_sub_epi32(c_mis, _mm256_castps_si256(_mm256_or_ps(gt, lt)));
    else if (kind == PG__K_ULP) c_mis = _mm256_sub_epi32(c_mis, kul);
  }
  out->zeros = pg__h2_sum32(c_zero);
  out->bal = pg__h2_sum32(c_bal);
  out->mis += pg__h2_sum32(c_mis);
  float fmn[8], fmx[8];
  _mm256_storeu_ps(fmn, minb);
  _mm256_storeu_ps(fmx, maxb);
  float mn = fmn[0], mxb = fmx[0];
  for (int l = 1; l < 8; l++) mn = fmn[l] < mn ? fmn[l] : mn, mxb = fmx[l] > mxb ? fmx[l] : mxb;
  out->minb = mn;
  out->maxb = mxb;
  if (dt == PG_DTYPE_F32) {
    uint32_t uu[8], um = 0;
    _mm256_storeu_si256((__m256i *)(void *)uu, u32);
    for (int l = 0; l < 8; l++) um = uu[l] > um ? uu[l] : um;
    out->max_ulp = um;
  } else {
    uint16_t uu[8];
    uint32_t um = 0;
    _mm_storeu_si128((__m128i *)(void *)uu, u16);
    for (int l = 0; l < 8; l++) um = uu[l] > um ? uu[l] : um;
    out->max_ulp = um;
  }
}

PG__A2I void pg__h2(const struct pg__kparams *kp, enum pg_dtype dt, enum pg__kind kind,
                    enum pg__hot_mode mode, const void *pa, const void *pb, int m, double r0,
                    struct pg__hot *out) {
  pg__h2_pass1(kp, dt, kind, mode, pa, pb, m, r0, out);
  if (out->nonfin) return; /* the caller redoes the block */
  pg__h2_pass2(kp, dt, kind, pa, pb, m, out);
}

PG__A2 static void pg__hot_avx2(const struct pg__kparams *kp, enum pg__hot_mode mode,
                                const void *pa, const void *pb, int m, double r0,
                                struct pg__hot *out) {
  PG__HOT_DISPATCH(pg__h2)
}

#undef PG__HOT_DISPATCH
#undef PG__HOT_KINDS
#undef PG__HOT_MODES

#endif
