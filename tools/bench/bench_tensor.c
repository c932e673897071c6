/* tools/bench — the tensor core's throughput, driven by bench_tensor.sh:
 *   bench_tensor fill SPEC DTYPE N THREADS REPS [PATH]
 *                                                 best GB/s of generating N elements;
 *                                                 PATH: auto (default) | portable | avx2 |
 *                                                 avx512 (prints "n/a" if unavailable)
 *   bench_tensor path                             the fill path AUTO picks on this CPU
 *   bench_tensor write PATH N                     writes an N-element float32 .npy
 *   bench_tensor read PATH REPS MODE              best GB/s of pg_npy_read (MODE: owned |
 *                                                 mmap; mmap touches every page once)
 * Prints one number (GB/s, 1e9 bytes per second) on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opdir/opdir.h"
#include "tensors/tensors.h"
#include "tensors/rng.h"
#include "tensors/tensors.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const struct pg_error *err) {
  fprintf(stderr, "bench_tensor: %s\n", err->message);
  return 1;
}

int main(int argc, char **argv) {
  struct pg_error err;
  pg_error_clear(&err);
  if ((argc == 7 || argc == 8) && strcmp(argv[1], "fill") == 0) {
    enum pg__fill_isa isa = PG__FILL_ISA_AUTO;
    if (argc == 8) {
      const char *names[] = {"auto", "portable", "avx2", "avx512"};
      int found = 0;
      for (int k = 0; k < 4; k++)
        if (strcmp(argv[7], names[k]) == 0) isa = (enum pg__fill_isa)k, found = 1;
      if (!found) {
        fprintf(stderr, "bench_tensor: unknown path '%s'\n", argv[7]);
        return 2;
      }
    }
    struct pg_fill f;
    struct pg_tensor t;
    int64_t n = atoll(argv[4]);
    int threads = atoi(argv[5]), reps = atoi(argv[6]);
    pg_tensor_init(&t);
    if (pg_fill_parse(argv[2], &f, &err) != PG_OK) return die(&err);
    if (pg_tensor_alloc(&t, pg_dtype_parse(argv[3]), 1, &n, &err) != PG_OK) return die(&err);
    memset(t.dl.data, 0, t.nbytes); /* fault the pages in outside the timing */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      double t0 = now();
      int rc = pg__fill_generate_isa(&t, &f, (uint64_t)r, "bench", threads, isa, &err);
      if (rc == PG_ENOTSUP) {
        printf("n/a\n");
        pg_tensor_reset(&t);
        return 0;
      }
      if (rc != PG_OK) return die(&err);
      double dt = now() - t0;
      if (dt < best) best = dt;
    }
    printf("%.3f\n", (double)t.nbytes / best / 1e9);
    pg_tensor_reset(&t);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "write") == 0) {
    struct pg_fill f;
    struct pg_tensor t;
    int64_t n = atoll(argv[3]);
    pg_tensor_init(&t);
    if (pg_fill_parse("uniform(-1, 1)", &f, &err) != PG_OK ||
        pg_tensor_alloc(&t, PG_DTYPE_F32, 1, &n, &err) != PG_OK ||
        pg_fill_generate(&t, &f, 1, "bench", 0, &err) != PG_OK ||
        pg_npy_write(argv[2], &t, &err) != PG_OK)
      return die(&err);
    pg_tensor_reset(&t);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "read") == 0) {
    int reps = atoi(argv[3]);
    unsigned flags = strcmp(argv[4], "mmap") == 0 ? 0u : PG_NPY_NO_MMAP;
    double best = 1e30;
    size_t bytes = 0;
    volatile unsigned sink = 0;
    for (int r = 0; r < reps; r++) {
      struct pg_tensor t;
      pg_tensor_init(&t);
      double t0 = now();
      if (pg_npy_read_ex(argv[2], flags, &t, &err) != PG_OK) return die(&err);
      if (!flags) /* an mmap is lazy: touch every page so the bytes are really there */
        for (size_t i = 0; i < t.nbytes; i += 4096) sink += ((const unsigned char *)t.dl.data)[i];
      double dt = now() - t0;
      if (dt < best) best = dt;
      bytes = t.nbytes;
      pg_tensor_reset(&t);
    }
    printf("%.3f\n", (double)bytes / best / 1e9);
    if (sink == 0xdeadbeefu) fprintf(stderr, "(checksum %u)\n", sink); /* keep the reads */
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "path") == 0) {
    const char *names[] = {"auto", "portable", "avx2", "avx512"};
    printf("%s\n", names[pg__fill_isa_best()]);
    return 0;
  }
  fprintf(stderr, "usage: see the comment at the top of tools/bench/bench_tensor.c\n");
  return 2;
}
