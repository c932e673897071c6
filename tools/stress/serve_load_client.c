/* tools/stress: a load client of `phasegate serve` (serve_load.sh). N client processes
 * (forked: one connection each, as the serve API requires) make C calls each; every
 * call is what one CTest case test does through the daemon — parse the impl, connect,
 * lease, one call through the real adapter (pg_impl_invoke: request, in/ files or the
 * plugin host's shared memory, answer, outputs read back), release, disconnect — minus
 * the phasegate process start, contract, golden and report, so the figures measure
 * the daemon and the lease path rather than process start-up.
 *
 * The impl is op `load` phase 1 (tools/stress/load_plugin.c, load_worker.py): y = 2 x.
 * Each call sends its own x (x[0] = client, x[1] = call, the rest a pattern of both),
 * so every output tells whose request it answers: a wrong client is cross-talk, the
 * same client's other call a duplicated (stale) answer, no answer a lost one. With
 * --crash-every K the K-th, 2K-th … call of each client is a case named "crash…",
 * which the impl answers with SIGSEGV: that call must be classified as a signal and
 * every other call must still be right.
 *
 *   serve_load_client --control DIR --impl SPEC [--clients N] [--calls C]
 *                     [--crash-every K] [--work DIR] [--label TEXT]
 * Prints one JSON line of figures; exit 0 when every call was right, 1 otherwise.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/impl.h"
#include "serve/serve.h"

#define N_ELEMS 256

enum verdict { V_LOST = 0, V_OK, V_CRASH, V_CROSS, V_DUP, V_WRONG, V_FAILED, V_COUNT };
static const char *const verdict_name[V_COUNT] = {"lost", "ok", "crash", "cross_talk",
                                                  "duplicated", "wrong", "failed"};

struct slot { /* one call's result, in memory shared with the parent */
  int verdict;
  int fact;
  double ms;
};

static float pattern(int k, int i, int j) {
  if (j == 0) return (float)k;
  if (j == 1) return (float)i;
  return (float)((k * 131 + i * 17 + j * 7) % 1000) / 8.0f - 60.0f;
}

/* What came back for call i of client k: decodes y / 2 to the call it answers. */
static int judge(const struct pg_impl_outcome *o, int k, int i, int crash) {
  if (crash) return o->fact == PG_IMPL_FACT_SIGNAL ? V_CRASH : V_FAILED;
  if (o->fact != PG_IMPL_FACT_OK || o->n_outputs != 1) return V_FAILED;
  const struct pg_tensor *y = &o->outputs[0];
  if (y->dtype != PG_DTYPE_F32 || y->numel != N_ELEMS) return V_WRONG;
  const float *v = y->dl.data;
  int k2 = (int)(v[0] / 2), i2 = (int)(v[1] / 2);
  if (k2 != k) return V_CROSS;
  if (i2 != i) return V_DUP;
  for (int j = 2; j < N_ELEMS; j++)
    if (v[j] != 2.0f * pattern(k, i, j)) return V_WRONG;
  return V_OK;
}

static void one_client(const char *ctl, const char *spec, const char *work, int k, int calls,
                       int crash_every, struct slot *res) {
  const char *names[] = {"N"};
  int64_t dims[] = {N_ELEMS};
  struct pg_impl_output_spec out_spec = {"y", PG_DTYPE_F32, 1, {N_ELEMS}};
  for (int i = 0; i < calls; i++) {
    double t0 = pg_now_ms();
    int crash = crash_every > 0 && (i + 1) % crash_every == 0;
    char case_id[64];
    snprintf(case_id, sizeof case_id, "%sc%d_%d", crash ? "crash_" : "", k, i);
    struct pg_error err;
    struct pg_tensor x;
    pg_tensor_init(&x);
    pg_tensor_set_name(&x, "x");
    int64_t shape[1] = {N_ELEMS};
    if (pg_tensor_alloc(&x, PG_DTYPE_F32, 1, shape, &err) != PG_OK) continue;
    float *xv = x.dl.data;
    for (int j = 0; j < N_ELEMS; j++) xv[j] = pattern(k, i, j);
    struct pg_impl impl;
    struct pg_impl_outcome o;
    pg_impl_outcome_init(&o);
    if (pg_impl_parse(spec, &impl, &err) == PG_OK) {
      impl.serve_control = ctl;
      impl.log_dir = work;
      struct pg_impl_request req = {
          .op = "load", .suffix = "1", .up_to_module = 1, .total_modules = 1,
          .mode = "sim", .device_id = 0, .case_id = case_id, .n_dims = 1,
          .dim_names = names, .dim_values = dims, .knobs_json = "{}", .inputs = &x,
          .n_inputs = 1, .outputs = &out_spec, .n_outputs = 1, .timeout_s = 30,
          .work_dir = work};
      if (pg_impl_invoke(&impl, &req, &o, &err) == PG_OK) {
        res[i].fact = (int)o.fact;
        res[i].verdict = judge(&o, k, i, crash);
        if (res[i].verdict != V_OK && res[i].verdict != V_CRASH)
          fprintf(stderr, "client %d call %d: %s: %s\n", k, i, verdict_name[res[i].verdict],
                  o.summary);
      } else {
        res[i].verdict = V_LOST;
        fprintf(stderr, "client %d call %d: %s\n", k, i, err.message);
      }
      pg_impl_close(&impl);
    }
    pg_impl_outcome_reset(&o);
    pg_tensor_reset(&x);
    res[i].ms = pg_now_ms() - t0;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The daemon's counters: leases and calls served. */
static void daemon_counts(const char *ctl, double *leases, double *calls) {
  int conn;
  struct pg_error err;
  cJSON *a = NULL;
  *leases = *calls = -1;
  if (pg_serve_connect(ctl, &conn, &err) != PG_OK) return;
  if (pg_serve_request(conn, "status", 2000, &a, &err) == PG_OK) {
    *leases = cJSON_GetNumberValue(cJSON_GetObjectItem(a, "leases"));
    *calls = cJSON_GetNumberValue(cJSON_GetObjectItem(a, "calls"));
  }
  cJSON_Delete(a);
  pg_serve_disconnect(conn);
}

int main(int argc, char **argv) {
  const char *ctl = NULL, *spec = NULL, *work = NULL, *label = "";
  int n = 8, calls = 500, crash_every = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--control") == 0) ctl = argv[i + 1];
    else if (strcmp(argv[i], "--impl") == 0) spec = argv[i + 1];
    else if (strcmp(argv[i], "--clients") == 0) n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--calls") == 0) calls = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--crash-every") == 0) crash_every = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--work") == 0) work = argv[i + 1];
    else if (strcmp(argv[i], "--label") == 0) label = argv[i + 1];
    else {
      fprintf(stderr, "serve_load_client: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!ctl || !spec || n < 1 || n > 64 || calls < 1 || calls > 100000) {
    fprintf(stderr, "usage: serve_load_client --control DIR --impl SPEC [--clients 1..64] "
                    "[--calls C] [--crash-every K] [--work DIR] [--label TEXT]\n");
    return 2;
  }
  double leases0, calls0;
  daemon_counts(ctl, &leases0, &calls0);
  size_t total = (size_t)n * (size_t)calls;
  struct slot *res = mmap(NULL, sizeof *res * total, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return 2;
  memset(res, 0, sizeof *res * total);
  double t0 = pg_now_ms();
  pid_t kids[64];
  for (int k = 0; k < n; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      one_client(ctl, spec, work, k, calls, crash_every, res + (size_t)k * calls);
      _exit(0);
    }
  }
  int dead_clients = 0;
  for (int k = 0; k < n; k++) {
    int st = 0;
    if (kids[k] < 0 || waitpid(kids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
      dead_clients++;
  }
  double wall = pg_now_ms() - t0;
  double leases1, calls1;
  daemon_counts(ctl, &leases1, &calls1);

  long count[V_COUNT] = {0};
  double *lat = malloc(sizeof *lat * total);
  for (size_t c = 0; c < total; c++) {
    count[res[c].verdict]++;
    lat[c] = res[c].ms;
  }
  qsort(lat, total, sizeof *lat, cmp_double);
  long crashes_expected = crash_every > 0 ? (long)n * (calls / crash_every) : 0;
  double leased = leases0 >= 0 && leases1 >= 0 ? leases1 - leases0 : -1;
  /* every call was one lease: the daemon saw exactly as many as were made */
  int ok = count[V_OK] + count[V_CRASH] == (long)total && count[V_CRASH] == crashes_expected &&
           dead_clients == 0 && leased == (double)total;
  printf("{\"label\": \"%s\", \"impl\": \"%s\", \"clients\": %d, \"calls_per_client\": %d, "
         "\"calls\": %zu, \"correct\": %ld, \"crashes_expected\": %ld, \"crashes\": %ld, "
         "\"lost\": %ld, \"duplicated\": %ld, \"cross_talk\": %ld, \"wrong\": %ld, "
         "\"failed\": %ld, \"dead_clients\": %d, \"daemon_leases\": %.0f, "
         "\"daemon_calls\": %.0f, \"wall_ms\": %.1f, \"calls_per_s\": %.0f, "
         "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, \"ok\": %s}\n",
         label, strncmp(spec, "plugin:", 7) == 0 ? "plugin" : "worker", n, calls, total,
         count[V_OK], crashes_expected, count[V_CRASH], count[V_LOST], count[V_DUP],
         count[V_CROSS], count[V_WRONG], count[V_FAILED], dead_clients, leased,
         calls0 >= 0 && calls1 >= 0 ? calls1 - calls0 : -1, wall, total / (wall / 1000),
         lat[total / 2], lat[(size_t)((double)total * 0.99)], lat[total - 1],
         ok ? "true" : "false");
  free(lat);
  munmap(res, sizeof *res * total);
  return ok ? 0 : 1;
}
