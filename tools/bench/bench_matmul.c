/* tools/bench/bench_matmul.c — the `matmul` reference kernel (through the kernel table,
 * as a golden step calls it) with T threads against raw OpenBLAS with T threads of its
 * own (openblas_set_num_threads(T), one cblas_sgemm / cblas_dgemm per batch element) on
 * the same shapes and buffers, measured interleaved in the same run: wall-clock best of
 * N each, GFLOP/s and the time ratio phasegate / raw, then the process CPU time of each
 * (all threads, OpenBLAS's spinning workers included) and its ratio. With T > 1 each repetition starts
 * 0.15 s after the last raw call, once OpenBLAS's spinning workers have gone to sleep.
 *
 * It also checks what the kernel promises (docs/kernels.md, "Bit-identical for any
 * thread count"): its result with every T of the run has the same bits as with T = 1
 * (exit 1 otherwise). Whether that also equals one single-threaded OpenBLAS call, and
 * whether OpenBLAS's own T-thread result equals its 1-thread one, depends on the CPU's
 * OpenBLAS kernel and is printed, not checked.
 *
 * Usage: bench_matmul [--quick] [--f64] [--threads 1,2,4] [--reps N] [--only SUBSTRING]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

void openblas_set_num_threads(int);
char *openblas_get_corename(void);

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

struct shape_case {
  const char *label;
  int nd;
  int64_t a[4], b[4];
  int trans_b;
  int reps; /* full run; --quick: 2 */
};

static void fill(struct pg_tensor *t, unsigned seed) {
  for (int64_t i = 0; i < t->numel; i++) {
    seed = seed * 1664525u + 1013904223u;
    pg_store_f64(t->dl.data, t->dtype, (size_t)i, (double)(seed >> 8) / 16777216.0 - 0.5);
  }
}

struct bench {
  const struct shape_case *c;
  enum pg_dtype dt;
  const struct pg_kernel_def *def;
  struct pg_kernel_args args;
  struct pg_tensor a, b;
  int64_t M, N, K, batch;
};

static int pg_matmul(struct bench *x, int threads, struct pg_tensor *o) {
  struct pg_error err;
  struct pg_tensor *outs[1] = {o};
  x->args.n_threads = threads;
  if (x->def->run(&x->args, outs, &err) != PG_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  return 0;
}

static void raw_matmul(const struct bench *x, int threads, struct pg_tensor *r) {
  openblas_set_num_threads(threads);
  size_t es = pg_dtype_size(x->dt);
  int64_t M = x->M, N = x->N, K = x->K;
  int tb = x->c->trans_b;
  for (int64_t i = 0; i < x->batch; i++) {
    const char *pa = (const char *)x->a.dl.data + (size_t)(i * M * K) * es;
    const char *pb = (const char *)x->b.dl.data + (size_t)(i * K * N) * es;
    char *pr = (char *)r->dl.data + (size_t)(i * M * N) * es;
    if (x->dt == PG_DTYPE_F64)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                  (int)K, 1.0, (const double *)pa, (int)K, (const double *)pb, tb ? (int)K : (int)N,
                  0.0, (double *)pr, (int)N);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                  (int)K, 1.0f, (const float *)pa, (int)K, (const float *)pb, tb ? (int)K : (int)N,
                  0.0f, (float *)pr, (int)N);
  }
}

static int run_case(const struct shape_case *c, enum pg_dtype dt, int reps, const int *threads,
                    int n_threads) {
  struct bench x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.dt = dt;
  struct pg_tensor pg1, o, raw1, r;
  struct pg_error err;
  pg_tensor_init(&x.a), pg_tensor_init(&x.b), pg_tensor_init(&pg1), pg_tensor_init(&o);
  pg_tensor_init(&raw1), pg_tensor_init(&r);
  x.def = pg_kernel_find("matmul");
  if (!x.def || pg_tensor_alloc(&x.a, dt, c->nd, c->a, &err) ||
      pg_tensor_alloc(&x.b, dt, c->nd, c->b, &err)) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  fill(&x.a, 1);
  fill(&x.b, 2);
  x.args.n_inputs = 2;
  x.args.inputs[0] = &x.a;
  x.args.inputs[1] = &x.b;
  x.args.n_attrs = pg_kernel_attrs_default(x.def, x.args.attrs);
  x.args.attrs[pg_kernel_attr_index(x.def, "trans_b")].b = c->trans_b;
  struct pg_tensor_meta in[2], om;
  for (int i = 0; i < 2; i++) {
    in[i].dtype = dt;
    in[i].ndim = c->nd;
    memcpy(in[i].shape, i ? c->b : c->a, sizeof in[i].shape);
  }
  struct pg_tensor *bufs[4] = {&pg1, &o, &raw1, &r};
  if (x.def->infer(in, 2, x.args.attrs, &om, &err) != PG_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  for (int i = 0; i < 4; i++)
    if (pg_tensor_alloc(bufs[i], dt, om.ndim, om.shape, &err) != PG_OK) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
  x.M = c->a[c->nd - 2];
  x.K = c->a[c->nd - 1];
  x.N = c->trans_b ? c->b[c->nd - 2] : c->b[c->nd - 1];
  x.batch = x.a.numel / (x.M * x.K);
  double flops = 2.0 * (double)x.batch * (double)x.M * (double)x.N * (double)x.K;
  /* the references: phasegate and OpenBLAS, one thread each */
  if (pg_matmul(&x, 1, &pg1)) return 1;
  raw_matmul(&x, 1, &raw1);
  int rc = 0;
  for (int ti = 0; ti < n_threads; ti++) {
    int T = threads[ti];
    double best_pg = 1e30, best_raw = 1e30, cpu_pg = 1e30, cpu_raw = 1e30;
    int pg_same = 1, raw_same = 1;
    for (int rep = 0; rep < reps + 1; rep++) { /* rep 0 warms up both */
      /* OpenBLAS's workers spin in sched_yield for ~2^28 cycles after a threaded call:
       * let them sleep before timing phasegate (whose own OpenBLAS pool is stopped) */
      if (T > 1) nanosleep(&(struct timespec){0, 150000000}, NULL);
      double c0 = cpu(), t0 = now();
      if (pg_matmul(&x, T, &o)) return 1;
      double t1 = now(), c1 = cpu();
      raw_matmul(&x, T, &r);
      double t2 = now(), c2 = cpu();
      pg_same &= memcmp(o.dl.data, pg1.dl.data, o.nbytes) == 0;
      raw_same &= memcmp(r.dl.data, raw1.dl.data, r.nbytes) == 0;
      if (rep > 0) {
        if (t1 - t0 < best_pg) best_pg = t1 - t0;
        if (t2 - t1 < best_raw) best_raw = t2 - t1;
        if (c1 - c0 < cpu_pg) cpu_pg = c1 - c0;
        if (c2 - c1 < cpu_raw) cpu_raw = c2 - c1;
      }
    }
    printf("%-32s %-7s T=%d  phasegate %8.3f ms %6.1f GFLOP/s  raw %8.3f ms %6.1f GFLOP/s"
           "  ratio %4.2f  | CPU ms %8.3f / %8.3f  ratio %4.2f  | bits vs T=1: %s; raw: %s\n",
           c->label, pg_dtype_name(dt), T, best_pg * 1e3, flops / best_pg * 1e-9, best_raw * 1e3,
           flops / best_raw * 1e-9, best_pg / best_raw, cpu_pg * 1e3, cpu_raw * 1e3,
           cpu_pg / cpu_raw, pg_same ? "same" : "DIFFER", raw_same ? "same" : "differ");
    fflush(stdout);
    rc |= !pg_same;
  }
  printf("%-32s %-7s phasegate T=1 vs one single-threaded OpenBLAS call per gemm: %s\n", c->label,
         pg_dtype_name(dt),
         memcmp(pg1.dl.data, raw1.dl.data, pg1.nbytes) ? "bits differ" : "same bits");
  pg_tensor_reset(&x.a), pg_tensor_reset(&x.b);
  for (int i = 0; i < 4; i++) pg_tensor_reset(bufs[i]);
  return rc;
}

int main(int argc, char **argv) {
  int quick = 0, reps = 0, threads[16] = {1, 2}, n_threads = 2;
  const char *only = NULL;
  enum pg_dtype dt = PG_DTYPE_F32;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--f64")) dt = PG_DTYPE_F64;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      n_threads = 0;
      for (char *s = argv[++i]; *s && n_threads < 16; s += *s == ',') {
        char *end;
        threads[n_threads] = (int)strtol(s, &end, 10);
        if (end == s || threads[n_threads] < 1) {
          fprintf(stderr, "--threads: a list of counts >= 1, e.g. 1,2,4\n");
          return 2;
        }
        n_threads++;
        s = end;
      }
    } else {
      fprintf(stderr, "usage: %s [--quick] [--f64] [--threads 1,2,4] [--reps N] [--only TEXT]\n",
              argv[0]);
      return 2;
    }
  }
  static const struct shape_case cases[] = {
      {"[1024,1024] x [1024,1024]", 2, {1024, 1024}, {1024, 1024}, 0, 10},
      {"[1024,1024] x [1024,2048] swiglu", 2, {1024, 1024}, {1024, 2048}, 0, 6},
      {"[1,2,512,64] x ^T attention L4", 4, {1, 2, 512, 64}, {1, 2, 512, 64}, 1, 20},
      {"[1,2,512,512] x [1,2,512,64] L4", 4, {1, 2, 512, 512}, {1, 2, 512, 64}, 0, 20},
      {"[8,512,512] x [8,512,512]", 3, {8, 512, 512}, {8, 512, 512}, 0, 10},
      {"[2,4,128,64] x [2,4,128,64]^T", 4, {2, 4, 128, 64}, {2, 4, 128, 64}, 1, 20},
      {"[2048,2048] x [2048,2048]", 2, {2048, 2048}, {2048, 2048}, 0, 3},
  };
  printf("# OpenBLAS core %s; phasegate's matmul with T threads (OpenBLAS single-threaded inside)"
         " vs raw OpenBLAS with T threads; wall-clock best of N\n",
         openblas_get_corename());
  int rc = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && !strstr(cases[i].label, only)) continue;
    rc |= run_case(&cases[i], dt, reps > 0 ? reps : quick ? 2 : cases[i].reps, threads, n_threads);
  }
  return rc;
}
