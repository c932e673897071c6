/* tests/serve: throughput through `phasegate serve` — N concurrent clients (processes)
 * × C calls of a no-op worker, each call a full lease + call + release as a CTest case
 * test would make it; every answer carries its request's token, so a lost or duplicated
 * answer is seen. Prints calls/s and latency percentiles, and the same figures for a
 * standalone persistent process per client (the floor: no daemon in the path).
 *
 *   bench_serve [--clients N] [--calls C] [--slots S]
 * Exit 0 when every answer was right and the daemon counted every call.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve_util.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One client: `calls` calls; lat[i] in ms; returns the number of wrong answers. */
static int client(const char *ctl, const char *spec, int k, int calls, int mode, double *lat) {
  int conn = -1, bad = 0;
  struct pg_error err;
  struct pg_proc p;
  pg_proc_init(&p);
  if (mode == 0 && pg_serve_connect(ctl, &conn, &err) != PG_OK) return calls;
  if (mode == 1) {
    struct pg_proc_argv a;
    struct pg_proc_result sf;
    pg_proc_result_init(&sf);
    if (su_argv(spec, "sim", 0, &a, &err) != PG_OK) return calls;
    struct pg_proc_spec s = {a.argv, a.env, ctl, "bench", 0, 30};
    int rc = pg_proc_start(&p, &s, &sf, &err);
    pg_proc_argv_reset(&a);
    if (rc != PG_OK) return calls;
  }
  for (int i = 0; i < calls; i++) {
    double t0 = su_now_ms();
    if (mode == 0 && su_lease(conn, spec, "sim", 0, 0, 30, &p, NULL, &err) != PG_OK) {
      bad++;
      continue;
    }
    char token[64];
    snprintf(token, sizeof token, "c%d-%d", k, i);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "token", token);
    struct pg_proc_result r;
    su_call(&p, "echo", x, 30, &r);
    if (r.end != PG_PROC_ANSWERED || strcmp(su_msg(&r), token) != 0) bad++;
    pg_proc_result_reset(&r);
    if (mode == 0) pg_serve_release(conn, &p, 1);
    lat[i] = su_now_ms() - t0;
  }
  if (mode == 1) pg_proc_stop(&p, 1, 0);
  pg_serve_disconnect(conn);
  return bad;
}

/* Runs n clients concurrently; fills lat (n * calls) and returns wrong answers. */
static int run(const char *ctl, const char *spec, int n, int calls, int mode, double *wall_ms,
               double *lat_out) {
  double *lat = mmap(NULL, sizeof(double) * (size_t)(n * calls), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  double t0 = su_now_ms();
  pid_t *kids = calloc((size_t)n, sizeof *kids);
  for (int k = 0; k < n; k++) {
    kids[k] = fork();
    if (kids[k] == 0) _exit(client(ctl, spec, k, calls, mode, lat + (size_t)k * calls) ? 1 : 0);
  }
  int bad = 0;
  for (int k = 0; k < n; k++) {
    int st;
    waitpid(kids[k], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  *wall_ms = su_now_ms() - t0;
  memcpy(lat_out, lat, sizeof(double) * (size_t)(n * calls));
  munmap(lat, sizeof(double) * (size_t)(n * calls));
  free(kids);
  return bad;
}

static void report(const char *what, int n, int calls, double wall, double *lat) {
  size_t total = (size_t)n * (size_t)calls;
  qsort(lat, total, sizeof *lat, cmp_double);
  printf("%-44s %6zu calls in %7.1f ms: %8.0f calls/s, latency p50 %.3f ms, p99 %.3f ms, "
         "max %.3f ms\n", what, total, wall, total / (wall / 1000), lat[total / 2],
         lat[(size_t)(total * 0.99)], lat[total - 1]);
}

int main(int argc, char **argv) {
  int n = 8, calls = 200;
  const char *slots = "1";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--clients") == 0) n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--calls") == 0) calls = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--slots") == 0) slots = argv[i + 1];
  }
  char tmp[] = "/tmp/pg_bench_serve_XXXXXX", ctl[128], spec[4200], out[8192];
  if (!mkdtemp(tmp)) return 2;
  snprintf(ctl, sizeof ctl, "%s/ctl", tmp);
  snprintf(spec, sizeof spec, "worker:exec %s --tag bench-%s", PG_SERVE_WORKER, tmp + 5);
  int rc = su_cli(out, sizeof out, "serve", "--control", ctl, "--slots", slots, "--impl", spec,
                  "--idle-timeout", "60", (const char *)NULL);
  if (rc != 0) {
    fprintf(stderr, "bench_serve: cannot start the daemon: %s\n", out);
    return 1;
  }
  double *lat = calloc((size_t)(n * calls), sizeof *lat), wall;
  int bad = run(ctl, spec, n, calls, 0, &wall, lat);
  char what[128];
  snprintf(what, sizeof what, "serve: lease+call+release, %d clients, slots %s", n, slots);
  report(what, n, calls, wall, lat);

  int conn;
  struct pg_error err;
  cJSON *a = NULL;
  long counted = -1, starts = -1;
  if (pg_serve_connect(ctl, &conn, &err) == PG_OK &&
      pg_serve_request(conn, "status", 1000, &a, &err) == PG_OK) {
    counted = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "calls"));
    starts = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "starts"));
  }
  cJSON_Delete(a);
  pg_serve_disconnect(conn);
  printf("daemon counted %ld calls, %ld process starts\n", counted, starts);

  int bad_floor = run(ctl, spec, n, calls, 1, &wall, lat);
  snprintf(what, sizeof what, "standalone persistent process per client, %d", n);
  report(what, n, calls, wall, lat);
  su_cli(out, sizeof out, "serve", "--control", ctl, "--stop", (const char *)NULL);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "bench_serve: could not remove %s\n", tmp);
  free(lat);
  if (bad || bad_floor || counted != (long)n * calls) {
    fprintf(stderr, "bench_serve: FAILED: %d clients with wrong answers (floor: %d), daemon "
            "counted %ld of %d calls\n", bad, bad_floor, counted, n * calls);
    return 1;
  }
  return 0;
}
