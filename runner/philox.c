/* phasegate runner — Philox-4x32-10 (Random123's philox4x32 with 10 rounds) and the
 * stream addressing used by every fill: key = case seed, counter = (block index,
 * hash of input name ^ purpose). Checked against Random123's known-answer vectors in
 * tests/tensor/test-rng.c. */
#include "rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void pg_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) { /* key schedule: bump before every round but the first */
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

uint64_t pg_fnv1a64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  return h;
}

void pg_rng_stream_init(struct pg_rng_stream *s, uint64_t seed, const char *name,
                        enum pg_rng_purpose purpose) {
  /* Purposes get well-separated tags so a value stream never equals the stream that
   * picks special-value positions for the same input. */
  uint64_t tag = pg_fnv1a64(name ? name : "") ^ ((uint64_t)purpose * 0x9E3779B97F4A7C15ull);
  s->key[0] = (uint32_t)seed;
  s->key[1] = (uint32_t)(seed >> 32);
  s->tag[0] = (uint32_t)tag;
  s->tag[1] = (uint32_t)(tag >> 32);
}

void pg_rng_block(const struct pg_rng_stream *s, uint64_t block, uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->tag[0], s->tag[1]};
  pg_philox4x32_10(ctr, s->key, out);
}
