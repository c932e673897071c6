/* Unit tests for goldens/kernels_blas.c's thread policy: a batch of small gemms split
 * over our threads, one big gemm on OpenBLAS's pool, and everything single-threaded
 * give bit-identical results (OpenBLAS splits M and N, never K), and the preload entry
 * point is idempotent. */
#include <stdint.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/goldens.h"
#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

static void fill(struct pg_tensor *t, uint64_t seed) {
  float *p = t->dl.data;
  uint64_t s = seed;
  for (int64_t i = 0; i < t->numel; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((double)(s >> 40) / (double)(1ull << 24)) - 0.5f;
  }
}

/* a @ b with n_threads; out must be pg_tensor_init'ed. */
static int run_matmul(const struct pg_tensor *a, const struct pg_tensor *b, int n_threads,
                      struct pg_tensor *out) {
  const struct pg_tensor *in[2] = {a, b};
  struct pg_error err;
  int rc = pg_kernel_invoke(pg_kernel_find("matmul"), in, 2, NULL, 0, n_threads, out, &err);
  PG_CHECK_MSG(rc == PG_OK, "matmul: %s", err.message);
  return rc;
}

static void same_bits_for_thread_counts(int ndim, const int64_t *sa, const int64_t *sb) {
  struct pg_tensor a, b, o1, o2, o0;
  pg_tensor_init(&a), pg_tensor_init(&b), pg_tensor_init(&o1), pg_tensor_init(&o2),
      pg_tensor_init(&o0);
  PG_CHECK_OK(pg_tensor_alloc(&a, PG_DTYPE_F32, ndim, sa, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&b, PG_DTYPE_F32, ndim, sb, NULL));
  fill(&a, 1), fill(&b, 2);
  if (run_matmul(&a, &b, 1, &o1) == PG_OK && run_matmul(&a, &b, 2, &o2) == PG_OK &&
      run_matmul(&a, &b, 0, &o0) == PG_OK) {
    PG_CHECK_EQ_INT((int)o1.numel, (int)o2.numel);
    PG_CHECK(memcmp(o1.dl.data, o2.dl.data, o1.nbytes) == 0);
    PG_CHECK(memcmp(o1.dl.data, o0.dl.data, o1.nbytes) == 0);
  }
  pg_tensor_reset(&a), pg_tensor_reset(&b), pg_tensor_reset(&o1), pg_tensor_reset(&o2),
      pg_tensor_reset(&o0);
}

/* 64 gemms of 128x64 @ 64x128 (2^20 multiply-adds each, 2^26 in all): split over our
 * threads when n_threads != 1. */
PG_TEST(batched_small_gemms_split_over_threads_same_bits) {
  const int64_t sa[3] = {64, 128, 64}, sb[3] = {64, 64, 128};
  same_bits_for_thread_counts(3, sa, sb);
}

/* One 512x256 @ 256x256 gemm (2^25 multiply-adds): OpenBLAS's own pool when allowed. */
PG_TEST(big_gemm_on_openblas_pool_same_bits) {
  const int64_t sa[2] = {512, 256}, sb[2] = {256, 256};
  same_bits_for_thread_counts(2, sa, sb);
}

/* Small after big: the pool started by the big gemm does not change a small one. */
PG_TEST(small_after_big_same_bits) {
  const int64_t sa[3] = {4, 33, 17}, sb[3] = {4, 17, 29};
  same_bits_for_thread_counts(3, sa, sb);
}

PG_TEST(preload_is_idempotent) {
  struct pg_error err;
  PG_CHECK_OK(pg_goldens_preload_blas(&err));
  PG_CHECK_OK(pg_goldens_preload_blas(&err));
}
