/* phasegate bench — cumulative-golden overhead: times pg_golden_cumulative() for a
 * matmul-heavy phase (swiglu_ffn phase 1: gate = x W_gate, up = x W_up, fp16 inputs)
 * against raw cblas_sgemm calls on the same shapes in the same run: into warm
 * preallocated outputs with fp32 operands prepared beforehand, into fresh outputs,
 * and with its own widening of the stored inputs; prints times, GFLOP/s, ratios.
 * The difference is what composition costs: input widening, the tensor table,
 * step parsing and evaluation, output rounding and copies. Times are process CPU
 * time with one thread on both sides (the script sets OPENBLAS_NUM_THREADS=1), so the
 * ratio holds on a busy machine; GFLOP/s are per core.
 *
 *   bench_golden CONTRACT [T D F] [REPS]     (tools/bench/bench_golden.sh runs it)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run.h"
#include "tensors/tensors.h"
#include "phasegate/goldens.h"
#include "opdir/opdir.h"

/* Process CPU time: with one BLAS thread and one golden thread it measures the work
 * done, not how much of a shared, loaded machine this process happened to get. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct result {
  double golden, raw, raw_fresh, raw_widen;
};

/* A fresh fp32 copy of a tensor (the straightforward per-element conversion). */
static float *widen_copy(const struct pg_tensor *t) {
  float *p = malloc((size_t)t->numel * 4);
  if (!p) return NULL;
  for (int64_t i = 0; i < t->numel; i++) p[i] = (float)pg_load_f64(t->dl.data, t->dtype, (size_t)i);
  return p;
}

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
  struct pg_golden_plan *plan = NULL;
  if (pg_golden_plan_build(&c->graph, &plan, &err) != PG_OK) {
    fprintf(stderr, "bench_golden: %s\n", err.message);
    return 2;
  }
  struct pg_golden_env env = {plan, &dims, NULL, 0, 32, NULL, 1};
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
  res->golden = res->raw = res->raw_fresh = res->raw_widen = 1e30;
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
    /* raw with its own widening of the stored inputs into fresh buffers: what a
     * hand-written fp32-BLAS golden for fp16 inputs does */
    float *x3 = widen_copy(&in[0]), *wg3 = widen_copy(&in[1]), *wu3 = widen_copy(&in[2]);
    float *g3 = malloc(no * 4), *u3 = malloc(no * 4);
    if (!x3 || !wg3 || !wu3 || !g3 || !u3) return 2;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x3,
                (int)D, wg3, (int)F, 0.0f, g3, (int)F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)F, (int)D, 1.0f, x3,
                (int)D, wu3, (int)F, 0.0f, u3, (int)F);
    free(x3), free(wg3), free(wu3), free(g3), free(u3);
    double t5 = now();
    if (r == 0) continue;
    if (t5 - t4 < res->raw_widen) res->raw_widen = t5 - t4;
    if (t1 - t0 < res->raw) res->raw = t1 - t0;
    if (t2 - t1 < res->golden) res->golden = t2 - t1;
    if (t4 - t3 < res->raw_fresh) res->raw_fresh = t4 - t3;
  }
  free(x), free(wg), free(wu), free(g), free(u);
  for (int i = 0; i < c->n_primary; i++) pg_tensor_reset(&in[i]);
  pg_bindings_reset(&dims);
  pg_golden_plan_free(plan);
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
    printf("  inputs %s:\n"
           "    pg_golden_cumulative(k=1)              %8.2f ms %6.1f GFLOP/s\n"
           "    raw sgemm x2, warm preallocated out    %8.2f ms %6.1f GFLOP/s  ratio %.3f\n"
           "    raw sgemm x2, fresh outputs            %8.2f ms %6.1f GFLOP/s  ratio %.3f\n"
           "    raw: widen inputs + sgemm x2, fresh    %8.2f ms %6.1f GFLOP/s  ratio %.3f\n",
           dtypes[v], r.golden * 1e3, flop / r.golden * 1e-9, r.raw * 1e3, flop / r.raw * 1e-9,
           r.golden / r.raw, r.raw_fresh * 1e3, flop / r.raw_fresh * 1e-9,
           r.golden / r.raw_fresh, r.raw_widen * 1e3, flop / r.raw_widen * 1e-9,
           r.golden / r.raw_widen);
  }
  pg_contract_reset(&c);
  pg_diags_reset(&diags);
  return 0;
}
