/* phasegate runner — what the fill generator's files share; private to
 * runner/tensors/fill*.c:
 *   fill.c         the scalar definition (portable log / sincos, the value of every
 *                  element), the portable loops, threads and the choice of path;
 *   fill_x86.h     x86-64 pieces both SIMD files use (store helpers, specials table);
 *   fill_simd.h    the SIMD kernels written once, instantiated per instruction set by
 *   fill_avx2.c    (4 blocks per vector) and
 *   fill_avx512.c  (8 blocks per vector).
 * Holds the FP-contraction guard, the constants and polynomial coefficients (the same
 * literals, so the same doubles, in the scalar and the SIMD code) and one fill job.
 * Not here: the fill grammar (runner/opdir/fill_spec.c). */
#ifndef PHASEGATE_FILL_INTERNAL_H
#define PHASEGATE_FILL_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "tensors/rng.h"
#include "tensors/tensors.h"

/* Fused multiply-add would change low bits between platforms. ISO C mode (the
 * project's -std=c11) already keeps gcc from contracting; these also hold when the
 * fill files are built with -std=gnu11 or -ffp-contract=fast (tests/tensors checks
 * both). Every fill*.c includes this header before any code (and before immintrin.h,
 * so its inline functions are compiled the same way). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define PG_SQRT1_2 0.70710678118654752440
#define PG_LN2 0.69314718055994530942
#define PG_2PI 6.28318530717958647692
#define PG_INV_FACT17 (1.0 / 355687428096000.0)
#define PG_INV_FACT18 (1.0 / 6402373705728000.0)

/* log(m * 2^e) = e ln 2 + 2 atanh(s), s = (m-1)/(m+1): the odd series of atanh to s^23
 * (Horner from the highest term). */
static const double log_k[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                               1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};

/* Taylor coefficients of sin (after 1/17!) and of (1 - cos) / t^2 (after 1/18!). */
static const double sin_k[] = {-1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,
                               1.0 / 362880.0,         -1.0 / 5040.0,      1.0 / 120.0,
                               -1.0 / 6.0,             1.0};
static const double cos_k[] = {-1.0 / 20922789888000.0, 1.0 / 87178291200.0, -1.0 / 479001600.0,
                               1.0 / 3628800.0,         -1.0 / 40320.0,      1.0 / 720.0,
                               -1.0 / 24.0,             0.5};

/* The value of each special kind (enum pg_special order); denormal is per dtype
 * (fill_job.denormal). */
static const double pg__fill_special_vals[PG_SPECIAL_COUNT] = {NAN, INFINITY, -INFINITY, 0.0,
                                                               -0.0};

/* One thread's share of a fill. */
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

/* Element i of the job's tensor = v, rounded to its dtype. */
static inline void pg__fill_store(void *data, enum pg_dtype t, size_t i, double v) {
  if (t == PG_DTYPE_F32) ((float *)data)[i] = (float)v;
  else if (t == PG_DTYPE_F64) ((double *)data)[i] = v;
  else pg_store_f64(data, t, i, v);
}

/* x86-64 paths (AVX2, AVX-512F) for the normal, uniform and int fills, picked at run
 * time; -DPG_FILL_NO_SIMD builds the portable path alone. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PG_FILL_NO_SIMD)
#define PG_FILL_X86 1

/* Elements [i0, j->end) of a normal/uniform/int job in whole groups (32 elements for
 * AVX2, 64 for AVX-512), i0 a multiple of 4; returns where it stopped. */
size_t pg__fill_avx2_range(const struct fill_job *j, size_t i0);
size_t pg__fill_avx512_range(const struct fill_job *j, size_t i0);

/* pg__rng_blocks_isa on one path: n_blocks a multiple of 4 (AVX2) or 8 (AVX-512). */
void pg__fill_avx2_blocks(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                          uint32_t *out);
void pg__fill_avx512_blocks(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                            uint32_t *out);

/* pg__rng_values_from_words on one path: n_blocks a multiple of 8 (AVX2) or 16. */
void pg__fill_avx2_from_words(const struct pg_fill *f, const uint32_t *words, size_t n_blocks,
                              double *out);
void pg__fill_avx512_from_words(const struct pg_fill *f, const uint32_t *words,
                                size_t n_blocks, double *out);
#endif

#endif
