/* Unit tests for goldens/kernels_blas.c: matmul gives the same bits for every thread
 * count phasegate uses (1, 2, 3, 4, 8 and the default), on any CPU. phasegate is only
 * ever compared with itself, never with a value that depends on the CPU's OpenBLAS
 * kernel, so the tests hold on AMD, Intel and ARM alike. Also: how matmul tiles a
 * gemm depends on the shape only, the preload is idempotent, and a probe of OpenBLAS
 * itself (row blocks of 1..M rows, its own threads) prints what the tiling protects
 * against on this CPU, asserting only the one property phasegate relies on: a
 * single-threaded call gives the same bits whichever thread makes it, alongside
 * others.
 *
 * CTest runs this file four times: as is, with OPENBLAS_CORETYPE=Haswell (x86: the
 * kernel of the AMD EPYC machines, where OpenBLAS's threaded sgemm changes bits),
 * and with OPENBLAS_NUM_THREADS=1 and =4. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"
#include "pg_test.h"
#include "phasegate/goldens.h"
#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

static void fill(struct pg_tensor *t, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < t->numel; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    pg_store_f64(t->dl.data, t->dtype, (size_t)i, (double)(s >> 40) / (double)(1ull << 24) - 0.5);
  }
}

/* ---------------------------------------------------------------- phasegate vs itself */

struct mm_case {
  const char *what;
  enum pg_dtype dt;
  int nda, ndb, ndc; /* ndc 0: no c */
  int64_t a[4], b[4], c[4];
  int ta, tb;
  double alpha, beta;
  /* the gemm as matmul sees it (batch folded into m when it folds), and the fewest
   * tiles per gemm it must get: the case exercises the tiling it is meant to */
  int64_t m, n, k, ngemm, min_tiles;
};

static const struct mm_case CASES[] = {
    {"512x256 @ 256x256, was on OpenBLAS's pool", PG_DTYPE_F32, 2, 2, 0,
     {512, 256}, {256, 256}, {0}, 0, 0, 1, 0, 512, 256, 256, 1, 1},
    {"1024x1024 @ 1024x1024", PG_DTYPE_F32, 2, 2, 0,
     {1024, 1024}, {1024, 1024}, {0}, 0, 0, 1, 0, 1024, 1024, 1024, 1, 4},
    {"777x301 @ 301x1023, odd sizes", PG_DTYPE_F32, 2, 2, 0,
     {777, 301}, {301, 1023}, {0}, 0, 0, 1, 0, 777, 1023, 301, 1, 2},
    {"[2,512,64] @ [2,512,64]^T, attention L4 scores", PG_DTYPE_F32, 3, 3, 0,
     {2, 512, 64}, {2, 512, 64}, {0}, 0, 1, 0.125, 0, 512, 512, 64, 2, 1},
    {"[2,512,512] @ [2,512,64], attention L4 pv", PG_DTYPE_F32, 3, 3, 0,
     {2, 512, 512}, {2, 512, 64}, {0}, 0, 0, 1, 0, 512, 64, 512, 2, 1},
    {"[4,600,256] @ [256,256], batch folded into rows", PG_DTYPE_F32, 3, 2, 0,
     {4, 600, 256}, {256, 256}, {0}, 0, 0, 1, 0, 2400, 256, 256, 1, 2},
    {"[256,700]^T @ [256,500], trans_a", PG_DTYPE_F32, 2, 2, 0,
     {256, 700}, {256, 500}, {0}, 1, 0, 1, 0, 700, 500, 256, 1, 2},
    {"[64,512] @ [512,4096], column tiles", PG_DTYPE_F32, 2, 2, 0,
     {64, 512}, {512, 4096}, {0}, 0, 0, 1, 0, 64, 4096, 512, 1, 2},
    {"[1000] @ [1000,20000], 1-D a", PG_DTYPE_F32, 1, 2, 0,
     {1000}, {1000, 20000}, {0}, 0, 0, 1, 0, 1, 20000, 1000, 1, 1},
    {"[3,200,160] @ [3,160,200], small gemms", PG_DTYPE_F32, 3, 3, 0,
     {3, 200, 160}, {3, 160, 200}, {0}, 0, 0, 1, 0, 200, 200, 160, 3, 1},
    {"[600,400] @ [400,500] * 0.5 + 2 * c[500], fp64", PG_DTYPE_F64, 2, 2, 1,
     {600, 400}, {400, 500}, {500}, 0, 0, 0.5, 2.0, 600, 500, 400, 1, 2},
    {"[2,1,384,200] @ [3,200,320], broadcast batch, fp64", PG_DTYPE_F64, 4, 3, 0,
     {2, 1, 384, 200}, {3, 200, 320}, {0}, 0, 0, 1, 0, 384, 320, 200, 6, 1},
};

static struct pg_tensor *run_case(const struct mm_case *c, struct pg_tensor *in, int n_threads) {
  const struct pg_kernel_def *def = pg_kernel_find("matmul");
  struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS];
  int n_attrs = pg_kernel_attrs_default(def, attrs);
  attrs[pg_kernel_attr_index(def, "trans_a")].b = c->ta;
  attrs[pg_kernel_attr_index(def, "trans_b")].b = c->tb;
  attrs[pg_kernel_attr_index(def, "alpha")].f = c->alpha;
  attrs[pg_kernel_attr_index(def, "beta")].f = c->beta;
  const struct pg_tensor *ins[3] = {&in[0], &in[1], &in[2]};
  struct pg_tensor *out = malloc(sizeof *out);
  PG_CHECK(out != NULL);
  pg_tensor_init(out);
  struct pg_error err;
  int rc = pg_kernel_invoke(def, ins, c->ndc ? 3 : 2, attrs, n_attrs, n_threads, out, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s: matmul: %s", c->what, err.message);
  return out;
}

static void free_out(struct pg_tensor *t) {
  pg_tensor_reset(t);
  free(t);
}

PG_TEST(same_bits_for_every_thread_count) {
  static const int threads[] = {2, 3, 4, 8, 0, 8};
  for (size_t ci = 0; ci < sizeof CASES / sizeof *CASES; ci++) {
    const struct mm_case *c = &CASES[ci];
    int64_t t[4];
    pg__matmul_tiles(c->m, c->n, c->k, c->ngemm, t);
    printf("# %s: %lld gemm(s) of %lldx%lldx%lld, tiles %lldx%lld (%lld x %lld each)\n", c->what,
           (long long)c->ngemm, (long long)c->m, (long long)c->n, (long long)c->k,
           (long long)t[0], (long long)t[1], (long long)t[2], (long long)t[3]);
    fflush(stdout);
    PG_CHECK_MSG(t[2] * t[3] >= c->min_tiles, "%s: %lld tiles, the case wants >= %lld", c->what,
                 (long long)(t[2] * t[3]), (long long)c->min_tiles);
    struct pg_tensor in[3];
    const int64_t *shapes[3] = {c->a, c->b, c->c};
    int nds[3] = {c->nda, c->ndb, c->ndc};
    for (int i = 0; i < 3; i++) {
      pg_tensor_init(&in[i]);
      if (i < 2 || c->ndc) {
        PG_CHECK_OK(pg_tensor_alloc(&in[i], c->dt, nds[i], shapes[i], NULL));
        fill(&in[i], 11 + (uint64_t)i);
      }
    }
    struct pg_tensor *one = run_case(c, in, 1);
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
      struct pg_tensor *o = run_case(c, in, threads[ti]);
      PG_CHECK_EQ_INT(one->nbytes, o->nbytes);
      size_t i = 0, n = one->nbytes / pg_dtype_size(c->dt);
      while (i < n && !memcmp((char *)one->dl.data + i * pg_dtype_size(c->dt),
                              (char *)o->dl.data + i * pg_dtype_size(c->dt), pg_dtype_size(c->dt)))
        i++;
      PG_CHECK_MSG(i == n, "%s: %d thread(s) differ from 1 thread first at element %zu", c->what,
                   threads[ti], i);
      free_out(o);
    }
    free_out(one);
    for (int i = 0; i < 3; i++) pg_tensor_reset(&in[i]);
  }
}

/* The tiling is a function of (m, n, k, batch) with the documented grid: whole
 * 16-row and 64-column blocks but the last, covering the gemm exactly, one tile for
 * a small gemm. (Thread counts cannot enter: the function has none to see.) */
PG_TEST(tiles_follow_the_grid) {
  static const int64_t shapes[][4] = {
      {1, 1, 1, 1},       {100, 100, 100, 1}, {512, 512, 256, 1}, {1024, 1024, 1024, 1},
      {4096, 4096, 4096, 1}, {64, 32768, 1024, 1}, {100000, 64, 64, 1}, {8192, 8192, 8192, 1},
      {300, 300, 300, 64}, {777, 1023, 301, 3}, {1, 80000, 1000, 1}, {80000, 1, 1000, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2], t[4], u[4];
    pg__matmul_tiles(m, n, k, shapes[i][3], t);
    pg__matmul_tiles(m, n, k, shapes[i][3], u);
    PG_CHECK(!memcmp(t, u, sizeof t));
    PG_CHECK(t[0] >= 1 && t[1] >= 1 && t[2] >= 1 && t[3] >= 1);
    PG_CHECK_MSG(t[2] * t[0] >= m && (t[2] - 1) * t[0] < m, "rows %lld x %lld for m %lld",
                 (long long)t[2], (long long)t[0], (long long)m);
    PG_CHECK_MSG(t[3] * t[1] >= n && (t[3] - 1) * t[1] < n, "cols %lld x %lld for n %lld",
                 (long long)t[3], (long long)t[1], (long long)n);
    PG_CHECK(t[2] == 1 || t[0] % 16 == 0);
    PG_CHECK(t[3] == 1 || t[1] % 64 == 0);
    if (m * n * k < ((int64_t)1 << 26)) PG_CHECK(t[2] == 1 && t[3] == 1);
    printf("# %lldx%lldx%lld x%lld: %lld x %lld tiles of %lldx%lld\n", (long long)m, (long long)n,
           (long long)k, (long long)shapes[i][3], (long long)t[2], (long long)t[3],
           (long long)t[0], (long long)t[1]);
  }
  fflush(stdout);
}

/* Small after big: a big matmul leaves nothing behind that changes a small one. */
PG_TEST(small_after_big_same_bits) {
  const struct mm_case big = CASES[1];
  const struct mm_case small = {"[4,33,17] @ [4,17,29]", PG_DTYPE_F32, 3, 3, 0,
                                {4, 33, 17}, {4, 17, 29}, {0}, 0, 0, 1, 0, 33, 29, 17, 4, 1};
  struct pg_tensor in[3], bin[3];
  for (int i = 0; i < 3; i++) pg_tensor_init(&in[i]), pg_tensor_init(&bin[i]);
  PG_CHECK_OK(pg_tensor_alloc(&in[0], PG_DTYPE_F32, 3, small.a, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&in[1], PG_DTYPE_F32, 3, small.b, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&bin[0], PG_DTYPE_F32, 2, big.a, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&bin[1], PG_DTYPE_F32, 2, big.b, NULL));
  fill(&in[0], 1), fill(&in[1], 2), fill(&bin[0], 3), fill(&bin[1], 4);
  struct pg_tensor *before = run_case(&small, in, 1);
  free_out(run_case(&big, bin, 0));
  struct pg_tensor *after1 = run_case(&small, in, 1), *after0 = run_case(&small, in, 0);
  PG_CHECK(!memcmp(before->dl.data, after1->dl.data, before->nbytes));
  PG_CHECK(!memcmp(before->dl.data, after0->dl.data, before->nbytes));
  free_out(before), free_out(after1), free_out(after0);
  for (int i = 0; i < 3; i++) pg_tensor_reset(&in[i]), pg_tensor_reset(&bin[i]);
}

PG_TEST(preload_is_idempotent) {
  struct pg_error err;
  PG_CHECK_OK(pg_goldens_preload_blas(&err));
  PG_CHECK_OK(pg_goldens_preload_blas(&err));
}

/* ---------------------------------------------------------------- OpenBLAS itself */

/* cblas with plain ints for the enums (RowMajor 101, NoTrans 111, Trans 112): the
 * library phasegate loaded, found by its soname, without linking it here. */
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                         const double *, int, double, double *, int);
static struct {
  sgemm_fn s;
  dgemm_fn d;
  void (*set_threads)(int);
  char *(*corename)(void);
} B;

struct probe {
  int dbl, tb, m, n, k;
  const void *a, *b;
};

/* Blocks of `rows` rows, block i computed by thread i % n_threads (1 = the caller). */
struct block_job {
  const struct probe *p;
  int rows, n_threads, self;
  void *c;
};

static void *blocks(void *v) {
  const struct block_job *j = v;
  const struct probe *p = j->p;
  int ldb = p->tb ? p->k : p->n, nb = (p->m + j->rows - 1) / j->rows;
  for (int bi = j->self; bi < nb; bi += j->n_threads) {
    int r0 = bi * j->rows, r = p->m - r0 < j->rows ? p->m - r0 : j->rows;
    if (p->dbl)
      B.d(101, 111, p->tb ? 112 : 111, r, p->n, p->k, 1.0, (const double *)p->a + (size_t)r0 * p->k,
          p->k, p->b, ldb, 0.0, (double *)j->c + (size_t)r0 * p->n, p->n);
    else
      B.s(101, 111, p->tb ? 112 : 111, r, p->n, p->k, 1.0f, (const float *)p->a + (size_t)r0 * p->k,
          p->k, p->b, ldb, 0.0f, (float *)j->c + (size_t)r0 * p->n, p->n);
  }
  return NULL;
}

static void run_blocks(const struct probe *p, int rows, int n_threads, void *c) {
  pthread_t tid[8];
  struct block_job jobs[8];
  for (int t = 0; t < n_threads; t++) jobs[t] = (struct block_job){p, rows, n_threads, t, c};
  for (int t = 1; t < n_threads; t++) PG_CHECK(pthread_create(&tid[t], NULL, blocks, &jobs[t]) == 0);
  blocks(&jobs[0]);
  for (int t = 1; t < n_threads; t++) pthread_join(tid[t], NULL);
}

/* For every block size 1..M: the blocked result is the same with 1..8 threads of ours
 * (asserted: the tiling relies on it), and equal or not to one call (printed). Then
 * OpenBLAS's own threads, 2..8, against one single-threaded call (printed). */
static void probe_shape(int dbl, int tb, int m, int n, int k) {
  size_t es = dbl ? 8 : 4, nc = (size_t)m * n;
  struct pg_tensor a, b;
  pg_tensor_init(&a), pg_tensor_init(&b);
  enum pg_dtype dt = dbl ? PG_DTYPE_F64 : PG_DTYPE_F32;
  int64_t sa[2] = {m, k}, sb[2] = {tb ? n : k, tb ? k : n};
  PG_CHECK_OK(pg_tensor_alloc(&a, dt, 2, sa, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&b, dt, 2, sb, NULL));
  fill(&a, 5), fill(&b, 6);
  struct probe p = {dbl, tb, m, n, k, a.dl.data, b.dl.data};
  char *one = calloc(nc, es), *c1 = calloc(nc, es), *ct = calloc(nc, es);
  PG_CHECK(one && c1 && ct);
  B.set_threads(1);
  run_blocks(&p, m, 1, one);
  int differ_one = 0, first = 0;
  for (int rows = 1; rows <= m; rows++) {
    memset(c1, 0, nc * es);
    run_blocks(&p, rows, 1, c1);
    if (memcmp(c1, one, nc * es) && !differ_one++) first = rows;
    for (int t = 2; t <= 8; t++) {
      memset(ct, 0, nc * es);
      run_blocks(&p, rows, t, ct);
      PG_CHECK_MSG(!memcmp(c1, ct, nc * es),
                   "%s %dx%dx%d: blocks of %d rows on %d threads differ from 1 thread",
                   dbl ? "dgemm" : "sgemm", m, n, k, rows, t);
    }
  }
  char threaded[64] = "";
  for (int t = 2; t <= 8; t++) {
    B.set_threads(t);
    memset(ct, 0, nc * es);
    run_blocks(&p, m, 1, ct); /* one call, OpenBLAS's t threads */
    if (memcmp(ct, one, nc * es))
      snprintf(threaded + strlen(threaded), sizeof threaded - strlen(threaded), " %d", t);
  }
  B.set_threads(1);
  printf("# OpenBLAS %s %s %dx%dx%d%s: row blocks of 1..%d rows: %d sizes differ from one call",
         B.corename ? B.corename() : "?", dbl ? "dgemm" : "sgemm", m, n, k, tb ? " (b^T)" : "", m,
         differ_one);
  if (differ_one) printf(" (first: %d)", first);
  printf("; its own threads that differ from one thread:%s\n", threaded[0] ? threaded : " none");
  fflush(stdout);
  free(one), free(c1), free(ct);
  pg_tensor_reset(&a), pg_tensor_reset(&b);
}

PG_TEST(openblas_row_blocks_probe) {
  struct pg_error err;
  PG_CHECK_OK(pg_goldens_preload_blas(&err));
  void *h = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) h = dlopen("libopenblas.so", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) PG_SKIP("the BLAS phasegate loaded is not libopenblas.so.0");
  void *s = dlsym(h, "cblas_sgemm"), *d = dlsym(h, "cblas_dgemm");
  void *st = dlsym(h, "openblas_set_num_threads"), *cn = dlsym(h, "openblas_get_corename");
  if (!s || !d || !st) PG_SKIP("no cblas_sgemm / openblas_set_num_threads");
  memcpy(&B.s, &s, sizeof s), memcpy(&B.d, &d, sizeof d), memcpy(&B.set_threads, &st, sizeof st);
  if (cn) memcpy(&B.corename, &cn, sizeof cn);
  probe_shape(0, 0, 150, 130, 100);
  probe_shape(0, 1, 97, 150, 120);
  probe_shape(1, 0, 120, 100, 110);
  dlclose(h);
}
