/* goldens/kernels_blas.c — `matmul`, the only file that calls OpenBLAS.
 *
 * numpy matmul semantics: batch dims broadcast, a 1-D `a` is a row vector and a 1-D
 * `b` a column vector (the added dim is removed from the result), trans_a / trans_b
 * transpose the last two dims of a 2-D-or-more operand (ignored for 1-D ones), and
 *   out = alpha * op(a) @ op(b) + beta * c      (c optional, broadcast to out).
 * One cblas_sgemm / cblas_dgemm per batch element (fp32 / fp64, multithreaded by
 * OpenBLAS); when b has no batch dims and a is not transposed, the batch folds into
 * the row dimension and a single gemm does all of it.
 */
#include <cblas.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "kernels_internal.h"

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

static void gemm(enum pg_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                 const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
                 int64_t ldc) {
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (dt == PG_DTYPE_F64)
    cblas_dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb,
                beta, c, (int)ldc);
  else
    cblas_sgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, (float)alpha, a, (int)lda, b,
                (int)ldb, (float)beta, c, (int)ldc);
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
  size_t es = pg_dtype_size(k.dt);
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
  if (fold) {
    gemm(k.dt, 0, tb, mrows, g.n, g.k, alpha, k.x[0], lda, k.x[1], ldb, beta, k.y[0], g.n);
    goto done;
  }
  int64_t idx[PG_MAX_NDIM] = {0}, oa = 0, ob = 0;
  for (int64_t bi = 0; bi < nbatch; bi++) {
    gemm(k.dt, ta, tb, g.m, g.n, g.k, alpha, (const char *)k.x[0] + (size_t)(oa * a_mat) * es,
         lda, (const char *)k.x[1] + (size_t)(ob * b_mat) * es, ldb, beta,
         (char *)k.y[0] + (size_t)(bi * mn) * es, g.n);
    for (int d = g.nbatch_dims - 1; d >= 0; d--) {
      idx[d]++;
      oa += g.a_bstride[d];
      ob += g.b_bstride[d];
      if (idx[d] < g.batch[d]) break;
      oa -= g.a_bstride[d] * idx[d];
      ob -= g.b_bstride[d] * idx[d];
      idx[d] = 0;
    }
  }
done:
  pg__kctx_end(&k);
  return rc;
}

const struct pg_kernel_def pg__kdef_matmul = {
    .name = "matmul", .min_inputs = 2, .max_inputs = 3, .n_outputs = 1, .attrs = matmul_attrs,
    .summary = "alpha * op(a) @ op(b) + beta * c, numpy matmul batching (OpenBLAS gemm)",
    .infer = infer_matmul, .run = run_matmul};
