/* phasegate bench — cumulative-golden overhead: times pg_golden_cumulative() for a
 * matmul-heavy phase (swiglu_ffn phase 1: gate = x W_gate, up = x W_up, fp16 inputs)
 * against raw cblas_sgemm calls on the same shapes with fp32 operands prepared
 * beforehand, in the same run, and prints both times, GFLOP/s and the ratio.
 * The difference is what composition costs: input widening, the tensor table,
 * step parsing and evaluation, output rounding and copies.
 *
 *   bench_golden CONTRACT [T D F] [REPS]     (tools/bench/bench_golden.sh runs it)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "materialize.h"
#include "phasegate/goldens.h"
#include "phasegate/spec.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct result {
  double golden, raw, raw_fresh;
};

/* Times cumulative golden 1 against two raw sgemms; inputs stored as `dtype`. */
static int measure(const struct pg_contract *c, int64_t T, int64_t D, int64_t F, int reps,
                   const char *dtype, struct result *res) {
  struct pg_error err;
  struct pg_dim_value dv[3] = {{"T", T, {0, 0}}, {"D", D, {0, 0}}, {"F", F, {0, 0}}};
  struct pg_name_value dts[4] = {{"x", (char *)dtype, {0, 0}}, {"w_gate", (char *)dtype, {0, 0}},
                                 {"w_up", (char *)dtype, {0, 0}}, {"w_down", (char *)dtype, {0, 0}}};
  struct pg_case cs;
  memset(&cs, 0, sizeof cs);
  cs.id = "bench";
  cs.has_seed = 1;
  cs.shape.items = dv;
  cs.shape.count = 3;
  cs.dtypes = dts;
  cs.n_dtypes = 4;
  struct pg_bindings dims = {NULL, 0};
  struct pg_tensor in[8];
  for (int i = 0; i < 8; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts mo = {0, 0};
  if (c->n_primary > 8 || pg_case_bind_dims(c, &cs, &dims, &err) != PG_OK ||
      pg_case_generate_inputs(c, &cs, &dims, &mo, in, &err) != PG_OK) {
    fprintf(stderr, "bench_golden: %s\n", err.message);
    return 2;
  }
  struct pg_golden_env env = {c, &dims, NULL, 0, 32, NULL, 0};
  struct pg_tensor out[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&out[i]);

  /* the raw peer: operands already fp32, outputs preallocated */
  size_t nx = (size_t)(T * D), nw = (size_t)(D * F), no = (size_t)(T * F);
  float *x = malloc(nx * 4), *wg = malloc(nw * 4), *wu = malloc(nw * 4), *g = malloc(no * 4),
        *u = malloc(no * 4);
  if (!x || !wg || !wu || !g || !u) return 2;
  for (size_t i = 0; i < nx; i++) x[i] = (float)pg_load_f64(in[0].dl.data, in[0].dtype, i);
  for (size_t i = 0; i < nw; i++) {
    wg[i] = (float)pg_load_f64(in[1].dl.data, in[1].dtype, i);
    wu[i] = (float)pg_load_f64(in[2].dl.data, in[2].dtype, i);
  }
  res->golden = res->raw = res->raw_fresh = 1e30;
  for (int r = 0; r < reps + 1; r++) { /* first round warms both up */
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x,
                (int)D, wg, (int)F, 0.0f, g, (int)F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x,
                (int)D, wu, (int)F, 0.0f, u, (int)F);
    double t1 = now();
    int n = 0;
    if (pg_golden_cumulative(&env, 1, in, c->n_primary, out, &n, &err) != PG_OK) {
      fprintf(stderr, "bench_golden: %s\n", err.message);
      return 2;
    }
    double t2 = now();
    for (int i = 0; i < n; i++) pg_tensor_reset(&out[i]);
    /* raw again, into freshly allocated outputs, as any golden producing new tensors
     * must (first touch of new pages is part of the price) */
    double t3 = now();
    float *g2 = aligned_alloc(64, no * 4), *u2 = aligned_alloc(64, no * 4);
    if (!g2 || !u2) return 2;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x,
                (int)D, wg, (int)F, 0.0f, g2, (int)F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x,
                (int)D, wu, (int)F, 0.0f, u2, (int)F);
    free(g2), free(u2);
    double t4 = now();
    if (r == 0) continue;
    if (t1 - t0 < res->raw) res->raw = t1 - t0;
    if (t2 - t1 < res->golden) res->golden = t2 - t1;
    if (t4 - t3 < res->raw_fresh) res->raw_fresh = t4 - t3;
  }
  free(x), free(wg), free(wu), free(g), free(u);
  for (int i = 0; i < c->n_primary; i++) pg_tensor_reset(&in[i]);
  pg_bindings_reset(&dims);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_golden CONTRACT [T D F] [REPS]\n");
    return 2;
  }
  int64_t T = argc > 4 ? atoll(argv[2]) : 1024, D = argc > 4 ? atoll(argv[3]) : 1024,
          F = argc > 4 ? atoll(argv[4]) : 2048;
  int reps = argc > 5 ? atoi(argv[5]) : 5;
  struct pg_error err;
  struct pg_contract c;
  struct pg_diags diags;
  pg_contract_init(&c);
  pg_diags_init(&diags);
  if (pg_contract_load(argv[1], &c, &diags, &err) != PG_OK) {
    fprintf(stderr, "bench_golden: %s\n", err.message);
    return 2;
  }
  double flop = 2.0 * 2.0 * (double)T * (double)D * (double)F;
  printf("swiglu_ffn phase 1 (T=%lld D=%lld F=%lld, 2 matmuls, %.2f GFLOP), best of %d:\n",
         (long long)T, (long long)D, (long long)F, flop * 1e-9, reps);
  static const char *const dtypes[2] = {"float32", "float16"};
  for (int v = 0; v < 2; v++) {
    struct result r;
    if (measure(&c, T, D, F, reps, dtypes[v], &r) != 0) return 2;
    printf("  inputs %-8s pg_golden_cumulative %8.2f ms %6.1f GFLOP/s | raw sgemm x2, warm "
           "outputs %8.2f ms (ratio %.3f) | raw, fresh outputs %8.2f ms (ratio %.3f)\n",
           dtypes[v], r.golden * 1e3, flop / r.golden * 1e-9, r.raw * 1e3, r.golden / r.raw,
           r.raw_fresh * 1e3, r.golden / r.raw_fresh);
  }
  pg_contract_reset(&c);
  pg_diags_reset(&diags);
  return 0;
}
