/* compare/cmp_elem.h — one element of a comparison in scalar form: ULP distances,
 * the per-element verdict of a rule, integer staging. Shared by the streaming pass
 * (compare.c) and the mismatch-mask analysis (mask.c), so both judge an element the
 * same way. Private to compare/.
 */
#ifndef PG_CMP_ELEM_H
#define PG_CMP_ELEM_H

#include <math.h>
#include <string.h>

#include "cmp_internal.h"

static inline uint64_t pg__f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* Distance between two values in units in the last place: map each bit pattern to
 * an ordered integer (+0 and -0 both to 0) and subtract. */
static inline uint64_t pg__ulp32(uint32_t a, uint32_t b) {
  int64_t oa = (int64_t)(a & 0x7fffffffu), ob = (int64_t)(b & 0x7fffffffu);
  if (a >> 31) oa = -oa;
  if (b >> 31) ob = -ob;
  return (uint64_t)(oa > ob ? oa - ob : ob - oa);
}

static inline uint64_t pg__ulp16(uint16_t a, uint16_t b) {
  int64_t oa = a & 0x7fff, ob = b & 0x7fff;
  if (a >> 15) oa = -oa;
  if (b >> 15) ob = -ob;
  return (uint64_t)(oa > ob ? oa - ob : ob - oa);
}

static inline uint64_t pg__ulp64(uint64_t a, uint64_t b) {
  int64_t oa = (int64_t)(a & (uint64_t)INT64_MAX), ob = (int64_t)(b & (uint64_t)INT64_MAX);
  if (a >> 63) oa = -oa;
  if (b >> 63) ob = -ob;
  return oa > ob ? (uint64_t)oa - (uint64_t)ob : (uint64_t)ob - (uint64_t)oa;
}

/* The per-element verdict in scalar form; must agree with the vector form in
 * cmp_kernel.h (the tests check both through the first-mismatch list). */
static inline int pg__elem_pass(const struct pg__kparams *kp, double a, double b, uint64_t u) {
  int nanpair = kp->equal_nan && isnan(a) && isnan(b);
  int fin = isfinite(a) && isfinite(b);
  switch (kp->kind) {
    case PG__K_CLOSE: return (fin && fabs(a - b) <= kp->atol + kp->rtol * fabs(b)) || a == b || nanpair;
    case PG__K_EXACT: return a == b || nanpair;
    case PG__K_ULP: return (fin && u <= kp->ulp) || a == b || nanpair;
    default: return u == 0;
  }
}

/* Integers and bool: widened to double for the metrics; u is the exact integer
 * distance |a - b| (bool: truth values), which decides the verdict. */
static inline void pg__stage_int(enum pg_dtype t, const void *impl, const void *ref, int64_t at, int m,
                          struct pg__staged *st) {
  double *a = st->a, *b = st->b;
  uint64_t *u = st->u;
  for (int i = m; i < PG__CMP_BLOCK + 8; i++) a[i] = b[i] = 0.0, u[i] = 0;
  for (int i = 0; i < m; i++) {
    int64_t x, y;
    switch (t) {
      case PG_DTYPE_I8: x = ((const int8_t *)impl)[at + i]; y = ((const int8_t *)ref)[at + i]; break;
      case PG_DTYPE_U8: x = ((const uint8_t *)impl)[at + i]; y = ((const uint8_t *)ref)[at + i]; break;
      case PG_DTYPE_I32: x = ((const int32_t *)impl)[at + i]; y = ((const int32_t *)ref)[at + i]; break;
      case PG_DTYPE_I64: x = ((const int64_t *)impl)[at + i]; y = ((const int64_t *)ref)[at + i]; break;
      default: x = ((const uint8_t *)impl)[at + i] != 0; y = ((const uint8_t *)ref)[at + i] != 0; break;
    }
    a[i] = (double)x;
    b[i] = (double)y;
    u[i] = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
  }
}

/* Element i of two float tensors, widened, with their ULP distance (re-scans). */
static inline void pg__scalar(enum pg_dtype t, const void *pa, const void *pb, int64_t i,
                              double *a, double *b, uint64_t *u) {
  switch (t) {
    case PG_DTYPE_F32: {
      float x = ((const float *)pa)[i], y = ((const float *)pb)[i];
      *a = x, *b = y, *u = pg__ulp32(pg__f32_bits(x), pg__f32_bits(y));
      return;
    }
    case PG_DTYPE_F16:
    case PG_DTYPE_BF16: {
      uint16_t x = ((const uint16_t *)pa)[i], y = ((const uint16_t *)pb)[i];
      *a = t == PG_DTYPE_F16 ? pg_f16_to_f32(x) : pg_bf16_to_f32(x);
      *b = t == PG_DTYPE_F16 ? pg_f16_to_f32(y) : pg_bf16_to_f32(y);
      *u = pg__ulp16(x, y);
      return;
    }
    default: {
      double x = ((const double *)pa)[i], y = ((const double *)pb)[i];
      *a = x, *b = y, *u = pg__ulp64(pg__f64_bits(x), pg__f64_bits(y));
      return;
    }
  }
}

#endif
