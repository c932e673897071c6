/* tests/tensors — the exhaustive check behind the SIMD fills' "same bits" claim, too slow
 * for CTest (minutes): every 32-bit Philox word goes through a SIMD path's transforms
 * and through the portable definition, compared in double.
 *   normal: every word as u1 (u2 fixed at word 0, where cos is exactly 1, so the value
 *           is r = sqrt(-2 log u1) itself), then every word as u2 (sin and cos);
 *   uniform(-3, 7) and int(-100, 100): every word.
 * Past these, the kernels only apply per-lane IEEE operations (correctly rounded in
 * SIMD as in scalar), so equality here extends to every pair of words.
 *
 *   ninja -C BUILD tensor_fill_exhaustive && BUILD/tests/tensors/tensor_fill_exhaustive avx512
 * Exit 0 when nothing differs, 1 otherwise, 77 when the path is not available. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensors/tensors.h"
#include "tensors/rng.h"

#define CHUNK ((uint32_t)1 << 20) /* blocks per batch */

int main(int argc, char **argv) {
  const char *names[] = {"auto", "portable", "avx2", "avx512"};
  enum pg__fill_isa isa = PG__FILL_ISA_AUTO;
  for (int k = 0; argc > 1 && k < 4; k++)
    if (strcmp(argv[1], names[k]) == 0) isa = (enum pg__fill_isa)k;
  const char *specs[] = {"normal(0, 1)", "uniform(-3, 7)", "int(-100, 100)"};
  uint32_t *w = malloc((size_t)4 * CHUNK * sizeof *w);
  double *ref = malloc((size_t)4 * CHUNK * sizeof *ref), *got = malloc((size_t)4 * CHUNK * sizeof *got);
  if (!w || !ref || !got) return 2;
  unsigned long long bad = 0, n = 0;
  for (int sp = 0; sp < 3; sp++) {
    struct pg_fill f;
    struct pg_error err;
    if (pg_fill_parse(specs[sp], &f, &err) != PG_OK) return 2;
    for (int role = 0; role < (sp == 0 ? 2 : 1); role++)
      for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += 2ull * CHUNK) {
        for (uint32_t i = 0; i < CHUNK; i++) {
          uint32_t x0 = (uint32_t)(base + 2ull * i), x1 = x0 + 1, *b = w + 4 * (size_t)i;
          if (sp > 0) { /* every word in every slot, once */
            b[0] = x0, b[1] = x0 ^ 0x5555aaaau, b[2] = x1, b[3] = x1 ^ 0xaaaa5555u;
          } else if (role == 0) { /* u1 sweeps, u2 = word 0 */
            b[0] = x0, b[1] = 0, b[2] = x1, b[3] = 0;
          } else { /* u2 sweeps under a fixed u1 */
            b[0] = 0x9E3779B9u, b[1] = x0, b[2] = 0x9E3779B9u, b[3] = x1;
          }
        }
        if (pg__rng_values_from_words(&f, w, CHUNK, PG__FILL_ISA_PORTABLE, ref) != PG_OK) return 2;
        if (pg__rng_values_from_words(&f, w, CHUNK, isa, got) != PG_OK) {
          printf("path %s is not available here\n", names[isa]);
          return 77;
        }
        if (memcmp(ref, got, (size_t)4 * CHUNK * sizeof *ref) != 0)
          for (size_t e = 0; e < (size_t)4 * CHUNK; e++)
            if (memcmp(&ref[e], &got[e], sizeof *ref) != 0 && bad++ < 10)
              printf("%s: words %08x %08x -> %.17g, portable %.17g\n", specs[sp],
                     w[e & ~(size_t)1], w[e | 1], got[e], ref[e]);
        n += (unsigned long long)4 * CHUNK;
      }
  }
  printf("%s: %llu values compared with the portable path, %llu differ\n", names[isa], n, bad);
  free(w);
  free(ref);
  free(got);
  return bad ? 1 : 0;
}
