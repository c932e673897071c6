/* tests/compare/test-compare-errmap.c — pg_cmp_error_map(): the folding to 2-D and the
 * downsampling (cells light up exactly where a planted tile is), the error over
 * tolerance of each rule, non-finite mismatches, the |reference| histogram by decade,
 * the mismatch total agreeing with pg_tensor_compare, and the result independent of
 * the thread count. tests/run/diagnosis/errmap.py checks the same end to end against numpy.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/compare.h"

static void make(struct pg_tensor *t, enum pg_dtype dt, int nd, const int64_t *shape) {
  pg_tensor_init(t);
  PG_CHECK_OK(pg_tensor_alloc(t, dt, nd, shape, NULL));
  for (int64_t i = 0; i < t->numel; i++)
    pg_store_f64(t->dl.data, dt, (size_t)i, 1.0 + 0.01 * (double)(i % 97));
}

static struct pg_cmp_rule close_rule(double atol, double rtol) {
  struct pg_cmp_rule r;
  memset(&r, 0, sizeof r);
  r.kind = PG_RULE_ALLCLOSE;
  r.atol = atol;
  r.rtol = rtol;
  return r;
}

static struct pg_cmp_error_map *map_of(const struct pg_tensor *a, const struct pg_tensor *b,
                                       const struct pg_cmp_rule *r, int threads) {
  struct pg_cmp_error_map *m = malloc(sizeof *m);
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK(m != NULL);
  PG_CHECK_MSG(pg_cmp_error_map(&a->dl, &b->dl, r, threads, m, &err) == PG_OK, "%s", err.message);
  return m;
}

static int64_t total_mismatches(const struct pg_cmp_error_map *m) {
  int64_t s = 0;
  for (int i = 0; i < m->rows * m->cols; i++) s += m->mismatch_cells[i];
  return s;
}

/* [3, 50, 150]: rows 150 folded -> 3 per cell (50 cell rows), columns 3 per cell (50);
 * a tile at [1, 20..29, 100..129] lights cell rows 23..26, cell columns 33..43 only. */
PG_TEST(tile_lights_its_cells) {
  int64_t shape[3] = {3, 50, 150};
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F32, 3, shape);
  make(&b, PG_DTYPE_F32, 3, shape);
  for (int64_t r = 20; r < 30; r++)
    for (int64_t c = 100; c < 130; c++) {
      size_t at = (size_t)((50 + r) * 150 + c);
      pg_store_f64(a.dl.data, a.dtype, at, pg_load_f64(a.dl.data, a.dtype, at) + 0.5);
    }
  struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
  struct pg_cmp_error_map *m = map_of(&a, &b, &r, 1);
  PG_CHECK_EQ_INT(2, m->n_row_axes);
  PG_CHECK_EQ_INT(2, m->col_axis);
  PG_CHECK_EQ_INT(150, m->rows_total);
  PG_CHECK_EQ_INT(150, m->cols_total);
  PG_CHECK_EQ_INT(3, m->rows_per_cell);
  PG_CHECK_EQ_INT(3, m->cols_per_cell);
  PG_CHECK_EQ_INT(50, m->rows);
  PG_CHECK_EQ_INT(50, m->cols);
  for (int cr = 0; cr < 50; cr++)
    for (int cc = 0; cc < 50; cc++) {
      int in = cr >= 23 && cr <= 26 && cc >= 33 && cc <= 43;
      double v = m->cells[cr * 50 + cc];
      int64_t mis = m->mismatch_cells[cr * 50 + cc];
      PG_CHECK_MSG(in ? v > 1 && mis > 0 : v == 0 && mis == 0, "cell [%d, %d]: %g, %lld", cr,
                   cc, v, (long long)mis);
    }
  /* folded rows 70..79: cell row 23 (69..71) holds 70, 71; 26 (78..80) holds 78, 79 */
  PG_CHECK_EQ_INT(2 * 3, m->mismatch_cells[23 * 50 + 34]);
  PG_CHECK_EQ_INT(2 * 3, m->mismatch_cells[26 * 50 + 34]);
  /* column cells: 33 covers 99..101 (100, 101 hit), 43 covers 129..131 (129 hit) */
  PG_CHECK_EQ_INT(3 * 2, m->mismatch_cells[24 * 50 + 33]);
  PG_CHECK_EQ_INT(3 * 1, m->mismatch_cells[24 * 50 + 43]);
  PG_CHECK_EQ_INT(300, total_mismatches(m));
  struct pg_cmp_result res;
  PG_CHECK_OK(pg_tensor_compare(&a.dl, &b.dl, &r, 1, &res, NULL));
  PG_CHECK_EQ_INT(res.mismatches, total_mismatches(m));
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* One bad row of a [200, 10] tensor: rows 4 per cell, every column its own cell. */
PG_TEST(row_and_small_axes) {
  int64_t shape[2] = {200, 10};
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F64, 2, shape);
  make(&b, PG_DTYPE_F64, 2, shape);
  for (int64_t c = 0; c < 10; c++) ((double *)a.dl.data)[137 * 10 + c] *= 1.01;
  struct pg_cmp_rule r = close_rule(1e-5, 1e-5);
  struct pg_cmp_error_map *m = map_of(&a, &b, &r, 0);
  PG_CHECK_EQ_INT(4, m->rows_per_cell);
  PG_CHECK_EQ_INT(1, m->cols_per_cell);
  PG_CHECK_EQ_INT(50, m->rows);
  PG_CHECK_EQ_INT(10, m->cols);
  for (int cr = 0; cr < 50; cr++)
    for (int cc = 0; cc < 10; cc++)
      PG_CHECK_EQ_INT(cr == 34 ? 1 : 0, m->mismatch_cells[cr * 10 + cc]);
  /* |a-b| / (atol + rtol |b|) = 0.01 |b| / (1e-5 (1 + |b|)) */
  double b0 = ((double *)b.dl.data)[1370];
  PG_CHECK_NEAR(0.01 * b0 / (1e-5 * (1 + b0)), m->cells[34 * 10], 1e-6);
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

PG_TEST(zero_and_one_dim) {
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F32, 0, NULL);
  make(&b, PG_DTYPE_F32, 0, NULL);
  ((float *)a.dl.data)[0] = NAN;
  struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
  struct pg_cmp_error_map *m = map_of(&a, &b, &r, 1);
  PG_CHECK_EQ_INT(1, m->rows);
  PG_CHECK_EQ_INT(1, m->cols);
  PG_CHECK_EQ_INT(-1, m->col_axis);
  PG_CHECK_EQ_INT(0, m->n_row_axes);
  PG_CHECK(m->cells[0] == PG_CMP_MAP_BIG); /* a NaN mismatch counts as big */
  PG_CHECK_EQ_INT(1, m->mismatch_cells[0]);
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  int64_t n = 1000;
  make(&a, PG_DTYPE_F32, 1, &n);
  make(&b, PG_DTYPE_F32, 1, &n);
  ((float *)a.dl.data)[999] = INFINITY;
  m = map_of(&a, &b, &r, 1);
  PG_CHECK_EQ_INT(1, m->rows);
  PG_CHECK_EQ_INT(63, m->cols); /* 16 per cell: 62 full cells and 8 left over */
  PG_CHECK_EQ_INT(16, m->cols_per_cell);
  PG_CHECK_EQ_INT(0, m->col_axis);
  PG_CHECK(m->cells[62] == PG_CMP_MAP_BIG);
  PG_CHECK_EQ_INT(1, total_mismatches(m));
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  int64_t z[2] = {0, 5}; /* empty: no cells, no error */
  make(&a, PG_DTYPE_F32, 2, z);
  make(&b, PG_DTYPE_F32, 2, z);
  m = map_of(&a, &b, &r, 1);
  PG_CHECK_EQ_INT(0, m->rows * m->cols);
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* |reference| by decade: 0 and 1e-7 in the first bucket, 5e-6 in [1e-6, 1e-5), 1 in
 * [1, 10), 9.99 too, 10 in [10, 100), 1e7 and inf in the last; NaN in none. */
PG_TEST(histogram_by_decade) {
  double ref[] = {0, 1e-7, 5e-6, 1.0, 9.99, 10.0, 1e7, INFINITY, NAN};
  double imp[] = {0, 1e-7, 5e-6, 1.5, 9.99, 10.0, 1e7, INFINITY, NAN};
  int64_t n = 9;
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F64, 1, &n);
  make(&b, PG_DTYPE_F64, 1, &n);
  memcpy(a.dl.data, imp, sizeof imp);
  memcpy(b.dl.data, ref, sizeof ref);
  struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
  struct pg_cmp_error_map *m = map_of(&a, &b, &r, 1);
  int64_t want_n[PG_CMP_HIST_BUCKETS] = {2, 1, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 2};
  for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++)
    PG_CHECK_MSG(m->hist[i].n == want_n[i], "bucket %d: n %lld", i, (long long)m->hist[i].n);
  PG_CHECK_EQ_INT(1, m->hist[7].mismatches);
  PG_CHECK_NEAR(0.5, m->hist[7].max_abs_diff, 0);
  PG_CHECK_NEAR(0.5 / 2e-3, m->hist[7].max_err_over_tol, 1e-9);
  PG_CHECK(isnan(m->hist[3].max_abs_diff)); /* empty */
  PG_CHECK(m->hist[13].max_abs_diff == 0); /* 1e7 equal; inf == inf passes, not finite */
  PG_CHECK_EQ_INT(2, total_mismatches(m)); /* NaN == NaN fails: counted, in no bucket */
  PG_CHECK(pg_cmp_hist_lo(0) == 0 && pg_cmp_hist_hi(0) == 1e-6);
  PG_CHECK(pg_cmp_hist_lo(7) == 1 && pg_cmp_hist_hi(7) == 10);
  PG_CHECK(pg_cmp_hist_lo(13) == 1e6 && isinf(pg_cmp_hist_hi(13)));
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* The other rules: ulp:N (ulps / N), exact and integers (big when different). */
PG_TEST(rules) {
  int64_t n = 4;
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F32, 1, &n);
  make(&b, PG_DTYPE_F32, 1, &n);
  float *pa = a.dl.data, *pb = b.dl.data;
  pa[1] = nextafterf(nextafterf(pb[1], 10.0f), 10.0f); /* 2 ulps */
  pa[2] = nextafterf(pb[2], 10.0f);                    /* 1 ulp */
  struct pg_cmp_rule r;
  pg_cmp_rule_init(&r, PG_DTYPE_F32);
  PG_CHECK_OK(pg_cmp_rule_parse("ulp:4", &r, NULL));
  struct pg_cmp_error_map *m = map_of(&a, &b, &r, 1);
  PG_CHECK_NEAR(0.5, m->cells[1], 0);
  PG_CHECK_NEAR(0.25, m->cells[2], 0);
  PG_CHECK_EQ_INT(0, total_mismatches(m));
  free(m);
  PG_CHECK_OK(pg_cmp_rule_parse("ulp:1", &r, NULL));
  m = map_of(&a, &b, &r, 1);
  PG_CHECK_NEAR(2.0, m->cells[1], 0);
  PG_CHECK_NEAR(1.0, m->cells[2], 0); /* passes: at most 1 */
  PG_CHECK_EQ_INT(1, total_mismatches(m));
  free(m);
  PG_CHECK_OK(pg_cmp_rule_parse("exact", &r, NULL));
  m = map_of(&a, &b, &r, 1);
  PG_CHECK(m->cells[0] == 0 && m->cells[1] == PG_CMP_MAP_BIG);
  PG_CHECK_EQ_INT(2, total_mismatches(m));
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  make(&a, PG_DTYPE_I32, 1, &n);
  make(&b, PG_DTYPE_I32, 1, &n);
  ((int32_t *)a.dl.data)[3] += 1;
  r = close_rule(10, 10); /* integers compare exactly whatever the tolerance */
  m = map_of(&a, &b, &r, 1);
  PG_CHECK(m->cells[3] == PG_CMP_MAP_BIG && m->cells[0] == 0);
  PG_CHECK_EQ_INT(1, total_mismatches(m));
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* fp16 and bf16 are widened as the comparison widens them. */
PG_TEST(half_types) {
  enum pg_dtype dts[2] = {PG_DTYPE_F16, PG_DTYPE_BF16};
  for (int k = 0; k < 2; k++) {
    int64_t shape[2] = {7, 300};
    struct pg_tensor a, b;
    make(&a, dts[k], 2, shape);
    make(&b, dts[k], 2, shape);
    for (int64_t c = 280; c < 300; c++)
      for (int64_t r = 0; r < 7; r++)
        pg_store_f64(a.dl.data, a.dtype, (size_t)(r * 300 + c), 5.0);
    struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
    struct pg_cmp_error_map *m = map_of(&a, &b, &r, 1);
    struct pg_cmp_result res;
    PG_CHECK_OK(pg_tensor_compare(&a.dl, &b.dl, &r, 1, &res, NULL));
    PG_CHECK_EQ_INT(res.mismatches, total_mismatches(m));
    PG_CHECK_EQ_INT(5, m->cols_per_cell); /* 300 / 64 -> 5 per cell, 60 cells */
    PG_CHECK_EQ_INT(60, m->cols);
    for (int cc = 0; cc < 60; cc++) PG_CHECK((m->mismatch_cells[cc] > 0) == (cc >= 56));
    free(m);
    pg_tensor_reset(&a);
    pg_tensor_reset(&b);
  }
}

/* Ranges split over threads merge to the single-thread result, bit for bit. */
PG_TEST(threads_do_not_change_it) {
  int64_t shape[2] = {1500, 3001}; /* 4.5 M elements: several ranges */
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F32, 2, shape);
  make(&b, PG_DTYPE_F32, 2, shape);
  float *pa = a.dl.data;
  for (int64_t i = 0; i < a.numel; i += 7919) pa[i] += (float)(i % 13) * 0.01f;
  pa[123456] = NAN;
  struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
  struct pg_cmp_error_map *one = map_of(&a, &b, &r, 1), *four = map_of(&a, &b, &r, 4);
  PG_CHECK(memcmp(one, four, sizeof *one) == 0);
  struct pg_cmp_result res;
  PG_CHECK_OK(pg_tensor_compare(&a.dl, &b.dl, &r, 1, &res, NULL));
  PG_CHECK_EQ_INT(res.mismatches, total_mismatches(one));
  free(one);
  free(four);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

PG_TEST(bad_arguments) {
  int64_t s1 = 4, s2 = 5;
  struct pg_tensor a, b;
  make(&a, PG_DTYPE_F32, 1, &s1);
  make(&b, PG_DTYPE_F32, 1, &s2);
  struct pg_cmp_rule r = close_rule(1e-3, 1e-3);
  struct pg_cmp_error_map *m = malloc(sizeof *m);
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK(pg_cmp_error_map(&a.dl, &b.dl, &r, 1, m, &err) == PG_EINVAL);
  PG_CHECK(pg_cmp_error_map(&a.dl, &a.dl, NULL, 1, m, &err) == PG_EINVAL);
  free(m);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}
