/* goldens/kernels_blas.c — `matmul`, the only file that calls OpenBLAS.
 *
 * numpy matmul semantics: batch dims broadcast, a 1-D `a` is a row vector and a 1-D
 * `b` a column vector (the added dim is removed from the result), trans_a / trans_b
 * transpose the last two dims of a 2-D-or-more operand (ignored for 1-D ones), and
 *   out = alpha * op(a) @ op(b) + beta * c      (c optional, broadcast to out).
 * cblas_sgemm / cblas_dgemm (fp32 / fp64) per batch element; when b has no batch dims
 * and a is not transposed, the batch folds into the row dimension of a single gemm.
 *
 * Bit-identical for any thread count (docs/kernels.md): OpenBLAS itself always runs
 * single-threaded, and the work is cut into tiles (batch elements, row and column
 * blocks of one gemm) chosen from the shape alone, spread over our own threads. Each
 * output element is computed by the same single-threaded call, with the same
 * arguments, whatever the number of threads; only which thread makes the call changes.
 * OpenBLAS's own threading cannot give that: it cuts M by the thread count, and on
 * some kernels (Haswell / Zen sgemm: rows past the last whole 12-row block take
 * another path) a row's bits depend on where its range ends.
 *
 * OpenBLAS is loaded lazily (dlopen on the first matmul), not linked: loading and
 * relocating it and libgfortran costs ~1.4 ms of start-up that every `phasegate`
 * command paid, matmul or not, and its constructor starts a worker pool that spins in
 * sched_yield for ~0.1 s (2^28 cycles) before sleeping — on a small case that is a
 * core stolen from the impl child running at the same time. So, once, after loading
 * the library ourselves we set it to one thread and stop that pool
 * (blas_thread_shutdown_, what OpenBLAS's own fork handler calls); we never need it.
 * The loaded library is write-once state behind pthread_once.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels_internal.h"
#include "phasegate/goldens.h"

enum { A_TRANS_A, A_TRANS_B, A_ALPHA, A_BETA };

static const struct pg_attr_decl matmul_attrs[] = {
    {.name = "trans_a", .type = PG_ATTR_BOOL, .default_value = {.type = PG_ATTR_BOOL, .b = 0}},
    {.name = "trans_b", .type = PG_ATTR_BOOL, .default_value = {.type = PG_ATTR_BOOL, .b = 0}},
    {.name = "alpha", .type = PG_ATTR_FLOAT, .default_value = {.type = PG_ATTR_FLOAT, .f = 1.0}},
    {.name = "beta", .type = PG_ATTR_FLOAT, .default_value = {.type = PG_ATTR_FLOAT, .f = 1.0}},
    {.name = NULL}};

/* The geometry of one matmul call, derived from the metas. */
struct mm_geom {
  int ta, tb, a1d, b1d;
  int64_t m, n, k;
  int nbatch_dims;
  int64_t batch[PG_MAX_NDIM];
  int64_t a_bstride[PG_MAX_NDIM], b_bstride[PG_MAX_NDIM]; /* in matrices, 0 = broadcast */
};

static int mm_geometry(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                       struct mm_geom *g, struct pg_tensor_meta *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__check_inputs("matmul", "a, b[, c]", in, n, 2, 3, err));
  const struct pg_tensor_meta *a = &in[0], *b = &in[1];
  memset(g, 0, sizeof *g);
  g->ta = pg__attr_b(matmul_attrs, attrs, A_TRANS_A);
  g->tb = pg__attr_b(matmul_attrs, attrs, A_TRANS_B);
  if (a->ndim < 1 || b->ndim < 1)
    return pg_error_set(err, PG_ESHAPE, "matmul: %s must have rank >= 1, got a scalar",
                        a->ndim < 1 ? "a" : "b");
  g->a1d = a->ndim == 1;
  g->b1d = b->ndim == 1;
  int64_t ka, kb;
  if (g->a1d) {
    g->m = 1;
    ka = a->shape[0];
  } else {
    int64_t r = a->shape[a->ndim - 2], c = a->shape[a->ndim - 1];
    g->m = g->ta ? c : r;
    ka = g->ta ? r : c;
  }
  if (g->b1d) {
    g->n = 1;
    kb = b->shape[0];
  } else {
    int64_t r = b->shape[b->ndim - 2], c = b->shape[b->ndim - 1];
    kb = g->tb ? c : r;
    g->n = g->tb ? r : c;
  }
  if (ka != kb) {
    char sa[160], sb[160];
    return pg_error_set(err, PG_ESHAPE,
                        "matmul: inner dimensions differ: a is %s%s, b is %s with trans_b=%s "
                        "(%" PRId64 " vs %" PRId64 ")",
                        pg__shape_str(a->shape, a->ndim, sa, sizeof sa),
                        g->ta && !g->a1d ? " with trans_a=true" : "",
                        pg__shape_str(b->shape, b->ndim, sb, sizeof sb),
                        g->tb ? "true" : "false", ka, kb);
  }
  g->k = ka;
  struct pg_tensor_meta ab = {.ndim = g->a1d ? 0 : a->ndim - 2};
  struct pg_tensor_meta bb = {.ndim = g->b1d ? 0 : b->ndim - 2};
  memcpy(ab.shape, a->shape, sizeof(int64_t) * (size_t)ab.ndim);
  memcpy(bb.shape, b->shape, sizeof(int64_t) * (size_t)bb.ndim);
  struct pg_tensor_meta batch;
  struct pg_error berr;
  if (pg__broadcast("matmul", "a", &ab, "b", &bb, &batch, &berr) != PG_OK) {
    char sa[160], sb[160], xa[160], xb[160];
    return pg_error_set(err, PG_ESHAPE,
                        "matmul: batch dimensions do not broadcast: a is %s (batch %s), b is %s "
                        "(batch %s)",
                        pg__shape_str(a->shape, a->ndim, sa, sizeof sa),
                        pg__shape_str(ab.shape, ab.ndim, xa, sizeof xa),
                        pg__shape_str(b->shape, b->ndim, sb, sizeof sb),
                        pg__shape_str(bb.shape, bb.ndim, xb, sizeof xb));
  }
  g->nbatch_dims = batch.ndim;
  memcpy(g->batch, batch.shape, sizeof(int64_t) * (size_t)batch.ndim);
  pg__broadcast_strides(&ab, batch.ndim, g->a_bstride);
  pg__broadcast_strides(&bb, batch.ndim, g->b_bstride);
  out->dtype = pg__result_dtype(in, 2);
  out->ndim = batch.ndim;
  memcpy(out->shape, batch.shape, sizeof(int64_t) * (size_t)batch.ndim);
  if (!g->a1d) out->shape[out->ndim++] = g->m;
  if (!g->b1d) out->shape[out->ndim++] = g->n;
  int64_t numel;
  if (pg_shape_numel(out->ndim, out->shape, &numel, NULL) != PG_OK)
    return pg_error_set(err, PG_EOVERFLOW, "matmul: the result has too many elements");
  if (n == 3) {
    if (!pg__broadcasts_to(&in[2], out->ndim, out->shape)) {
      char sc[160], so[160];
      return pg_error_set(err, PG_ESHAPE, "matmul: c %s does not broadcast to the output shape %s",
                          pg__shape_str(in[2].shape, in[2].ndim, sc, sizeof sc),
                          pg__shape_str(out->shape, out->ndim, so, sizeof so));
    }
    if (in[2].dtype == PG_DTYPE_F64) out->dtype = PG_DTYPE_F64;
  }
  return PG_OK;
}

static int infer_matmul(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                        struct pg_tensor_meta *out, struct pg_error *err) {
  struct mm_geom g;
  return mm_geometry(in, n, attrs, &g, out, err);
}

/* ---- the lazily loaded OpenBLAS ---- */

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int,
                         int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int,
                         int, double, const double *, int, const double *, int, double, double *,
                         int);

static struct {
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  void (*set_threads)(int); /* NULL: not OpenBLAS (a plain BLAS): no thread control */
  int (*get_threads)(void);
  char error[512];          /* non-empty: loading failed */
} g_blas;
static pthread_once_t g_blas_once = PTHREAD_ONCE_INIT;

#ifndef PG_OPENBLAS_LIBDIR
#define PG_OPENBLAS_LIBDIR ""
#endif
#ifndef PG_OPENBLAS_PATH
#define PG_OPENBLAS_PATH ""
#endif

static void *sym(void *h, const char *name) {
  return h ? dlsym(h, name) : dlsym(RTLD_DEFAULT, name);
}

static void blas_load(void) {
  void *h = NULL;
  int fresh = 0;
  /* Already in the process (linked by the program or a golden plugin): use that one and
   * leave its thread pool alone. */
  if (!dlsym(RTLD_DEFAULT, "cblas_sgemm")) {
    char p1[4200];
    snprintf(p1, sizeof p1, "%s/libopenblas.so.0", PG_OPENBLAS_LIBDIR); /* "//" is fine */
    const char *cand[] = {PG_OPENBLAS_LIBDIR[0] ? p1 : NULL, "libopenblas.so.0",
                          PG_OPENBLAS_PATH[0] ? PG_OPENBLAS_PATH : NULL, "libopenblas.so"};
    for (size_t i = 0; i < sizeof cand / sizeof *cand && !h; i++) {
      if (!cand[i]) continue;
      /* lazy: its ~2000 PLT slots are bound on first call, not all at load (~0.3 ms) */
      fresh = dlopen(cand[i], RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD) == NULL;
      h = dlopen(cand[i], RTLD_LAZY | RTLD_LOCAL);
      if (!h && i == 1) {
        const char *e = dlerror();
        snprintf(g_blas.error, sizeof g_blas.error, "%s", e ? e : "dlopen failed");
      }
    }
    if (!h) return; /* g_blas.error says why */
  }
  void *s = sym(h, "cblas_sgemm"), *d = sym(h, "cblas_dgemm");
  void *st = sym(h, "openblas_set_num_threads"), *gt = sym(h, "openblas_get_num_threads");
  if (!s || !d) {
    snprintf(g_blas.error, sizeof g_blas.error, "the library has no cblas_sgemm/cblas_dgemm");
    return;
  }
  /* object pointer -> function pointer without a cast warning */
  memcpy(&g_blas.sgemm, &s, sizeof s);
  memcpy(&g_blas.dgemm, &d, sizeof d);
  if (st && gt) {
    memcpy(&g_blas.set_threads, &st, sizeof st);
    memcpy(&g_blas.get_threads, &gt, sizeof gt);
  }
  /* The pool our dlopen just started would spin for ~0.1 s and is never used (every
   * gemm of ours is single-threaded): one thread, then stop the pool.
   * openblas_set_num_threads re-creates a stopped pool whenever it is called, so
   * blas_one_thread() only calls it when the count is no longer 1. */
  void *sd = fresh && h ? dlsym(h, "blas_thread_shutdown_") : NULL;
  if (sd && g_blas.set_threads && g_blas.get_threads() > 1) {
    int (*shutdown)(void);
    memcpy(&shutdown, &sd, sizeof sd);
    g_blas.set_threads(1);
    shutdown();
  }
  g_blas.error[0] = '\0';
}

static int blas_ready(struct pg_error *err) {
  pthread_once(&g_blas_once, blas_load);
  if (!g_blas.sgemm)
    return pg_error_set(err, PG_ENOSYM, "matmul: cannot load OpenBLAS (libopenblas.so.0): %s",
                        g_blas.error[0] ? g_blas.error : "not found");
  return PG_OK;
}

int pg_goldens_preload_blas(struct pg_error *err) { return blas_ready(err); }

static void gemm(enum pg_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                 const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
                 int64_t ldc) {
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (dt == PG_DTYPE_F64)
    g_blas.dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb,
                 beta, c, (int)ldc);
  else
    g_blas.sgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, (float)alpha, a, (int)lda, b,
                 (int)ldb, (float)beta, c, (int)ldc);
}

/* ---- one thread inside OpenBLAS, tiles over ours ---- */

/* OpenBLAS runs every gemm of ours single-threaded: its own threading cuts M into
 * per-thread ranges, and on some kernels (Haswell / Zen sgemm) the bits of a row depend
 * on where the range it falls in ends, so a threaded gemm's bits would depend on the
 * thread count. The count is process-global in OpenBLAS and other code in the process
 * (a program or golden plugin that links OpenBLAS) may change it, so it is read before
 * every matmul and set back to 1 only when it differs (setting it re-creates a stopped
 * pool, see blas_load). */
static void blas_one_thread(void) {
  if (g_blas.set_threads && g_blas.get_threads && g_blas.get_threads() != 1)
    g_blas.set_threads(1);
}

/* How a gemm's output is cut into tiles, each one single-threaded gemm call: rows
 * [ti*rows, +rows) x columns [tj*cols, +cols), the last of each shorter. Decided from
 * the shape alone (m, n, k and the batch count), never from the thread count, so every
 * element is computed by the same call with the same arguments whatever the number of
 * threads that share the tiles: the bits depend on the shape only. */
struct mm_tiles {
  int64_t rows, cols; /* a tile's size */
  int64_t mb, nb;     /* tiles along m and n */
};

/* A gemm below this many multiply-adds is one tile (≈ 0.5 ms on one core): any cut
 * costs ≈ 4–15 % more work (repacking), more than threads save on a gemm this small. */
#define PG_GEMM_TILE_MACS ((int64_t)1 << 26)
/* Tiles are whole multiples of the micro-kernels' blocks: rows of 16, columns of 64. */
#define PG_TILE_ROW_QUANTUM 16
#define PG_TILE_COL_QUANTUM 64
#define PG_TILE_MAX_SPLIT 32 /* at most 32 x 32 tiles per gemm */
/* The cost model, in multiply-adds: each tile packs its rows of op(a) (~60 per element)
 * and its columns of op(b) (~40 per element) again, and a call costs ~2^16. Fitted to
 * one-core times of a 1024^3 sgemm cut 2x1, 4x1, 8x1, 2x2, 4x2, 2x4 and 4x4 ways
 * (SkylakeX kernels, the 2-core VM): for 4 x 2 it predicts +14.5 %, bench_matmul
 * measured +13-16 % CPU. The Haswell kernel repacks relatively cheaper (+3-8 %). */
#define PG_TILE_PACK_A 60.0
#define PG_TILE_PACK_B 40.0
#define PG_TILE_CALL 65536.0

static void tile_dim(int64_t len, int64_t parts, int64_t quantum, int64_t *size, int64_t *count) {
  int64_t s = (len + parts - 1) / parts;
  s = (s + quantum - 1) / quantum * quantum;
  if (s > len) s = len;
  *size = s;
  *count = (len + s - 1) / s;
}

/* The tiling with the least modelled time summed over 1, 2, 3, 4 and 8 threads (each
 * count weighted by itself: the sum of time x threads, i.e. of time / ideal time). A
 * tile's time is its multiply-adds plus repacking plus a call; T threads take
 * ceil(tiles / T) tiles' time. Ties keep the first found: fewer row blocks, then fewer
 * column blocks. */
static void mm_tiling(int64_t m, int64_t n, int64_t k, int64_t nbatch, struct mm_tiles *t) {
  *t = (struct mm_tiles){m, n, 1, 1};
  if (m * n * k < PG_GEMM_TILE_MACS) return;
  static const int threads[] = {1, 2, 3, 4, 8};
  double best = -1;
  for (int64_t pm = 1; pm <= PG_TILE_MAX_SPLIT && pm <= m; pm++) {
    int64_t rows, mb;
    tile_dim(m, pm, PG_TILE_ROW_QUANTUM, &rows, &mb);
    if (mb != pm) continue; /* the same tiles as a smaller pm */
    for (int64_t pn = 1; pn <= PG_TILE_MAX_SPLIT && pn <= n; pn++) {
      int64_t cols, nb;
      tile_dim(n, pn, PG_TILE_COL_QUANTUM, &cols, &nb);
      if (nb != pn) continue;
      double tile = (double)rows * (double)cols * (double)k +
                    (double)k * (PG_TILE_PACK_A * (double)rows + PG_TILE_PACK_B * (double)cols) +
                    PG_TILE_CALL;
      double items = (double)nbatch * (double)(mb * nb), cost = 0;
      for (size_t i = 0; i < sizeof threads / sizeof *threads; i++)
        cost += ceil(items / threads[i]) * threads[i] * tile;
      if (best < 0 || cost < best) {
        best = cost;
        *t = (struct mm_tiles){rows, cols, mb, nb};
      }
    }
  }
}

void pg__matmul_tiles(int64_t m, int64_t n, int64_t k, int64_t nbatch, int64_t tiles[4]) {
  struct mm_tiles t;
  mm_tiling(m, n, k, nbatch, &t);
  tiles[0] = t.rows, tiles[1] = t.cols, tiles[2] = t.mb, tiles[3] = t.nb;
}

/* One matmul's tiles: item i is batch element i / (mb*nb), then row tile, then column
 * tile. */
struct tile_ctx {
  enum pg_dtype dt;
  const struct mm_geom *g;
  struct mm_tiles t;
  int ta, tb;
  int64_t m, lda, ldb, a_mat, b_mat, c_mat; /* m: rows of one gemm (batch folded in) */
  double alpha, beta;
  const void *a, *b;
  void *c;
};

static void tile_range(void *vctx, int64_t begin, int64_t end) {
  const struct tile_ctx *x = vctx;
  const struct mm_geom *g = x->g;
  size_t es = pg_dtype_size(x->dt);
  int64_t per = x->t.mb * x->t.nb;
  for (int64_t it = begin; it < end; it++) {
    int64_t bi = it / per, ti = it % per / x->t.nb, tj = it % x->t.nb;
    /* the batch element's a/b matrices (broadcast dims stride 0) */
    int64_t oa = 0, ob = 0, rem = bi;
    for (int d = g->nbatch_dims - 1; d >= 0; d--) {
      int64_t idx = rem % g->batch[d];
      rem /= g->batch[d];
      oa += idx * g->a_bstride[d];
      ob += idx * g->b_bstride[d];
    }
    int64_t r0 = ti * x->t.rows, c0 = tj * x->t.cols;
    int64_t rows = x->m - r0 < x->t.rows ? x->m - r0 : x->t.rows;
    int64_t cols = g->n - c0 < x->t.cols ? g->n - c0 : x->t.cols;
    /* op(a) rows r0..: a's rows, or its columns when transposed; op(b) columns c0..:
     * b's columns, or its rows when transposed */
    int64_t a_off = oa * x->a_mat + (x->ta ? r0 : r0 * x->lda);
    int64_t b_off = ob * x->b_mat + (x->tb ? c0 * x->ldb : c0);
    int64_t c_off = bi * x->c_mat + r0 * g->n + c0;
    gemm(x->dt, x->ta, x->tb, rows, cols, g->k, x->alpha, (const char *)x->a + (size_t)a_off * es,
         x->lda, (const char *)x->b + (size_t)b_off * es, x->ldb, x->beta,
         (char *)x->c + (size_t)c_off * es, g->n);
  }
}

static int run_matmul(const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
                      struct pg_error *err) {
  struct pg__kctx k;
  PG_RETURN_IF_ERROR(
      pg__kctx_begin(&k, "matmul", matmul_attrs, infer_matmul, args, outputs, 1, 0, err));
  struct mm_geom g;
  struct pg_tensor_meta om;
  int rc = mm_geometry(k.in, k.n_in, k.attrs, &g, &om, err);
  if (rc != PG_OK) goto done;
  double alpha = pg__attr_f(matmul_attrs, k.attrs, A_ALPHA);
  double beta = k.n_in == 3 ? pg__attr_f(matmul_attrs, k.attrs, A_BETA) : 0.0;
  int64_t numel = k.out_numel[0];
  if (numel == 0) goto done;
  /* c first: gemm then accumulates alpha*a@b onto beta*c in place */
  if (k.n_in == 3) pg__broadcast_copy(k.dt, k.x[2], &k.in[2], k.y[0], &k.out[0]);
  int64_t mn = g.m * g.n, nbatch = numel / mn;
  if (g.k == 0) { /* empty inner product: out = beta*c (or 0); no gemm with k = 0 */
    for (int64_t i = 0; i < numel; i++) {
      double v = k.n_in == 3 ? beta * pg_load_f64(k.y[0], k.dt, (size_t)i) : 0.0;
      pg_store_f64(k.y[0], k.dt, (size_t)i, v);
    }
    goto done;
  }
  /* stored layouts: a [.., ra, ca], b [.., rb, cb] (1-D: row / column vector) */
  int ta = g.a1d ? 0 : g.ta, tb = g.b1d ? 0 : g.tb;
  int64_t lda = g.a1d ? g.k : (ta ? g.m : g.k);
  int64_t ldb = g.b1d ? 1 : (tb ? g.k : g.n);
  /* b without batch dims: a's batch is the whole batch, contiguous rows of one gemm */
  int fold = g.nbatch_dims > 0 && !ta && !g.a1d && k.in[1].ndim <= 2;
  int64_t mrows = fold ? g.m * nbatch : g.m, ngemm = fold ? 1 : nbatch;
  if (mrows > INT_MAX || g.n > INT_MAX || g.k > INT_MAX || lda > INT_MAX || ldb > INT_MAX) {
    rc = pg_error_set(err, PG_ELIMIT, "matmul: a dimension exceeds the BLAS limit of %d", INT_MAX);
    goto done;
  }
  if ((rc = blas_ready(err)) != PG_OK) goto done;
  blas_one_thread();
  struct tile_ctx tc = {.dt = k.dt, .g = &g, .ta = ta, .tb = tb, .m = mrows, .lda = lda,
                        .ldb = ldb, .a_mat = g.m * g.k, .b_mat = g.k * g.n, .c_mat = mn,
                        .alpha = alpha, .beta = beta, .a = k.x[0], .b = k.x[1], .c = k.y[0]};
  struct mm_geom one = {.m = mrows, .n = g.n, .k = g.k}; /* folded: one gemm, no batch */
  if (fold) tc.g = &one;
  mm_tiling(mrows, g.n, g.k, ngemm, &tc.t);
  /* which thread computes a tile changes nothing, so only the speed depends on this */
  int64_t macs = mrows * g.n * g.k, items = ngemm * tc.t.mb * tc.t.nb;
  int64_t item_macs = macs / (tc.t.mb * tc.t.nb);
  int nt = k.n_threads == 1 || macs * ngemm < PG_GEMM_TILE_MACS ? 1 : k.n_threads;
  int64_t grain = item_macs >= PG_GEMM_TILE_MACS / 4 ? 1
                                                     : (PG_GEMM_TILE_MACS / 4 + item_macs - 1) / item_macs;
  pg__parallel_for(items, grain, nt, tile_range, &tc);
done:
  pg__kctx_end(&k);
  return rc;
}

PG__KERNEL_DEF(matmul, 2, 3, matmul_attrs,
               "alpha * op(a) @ op(b) + beta * c, numpy matmul batching (OpenBLAS gemm)");
