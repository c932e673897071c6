/* Unit tests for goldens/f16_bulk.c: the bulk converters (F16C path on this machine
 * when it has it) agree with the scalar pg_f16_to_f32 / pg_f32_to_f16 on every fp16
 * bit pattern, on a dense sweep of fp32 bit patterns (every exponent, rounding ties,
 * subnormal results, overflow), and on lengths that leave a scalar tail. NaN only has
 * to stay NaN with its sign (payloads may differ). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "f16_bulk.h"
#include "pg_test.h"
#include "phasegate/tensor.h"

static int same_f32(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && signbit(a) == signbit(b);
  return pg__f32_bits(a) == pg__f32_bits(b);
}

static int same_f16(uint16_t a, uint16_t b) {
  int na = (a & 0x7c00u) == 0x7c00u && (a & 0x3ffu), nb = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
  if (na || nb) return na && nb && (a & 0x8000u) == (b & 0x8000u);
  return a == b;
}

PG_TEST(widen_every_f16) {
  uint16_t *h = malloc(65536 * sizeof *h);
  float *f = malloc(65536 * sizeof *f);
  PG_CHECK(h && f);
  if (!h || !f) return;
  for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  pg__f16_to_f32_n(h, f, 65536);
  int bad = 0;
  for (uint32_t i = 0; i < 65536; i++) bad += !same_f32(f[i], pg_f16_to_f32((uint16_t)i));
  PG_CHECK_EQ_INT(0, bad);
  free(h);
  free(f);
}

/* fp32 patterns: every exponent, the low 13 bits (the rounding bits) exhaustive for a
 * few mantissa prefixes, both signs. */
static int64_t make_f32_sweep(float *f) {
  int64_t n = 0;
  static const uint32_t prefixes[] = {0x000u, 0x001u, 0x1ffu, 0x200u, 0x3feu, 0x3ffu};
  for (uint32_t sign = 0; sign < 2; sign++)
    for (uint32_t e = 0; e < 256; e++)
      for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++)
        for (uint32_t low = 0; low < (1u << 13); low += 7) {
          uint32_t u = sign << 31 | e << 23 | prefixes[p] << 13 | low;
          f[n++] = pg__bits_f32(u);
        }
  /* exact ties (low 13 bits = 0x1000) around every exponent */
  for (uint32_t e = 0; e < 256; e++) f[n++] = pg__bits_f32(e << 23 | 0x1000u);
  return n;
}

PG_TEST(narrow_and_round_f32_sweep) {
  enum { CAP = 2 * 256 * 6 * 1171 + 256 + 16 };
  float *f = malloc(CAP * sizeof *f), *r = malloc(CAP * sizeof *r);
  uint16_t *h = malloc(CAP * sizeof *h);
  PG_CHECK(f && r && h);
  if (!f || !r || !h) return;
  int64_t n = make_f32_sweep(f);
  PG_CHECK(n <= CAP);
  pg__f32_to_f16_n(f, h, n);
  memcpy(r, f, (size_t)n * sizeof *f);
  pg__f32_round_f16_n(r, n);
  int bad_h = 0, bad_r = 0;
  for (int64_t i = 0; i < n; i++) {
    uint16_t want = pg_f32_to_f16(f[i]);
    bad_h += !same_f16(h[i], want);
    bad_r += !same_f32(r[i], pg_f16_to_f32(want));
  }
  PG_CHECK_EQ_INT(0, bad_h);
  PG_CHECK_EQ_INT(0, bad_r);
  free(f);
  free(r);
  free(h);
}

/* Lengths 0..20: the vector body plus a scalar tail, nothing written past n. */
PG_TEST(tails_and_bounds) {
  for (int n = 0; n <= 20; n++) {
    uint16_t h[24], h2[24];
    float f[24];
    for (int i = 0; i < 24; i++) h[i] = (uint16_t)(0x3c00 + i * 37), f[i] = -7.0f, h2[i] = 0xABCD;
    pg__f16_to_f32_n(h, f, n);
    for (int i = 0; i < 24; i++)
      PG_CHECK(i < n ? same_f32(f[i], pg_f16_to_f32(h[i])) : f[i] == -7.0f);
    pg__f32_to_f16_n(f, h2, n);
    for (int i = 0; i < 24; i++) PG_CHECK(i < n ? h2[i] == h[i] : h2[i] == 0xABCD);
  }
}
