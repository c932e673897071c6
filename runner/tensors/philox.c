/* phasegate runner — Philox-4x32-10 (Random123's philox4x32 with 10 rounds) and the
 * stream addressing used by every fill: key = case seed, counter = (block index,
 * hash of input name ^ purpose). Checked against Random123's known-answer vectors in
 * tests/tensors/test-rng.c. */
#include "tensors/rng.h"

void pg_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  pg__philox4x32_10_inline(ctr, key, out); /* rng.h: M0 D2511F53, M1 CD9E8D57, W 9E3779B9 BB67AE85 */
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
