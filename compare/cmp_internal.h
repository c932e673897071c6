/* compare/cmp_internal.h — what compare.c shares with the block kernels in
 * cmp_kernel.h: the per-chunk partial result and the loop-invariant parameters.
 * Private to compare/.
 */
#ifndef PG_CMP_INTERNAL_H
#define PG_CMP_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "phasegate/compare.h"

/* Elements per block: small enough that a block of both tensors (8 KiB of float32)
 * stays in L1 for the re-scans, and that integer blocks staged as doubles (24 KiB) do
 * too. A multiple of 16 (the hot kernels' step). */
#define PG__CMP_BLOCK 1024

/* Per-element predicate actually evaluated (integers always use INT). */
enum pg__kind { PG__K_CLOSE, PG__K_EXACT, PG__K_ULP, PG__K_INT };

struct pg__kparams {
  enum pg__kind kind;
  enum pg_dtype dtype;
  double atol, rtol;
  int equal_nan;
  uint64_t ulp;
  double large;    /* |b| >= large: rtol governs the tolerance (atol/rtol) */
  double rtol100;  /* rtol / 100: "orders of magnitude below rtol" */
  /* Largest max_rel / max_abs any chunk of this call has confirmed so far (double
   * bits; only decide which blocks are re-scanned, never the result). */
  _Atomic uint64_t *rel_hint, *abs_hint;
};

/* Everything one chunk contributes; merged in chunk order so results do not depend
 * on the thread count. Counts are exact; sums are in a fixed order. */
struct pg__partial {
  int64_t mismatches, mism_nonfinite, n_finite;
  int64_t nan_a, nan_b, inf_a, inf_b, within3, within53, zeros_b;
  int64_t balance; /* #(a > b) - #(a < b) */
  int64_t large, large_bad; /* flags: some cell has |b| >= large; one of them is bad */
  double sum_abs, sum_sq, sum_ab, sum_aa, sum_bb;
  double max_abs, max_rel; /* -1 until a finite pair is seen */
  int64_t max_abs_at, max_rel_at;
  double b0;               /* the chunk's first reference value */
  int nonconst;            /* some reference value differs from b0 (or is NaN) */
  uint64_t max_ulp;
  int n_first;
  int64_t first[PG_CMP_FIRST_MISMATCHES];
};

static inline double pg__hint_get(_Atomic uint64_t *hint) {
  uint64_t u = atomic_load_explicit(hint, memory_order_relaxed);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Raises a hint to v (>= 0): non-negative doubles order like their bit patterns. */
static inline void pg__hint_raise(_Atomic uint64_t *hint, double v) {
  uint64_t nv;
  memcpy(&nv, &v, sizeof nv);
  uint64_t cur = atomic_load_explicit(hint, memory_order_relaxed);
  while (cur < nv && !atomic_compare_exchange_weak_explicit(hint, &cur, nv, memory_order_relaxed,
                                                            memory_order_relaxed)) {
  }
}

/* The re-scan threshold for max_rel: may a pair with |a-b| > den * r0 raise it?
 * Conservative (a hair below the best maximum known, this chunk's or any other's)
 * and confirmed by the scalar re-scan with the exact division. */
static inline double pg__rel_r0(const struct pg__kparams *kp, const struct pg__partial *p) {
  double r0 = p->max_rel;
  double hint = pg__hint_get(kp->rel_hint);
  if (hint > r0) r0 = hint;
  return r0 < 0x1p-900 ? 0.0 : r0 * (1.0 - 0x1p-40); /* keep den*r0 a normal number */
}

/* Integers and bool, widened for the block kernel; zero-padded past m. */
struct pg__staged {
  _Alignas(64) double a[PG__CMP_BLOCK + 8];
  _Alignas(64) double b[PG__CMP_BLOCK + 8];
  _Alignas(64) uint64_t u[PG__CMP_BLOCK + 8];
};

#endif
