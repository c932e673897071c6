/* compare/mask.c — pg_cmp_mask_analyze(): the mismatch mask of a comparison, for a
 * failure's diagnosis. One scalar pass judges every element with the rule's own
 * per-element test (cmp_elem.h, as the streaming pass does), counts mismatches per
 * index of each axis, and collects the evidence (signed differences, the worst element
 * above the tolerance floor, the sentinel, the first non-finite value); the marginals
 * are then searched for a period and for confinement to an axis's last partial tile.
 * Facts only: run/classify.c decides what they mean.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmp_elem.h"
#include "phasegate/compare.h"

/* The impl element's raw bits in the dtype's width (for the sentinel). */
static uint64_t raw_bits(const char *p, size_t size, int64_t i) {
  uint64_t u = 0;
  switch (size) {
    case 1: u = ((const uint8_t *)p)[i]; break;
    case 2: u = ((const uint16_t *)p)[i]; break;
    case 4: u = ((const uint32_t *)p)[i]; break;
    default: memcpy(&u, p + (size_t)i * 8, 8); break;
  }
  return u;
}

/* Element i widened, its ULP / integer distance, as the streaming pass sees it. */
static void element(enum pg_dtype t, const char *pa, const char *pb, int64_t i, double *a,
                    double *b, uint64_t *u) {
  if (pg_dtype_is_float(t)) {
    pg__scalar(t, pa, pb, i, a, b, u);
    return;
  }
  int64_t x, y;
  switch (t) {
    case PG_DTYPE_I8: x = ((const int8_t *)pa)[i], y = ((const int8_t *)pb)[i]; break;
    case PG_DTYPE_U8: x = ((const uint8_t *)pa)[i], y = ((const uint8_t *)pb)[i]; break;
    case PG_DTYPE_I32: x = ((const int32_t *)pa)[i], y = ((const int32_t *)pb)[i]; break;
    case PG_DTYPE_I64: x = ((const int64_t *)pa)[i], y = ((const int64_t *)pb)[i]; break;
    default: x = ((const uint8_t *)pa)[i] != 0, y = ((const uint8_t *)pb)[i] != 0; break;
  }
  *a = (double)x, *b = (double)y;
  *u = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

/* Period of the hot set along one axis: the smallest P <= len/2 with hot[i] ==
 * hot[i + P] everywhere, hot residues a proper subset of the P residues. Candidates are
 * the distances from the first hot run's start to later runs' starts (a periodic set
 * repeats its first run), so a non-periodic axis costs little. */
static void find_period(const unsigned char *hot, int64_t len, struct pg_cmp_axis_marginal *ax,
                        const int64_t *cnt, int64_t total) {
  int64_t s0 = -1, tried = 0;
  for (int64_t i = 0; i < len; i++)
    if (hot[i]) {
      s0 = i;
      break;
    }
  if (s0 < 0) return;
  for (int64_t s = s0 + 1; s < len && tried < 64; s++) {
    if (!(hot[s] && !hot[s - 1])) continue; /* a later run's start */
    int64_t p = s - s0;
    tried++;
    if (p < 2 || p > len / 2) break;
    int ok = 1;
    for (int64_t i = 0; ok && i + p < len; i++) ok = hot[i] == hot[i + p];
    if (!ok) continue;
    int64_t residues = 0, in_hot = 0;
    for (int64_t r = 0; r < p; r++) residues += hot[r];
    for (int64_t i = 0; i < len; i++) in_hot += hot[i] ? cnt[i] : 0;
    if (residues == 0 || residues >= p) continue;
    ax->period = p;
    ax->period_hot = residues;
    ax->period_share = (double)in_hot / (double)total;
    return;
  }
}

/* Whether the hot set is exactly [f, len) with f the start of a last partial tile. */
static void find_tail(const unsigned char *hot, int64_t len, struct pg_cmp_axis_marginal *ax,
                      const int64_t *cnt, int64_t total) {
  int64_t f = -1;
  for (int64_t i = 0; i < len; i++)
    if (hot[i]) {
      f = i;
      break;
    }
  if (f <= 0) return;
  for (int64_t i = f; i < len; i++)
    if (!hot[i]) return;
  int64_t in_tail = 0;
  for (int64_t i = f; i < len; i++) in_tail += cnt[i];
  int n = 0;
  for (int pass = 0; pass < 2; pass++) /* powers of two first, then other multiples of 8 */
    for (int t = 8; t <= 256 && n < PG_CMP_MASK_MAX_TILES; t += 8) {
      int pow2 = (t & (t - 1)) == 0;
      if (pow2 != (pass == 0) || len % t == 0 || len / t * t != f) continue;
      ax->tiles[n++] = t;
    }
  if (n == 0) return;
  ax->n_tiles = n;
  ax->tail_start = f;
  ax->tail_share = (double)in_tail / (double)total;
}

/* Summary, period and tail of one axis from its counts. */
static int summarize_axis(struct pg_cmp_axis_marginal *ax, const int64_t *cnt, int64_t total) {
  int64_t len = ax->length, maxc = 0;
  for (int64_t i = 0; i < len; i++) {
    if (!cnt[i]) continue;
    if (ax->first < 0) ax->first = i;
    ax->last = i;
    ax->hit++;
    if (cnt[i] > maxc) maxc = cnt[i], ax->top = i;
  }
  if (total == 0 || len < 2) return PG_OK;
  ax->top_share = (double)maxc / (double)total;
  unsigned char *hot = malloc((size_t)len);
  if (!hot) return PG_ENOMEM;
  int64_t n_hot = 0;
  for (int64_t i = 0; i < len; i++) n_hot += hot[i] = cnt[i] * 2 > maxc;
  if (n_hot < len) {
    find_period(hot, len, ax, cnt, total);
    find_tail(hot, len, ax, cnt, total);
  }
  free(hot);
  return PG_OK;
}

static void unravel(int64_t flat, int ndim, const int64_t *shape, int64_t *index) {
  for (int i = PG_MAX_NDIM - 1; i >= 0; i--) index[i] = 0;
  for (int i = ndim - 1; i >= 0; i--)
    if (shape[i] > 0) {
      index[i] = flat % shape[i];
      flat /= shape[i];
    }
}

struct scan {
  const struct pg__kparams *kp;
  const struct pg_cmp_mask_opts *o;
  const char *pa, *pb;
  size_t esize;
  int ndim;
  const int64_t *shape;
  int64_t *counts[PG_MAX_NDIM]; /* NULL: the axis is not analysed */
  double sum_signed;
  int64_t n_finite;
};

/* One mismatching element at flat index i (multi-index idx). */
static void on_mismatch(struct scan *s, struct pg_cmp_mask *out, int64_t i, const int64_t *idx,
                        double a, double b) {
  out->mismatches++;
  for (int d = 0; d < s->ndim; d++)
    if (s->counts[d]) s->counts[d][idx[d]]++;
  if (isfinite(a) && isfinite(b)) {
    out->above += a > b;
    out->below += a < b;
    return;
  }
  if (s->o && s->o->has_sentinel && raw_bits(s->pa, s->esize, i) == s->o->sentinel_bits) {
    if (out->sentinel_count++ == 0) {
      out->sentinel_first_flat = i;
      for (int d = 0; d < s->ndim; d++) out->sentinel_lo[d] = out->sentinel_hi[d] = idx[d];
    }
    for (int d = 0; d < s->ndim; d++) {
      if (idx[d] < out->sentinel_lo[d]) out->sentinel_lo[d] = idx[d];
      if (idx[d] > out->sentinel_hi[d]) out->sentinel_hi[d] = idx[d];
    }
    return;
  }
  if (isfinite(a)) return;
  if (out->nonfinite_count++ == 0) {
    out->nonfinite_first_flat = i;
    memcpy(out->nonfinite_first_index, idx, sizeof out->nonfinite_first_index);
    out->nonfinite_first_nan = isnan(a);
  }
}

static void scan_all(struct scan *s, struct pg_cmp_mask *out) {
  int64_t idx[PG_MAX_NDIM] = {0};
  double floor = out->rel_floor;
  for (int64_t i = 0; i < out->n; i++) {
    double a, b;
    uint64_t u;
    element(s->kp->dtype, s->pa, s->pb, i, &a, &b, &u);
    if (isfinite(a) && isfinite(b)) {
      double d = a - b;
      s->sum_signed += d;
      s->n_finite++;
      double ab = fabs(b);
      if (ab > floor) {
        double rel = fabs(d) / ab;
        if (out->worst_rel_flat < 0 || rel > out->worst_rel) {
          out->worst_rel = rel, out->worst_rel_abs = fabs(d), out->worst_rel_signed = d;
          out->worst_rel_flat = i;
        }
      }
    }
    if (!pg__elem_pass(s->kp, a, b, u)) on_mismatch(s, out, i, idx, a, b);
    for (int d = s->ndim - 1; d >= 0; d--) { /* the next multi-index (C order) */
      if (++idx[d] < s->shape[d]) break;
      idx[d] = 0;
    }
  }
}

static int check(const DLTensor *t, const DLTensor *ref, struct pg_error *err) {
  if (!t || !ref || t->ndim != ref->ndim || t->ndim < 0 || t->ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "mask: tensors of different rank");
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != ref->shape[d])
      return pg_error_set(err, PG_EINVAL, "mask: tensors of different shape");
  if (pg_dtype_from_dl(t->dtype) != pg_dtype_from_dl(ref->dtype) ||
      pg_dtype_from_dl(t->dtype) == PG_DTYPE_INVALID)
    return pg_error_set(err, PG_EINVAL, "mask: tensors of different or unknown dtype");
  if (t->strides || ref->strides)
    return pg_error_set(err, PG_ENOTSUP, "mask: strided tensors are not analysed");
  return PG_OK;
}

int pg_cmp_mask_analyze(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                        const struct pg_cmp_mask_opts *o, struct pg_cmp_mask *out,
                        struct pg_error *err) {
  if (!out || !rule) return pg_error_set(err, PG_EINVAL, "mask: NULL argument");
  memset(out, 0, sizeof *out);
  out->worst_rel_flat = out->sentinel_first_flat = out->nonfinite_first_flat = -1;
  PG_RETURN_IF_ERROR(check(impl, ref, err));
  enum pg_dtype t = pg_dtype_from_dl(ref->dtype);
  struct pg__kparams kp;
  memset(&kp, 0, sizeof kp);
  kp.dtype = t;
  kp.atol = rule->atol;
  kp.rtol = rule->rtol;
  kp.equal_nan = rule->equal_nan != 0;
  kp.ulp = (uint64_t)(rule->ulp > 0 ? rule->ulp : 0);
  kp.kind = !pg_dtype_is_float(t)            ? PG__K_INT
            : rule->kind == PG_RULE_EXACT    ? PG__K_EXACT
            : rule->kind == PG_RULE_ULP      ? PG__K_ULP
                                             : PG__K_CLOSE;
  out->rel_floor = rule->rtol > 0 ? rule->atol / rule->rtol : INFINITY;
  out->ndim = ref->ndim;
  int64_t n = 1;
  for (int d = 0; d < ref->ndim; d++) n *= ref->shape[d];
  out->n = n;
  struct scan s;
  memset(&s, 0, sizeof s);
  s.kp = &kp;
  s.o = o;
  s.pa = (const char *)impl->data + impl->byte_offset;
  s.pb = (const char *)ref->data + ref->byte_offset;
  s.esize = pg_dtype_size(t);
  s.ndim = ref->ndim;
  s.shape = ref->shape;
  int rc = PG_OK;
  for (int d = 0; d < ref->ndim; d++) {
    struct pg_cmp_axis_marginal *ax = &out->axes[d];
    ax->length = ref->shape[d];
    ax->first = ax->last = ax->top = ax->tail_start = -1;
    if (n == 0 || ref->shape[d] > PG_CMP_MASK_MAX_AXIS) continue;
    s.counts[d] = calloc((size_t)ref->shape[d], sizeof *s.counts[d]);
    if (!s.counts[d]) rc = pg_error_set(err, PG_ENOMEM, "mask: out of memory");
    ax->analyzed = s.counts[d] != NULL;
  }
  if (rc == PG_OK && n > 0) {
    scan_all(&s, out);
    out->mean_signed_diff = s.n_finite ? s.sum_signed / (double)s.n_finite : 0.0;
    if (out->worst_rel_flat >= 0)
      unravel(out->worst_rel_flat, ref->ndim, ref->shape, out->worst_rel_index);
    for (int d = 0; rc == PG_OK && d < ref->ndim; d++)
      if (s.counts[d] && summarize_axis(&out->axes[d], s.counts[d], out->mismatches) != PG_OK)
        rc = pg_error_set(err, PG_ENOMEM, "mask: out of memory");
  }
  for (int d = 0; d < ref->ndim; d++) free(s.counts[d]);
  return rc;
}
