/* tools/bench/bench_matmul.c — GFLOP/s of the `matmul` reference kernel (through the
 * kernel table, as a golden step calls it) against raw cblas_sgemm / cblas_dgemm
 * calls on the same shapes and buffers, measured interleaved in the same run; prints
 * the overhead of the kernel layer in percent. Best of N repetitions each.
 *
 * Usage: bench_matmul [--quick] [--f64]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct shape_case {
  const char *label;
  int nd;
  int64_t a[4], b[4];
  int trans_b;
};

static void fill(struct pg_tensor *t, unsigned seed) {
  for (int64_t i = 0; i < t->numel; i++) {
    seed = seed * 1664525u + 1013904223u;
    pg_store_f64(t->dl.data, t->dtype, (size_t)i, (double)(seed >> 8) / 16777216.0 - 0.5);
  }
}

static int run_case(const struct shape_case *c, enum pg_dtype dt, int reps) {
  struct pg_tensor a, b, o, r;
  struct pg_error err;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  pg_tensor_init(&o);
  pg_tensor_init(&r);
  const struct pg_kernel_def *def = pg_kernel_find("matmul");
  if (!def || pg_tensor_alloc(&a, dt, c->nd, c->a, &err) || pg_tensor_alloc(&b, dt, c->nd, c->b, &err)) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  fill(&a, 1);
  fill(&b, 2);
  struct pg_kernel_args args;
  memset(&args, 0, sizeof args);
  args.n_inputs = 2;
  args.inputs[0] = &a;
  args.inputs[1] = &b;
  args.n_attrs = pg_kernel_attrs_default(def, args.attrs);
  args.attrs[pg_kernel_attr_index(def, "trans_b")].b = c->trans_b;
  struct pg_tensor_meta in[2], om;
  for (int i = 0; i < 2; i++) {
    in[i].dtype = dt;
    in[i].ndim = c->nd;
    memcpy(in[i].shape, i ? c->b : c->a, sizeof in[i].shape);
  }
  if (def->infer(in, 2, args.attrs, &om, &err) != PG_OK ||
      pg_tensor_alloc(&o, dt, om.ndim, om.shape, &err) != PG_OK ||
      pg_tensor_alloc(&r, dt, om.ndim, om.shape, &err) != PG_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  int64_t M = c->a[c->nd - 2], K = c->a[c->nd - 1], N = c->trans_b ? c->b[c->nd - 2] : c->b[c->nd - 1];
  int64_t batch = a.numel / (M * K);
  double flops = 2.0 * (double)batch * (double)M * (double)N * (double)K;
  struct pg_tensor *outs[1] = {&o};
  double best_pg = 1e30, best_raw = 1e30;
  for (int rep = 0; rep < reps + 1; rep++) { /* rep 0 warms up both */
    double t0 = now();
    if (def->run(&args, outs, &err) != PG_OK) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    double t1 = now();
    size_t es = pg_dtype_size(dt);
    for (int64_t i = 0; i < batch; i++) {
      const char *pa = (const char *)a.dl.data + (size_t)(i * M * K) * es;
      const char *pb = (const char *)b.dl.data + (size_t)(i * K * N) * es;
      char *pr = (char *)r.dl.data + (size_t)(i * M * N) * es;
      if (dt == PG_DTYPE_F64)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, c->trans_b ? CblasTrans : CblasNoTrans, (int)M,
                    (int)N, (int)K, 1.0, (const double *)pa, (int)K, (const double *)pb,
                    c->trans_b ? (int)K : (int)N, 0.0, (double *)pr, (int)N);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, c->trans_b ? CblasTrans : CblasNoTrans, (int)M,
                    (int)N, (int)K, 1.0f, (const float *)pa, (int)K, (const float *)pb,
                    c->trans_b ? (int)K : (int)N, 0.0f, (float *)pr, (int)N);
    }
    double t2 = now();
    if (rep > 0) {
      if (t1 - t0 < best_pg) best_pg = t1 - t0;
      if (t2 - t1 < best_raw) best_raw = t2 - t1;
    }
  }
  int same = memcmp(o.dl.data, r.dl.data, o.nbytes) == 0;
  printf("%-34s %-7s  phasegate %8.2f GFLOP/s  raw %8.2f GFLOP/s  overhead %+6.2f %%  %s\n",
         c->label, pg_dtype_name(dt), flops / best_pg * 1e-9, flops / best_raw * 1e-9,
         (best_pg / best_raw - 1.0) * 100.0, same ? "bit-identical" : "RESULTS DIFFER");
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  pg_tensor_reset(&o);
  pg_tensor_reset(&r);
  return same ? 0 : 1;
}

int main(int argc, char **argv) {
  int quick = 0;
  enum pg_dtype dt = PG_DTYPE_F32;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--f64")) dt = PG_DTYPE_F64;
    else {
      fprintf(stderr, "usage: %s [--quick] [--f64]\n", argv[0]);
      return 2;
    }
  }
  static const struct shape_case cases[] = {
      {"[8,512,512] x [8,512,512]", 3, {8, 512, 512}, {8, 512, 512}, 0},
      {"[2,4,128,64] x [2,4,128,64]^T", 4, {2, 4, 128, 64}, {2, 4, 128, 64}, 1},
      {"[2048,2048] x [2048,2048]", 2, {2048, 2048}, {2048, 2048}, 0},
  };
  int rc = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int reps = quick ? 2 : (i == 2 ? 3 : 10);
    rc |= run_case(&cases[i], dt, reps);
  }
  return rc;
}
