/* tests/serve: a stand-in for a `phasegate run` case test under CTest — leases from the
 * daemon when one answers on CONTROL, else starts the worker itself (standalone), makes
 * two calls and records how it was served.
 *
 *   serve_client CONTROL SPEC LOG NAME
 *
 * The device is CTEST_RESOURCE_GROUP_0_GPUS's id (0 without resource groups). Appends
 * "NAME via=leased|standalone pid=P device=<worker's mode and device> calls=C alloc=D"
 * (D: the device CTest allocated) to LOG
 * and prints "result: <worker's mode and device>". Exit 0 when both calls were answered.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "impl/proc.h"
#include "serve/serve.h"
#include "serve_util.h"

static int call(struct pg_proc *p, const char *action, char *msg, size_t size) {
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "action", action);
  int64_t id;
  struct pg_proc_result r;
  pg_proc_result_init(&r);
  pg_proc_send(p, req, -1, &id, NULL);
  pg_proc_wait(p, id, 30, &r, NULL);
  cJSON_Delete(req);
  int ok = r.end == PG_PROC_ANSWERED;
  const char *m = ok ? cJSON_GetStringValue(cJSON_GetObjectItem(r.answer, "message")) : NULL;
  snprintf(msg, size, "%s", m ? m : "");
  pg_proc_result_reset(&r);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: serve_client CONTROL SPEC LOG NAME\n");
    return 2;
  }
  const char *ctl = argv[1], *spec = argv[2], *log = argv[3], *name = argv[4];
  int device = 0;
  const char *g = getenv("CTEST_RESOURCE_GROUP_0_GPUS");
  if (g && strstr(g, "id:")) device = atoi(strstr(g, "id:") + 3);
  struct pg_error err;
  struct pg_proc p;
  int conn = -1, leased = 0;
  if (pg_serve_connect(ctl, &conn, &err) == PG_OK &&
      su_lease(conn, spec, "sim", device, 0, 30, &p, NULL, &err) == PG_OK)
    leased = 1;
  if (!leased) {
    struct pg_proc_argv a;
    struct pg_proc_result sf;
    pg_proc_result_init(&sf);
    if (su_argv(spec, "sim", device, &a, &err) != PG_OK) return 1;
    struct pg_proc_spec s = {a.argv, a.env, NULL, "client", 0, 30};
    int rc = pg_proc_start(&p, &s, &sf, &err);
    pg_proc_argv_reset(&a);
    pg_proc_result_reset(&sf);
    if (rc != PG_OK) {
      fprintf(stderr, "serve_client: %s\n", err.message);
      return 1;
    }
  }
  char dev[256], ok[256];
  int answered = call(&p, "device", dev, sizeof dev) && call(&p, "ok", ok, sizeof ok);
  int pid = 0, calls = 0;
  sscanf(ok, "%d %d", &pid, &calls);
  if (leased) pg_serve_release(conn, &p, answered);
  else pg_proc_stop(&p, 1, 0);
  pg_serve_disconnect(conn);
  char line[1024];
  int n = snprintf(line, sizeof line, "%s via=%s pid=%d device=%s calls=%d alloc=%d\n", name,
                   leased ? "leased" : "standalone", pid, dev, calls, device);
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, (size_t)n) != n) return 1;
  close(fd);
  printf("result: %s\n", dev);
  return answered ? 0 : 1;
}
