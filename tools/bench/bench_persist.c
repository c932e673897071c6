/* bench_persist — the runner's own cost per persistent impl call (issue goal: at most
 * 2 ms for a 1 MiB case), around a no-op impl: the plugin host (bench_noop_plugin)
 * and, when given, a no-op worker command. Each call goes through pg_impl_start /
 * pg_impl_finish exactly as `phasegate run` makes it: inputs into call memory (host)
 * or .npy files (worker), outputs NaN-prefilled and canary-checked or read back.
 * Peer measured in the same run: memcpy of the same bytes (in + out), the floor of
 * any scheme that moves the data once.
 *
 *   bench_persist PLUGIN.so [WORKER_COMMAND] [CALLS (200)] [MiB (1)] [LABEL|SPEC …]
 * Each LABEL|[NAME=VALUE ]SPEC after those is one more impl (any --impl spec, e.g. a
 * python: no-op), shown as LABEL, with NAME=VALUE set in the environment while it runs
 * (PHASEGATE_WORKER_NO_SHM=1: the Python side keeps to protocol v1, files, so v1 and
 * v1.1 are measured side by side). Prints one line per impl: median, p99 and fastest
 * per-call ms, the ratio to memcpy and the overhead over it (median − memcpy; the
 * fastest call's too, which a loaded machine disturbs least). The memcpy peer is the
 * best of 50.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "impl/impl.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench(const char *spec, struct pg_tensor *in, int calls, double *median, double *p99,
                 double *fastest) {
  struct pg_impl impl;
  struct pg_error err;
  if (pg_impl_parse(spec, &impl, &err) != PG_OK) {
    fprintf(stderr, "bench_persist: %s\n", err.message);
    return -1;
  }
  struct pg_impl_output_spec out = {"y", PG_DTYPE_F32, 1, {in->shape[0]}};
  const char *dn[1] = {"N"};
  int64_t dv[1] = {in->shape[0]};
  struct pg_impl_request req;
  memset(&req, 0, sizeof req);
  req.op = "bench", req.suffix = "1", req.up_to_module = 1, req.total_modules = 1;
  req.mode = "sim", req.case_id = "bench", req.n_dims = 1, req.dim_names = dn;
  req.dim_values = dv, req.knobs_json = "{}", req.inputs = in, req.n_inputs = 1;
  req.outputs = &out, req.n_outputs = 1, req.timeout_s = 60;
  double *t = calloc((size_t)calls, sizeof *t);
  int bad = 0;
  for (int i = -3; i < calls && !bad; i++) { /* 3 warm-up calls: start-up is not per call */
    struct pg_impl_outcome o;
    double t0 = pg_now_ms();
    int rc = pg_impl_invoke(&impl, &req, &o, &err);
    double dt = pg_now_ms() - t0;
    if (rc != PG_OK || o.status != PG_IMPL_DONE) {
      fprintf(stderr, "bench_persist: %s: %s\n", spec, rc != PG_OK ? err.message : o.summary);
      bad = 1;
    }
    if (i >= 0) t[i] = dt;
    pg_impl_outcome_reset(&o);
  }
  pg_impl_close(&impl);
  qsort(t, (size_t)calls, sizeof *t, cmp_d);
  *median = t[calls / 2];
  *fastest = t[0];
  *p99 = t[(calls * 99) / 100 < calls ? (calls * 99) / 100 : calls - 1];
  free(t);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_persist PLUGIN.so [WORKER_COMMAND] [CALLS] [MiB]\n");
    return 2;
  }
  int calls = argc > 3 ? atoi(argv[3]) : 200;
  double mib = argc > 4 ? atof(argv[4]) : 1.0;
  if (calls < 10) calls = 10;
  int64_t n = (int64_t)(mib * 1024 * 1024 / 4);
  struct pg_tensor in;
  pg_tensor_init(&in);
  struct pg_error err;
  if (pg_tensor_alloc(&in, PG_DTYPE_F32, 1, &n, &err) != PG_OK) return 1;
  pg_tensor_set_name(&in, "x");
  for (int64_t i = 0; i < n; i++) ((float *)in.dl.data)[i] = (float)i;
  /* the peer: move the bytes in and out once */
  char *dst = malloc(in.nbytes), *back = malloc(in.nbytes);
  double best = 1e30;
  for (int r = 0; r < 50; r++) {
    double t0 = pg_now_ms();
    memcpy(dst, in.dl.data, in.nbytes);
    memcpy(back, dst, in.nbytes);
    double dt = pg_now_ms() - t0;
    if (dt < best) best = dt;
  }
  printf("case: %.2f MiB in, %.2f MiB out, %d calls after 3 warm-up calls\n", mib, mib, calls);
  /* one-line results: label, median, p99, ratio and overhead over the peer */
#define PG_BENCH_LINE(label, med, p99)                                                       \
  printf("  %-36s %8.3f ms median  %8.3f ms p99  %8.3f ms min  (%.1fx memcpy, +%.3f ms; "    \
         "min +%.3f ms)\n", label, med, p99, fastest, (med) / best, (med) - best,              \
         fastest - best)
  printf("  memcpy in + out (peer):              %8.3f ms\n", best);
  char spec[4400];
  double med, p99, fastest;
  snprintf(spec, sizeof spec, "plugin:%s", argv[1]);
  if (bench(spec, &in, calls, &med, &p99, &fastest) == 0) PG_BENCH_LINE("plugin host, per call:", med, p99);
  if (argc > 2 && argv[2][0]) {
    snprintf(spec, sizeof spec, "worker:%s", argv[2]);
    if (bench(spec, &in, calls, &med, &p99, &fastest) == 0) PG_BENCH_LINE("worker, per call:", med, p99);
  }
  for (int a = 5; a < argc; a++) {
    const char *bar = strchr(argv[a], '|');
    char label[64];
    snprintf(label, sizeof label, "%.*s, per call:", bar ? (int)(bar - argv[a]) : 0, argv[a]);
    const char *what = bar ? bar + 1 : argv[a], *eq = strchr(what, '='), *sp = strchr(what, ' ');
    char name[64] = "";
    if (eq && sp && eq < sp && strchr(what, ':') > sp) { /* NAME=VALUE SPEC */
      snprintf(name, sizeof name, "%.*s", (int)(eq - what), what);
      char value[64];
      snprintf(value, sizeof value, "%.*s", (int)(sp - eq - 1), eq + 1);
      setenv(name, value, 1);
      what = sp + 1;
    }
    if (bench(what, &in, calls, &med, &p99, &fastest) == 0) PG_BENCH_LINE(label, med, p99);
    if (name[0]) unsetenv(name);
  }
  free(dst);
  free(back);
  pg_tensor_reset(&in);
  return 0;
}
