/* phasegate — compare/: tensor comparison with atol/rtol and the metrics a kernel
 * engineer needs to see why a comparison failed (docs/design.md §7).
 *
 * b = reference (golden), a = impl. A failed comparison is a result, not an error:
 * pg_tensor_compare() returns PG_OK and fills a struct pg_cmp_result; error codes mean
 * "could not compare". No I/O, no printing, depends on the ABI headers only.
 */
#ifndef PHASEGATE_COMPARE_H
#define PHASEGATE_COMPARE_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum pg_cmp_rule_kind {
  PG_RULE_ALLCLOSE = 0, /* |a-b| <= atol + rtol*|b| */
  PG_RULE_EXACT,        /* a == b as numbers (+0 == -0; NaN == NaN only with equal_nan) */
  PG_RULE_ULP,          /* at most `ulp` units in the last place of the reference dtype */
  PG_RULE_RATIO         /* allclose, but a fraction `ratio` of elements may fail */
};

struct pg_cmp_rule {
  enum pg_cmp_rule_kind kind;
  double atol, rtol;
  int equal_nan;
  int64_t ulp;
  double ratio;
};

/* Parses "allclose", "exact", "ulp:N", "ratio:R" (keeps atol/rtol/equal_nan): the one
 * reader of a rule's text (suite, contract, `phasegate diff --rule`). Strict: no
 * whitespace anywhere, N digits only, R a decimal number in [0, 1] right after the
 * colon (docs/compare.md "Rule text"); PG_EINVAL with the reason otherwise. err may be
 * NULL (a validity check). */
int pg_cmp_rule_parse(const char *text, struct pg_cmp_rule *rule, struct pg_error *err);
/* The tolerance where neither the case, the output nor the contract sets one: the
 * seed runner's atol = rtol = 1e-3 for every float dtype (docs/design.md §7). */
#define PG_CMP_DEFAULT_ATOL 1e-3
#define PG_CMP_DEFAULT_RTOL 1e-3
/* The default tolerance of a dtype: PG_CMP_DEFAULT_ATOL / _RTOL for floats, 0, 0 for
 * integers and bool (which compare exactly whatever the tolerance). */
void pg_cmp_default_tolerance(enum pg_dtype dtype, double *atol, double *rtol);
/* allclose with the dtype's default tolerance, equal_nan off. */
void pg_cmp_rule_init(struct pg_cmp_rule *rule, enum pg_dtype dtype);
/* The two spellings of a rule pg_cmp_rule_format writes. */
enum pg_cmp_rule_form {
  PG_RULE_FORM_NAME, /* "allclose", "exact", "ulp:2", "ratio:0.01" (%g): the text
                        pg_cmp_rule_parse reads, the report's "rule" */
  PG_RULE_FORM_FULL  /* the name with what else decides: "allclose(atol=1e-05,
                        rtol=1.3e-06)", "ulp:2(equal_nan)" (`phasegate diff`) */
};
/* Writes the rule as text in the given form (the one formatter of a rule). */
void pg_cmp_rule_format(const struct pg_cmp_rule *rule, enum pg_cmp_rule_form form, char *buf,
                        size_t size);

#define PG_CMP_FIRST_MISMATCHES 10

struct pg_cmp_mismatch {
  int64_t index[PG_MAX_NDIM];
  double impl_value; /* the impl's value: never the reference value (information barrier) */
  double abs_diff, rel_diff;
};

struct pg_cmp_result {
  int passed;                     /* the rule's verdict */
  int structural;                 /* shape or dtype mismatch: nothing else is valid */
  char structural_reason[256];
  int ndim;                       /* of the reference */
  int64_t impl_shape[PG_MAX_NDIM], ref_shape[PG_MAX_NDIM];
  int impl_ndim;
  enum pg_dtype impl_dtype, ref_dtype;

  int64_t n, mismatches;
  double mismatch_ratio;
  double max_abs_diff;
  int64_t max_abs_index[PG_MAX_NDIM];
  double max_rel_diff;            /* |a-b| / (|b| + 1e-8) */
  int64_t max_rel_index[PG_MAX_NDIM];
  double mean_abs_diff, rmse, cosine_similarity;
  int64_t nan_impl, nan_ref, inf_impl, inf_ref;
  double max_ulp;                 /* in the reference dtype (finite pairs); integers: the
                                     largest exact integer difference */
  double error_balance;           /* (#a>b - #a<b) / n: sign bias in [-1, 1] */
  double share_within_1e3, share_within_5e3; /* relative */
  double zero_share_ref;
  int mistrusted;                 /* reference >= 30 % exact zeros (>= 10) or all equal */
  char mistrust_reason[128];
  int cpu_reproducer_candidate;
  int n_first;
  struct pg_cmp_mismatch first[PG_CMP_FIRST_MISMATCHES];

  /* Additions (docs/compare.md defines every field). */
  int64_t n_finite;               /* pairs with both values finite: the metrics' domain */
  int64_t max_abs_flat, max_rel_flat; /* flat C-order indices; -1 when n_finite == 0 */
  int64_t first_flat[PG_CMP_FIRST_MISMATCHES];
  int64_t mismatches_nonfinite;   /* mismatching pairs where a or b is NaN/Inf */
  int64_t zeros_ref;              /* exact zeros (+0 or -0) in the reference */
  double max_signed_diff;         /* a - b at max_abs_flat: the sign of the worst element
                                     (0 when n_finite == 0) */
};

/* "[2, 3]" into buf (always NUL-terminated). */
void pg_cmp_format_index(const int64_t *index, int ndim, char *buf, size_t size);

/* Compares impl against ref under rule in one streaming pass, using up to n_threads
 * threads (<= 0: all cores). Returns PG_OK with *out filled (including structural
 * mismatches), or PG_EINVAL / PG_EDTYPE / PG_ENOTSUP / PG_ENOMEM when it cannot
 * compare. Results do not depend on the thread count. Every field is defined in
 * docs/compare.md; PHASEGATE_SIMD=base|avx2 caps the SIMD kernel chosen at run time. */
int pg_tensor_compare(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                      int n_threads, struct pg_cmp_result *out, struct pg_error *err);

/* ---- the mismatch mask (compare/mask.c, docs/compare.md "The mismatch mask") ----
 *
 * A second pass over a comparison, meant for failures: where the mismatches (the
 * elements the rule's per-element test rejects; ratio: allclose's) lie, and the
 * evidence a kernel engineer reads first. Facts only (counts, indices, periods);
 * what they mean is the caller's to decide. Single-threaded, no allocation beyond one
 * count per index of each analysed axis. */

#define PG_CMP_MASK_MAX_AXIS (1 << 22) /* longer axes get no marginal */
#define PG_CMP_MASK_MAX_TILES 4

struct pg_cmp_axis_marginal {
  int analyzed;                   /* 0: the axis is longer than PG_CMP_MASK_MAX_AXIS */
  int64_t length;
  int64_t hit;                    /* indices with at least one mismatch */
  int64_t first, last;            /* the first and last such index (-1: none) */
  int64_t top;                    /* the index with the most mismatches (first on ties) */
  double top_share;               /* its share of all mismatches */
  /* Periodicity: the "hot" indices (more than half the busiest index's count) repeat
   * with period `period` (> 0) and hold `period_share` of the mismatches. */
  int64_t period, period_hot;     /* the period; hot residues per period */
  double period_share;
  /* Confinement to the last partial tile: every hot index lies in [tail_start, length),
   * the hot indices are exactly that range, and `tiles` are the tile sizes T (multiples
   * of 8 in 8..256, powers of two preferred) with length % T != 0 and
   * floor(length / T) * T == tail_start. */
  int64_t tail_start;             /* -1: not confined */
  double tail_share;              /* share of the mismatches at indices >= tail_start */
  int n_tiles;
  int tiles[PG_CMP_MASK_MAX_TILES];
};

struct pg_cmp_mask_opts {
  int has_sentinel;               /* impl elements whose bits equal sentinel_bits (in the
                                     dtype's width) and that mismatch are "unwritten" */
  uint64_t sentinel_bits;
};

struct pg_cmp_mask {
  int64_t n, mismatches;          /* as the per-element test counts them */
  /* evidence */
  double mean_signed_diff;        /* mean of a - b over finite pairs */
  int64_t above, below;           /* finite mismatches with a > b, a < b */
  /* the worst element by relative error where |b| > atol/rtol (rtol governs: cells
   * with a tiny reference cannot dominate); -1 when no cell is above the floor */
  int64_t worst_rel_flat;
  int64_t worst_rel_index[PG_MAX_NDIM];
  double worst_rel, worst_rel_abs, worst_rel_signed;
  double rel_floor;               /* atol / rtol (inf when rtol == 0) */
  /* marginals per axis of the reference's shape */
  int ndim;
  struct pg_cmp_axis_marginal axes[PG_MAX_NDIM];
  /* the sentinel: mismatching elements still holding it, their bounding box */
  int64_t sentinel_count, sentinel_first_flat;
  int64_t sentinel_lo[PG_MAX_NDIM], sentinel_hi[PG_MAX_NDIM];
  /* the first mismatching non-finite impl element that is not the sentinel */
  int64_t nonfinite_count, nonfinite_first_flat; /* -1: none */
  int64_t nonfinite_first_index[PG_MAX_NDIM];
  int nonfinite_first_nan;        /* 1 NaN, 0 Inf */
};

/* Analyses the mismatches of impl against ref under rule into *out (both compact CPU
 * tensors of the same shape and dtype; PG_EINVAL / PG_ENOTSUP / PG_ENOMEM otherwise).
 * o may be NULL. */
int pg_cmp_mask_analyze(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                        const struct pg_cmp_mask_opts *o, struct pg_cmp_mask *out,
                        struct pg_error *err);

/* ---- the error map (compare/errmap.c, docs/compare.md "The error map") ----
 *
 * Where in a tensor the error is, small enough to draw: the tensor folded to 2-D
 * (every axis but the last into rows, row-major; the last axis into columns; 1-D: one
 * row; 0-D: one cell), downsampled to at most PG_CMP_MAP_MAX x PG_CMP_MAP_MAX cells.
 * Each cell holds the largest error over tolerance of its elements (> 1: one of them
 * mismatches) and how many mismatch; beside it the same per decade of |reference|.
 * Metrics only: no cell or bucket holds a value of either tensor. */

#define PG_CMP_MAP_MAX 64
#define PG_CMP_MAP_BIG 1e30      /* the error of a mismatching non-finite pair */
#define PG_CMP_HIST_BUCKETS 14   /* [0, 1e-6), [1e-6, 1e-5), ..., [1e5, 1e6), [1e6, inf) */

struct pg_cmp_hist_bucket {
  int64_t n, mismatches;
  double max_abs_diff;           /* over finite pairs; NaN when the bucket has none */
  double max_err_over_tol;
};

struct pg_cmp_error_map {
  int rows, cols;                /* cells (0 when the tensor is empty) */
  int n_row_axes;                /* tensor axes 0 .. n_row_axes-1 are folded into rows */
  int col_axis;                  /* the last axis (-1: 0-D) */
  int64_t rows_total, cols_total; /* the folded extent */
  int64_t rows_per_cell, cols_per_cell;
  /* The error over tolerance of an element under the rule (0 when it passes exactly):
   * allclose / ratio |a-b| / (atol + rtol*|b|); ulp:N  ulps / N; exact, integers,
   * tolerance 0: 0 equal, PG_CMP_MAP_BIG not; a mismatching pair with a NaN / Inf:
   * PG_CMP_MAP_BIG. A mismatching element is always > 1, a passing one <= 1. */
  double cells[PG_CMP_MAP_MAX * PG_CMP_MAP_MAX];          /* [row * cols + col] */
  int64_t mismatch_cells[PG_CMP_MAP_MAX * PG_CMP_MAP_MAX];
  /* by |reference| (NaN references are in none): bucket 0 [0, 1e-6), bucket i
   * [10^(i-7), 10^(i-6)), the last [1e6, inf) */
  struct pg_cmp_hist_bucket hist[PG_CMP_HIST_BUCKETS];
};

/* Bucket i's bounds: lo (0 for bucket 0) and hi (INFINITY for the last). */
double pg_cmp_hist_lo(int i);
double pg_cmp_hist_hi(int i);

/* The error map of impl against ref under rule, in one pass over both on up to
 * n_threads threads (<= 0: all cores); the result does not depend on the thread
 * count. Same requirements and errors as pg_cmp_mask_analyze. Thread-safe. */
int pg_cmp_error_map(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                     int n_threads, struct pg_cmp_error_map *out, struct pg_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_COMPARE_H */
