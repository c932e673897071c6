/* tests/compare/test-compare-mask.c — pg_cmp_mask_analyze(): each pattern of the
 * mismatch mask planted in an in-memory tensor and found (marginals, period, last
 * partial tile, sentinel, first non-finite, signed evidence, the worst element above
 * the tolerance floor), and each staying silent on noise or a clean tensor; plus the
 * sign of the worst element in pg_tensor_compare.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/compare.h"

static void make2(struct pg_tensor *t, enum pg_dtype dt, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  pg_tensor_init(t);
  PG_CHECK_OK(pg_tensor_alloc(t, dt, 2, shape, NULL));
  for (int64_t i = 0; i < t->numel; i++)
    pg_store_f64(t->dl.data, dt, (size_t)i, 1.0 + 0.01 * (double)(i % 97));
}

static struct pg_cmp_rule close_rule(void) {
  struct pg_cmp_rule r;
  memset(&r, 0, sizeof r);
  r.kind = PG_RULE_ALLCLOSE;
  r.atol = r.rtol = 1e-3;
  return r;
}

static void analyze(const struct pg_tensor *a, const struct pg_tensor *b,
                    const struct pg_cmp_mask_opts *o, struct pg_cmp_mask *m) {
  struct pg_cmp_rule r = close_rule();
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_MSG(pg_cmp_mask_analyze(&a->dl, &b->dl, &r, o, m, &err) == PG_OK, "%s", err.message);
}

static void bump(struct pg_tensor *t, int64_t r, int64_t c, int64_t cols, double by) {
  size_t at = (size_t)(r * cols + c);
  pg_store_f64(t->dl.data, t->dtype, at, pg_load_f64(t->dl.data, t->dtype, at) + by);
}

/* The case: D = 80, tiles of 32, the last partial tile wrong on every row. */
PG_TEST(tile_edge_found) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F32, 6, 80);
  make2(&b, PG_DTYPE_F32, 6, 80);
  for (int64_t r = 0; r < 6; r++)
    for (int64_t c = 64; c < 80; c++) bump(&a, r, c, 80, -0.5);
  struct pg_cmp_mask m;
  analyze(&a, &b, NULL, &m);
  PG_CHECK_EQ_INT(96, m.mismatches);
  PG_CHECK_EQ_INT(6, m.axes[0].hit);
  PG_CHECK_EQ_INT(-1, m.axes[0].tail_start);
  PG_CHECK_EQ_INT(16, m.axes[1].hit);
  PG_CHECK_EQ_INT(64, m.axes[1].first);
  PG_CHECK_EQ_INT(79, m.axes[1].last);
  PG_CHECK_EQ_INT(64, m.axes[1].tail_start);
  PG_CHECK(m.axes[1].n_tiles >= 2 && m.axes[1].tiles[0] == 32 && m.axes[1].tiles[1] == 64);
  PG_CHECK(m.axes[1].tail_share == 1.0);
  PG_CHECK_EQ_INT(0, m.axes[1].period); /* one run: no period */
  PG_CHECK_EQ_INT(96, m.below);
  PG_CHECK_EQ_INT(0, m.above);
  PG_CHECK(m.mean_signed_diff < 0);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* Columns 12..15 of every 16 wrong: period 16, 4 hot residues. */
PG_TEST(period_found) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F32, 4, 80);
  make2(&b, PG_DTYPE_F32, 4, 80);
  for (int64_t r = 0; r < 4; r++)
    for (int64_t c = 0; c < 80; c++)
      if (c % 16 >= 12) bump(&a, r, c, 80, 0.25);
  struct pg_cmp_mask m;
  analyze(&a, &b, NULL, &m);
  PG_CHECK_EQ_INT(16, m.axes[1].period);
  PG_CHECK_EQ_INT(4, m.axes[1].period_hot);
  PG_CHECK(m.axes[1].period_share == 1.0);
  PG_CHECK_EQ_INT(-1, m.axes[1].tail_start);
  PG_CHECK_EQ_INT(0, m.axes[0].period);
  PG_CHECK_EQ_INT(80, m.above);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* Scattered mismatches: no period, no tail; a clean pair: nothing at all. */
PG_TEST(silent_on_noise_and_clean) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F32, 8, 80);
  make2(&b, PG_DTYPE_F32, 8, 80);
  struct pg_cmp_mask m;
  analyze(&a, &b, NULL, &m);
  PG_CHECK_EQ_INT(0, m.mismatches);
  PG_CHECK_EQ_INT(0, m.axes[1].period);
  PG_CHECK_EQ_INT(-1, m.axes[1].tail_start);
  PG_CHECK_EQ_INT(-1, m.nonfinite_first_flat);
  PG_CHECK_EQ_INT(0, m.sentinel_count);
  uint32_t x = 12345;
  for (int k = 0; k < 40; k++) {
    x = x * 1103515245u + 12345u;
    bump(&a, (x >> 8) % 8, (x >> 16) % 80, 80, (k % 2) ? 0.1 : -0.1);
  }
  analyze(&a, &b, NULL, &m);
  PG_CHECK(m.mismatches > 30);
  for (int d = 0; d < 2; d++) {
    PG_CHECK_EQ_INT(0, m.axes[d].period);
    PG_CHECK_EQ_INT(-1, m.axes[d].tail_start);
  }
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* A block still holding the sentinel; a NaN elsewhere is the first non-finite. */
PG_TEST(sentinel_and_nonfinite) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F32, 6, 40);
  make2(&b, PG_DTYPE_F32, 6, 40);
  for (int64_t r = 4; r < 6; r++)
    for (int64_t c = 32; c < 40; c++) ((uint32_t *)a.dl.data)[r * 40 + c] = 0x7FC5A5A5u;
  ((float *)a.dl.data)[1 * 40 + 7] = INFINITY;
  ((float *)a.dl.data)[3 * 40 + 2] = NAN;
  struct pg_cmp_mask_opts o = {1, 0x7FC5A5A5u};
  struct pg_cmp_mask m;
  analyze(&a, &b, &o, &m);
  PG_CHECK_EQ_INT(16, m.sentinel_count);
  PG_CHECK_EQ_INT(4 * 40 + 32, m.sentinel_first_flat);
  PG_CHECK(m.sentinel_lo[0] == 4 && m.sentinel_hi[0] == 5);
  PG_CHECK(m.sentinel_lo[1] == 32 && m.sentinel_hi[1] == 39);
  PG_CHECK_EQ_INT(2, m.nonfinite_count);
  PG_CHECK_EQ_INT(47, m.nonfinite_first_flat);
  PG_CHECK(m.nonfinite_first_index[0] == 1 && m.nonfinite_first_index[1] == 7);
  PG_CHECK(!m.nonfinite_first_nan);
  /* without the sentinel option the prefill is just the first non-finite value */
  analyze(&a, &b, NULL, &m);
  PG_CHECK_EQ_INT(0, m.sentinel_count);
  PG_CHECK_EQ_INT(18, m.nonfinite_count);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* The worst relative error counts only cells above atol/rtol: a tiny reference cell
 * far off in relative terms does not win. */
PG_TEST(worst_rel_above_floor) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F32, 2, 10);
  make2(&b, PG_DTYPE_F32, 2, 10);
  ((float *)b.dl.data)[3] = 1e-6f, ((float *)a.dl.data)[3] = 1e-4f; /* rel 99, below floor */
  ((float *)a.dl.data)[15] = ((float *)b.dl.data)[15] * 1.2f;      /* rel 0.2 */
  struct pg_cmp_mask m;
  analyze(&a, &b, NULL, &m);
  PG_CHECK_EQ_INT(15, m.worst_rel_flat);
  PG_CHECK(m.worst_rel_index[0] == 1 && m.worst_rel_index[1] == 5);
  PG_CHECK_NEAR(0.2, m.worst_rel, 1e-6);
  PG_CHECK(m.worst_rel_signed > 0);
  PG_CHECK(m.rel_floor == 1.0);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* pg_tensor_compare keeps the sign of its worst element. */
PG_TEST(max_signed_diff) {
  struct pg_tensor a, b;
  make2(&a, PG_DTYPE_F16, 4, 8);
  make2(&b, PG_DTYPE_F16, 4, 8);
  bump(&a, 2, 3, 8, -0.75);
  bump(&a, 1, 1, 8, 0.25);
  struct pg_cmp_rule r = close_rule();
  struct pg_cmp_result res;
  struct pg_error err;
  PG_CHECK_OK(pg_tensor_compare(&a.dl, &b.dl, &r, 1, &res, &err));
  PG_CHECK_EQ_INT(19, res.max_abs_flat);
  PG_CHECK(res.max_signed_diff < -0.7 && res.max_signed_diff > -0.8);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}
