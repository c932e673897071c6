/* phasegate runner — the counter-based random number generator (Philox-4x32-10,
 * Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
 * deterministic tensor fills built on it (docs/design.md §4).
 *
 * Element i of input X under case seed s is a pure function of (s, X, i): the key is
 * the 64-bit seed, the counter is (block index i/4, hash of the input name), so the
 * output is bit-identical for any thread count and, because the transcendental
 * functions used by the fills are our own (fill.c), for any IEEE-754 platform. */
#ifndef PHASEGATE_RNG_H
#define PHASEGATE_RNG_H

#include <stdint.h>

#include "tensors/tensors.h"
#include "phasegate/error.h"
#include "phasegate/tensor.h"

/* One Philox-4x32 bijection with 10 rounds: out = philox(ctr, key). */
void pg_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The same bijection, inline for the fill loops (philox.c's function calls it). */
static inline void pg__philox4x32_10_inline(const uint32_t ctr[4], const uint32_t key[2],
                                            uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) { /* key schedule: bump before every round but the first */
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* 64-bit FNV-1a of a NUL-terminated string (input names, case ids). */
uint64_t pg_fnv1a64(const char *s);

/* A stream: one (seed, name, purpose) triple. Block b of the stream is
 * philox({b_lo, b_hi, tag_lo, tag_hi}, {seed_lo, seed_hi}). */
struct pg_rng_stream {
  uint32_t key[2];
  uint32_t tag[2];
};

enum pg_rng_purpose { PG_RNG_VALUES = 0, PG_RNG_SPECIALS = 1, PG_RNG_SEARCH = 2 };

void pg_rng_stream_init(struct pg_rng_stream *s, uint64_t seed, const char *name,
                        enum pg_rng_purpose purpose);
/* The four 32-bit words of block `block`. */
static inline void pg_rng_block(const struct pg_rng_stream *s, uint64_t block, uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->tag[0], s->tag[1]};
  pg__philox4x32_10_inline(ctr, s->key, out);
}

/* A 32-bit word mapped to the open interval (0, 1): (x + 0.5) / 2^32. Never 0 or 1,
 * so log() is always finite. */
static inline double pg_rng_u01(uint32_t x) { return ((double)x + 0.5) * (1.0 / 4294967296.0); }

/* Portable natural log and sincos(2*pi*u) used by the normal fill (fill.c). Exposed
 * for the tests, which compare them with libm. */
double pg__rng_log(double x);
void pg__rng_sincos2pi(double u, double *s, double *c);

/* Fills t (allocated, dtype and shape set) per `fill`, keyed by (seed, name).
 * n_threads: 0 = online CPUs, 1 = no threads. Errors: PG_EDTYPE when the fill cannot
 * be represented (int() range beyond the dtype's exact integers, specials on an
 * integer dtype), PG_ENOMEM/PG_EINTERNAL when threads cannot start. */
int pg_fill_generate(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                     const char *name, int n_threads, struct pg_error *err);

/* Instruction-set paths of the fills (fill.c). Every path gives the same bits; the
 * portable one is the definition and the SIMD ones are tested equal to it bit for bit.
 * AUTO = the fastest this CPU supports (what pg_fill_generate uses). The explicit
 * choices and the kernels below exist for the tests and benchmarks. */
enum pg__fill_isa {
  PG__FILL_ISA_AUTO = 0,
  PG__FILL_ISA_PORTABLE = 1,
  PG__FILL_ISA_AVX2 = 2,
  PG__FILL_ISA_AVX512 = 3
};

/* The path AUTO resolves to on this CPU (never AUTO). */
enum pg__fill_isa pg__fill_isa_best(void);

/* pg_fill_generate on the given path; PG_ENOTSUP when this CPU or build lacks it. */
int pg__fill_generate_isa(struct pg_tensor *t, const struct pg_fill *fill, uint64_t seed,
                          const char *name, int n_threads, enum pg__fill_isa isa,
                          struct pg_error *err);

/* A path's Philox kernel: the words of blocks b0 .. b0+n_blocks-1 of stream s, four
 * per block, into out[4 * n_blocks]. n_blocks must be a multiple of 8. */
int pg__rng_blocks_isa(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                       enum pg__fill_isa isa, uint32_t *out);

/* A path's transform of given Philox words (four per block, as from
 * pg__rng_blocks_isa) into the double values of a normal, uniform or int fill, before
 * specials and rounding to the dtype, into out[4 * n_blocks]. n_blocks must be a
 * multiple of 8. */
int pg__rng_values_from_words(const struct pg_fill *fill, const uint32_t *words,
                              size_t n_blocks, enum pg__fill_isa isa, double *out);

#endif
