/* goldens/kernels_blas.c — `matmul`, the only file that calls OpenBLAS.
 *
 * numpy matmul semantics: batch dims broadcast, a 1-D `a` is a row vector and a 1-D
 * `b` a column vector (the added dim is removed from the result), trans_a / trans_b
 * transpose the last two dims of a 2-D-or-more operand (ignored for 1-D ones), and
 *   out = alpha * op(a) @ op(b) + beta * c      (c optional, broadcast to out).
 * One cblas_sgemm / cblas_dgemm per batch element (fp32 / fp64); when b has no batch
 * dims and a is not transposed, the batch folds into the row dimension and a single
 * gemm does all of it.
 *
 * OpenBLAS is loaded lazily (dlopen on the first matmul), not linked: loading and
 * relocating it and libgfortran costs ~1.4 ms of start-up that every `phasegate`
 * command paid, matmul or not, and its constructor starts a worker pool that spins in
 * sched_yield for ~0.1 s (2^28 cycles) before sleeping — on a small case that is a
 * core stolen from the impl child running at the same time. So, once, after loading
 * the library ourselves we stop that pool (blas_thread_shutdown_, what OpenBLAS's
 * own fork handler calls), and per call we pick the thread count deliberately:
 * small gemms run single-threaded (OpenBLAS would thread anything above 2^18 MACs;
 * waking a pool for a 2^20-MAC gemm costs more than it saves, and leaves it spinning),
 * a batch of small gemms is split over our own threads, and only big gemms use the
 * OpenBLAS pool. The thread count is process-global state in OpenBLAS (set before
 * each gemm; a concurrent matmul may see the other's choice): it affects speed only —
 * OpenBLAS splits a gemm over M and N, never over K, so each element's sum is the same.
 * The loaded library is write-once state behind pthread_once; the thread count last
 * set is an atomic, so it is only changed when a call needs another one.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
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
  int max_threads;          /* what the library was configured with (OPENBLAS_NUM_THREADS) */
  atomic_int cur_threads;   /* the count last given to OpenBLAS */
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
  g_blas.max_threads = 1;
  if (st && gt) {
    int (*get)(void);
    memcpy(&g_blas.set_threads, &st, sizeof st);
    memcpy(&get, &gt, sizeof gt);
    g_blas.max_threads = get();
    if (g_blas.max_threads < 1) g_blas.max_threads = 1;
  }
  atomic_init(&g_blas.cur_threads, g_blas.max_threads);
  /* The pool our dlopen just started would spin for ~0.1 s: one thread by default,
   * then stop the pool. openblas_set_num_threads re-creates it whenever it is called
   * while stopped, so blas_threads() only calls it on a change (a big gemm). */
  void *sd = fresh && h ? dlsym(h, "blas_thread_shutdown_") : NULL;
  if (sd && g_blas.set_threads && g_blas.max_threads > 1) {
    int (*shutdown)(void);
    memcpy(&shutdown, &sd, sizeof sd);
    g_blas.set_threads(1);
    atomic_store(&g_blas.cur_threads, 1);
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

/* A gemm below this many multiply-adds runs on one thread (≈ 0.3 ms on one core). */
#define PG_GEMM_THREADED_MACS ((int64_t)1 << 24)

static void blas_threads(int n) {
  if (!g_blas.set_threads) return;
  if (n < 1 || n > g_blas.max_threads) n = g_blas.max_threads;
  if (atomic_exchange(&g_blas.cur_threads, n) != n) g_blas.set_threads(n);
}

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

/* The batched (non-folded) loop, batch items [begin, end). */
struct batch_ctx {
  enum pg_dtype dt;
  const struct mm_geom *g;
  int ta, tb;
  int64_t lda, ldb, a_mat, b_mat, mn;
  double alpha, beta;
  const void *a, *b;
  void *c;
};

static void batch_range(void *vctx, int64_t begin, int64_t end) {
  const struct batch_ctx *x = vctx;
  const struct mm_geom *g = x->g;
  size_t es = pg_dtype_size(x->dt);
  /* multi-index of `begin` over the batch dims, and the a/b matrix offsets */
  int64_t idx[PG_MAX_NDIM] = {0}, oa = 0, ob = 0, rem = begin;
  for (int d = g->nbatch_dims - 1; d >= 0; d--) {
    idx[d] = rem % g->batch[d];
    rem /= g->batch[d];
    oa += idx[d] * g->a_bstride[d];
    ob += idx[d] * g->b_bstride[d];
  }
  for (int64_t bi = begin; bi < end; bi++) {
    gemm(x->dt, x->ta, x->tb, g->m, g->n, g->k, x->alpha,
         (const char *)x->a + (size_t)(oa * x->a_mat) * es, x->lda,
         (const char *)x->b + (size_t)(ob * x->b_mat) * es, x->ldb, x->beta,
         (char *)x->c + (size_t)(bi * x->mn) * es, g->n);
    for (int d = g->nbatch_dims - 1; d >= 0; d--) {
      idx[d]++;
      oa += g->a_bstride[d];
      ob += g->b_bstride[d];
      if (idx[d] < g->batch[d]) break;
      oa -= g->a_bstride[d] * idx[d];
      ob -= g->b_bstride[d] * idx[d];
      idx[d] = 0;
    }
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
  int64_t a_mat = g.m * g.k, b_mat = g.k * g.n;
  /* b without batch dims: a's batch is the whole batch, contiguous rows of one gemm */
  int fold = g.nbatch_dims > 0 && !ta && !g.a1d && k.in[1].ndim <= 2;
  int64_t mrows = fold ? g.m * nbatch : g.m;
  if (mrows > INT_MAX || g.n > INT_MAX || g.k > INT_MAX || lda > INT_MAX || ldb > INT_MAX) {
    rc = pg_error_set(err, PG_ELIMIT, "matmul: a dimension exceeds the BLAS limit of %d", INT_MAX);
    goto done;
  }
  if ((rc = blas_ready(err)) != PG_OK) goto done;
  /* k.n_threads == 1: the caller asked for one thread (a small case) */
  int64_t macs = mrows * g.n * g.k;
  if (fold) {
    blas_threads(k.n_threads == 1 || macs < PG_GEMM_THREADED_MACS ? 1 : k.n_threads);
    gemm(k.dt, 0, tb, mrows, g.n, g.k, alpha, k.x[0], lda, k.x[1], ldb, beta, k.y[0], g.n);
    goto done;
  }
  struct batch_ctx bc = {k.dt, &g, ta, tb, lda, ldb, a_mat, b_mat, mn, alpha, beta,
                         k.x[0], k.x[1], k.y[0]};
  if (macs >= PG_GEMM_THREADED_MACS && k.n_threads != 1) {
    blas_threads(k.n_threads); /* big gemms: OpenBLAS's own pool */
    batch_range(&bc, 0, nbatch);
  } else {
    /* small gemms: one thread each; a batch worth threading is split over ours */
    blas_threads(1);
    int64_t total = macs * nbatch;
    int nt = k.n_threads == 1 || total < PG_GEMM_THREADED_MACS ? 1 : k.n_threads;
    int64_t grain = macs > 0 ? (PG_GEMM_THREADED_MACS / 4 + macs - 1) / macs : nbatch;
    pg__parallel_for(nbatch, grain, nt, batch_range, &bc);
  }
done:
  pg__kctx_end(&k);
  return rc;
}

PG__KERNEL_DEF(matmul, 2, 3, matmul_attrs,
               "alpha * op(a) @ op(b) + beta * c, numpy matmul batching (OpenBLAS gemm)");
