/* compare/errmap.c — pg_cmp_error_map(): where in a tensor the error is, for a
 * failure's picture (docs/compare.md "The error map"). One pass over both tensors,
 * split into contiguous ranges on up to n_threads threads; each range fills a private
 * map (cell maxima, mismatch counts, the |reference| histogram) and the ranges are
 * merged by max and sum, so the result does not depend on the thread count. The
 * per-element verdict is the rule's own (cmp_elem.h), as the streaming pass and the
 * mask analysis judge it.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmp_elem.h"
#include "phasegate/compare.h"

#define EM_BLOCK 256                  /* elements staged as doubles at a time */
#define EM_MAX_THREADS 64
#define EM_MIN_PER_THREAD (1 << 20)   /* smaller tensors are not worth a thread */

static const double k_lo[PG_CMP_HIST_BUCKETS] = {0,    1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1,
                                                 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6};

double pg_cmp_hist_lo(int i) { return i >= 0 && i < PG_CMP_HIST_BUCKETS ? k_lo[i] : NAN; }

double pg_cmp_hist_hi(int i) {
  if (i < 0 || i >= PG_CMP_HIST_BUCKETS) return NAN;
  return i == PG_CMP_HIST_BUCKETS - 1 ? INFINITY : k_lo[i + 1];
}

/* The bucket of |b| = v (not NaN) by comparisons: for the octave table only. */
static int bucket_slow(double v) {
  int i = 0;
  while (i < PG_CMP_HIST_BUCKETS - 1 && v >= k_lo[i + 1]) i++;
  return i;
}

/* What every range shares. */
struct em {
  struct pg__kparams kp;
  const char *pa, *pb;
  int64_t cols_total, rpc, cpc;
  int cols;
  int need_u;                       /* the verdict reads the ULP / integer distance */
  int fast;                         /* allclose, atol > 0, a float dtype: block_close */
  double next_lo[PG_CMP_HIST_BUCKETS]; /* bucket i's upper bound; NaN for the last */
  /* octave[e]: the bucket of 2^(e-1023), the lower end of the doubles with biased
   * exponent e; an octave spans less than a decade, so one more comparison decides */
  unsigned char octave[2048];
};

struct em_part {
  struct pg_cmp_error_map *map;
  int64_t start, end;
  const struct em *e;
  int failed;                       /* out of memory: the range is not mapped */
};

/* Elements [at, at + m) widened to doubles (u: the ULP / integer distance when needed). */
static void stage(const struct em *e, int64_t at, int m, double *a, double *b, uint64_t *u) {
  const char *pa = e->pa, *pb = e->pb;
  enum pg_dtype t = e->kp.dtype;
  if (t == PG_DTYPE_F32 && !e->need_u) {
    const float *x = (const float *)pa + at, *y = (const float *)pb + at;
    for (int i = 0; i < m; i++) a[i] = x[i], b[i] = y[i];
    return;
  }
  if (pg_dtype_is_float(t)) {
    for (int i = 0; i < m; i++) pg__scalar(t, pa, pb, at + i, &a[i], &b[i], &u[i]);
    return;
  }
  for (int i = 0; i < m; i++) {
    int64_t x, y, k = at + i;
    switch (t) {
      case PG_DTYPE_I8: x = ((const int8_t *)pa)[k], y = ((const int8_t *)pb)[k]; break;
      case PG_DTYPE_U8: x = ((const uint8_t *)pa)[k], y = ((const uint8_t *)pb)[k]; break;
      case PG_DTYPE_I32: x = ((const int32_t *)pa)[k], y = ((const int32_t *)pb)[k]; break;
      case PG_DTYPE_I64: x = ((const int64_t *)pa)[k], y = ((const int64_t *)pb)[k]; break;
      default: x = ((const uint8_t *)pa)[k] != 0, y = ((const uint8_t *)pb)[k] != 0; break;
    }
    a[i] = (double)x, b[i] = (double)y;
    u[i] = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
  }
}

/* The error over tolerance of one element (see struct pg_cmp_error_map). */
static inline double elem_err(const struct pg__kparams *kp, double x, double y, double d,
                              uint64_t u, int pass) {
  double err;
  if (!(isfinite(x) && isfinite(y))) {
    err = pass ? 0.0 : PG_CMP_MAP_BIG;
  } else if (kp->kind == PG__K_CLOSE) {
    double tol = kp->atol + kp->rtol * fabs(y);
    err = tol > 0 ? d / tol : d > 0 ? PG_CMP_MAP_BIG : 0.0;
  } else if (kp->kind == PG__K_ULP) {
    err = kp->ulp > 0 ? (double)u / (double)kp->ulp : u > 0 ? PG_CMP_MAP_BIG : 0.0;
  } else {
    err = d > 0 ? PG_CMP_MAP_BIG : 0.0;
  }
  if (!(err <= PG_CMP_MAP_BIG)) err = PG_CMP_MAP_BIG;
  if (!pass && !(err > 1.0)) err = nextafter(1.0, 2.0); /* > 1 exactly when it mismatches */
  return err;
}

/* Per-element results of a block, then folded into the cell and the histogram. */
struct em_block {
  double b[EM_BLOCK], d[EM_BLOCK], err[EM_BLOCK];
  unsigned char bad[EM_BLOCK], bk[EM_BLOCK];
};

/* Stage 1, allclose with atol > 0 on floats (the common case: no branch, no
 * comparison, so it vectorises): |a-b| and the error over tolerance. An element with
 * err >= 1 (or NaN: a NaN / Inf in the pair) is judged again by the rule in stage 2;
 * below 1 it passes (d < tol). */
static void block_close(const struct em *e, const double *restrict a, struct em_block *k, int m) {
  double atol = e->kp.atol, rtol = e->kp.rtol;
  const double *restrict b = k->b;
  double *restrict dd = k->d, *restrict er = k->err;
  for (int i = 0; i < m; i++) {
    double d = fabs(a[i] - b[i]);
    dd[i] = d;
    er[i] = d / (atol + rtol * fabs(b[i]));
  }
}

/* Stage 1 for every other rule: the rule's own verdict and error per element. */
static void block_any(const struct em *e, const double *a, const uint64_t *u, struct em_block *k,
                      int m) {
  for (int i = 0; i < m; i++) {
    double x = a[i], y = k->b[i], d = fabs(x - y);
    int pass = pg__elem_pass(&e->kp, x, y, u[i]);
    k->d[i] = d;
    k->err[i] = elem_err(&e->kp, x, y, d, u[i], pass);
    k->bad[i] = !pass;
  }
}

/* What one range works in: the staged block, the histogram's four copies. */
struct em_scratch {
  double a[EM_BLOCK];
  uint64_t u[EM_BLOCK];
  struct em_block k;
  struct pg_cmp_hist_bucket h4[4][PG_CMP_HIST_BUCKETS + 1]; /* the last: NaN, dropped */
};

/* One run of elements inside one cell: its max error and mismatches, and the
 * histogram (four copies, element i into copy i % 4, so consecutive elements in the
 * same bucket do not wait on each other; merged in run_range). */
static void cell_run(const struct em *e, int64_t at, int64_t len, double *cmax, int64_t *cmis,
                     struct em_scratch *w) {
  double *a = w->a;
  uint64_t *u = w->u;
  struct em_block *k = &w->k;
  double mx[4] = {*cmax, 0, 0, 0};
  int64_t mis = *cmis;
  for (int64_t off = 0; off < len; off += EM_BLOCK) {
    int m = len - off < EM_BLOCK ? (int)(len - off) : EM_BLOCK;
    stage(e, at + off, m, a, k->b, u);
    if (e->fast) block_close(e, a, k, m);
    else block_any(e, a, u, k, m);
    /* the verdicts left open by block_close, the buckets (NaN references: none) */
    for (int i = 0; i < m; i++) {
      if (e->fast) {
        /* below 1 passes, above 1 (finite) mismatches: d/tol rounds monotonically;
         * exactly 1, NaN and Inf (a non-finite pair, an overflow) judged by the rule */
        double er = k->err[i];
        k->bad[i] = er > 1.0;
        if (!(er < 1.0) && !(er > 1.0 && er <= PG_CMP_MAP_BIG)) {
          int pass = pg__elem_pass(&e->kp, a[i], k->b[i], u[i]);
          k->err[i] = elem_err(&e->kp, a[i], k->b[i], k->d[i], u[i], pass);
          k->bad[i] = (unsigned char)!pass;
        }
      }
      double ab = fabs(k->b[i]);
      int bk = e->octave[(pg__f64_bits(ab) >> 52) & 0x7ff];
      k->bk[i] = (unsigned char)(isnan(ab) ? PG_CMP_HIST_BUCKETS : bk + (ab >= e->next_lo[bk]));
    }
    for (int i = 0; i < m; i++) {
      double err = k->err[i], d = k->d[i];
      if (err > mx[i & 3]) mx[i & 3] = err;
      mis += k->bad[i];
      struct pg_cmp_hist_bucket *h = &w->h4[i & 3][k->bk[i]];
      h->n++;
      h->mismatches += k->bad[i];
      if (err > h->max_err_over_tol) h->max_err_over_tol = err;
      if (d > h->max_abs_diff && d <= DBL_MAX) h->max_abs_diff = d;
    }
  }
  for (int q = 1; q < 4; q++)
    if (mx[q] > mx[0]) mx[0] = mx[q];
  *cmax = mx[0];
  *cmis = mis;
}

static void hist_merge(struct pg_cmp_hist_bucket *h, const struct pg_cmp_hist_bucket *g) {
  for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++) {
    h[i].n += g[i].n;
    h[i].mismatches += g[i].mismatches;
    if (g[i].max_abs_diff > h[i].max_abs_diff) h[i].max_abs_diff = g[i].max_abs_diff;
    if (g[i].max_err_over_tol > h[i].max_err_over_tol) h[i].max_err_over_tol = g[i].max_err_over_tol;
  }
}

static void *run_range(void *arg) {
  struct em_part *p = arg;
  const struct em *e = p->e;
  struct pg_cmp_error_map *mp = p->map;
  struct em_scratch *w = calloc(1, sizeof *w);
  if (!w) {
    p->failed = 1;
    return NULL;
  }
  for (int q = 0; q < 4; q++)
    for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++) w->h4[q][i].max_abs_diff = -1.0;
  int64_t s = p->start, C = e->cols_total;
  int64_t r = C > 0 ? s / C : 0, c = C > 0 ? s % C : 0;
  while (s < p->end) {
    int64_t cr = r / e->rpc, cc = c / e->cpc;
    int64_t len = (cc + 1) * e->cpc - c;        /* to the cell's right edge */
    if (len > C - c) len = C - c;               /* the row's end */
    if (len > p->end - s) len = p->end - s;     /* the range's end */
    int64_t at = cr * e->cols + cc;
    cell_run(e, s, len, &mp->cells[at], &mp->mismatch_cells[at], w);
    s += len;
    c += len;
    if (c == C) c = 0, r++;
  }
  for (int q = 0; q < 4; q++) hist_merge(mp->hist, w->h4[q]);
  free(w);
  return NULL;
}

static int check(const DLTensor *t, const DLTensor *ref, struct pg_error *err) {
  if (!t || !ref || t->ndim != ref->ndim || t->ndim < 0 || t->ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "error map: tensors of different rank");
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != ref->shape[d] || t->shape[d] < 0)
      return pg_error_set(err, PG_EINVAL, "error map: tensors of different shape");
  if (pg_dtype_from_dl(t->dtype) != pg_dtype_from_dl(ref->dtype) ||
      pg_dtype_from_dl(t->dtype) == PG_DTYPE_INVALID)
    return pg_error_set(err, PG_EINVAL, "error map: tensors of different or unknown dtype");
  if (t->strides || ref->strides)
    return pg_error_set(err, PG_ENOTSUP, "error map: strided tensors are not mapped");
  return PG_OK;
}

/* The folding and the cell grid of a shape. */
static void geometry(const DLTensor *ref, struct pg_cmp_error_map *out, int64_t *n) {
  int nd = ref->ndim;
  out->n_row_axes = nd >= 2 ? nd - 1 : 0;
  out->col_axis = nd - 1;
  out->rows_total = 1;
  for (int d = 0; d < nd - 1; d++) out->rows_total *= ref->shape[d];
  out->cols_total = nd >= 1 ? ref->shape[nd - 1] : 1;
  *n = out->rows_total * out->cols_total;
  out->rows_per_cell = out->cols_per_cell = 1;
  if (*n == 0) return;
  out->rows_per_cell = (out->rows_total + PG_CMP_MAP_MAX - 1) / PG_CMP_MAP_MAX;
  out->cols_per_cell = (out->cols_total + PG_CMP_MAP_MAX - 1) / PG_CMP_MAP_MAX;
  out->rows = (int)((out->rows_total + out->rows_per_cell - 1) / out->rows_per_cell);
  out->cols = (int)((out->cols_total + out->cols_per_cell - 1) / out->cols_per_cell);
}

static void em_init(struct em *e, const DLTensor *impl, const DLTensor *ref,
                    const struct pg_cmp_rule *rule, const struct pg_cmp_error_map *out) {
  enum pg_dtype t = pg_dtype_from_dl(ref->dtype);
  memset(e, 0, sizeof *e);
  e->kp.dtype = t;
  e->kp.atol = rule->atol;
  e->kp.rtol = rule->rtol;
  e->kp.equal_nan = rule->equal_nan != 0;
  e->kp.ulp = (uint64_t)(rule->ulp > 0 ? rule->ulp : 0);
  e->kp.kind = !pg_dtype_is_float(t)         ? PG__K_INT
               : rule->kind == PG_RULE_EXACT ? PG__K_EXACT
               : rule->kind == PG_RULE_ULP   ? PG__K_ULP
                                             : PG__K_CLOSE;
  e->need_u = e->kp.kind == PG__K_ULP || e->kp.kind == PG__K_INT;
  e->fast = e->kp.kind == PG__K_CLOSE && rule->atol > 0;
  for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++)
    e->next_lo[i] = i + 1 < PG_CMP_HIST_BUCKETS ? k_lo[i + 1] : NAN;
  e->pa = (const char *)impl->data + impl->byte_offset;
  e->pb = (const char *)ref->data + ref->byte_offset;
  e->cols_total = out->cols_total;
  e->rpc = out->rows_per_cell;
  e->cpc = out->cols_per_cell;
  e->cols = out->cols;
  for (int x = 0; x < 2048; x++)
    e->octave[x] = (unsigned char)(x == 0 ? 0 : x == 2047 ? PG_CMP_HIST_BUCKETS - 1
                                                          : bucket_slow(ldexp(1.0, x - 1023)));
}

static void map_clear(struct pg_cmp_error_map *m) {
  memset(m->cells, 0, sizeof m->cells);
  memset(m->mismatch_cells, 0, sizeof m->mismatch_cells);
  memset(m->hist, 0, sizeof m->hist);
  for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++) m->hist[i].max_abs_diff = -1.0;
}

/* Folds part q into out: maxima and sums, independent of the order. */
static void map_merge(struct pg_cmp_error_map *out, const struct pg_cmp_error_map *q) {
  for (int i = 0; i < PG_CMP_MAP_MAX * PG_CMP_MAP_MAX; i++) {
    if (q->cells[i] > out->cells[i]) out->cells[i] = q->cells[i];
    out->mismatch_cells[i] += q->mismatch_cells[i];
  }
  hist_merge(out->hist, q->hist);
}

static int threads_for(int n_threads, int64_t n) {
  long nt = n_threads > 0 ? n_threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > EM_MAX_THREADS) nt = EM_MAX_THREADS;
  int64_t by_size = n / EM_MIN_PER_THREAD + 1;
  return (int)(nt < by_size ? nt : by_size);
}

int pg_cmp_error_map(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                     int n_threads, struct pg_cmp_error_map *out, struct pg_error *err) {
  if (!out || !rule) return pg_error_set(err, PG_EINVAL, "error map: NULL argument");
  memset(out, 0, sizeof *out);
  PG_RETURN_IF_ERROR(check(impl, ref, err));
  int64_t n;
  geometry(ref, out, &n);
  map_clear(out);
  if (n > 0) {
    struct em *e = malloc(sizeof *e);
    int nt = threads_for(n_threads, n);
    struct em_part parts[EM_MAX_THREADS];
    pthread_t tids[EM_MAX_THREADS];
    int started[EM_MAX_THREADS] = {0};
    if (!e) return pg_error_set(err, PG_ENOMEM, "error map: out of memory");
    em_init(e, impl, ref, rule, out);
    int64_t per = (n + nt - 1) / nt;
    for (int t = 0; t < nt; t++) {
      parts[t].e = e;
      parts[t].failed = 0;
      parts[t].start = per * t < n ? per * t : n;
      parts[t].end = per * (t + 1) < n ? per * (t + 1) : n;
      parts[t].map = t == 0 ? out : malloc(sizeof *parts[t].map);
      if (!parts[t].map) { /* fewer threads: the last one takes what is left */
        parts[t - 1].end = n;
        nt = t;
        break;
      }
      map_clear(parts[t].map);
    }
    for (int t = 1; t < nt; t++)
      started[t] = pthread_create(&tids[t], NULL, run_range, &parts[t]) == 0;
    run_range(&parts[0]);
    int oom = parts[0].failed;
    for (int t = 1; t < nt; t++) {
      if (started[t]) pthread_join(tids[t], NULL);
      else run_range(&parts[t]); /* no thread: do it here */
      map_merge(out, parts[t].map);
      oom |= parts[t].failed;
      free(parts[t].map);
    }
    free(e);
    if (oom) return pg_error_set(err, PG_ENOMEM, "error map: out of memory");
  }
  for (int i = 0; i < PG_CMP_HIST_BUCKETS; i++)
    if (out->hist[i].max_abs_diff < 0) out->hist[i].max_abs_diff = NAN;
  return PG_OK;
}
