/* tests/tensors — the fills' bits are a format: pinned hashes of every (kind, dtype) the
 * generator serves, taken from the scalar implementation before the SIMD kernels
 * existed, and bit-for-bit equality of every instruction-set path (portable, AVX2,
 * AVX-512) with the portable one: whole fills at every tail length and thread count,
 * the Philox kernel across the 2^32 block-counter carry, and the Box–Muller and
 * uniform transforms on hand-picked words (the log folding threshold, the quadrant
 * boundaries of sincos, both ends of the word range) plus a strided sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdir/opdir.h"
#include "tensors/tensors.h"
#include "pg_test.h"
#include "tensors/rng.h"

static uint64_t fnv_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static void gen_isa(struct pg_tensor *t, enum pg_dtype dt, int64_t n, const char *spec,
                    uint64_t seed, const char *name, int threads, enum pg__fill_isa isa,
                    int *rc_out) {
  struct pg_fill f;
  struct pg_error err;
  pg_error_clear(&err);
  pg_tensor_init(t);
  PG_CHECK_OK(pg_fill_parse(spec, &f, &err));
  PG_CHECK_OK(pg_tensor_alloc(t, dt, 1, &n, &err));
  int rc = pg__fill_generate_isa(t, &f, seed, name, threads, isa, &err);
  if (rc_out) *rc_out = rc;
  else PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
}

struct pinned {
  const char *spec;
  enum pg_dtype dt;
  uint64_t seed;
  uint64_t hash;
};

/* Hashes of 100003 elements of input "x", taken from the scalar generator of commit
 * ac6a9e5 (before any SIMD path): any change to these bits breaks users' saved data. */
static const struct pinned pinned[] = {
    {"normal(0, 1)", PG_DTYPE_F32, 1, 0xc42714935e9a5e2dull},
    {"normal(0.5, 2)", PG_DTYPE_F32, 0xfedcba9876543210ull, 0x65979bc7cfbb096eull},
    {"normal(0.5, 2)", PG_DTYPE_F64, 7, 0x6da94d58d7a87b42ull},
    {"normal(-1, 3)", PG_DTYPE_F16, 7, 0x8725d229989644f5ull},
    {"normal(-1, 3)", PG_DTYPE_BF16, 7, 0x259edc9f2d753902ull},
    {"uniform(0, 1)", PG_DTYPE_F32, 1, 0x5bb2dd43a874b216ull},
    {"uniform(-3, 7)", PG_DTYPE_F32, 0xfedcba9876543210ull, 0x83e2e2f92d95c26cull},
    {"uniform(-3, 7)", PG_DTYPE_F64, 7, 0x3c6b26ed82257ddaull},
    {"uniform(-3, 7)", PG_DTYPE_F16, 7, 0x5fb3c2485d7d791cull},
    {"uniform(-3, 7)", PG_DTYPE_BF16, 7, 0xdefa27505d31b1f2ull},
    {"int(-100, 100)", PG_DTYPE_I32, 7, 0x9287f0269b40a074ull},
    {"int(-100, 100)", PG_DTYPE_F32, 7, 0xb1f09b82bf20d5d3ull},
    {"int(0, 255)", PG_DTYPE_U8, 7, 0x7e51a0867323eb8full},
    {"normal(0, 1) with nan:0.01,-0:0.02", PG_DTYPE_F32, 3, 0x7b7a49bd73303a80ull},
    {"uniform(1, 2) with inf:0.01,denormal:0.02", PG_DTYPE_BF16, 3, 0xc4a8ccd34ae5a76cull},
};

PG_TEST(fill_pinned_hashes) {
  const int64_t n = 100003;
  int print = getenv("PG_PRINT_PINNED") != NULL;
  for (size_t k = 0; k < sizeof pinned / sizeof *pinned; k++)
    for (int th = 1; th <= 2; th++) {
      struct pg_tensor t;
      gen_isa(&t, pinned[k].dt, n, pinned[k].spec, pinned[k].seed, "x", th, PG__FILL_ISA_AUTO,
              NULL);
      uint64_t h = fnv_bytes(t.dl.data, t.nbytes);
      if (print && th == 1)
        printf("pinned %zu %#018llx\n", k, (unsigned long long)h);
      else
        PG_CHECK_MSG(h == pinned[k].hash, "%s %s seed %#llx threads %d: hash %#018llx, pinned %#018llx",
                     pinned[k].spec, pg_dtype_name(pinned[k].dt),
                     (unsigned long long)pinned[k].seed, th, (unsigned long long)h,
                     (unsigned long long)pinned[k].hash);
      pg_tensor_reset(&t);
    }
}

/* ---- every SIMD path equals the portable definition ---- */

static const enum pg__fill_isa simd_isas[] = {PG__FILL_ISA_AVX2, PG__FILL_ISA_AVX512};
static const char *const isa_names[] = {"auto", "portable", "avx2", "avx512"};

static int isa_runs_here(enum pg__fill_isa isa) {
  uint32_t w[32];
  struct pg_rng_stream s;
  pg_rng_stream_init(&s, 1, "x", PG_RNG_VALUES);
  return pg__rng_blocks_isa(&s, 0, 8, isa, w) == PG_OK;
}

PG_TEST(fill_isa_paths_equal_portable) {
  const char *specs[] = {"normal(0.5, 2)", "uniform(-3, 7)", "uniform(0, 1)", "normal(0, 1e3)",
                         "normal(-1, 0.25)", "int(-7, 9)", "normal(0, 1) with nan:0.05",
                         /* the fp16/bf16 stores: subnormals, overflow (float and half),
                          * values within 1e-9 of a bf16 / an fp16 rounding midpoint,
                          * where a double rounding through float would go wrong */
                         "uniform(-1e-5, 1e-5)", "normal(0, 1e-6)", "normal(0, 1e-40)",
                         "uniform(-7e4, 7e4)", "uniform(-1e39, 1e39)", "uniform(-1e-300, 1e-300)",
                         "uniform(1.003906249, 1.003906251)", "uniform(1.000488280, 1.000488282)",
                         "uniform(-3e38, -1e38)", "int(-256, 255)", "int(0, 1)",
                         /* every special kind, each dtype's denormal, and kinds left out */
                         "uniform(1, 2) with nan:0.1,inf:0.05,-inf:0.05,denormal:0.1,-0:0.2",
                         "int(-3, 3) with -0:0.3,inf:0.3", "normal(0, 1) with denormal:1",
                         /* around fp16's largest value and its overflow threshold 65520,
                          * and around bf16's (3.3895e38) */
                         "uniform(65500, 65530)", "uniform(3.38e38, 3.41e38)"};
  const enum pg_dtype dts[] = {PG_DTYPE_F32, PG_DTYPE_F64, PG_DTYPE_F16, PG_DTYPE_BF16};
  /* tails of every residue mod 32 around a few sizes, and sizes that go multi-threaded */
  const int64_t sizes[] = {1, 3, 4, 5, 16, 31, 32, 33, 63, 64, 65, 100, 1000, 4099, 131092,
                           262147};
  /* integer dtypes take int() through the SIMD values and the scalar store */
  const struct {
    const char *spec;
    enum pg_dtype dt;
  } ints[] = {{"int(-128, 127)", PG_DTYPE_I8},
              {"int(0, 255)", PG_DTYPE_U8},
              {"int(0, 1)", PG_DTYPE_BOOL},
              {"int(-2147483648, 2147483647)", PG_DTYPE_I32},
              {"int(-100, 100)", PG_DTYPE_I32},
              {"normal(0, 1e9)", PG_DTYPE_I32}, /* not int(): clamps, the scalar store */
              {"uniform(-5, 5)", PG_DTYPE_I8},
              {"int(-5, 4294967290)", PG_DTYPE_I64},
              {"int(0, 4294967295)", PG_DTYPE_F64}};
  int ran = 0;
  for (size_t i = 0; i < sizeof simd_isas / sizeof *simd_isas; i++) {
    enum pg__fill_isa isa = simd_isas[i];
    if (isa_runs_here(isa))
      for (size_t s = 0; s < sizeof ints / sizeof *ints; s++) {
        struct pg_tensor ref, t;
        gen_isa(&ref, ints[s].dt, 4099, ints[s].spec, 99, "i", 1, PG__FILL_ISA_PORTABLE, NULL);
        gen_isa(&t, ints[s].dt, 4099, ints[s].spec, 99, "i", 2, isa, NULL);
        PG_CHECK_MSG(memcmp(t.dl.data, ref.dl.data, ref.nbytes) == 0, "%s %s: %s differs",
                     ints[s].spec, pg_dtype_name(ints[s].dt), isa_names[isa]);
        pg_tensor_reset(&t);
        pg_tensor_reset(&ref);
      }
    if (!isa_runs_here(isa)) {
      printf("# %s: not in this build or not on this CPU\n", isa_names[isa]);
      continue;
    }
    ran++;
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
      for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
          /* keep it fast (seconds under ASan): long, multi-threaded fills for the
           * float32 fast paths of the main kinds only */
          if (sizes[z] > 5000 && (dts[d] != PG_DTYPE_F32 || s >= 4)) continue;
          struct pg_tensor ref, t;
          gen_isa(&ref, dts[d], sizes[z], specs[s], 0x1234 + z, "w", 1, PG__FILL_ISA_PORTABLE, NULL);
          for (int th = 1; th <= 3; th++) {
            gen_isa(&t, dts[d], sizes[z], specs[s], 0x1234 + z, "w", th, isa, NULL);
            PG_CHECK_MSG(memcmp(t.dl.data, ref.dl.data, ref.nbytes) == 0,
                         "%s %s n=%lld threads=%d: %s differs from portable", specs[s],
                         pg_dtype_name(dts[d]), (long long)sizes[z], th, isa_names[isa]);
            pg_tensor_reset(&t);
          }
          pg_tensor_reset(&ref);
        }
  }
  if (!ran) PG_SKIP("no SIMD path in this build or on this CPU");
}

PG_TEST(philox_isa_kernels_equal_portable) {
  /* block counters across the 32-bit carry of the counter's low word and the 64-bit
   * wrap, and keys/tags with high bits set */
  const uint64_t starts[] = {0, 8, 12345, 0xfffffff8ull, 0xfffffffcull, 0xffffffffull,
                             0x1fffffff0ull, 0xfffffffffffffff8ull, 0xfffffffffffffffcull};
  const uint64_t seeds[] = {0, 1, 0xffffffffffffffffull, 0x8000000080000000ull};
  uint32_t ref[4 * 64], got[4 * 64];
  int ran = 0;
  for (size_t i = 0; i < sizeof simd_isas / sizeof *simd_isas; i++) {
    if (!isa_runs_here(simd_isas[i])) continue;
    ran++;
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++)
      for (size_t b = 0; b < sizeof starts / sizeof *starts; b++) {
        struct pg_rng_stream s;
        pg_rng_stream_init(&s, seeds[k], k % 2 ? "q" : "a much longer input name", PG_RNG_VALUES);
        PG_CHECK_OK(pg__rng_blocks_isa(&s, starts[b], 64, PG__FILL_ISA_PORTABLE, ref));
        memset(got, 0, sizeof got);
        PG_CHECK_OK(pg__rng_blocks_isa(&s, starts[b], 64, simd_isas[i], got));
        for (int w = 0; w < 4 * 64; w++)
          PG_CHECK_MSG(got[w] == ref[w], "%s: seed %#llx block %#llx word %d: %08x vs %08x",
                       isa_names[simd_isas[i]], (unsigned long long)seeds[k],
                       (unsigned long long)(starts[b] + (uint64_t)w / 4), w % 4, got[w], ref[w]);
      }
  }
  if (!ran) PG_SKIP("no SIMD path in this build or on this CPU");
  PG_CHECK_EQ_INT(PG_ENOTSUP, pg__rng_blocks_isa(NULL, 0, 7, PG__FILL_ISA_PORTABLE, ref));
}

/* Words that probe the transforms' branch points: both ends of the word range, the
 * log's folding threshold m < sqrt(1/2) (u near 2^k / sqrt 2), the quadrant boundaries
 * of sincos (u*4 + 0.5 crossing an integer) and exact quarter turns. */
static size_t edge_words(uint32_t *w, size_t cap) {
  size_t n = 0;
  const double centres[] = {0.0, 1.0, 0.5, 0.25, 0.75, 0.125, 0.375, 0.625, 0.875,
                            0.70710678118654752 / 1, 0.70710678118654752 / 2,
                            0.70710678118654752 / 4, 0.70710678118654752 / 1024,
                            0.70710678118654752 / 65536, 0.70710678118654752 / 4294967296.0 * 2};
  for (size_t c = 0; c < sizeof centres / sizeof *centres; c++) {
    double x = centres[c] * 4294967296.0 - 0.5;
    int64_t mid = (int64_t)x;
    for (int64_t d = -40; d <= 40; d++) {
      int64_t v = mid + d;
      if (v < 0 || v > 0xffffffffll || n >= cap) continue;
      w[n++] = (uint32_t)v;
    }
  }
  return n;
}

/* Compared in double, before the rounding to a dtype that would hide a 1-ulp slip. */
PG_TEST(transform_isa_kernels_equal_portable_on_edge_and_swept_words) {
  /* 2^18 blocks: a stride-16381 sweep of the whole 32-bit range for each word slot
   * (different phases, so u1 and u2 of a pair vary independently), then the edge words
   * paired with every slot and with each other. */
  const size_t n_blocks = (size_t)1 << 18;
  uint32_t *w = malloc(4 * n_blocks * sizeof *w);
  double *ref = malloc(4 * n_blocks * sizeof *ref), *got = malloc(4 * n_blocks * sizeof *got);
  PG_CHECK(w && ref && got);
  for (size_t b = 0; b < n_blocks; b++)
    for (uint32_t k = 0; k < 4; k++)
      w[4 * b + k] = (uint32_t)((uint64_t)b * 16381u * (2 * k + 1) + k * 0x9E3779B9u);
  uint32_t edges[2048];
  size_t ne = edge_words(edges, 2048);
  PG_CHECK(ne > 1000);
  /* overwrite the start: edge x edge pairs in slots (0,1) and (2,3), all combinations */
  size_t pos = 0;
  for (size_t a = 0; a < ne && pos < n_blocks; a += 1)
    for (size_t b = 0; b < ne && pos < n_blocks; b += 7, pos++) {
      w[4 * pos + 0] = edges[a];
      w[4 * pos + 1] = edges[b];
      w[4 * pos + 2] = edges[b];
      w[4 * pos + 3] = edges[a];
    }
  const char *specs[] = {"normal(0, 1)", "normal(0.5, 2)", "uniform(0, 1)", "uniform(-3, 7)",
                         "int(-5, 5)", "int(0, 4294967295)", "int(-2147483648, 2147483647)",
                         "int(0, 4294967294)", "int(7, 7)"};
  int ran = 0;
  for (size_t i = 0; i < sizeof simd_isas / sizeof *simd_isas; i++) {
    if (!isa_runs_here(simd_isas[i])) continue;
    ran++;
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
      struct pg_fill f;
      struct pg_error err;
      PG_CHECK_OK(pg_fill_parse(specs[s], &f, &err));
      PG_CHECK_OK(pg__rng_values_from_words(&f, w, n_blocks, PG__FILL_ISA_PORTABLE, ref));
      PG_CHECK_OK(pg__rng_values_from_words(&f, w, n_blocks, simd_isas[i], got));
      for (size_t e = 0; e < 4 * n_blocks; e++)
        PG_CHECK_MSG(memcmp(&got[e], &ref[e], sizeof *got) == 0,
                     "%s %s: words %08x %08x -> %.17g, portable %.17g", isa_names[simd_isas[i]],
                     specs[s], w[e & ~(size_t)1], w[e | 1], got[e], ref[e]);
    }
  }
  free(w);
  free(ref);
  free(got);
  if (!ran) PG_SKIP("no SIMD path in this build or on this CPU");
}

PG_TEST(unavailable_paths_are_refused) {
  struct pg_tensor t;
  int rc = 0;
  gen_isa(&t, PG_DTYPE_F32, 8, "uniform(0, 1)", 1, "x", 1, (enum pg__fill_isa)99, &rc);
  PG_CHECK_EQ_INT(PG_ENOTSUP, rc);
  pg_tensor_reset(&t);
  PG_CHECK(pg__fill_isa_best() != PG__FILL_ISA_AUTO);
  printf("# best fill path here: %s\n", isa_names[pg__fill_isa_best()]);
}
