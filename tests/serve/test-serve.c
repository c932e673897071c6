/* tests/serve: `phasegate serve` (runner/serve/, runner/impl/serve_client.c, docs/serve.md) — the daemon
 * started detached through the CLI as CTest's start fixture does, leases from this
 * process, and every failure the design names: no daemon, a stale pidfile or socket,
 * racing starters, the daemon killed mid-lease, a client killed mid-call, a worker
 * crash while leased, the control directory deleted, idle exit, --stop and SIGTERM
 * leaving nothing running, changed files, queueing and slots, keys (device, env, cwd,
 * umask), start failures reported as a standalone start reports them. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_test.h"
#include "serve_util.h"

static char tmp[4096], ctl[4200], spec[8192], tag[128], out[16384];
static struct pg_error err;

/* Per test: a control directory and a worker command marked with a unique tag. */
static void setup(void) {
  snprintf(tmp, sizeof tmp, "%s", pg_test_tmpdir());
  snprintf(ctl, sizeof ctl, "%s/ctl", tmp);
  char base[4096];
  snprintf(base, sizeof base, "%s", tmp);
  snprintf(tag, sizeof tag, "svt-%s", basename(base));
  snprintf(spec, sizeof spec, "worker:exec %s --tag %s", PG_SERVE_WORKER, tag);
}

/* `phasegate serve --control ctl --idle-timeout 60 [a…]` must succeed. */
static void start(const char *a1, const char *a2, const char *a3, const char *a4,
                  const char *a5, const char *a6) {
  int rc = su_cli(out, sizeof out, "serve", "--control", ctl, "--idle-timeout", "60", a1, a2,
                  a3, a4, a5, a6, (const char *)NULL);
  PG_CHECK_MSG(rc == 0, "serve start: exit %d: %s", rc, out);
}

/* serve.log of ctl: a sanitizer build of the daemon reports leaks and errors there. */
static void check_log_clean(void) {
  static char log[1 << 16];
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_LOG);
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(log, 1, sizeof log - 1, f);
  log[n] = '\0';
  fclose(f);
  PG_CHECK_MSG(!strstr(log, "Sanitizer") && !strstr(log, "runtime error:"),
               "the daemon's log has a sanitizer report:\n%s", log);
}

static void stop_and_check(void) {
  int rc = su_cli(out, sizeof out, "serve", "--control", ctl, "--stop", (const char *)NULL);
  PG_CHECK_MSG(rc == 0, "serve --stop: exit %d: %s", rc, out);
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 3000));
  PG_CHECK_EQ_INT(0, su_count_procs("--foreground", ctl));
  check_log_clean();
}

static int conn_open(void) {
  int c = -1;
  int rc = pg_serve_connect(ctl, &c, &err);
  PG_CHECK_MSG(rc == PG_OK, "connect: %s", err.message);
  return c;
}

static void lease_ok(int conn, const char *sp, const char *mode, int device, struct pg_proc *p) {
  struct pg_proc_result sf;
  pg_proc_result_init(&sf);
  int rc = su_lease(conn, sp, mode, device, 0, 10, p, &sf, &err);
  PG_CHECK_MSG(rc == PG_OK, "lease: %s (%s)", err.message, pg_err_name(rc));
  PG_CHECK(p->pid > 0 && p->sock >= 0);
  pg_proc_result_reset(&sf);
}

static int standalone_start(const char *sp, struct pg_proc *p, struct pg_proc_result *r,
                            double timeout_s) {
  struct pg_proc_argv a;
  PG_CHECK_OK(su_argv(sp, "sim", 0, &a, &err));
  struct pg_proc_spec s = {a.argv, a.env, tmp, "sim-0", 0, timeout_s};
  int rc = pg_proc_start(p, &s, r, &err);
  pg_proc_argv_reset(&a);
  return rc;
}

static void check_ok_call(struct pg_proc *p, int *calls_seen) {
  struct pg_proc_result r;
  su_call(p, "ok", NULL, 10, &r);
  PG_CHECK_MSG(r.end == PG_PROC_ANSWERED, "call ended %d", (int)r.end);
  int pid = 0, calls = 0;
  sscanf(su_msg(&r), "%d %d", &pid, &calls);
  PG_CHECK_EQ_INT(p->pid, pid);
  if (calls_seen) *calls_seen = calls;
  pg_proc_result_reset(&r);
}

/* ------------------------------------------------------------------ no daemon */

PG_TEST(connect_without_daemon_is_quick) {
  setup();
  int c = 7;
  double t = su_now_ms();
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(NULL, &c, &err));
  PG_CHECK_EQ_INT(-1, c);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect("", &c, &err));
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err)); /* no directory */
  PG_CHECK(strstr(err.message, "no daemon") != NULL);
  mkdir(ctl, 0700);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err)); /* no socket */
  /* a stale socket: bound, never listened to, its process gone */
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_SOCK);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  PG_CHECK_OK(bind(s, (struct sockaddr *)&sa, sizeof sa));
  close(s);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err));
  /* a regular file where the socket should be */
  unlink(path);
  FILE *f = fopen(path, "w");
  fclose(f);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err));
  double ms = su_now_ms() - t;
  PG_CHECK_MSG(ms < 50 * 6, "6 failed connects took %.1f ms", ms);
  /* --status and --stop without a daemon */
  PG_CHECK_EQ_INT(1, su_cli(out, sizeof out, "serve", "--control", ctl, "--status", NULL));
  PG_CHECK(strstr(out, "not running") != NULL);
  PG_CHECK_EQ_INT(0, su_cli(out, sizeof out, "serve", "--control", ctl, "--stop", NULL));
  PG_CHECK(strstr(out, "not running") != NULL);
  PG_CHECK_EQ_INT(-1, access(path, F_OK)); /* the stale file is reclaimed */
}

/* ------------------------------------------------------------------ the happy path */

PG_TEST(lease_call_release_reuse) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  PG_CHECK(strstr(out, "running on") != NULL);
  struct stat st;
  PG_CHECK_OK(stat(ctl, &st));
  PG_CHECK_EQ_INT(0700, st.st_mode & 0777);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK_EQ_INT(0, p.calls); /* a fresh process */
  PG_CHECK(p.start_ms > 0);
  PG_CHECK(strncmp(p.log_path, ctl, strlen(ctl)) == 0);
  int pid = p.pid;
  struct pg_proc_result r;
  su_call(&p, "print", NULL, 10, &r);
  PG_CHECK_EQ_INT(PG_PROC_ANSWERED, r.end);
  PG_CHECK_MSG(r.captured && strstr(r.captured, "out 1\n") && strstr(r.captured, "err 1\n") &&
                   !strstr(r.captured, "starting"),
               "captured: '%s'", r.captured ? r.captured : "(null)");
  pg_proc_result_reset(&r);
  PG_CHECK_OK(pg_serve_release(conn, &p, 1));
  PG_CHECK_EQ_INT(0, p.pid);
  PG_CHECK_EQ_INT(-1, p.sock);
  pg_proc_stop(&p, 0, 0); /* a no-op on a released process */
  PG_CHECK(!su_gone(pid));
  /* the same warm process again, over a new connection */
  pg_serve_disconnect(conn);
  conn = conn_open();
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK_EQ_INT(pid, p.pid);
  PG_CHECK_EQ_INT(1, p.calls);
  int calls;
  check_ok_call(&p, &calls);
  PG_CHECK_EQ_INT(2, calls);
  PG_CHECK_OK(pg_serve_release(conn, &p, 1));
  cJSON *a = NULL;
  PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
  PG_CHECK_EQ_INT(2, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "calls")));
  PG_CHECK_EQ_INT(2, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "leases")));
  PG_CHECK_EQ_INT(1, cJSON_GetArraySize(cJSON_GetObjectItem(a, "processes")));
  PG_CHECK_EQ_INT(su_pidfile(ctl), (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "pid")));
  cJSON_Delete(a);
  pg_serve_disconnect(conn);
  PG_CHECK_EQ_INT(0, su_cli(out, sizeof out, "serve", "--control", ctl, "--status", NULL));
  PG_CHECK(strstr(out, "\"processes\"") && strstr(out, "\"idle\""));
  stop_and_check();
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_SOCK);
  PG_CHECK_EQ_INT(-1, access(path, F_OK));
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_PID);
  PG_CHECK_EQ_INT(-1, access(path, F_OK));
  PG_CHECK_EQ_INT(0, su_cli(out, sizeof out, "serve", "--control", ctl, "--stop", NULL));
  PG_CHECK(strstr(out, "not running") != NULL);
}

/* ------------------------------------------------------------------ start and stop */

PG_TEST(racing_starters_make_one_daemon) {
  setup();
  enum { N = 6 };
  pid_t kids[N];
  for (int i = 0; i < N; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      char o[4096];
      _exit(su_cli(o, sizeof o, "serve", "--control", ctl, "--idle-timeout", "60", NULL));
    }
  }
  for (int i = 0; i < N; i++) {
    int st;
    waitpid(kids[i], &st, 0);
    PG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "starter %d failed", i);
  }
  PG_CHECK_EQ_INT(1, su_count_procs("--foreground", ctl));
  int pid = su_pidfile(ctl);
  PG_CHECK(pid > 0 && !su_gone(pid));
  start(NULL, NULL, NULL, NULL, NULL, NULL); /* idempotent */
  PG_CHECK_MSG(strstr(out, "already running") != NULL, "second start: %s", out);
  PG_CHECK_EQ_INT(pid, su_pidfile(ctl));
  stop_and_check();
}

PG_TEST(stale_pidfile_and_socket_are_reclaimed) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int pid = su_pidfile(ctl);
  kill(pid, SIGKILL); /* a killed ctest: no cleanup ran */
  PG_CHECK(su_wait_gone(pid, 3000));
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_SOCK);
  PG_CHECK_EQ_INT(0, access(path, F_OK));
  int c;
  double best = 1e9; /* the best of 3: a busy machine may deschedule one try */
  for (int i = 0; i < 3; i++) {
    double t = su_now_ms();
    PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err));
    if (su_now_ms() - t < best) best = su_now_ms() - t;
  }
  PG_CHECK_MSG(best < 50, "stale connect took %.1f ms", best);
  /* the pidfile now names a live process that is no daemon: this one */
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_PID);
  FILE *f = fopen(path, "w");
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  PG_CHECK(strstr(out, "running on") != NULL && !strstr(out, "already"));
  int pid2 = su_pidfile(ctl);
  PG_CHECK(pid2 > 0 && pid2 != pid && pid2 != getpid());
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  check_ok_call(&p, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

PG_TEST(a_second_foreground_daemon_is_refused) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int pid = su_pidfile(ctl);
  int rc = su_cli(out, sizeof out, "serve", "--control", ctl, "--foreground", NULL);
  PG_CHECK_EQ_INT(1, rc);
  char want[128];
  snprintf(want, sizeof want, "another phasegate serve (pid %d) owns", pid);
  PG_CHECK_MSG(strstr(out, want) != NULL, "got: %s", out);
  PG_CHECK(!su_gone(pid));
  stop_and_check();
}

PG_TEST(cli_usage_errors) {
  setup();
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", NULL));
  PG_CHECK(strstr(out, "--control DIR is required") != NULL);
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--slots", "0", NULL));
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--slots", "1.5", NULL));
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--impl", "exec:x", NULL));
  PG_CHECK(strstr(out, "is not a persistent impl") != NULL);
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--bogus", "1", NULL));
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--stop", "--status",
                            NULL));
  PG_CHECK_EQ_INT(2, su_cli(out, sizeof out, "serve", "--control", ctl, "--idle-timeout", "x",
                            NULL));
  PG_CHECK_EQ_INT(0, su_cli(out, sizeof out, "serve", "--help", NULL));
  PG_CHECK(strstr(out, "--idle-timeout") != NULL);
  PG_CHECK_EQ_INT(-1, access(ctl, F_OK)); /* nothing was created */
}

PG_TEST(stop_and_sigterm_leave_nothing_running) {
  setup();
  start("--impl", spec, "--modes", "sim,npu", "--devices", "0,1");
  PG_CHECK_EQ_INT(4, su_wait_count(tag, NULL, 4, 10000));
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "npu", 1, &p);
  struct pg_proc_result r;
  su_call(&p, "spawn", NULL, 10, &r); /* a background child in the worker's group */
  int sleeper = atoi(su_msg(&r));
  pg_proc_result_reset(&r);
  PG_CHECK(sleeper > 0 && !su_gone(sleeper));
  PG_CHECK_OK(pg_serve_release(conn, &p, 1));
  pg_serve_disconnect(conn);
  stop_and_check();
  PG_CHECK(su_wait_gone(sleeper, 2000));
  /* SIGTERM: the same end */
  start("--impl", spec, NULL, NULL, NULL, NULL);
  PG_CHECK_EQ_INT(1, su_wait_count(tag, NULL, 1, 10000));
  int pid = su_pidfile(ctl);
  kill(pid, SIGTERM);
  PG_CHECK(su_wait_gone(pid, 5000));
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 3000));
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_SOCK);
  PG_CHECK_EQ_INT(-1, access(path, F_OK));
  snprintf(path, sizeof path, "%s/%s", ctl, PG_SERVE_LOG);
  FILE *f = fopen(path, "r");
  PG_CHECK(f != NULL);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  fclose(f);
  PG_CHECK_MSG(strstr(out, "exiting: SIGTERM") != NULL, "serve.log: %s", out);
  check_log_clean();
}

PG_TEST(control_dir_deleted_ends_daemon_and_workers) {
  setup();
  start("--impl", spec, NULL, NULL, NULL, NULL);
  PG_CHECK_EQ_INT(1, su_wait_count(tag, NULL, 1, 10000));
  int pid = su_pidfile(ctl);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", ctl);
  PG_CHECK_OK(system(cmd));
  double t = su_now_ms();
  PG_CHECK_MSG(su_wait_gone(pid, 6000), "the daemon outlived its directory");
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 2000));
  PG_CHECK_MSG(su_now_ms() - t < 5000, "took %.0f ms", su_now_ms() - t);
}

PG_TEST(idle_timeout_ends_daemon_and_workers) {
  setup();
  int rc = su_cli(out, sizeof out, "serve", "--control", ctl, "--idle-timeout", "1", "--impl",
                  spec, NULL);
  PG_CHECK_MSG(rc == 0, "%s", out);
  int pid = su_pidfile(ctl);
  /* a client keeps it alive */
  int conn = conn_open();
  usleep(1500 * 1000);
  PG_CHECK(!su_gone(pid));
  pg_serve_disconnect(conn);
  PG_CHECK_MSG(su_wait_gone(pid, 5000), "the daemon did not exit when idle");
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 2000));
  check_log_clean();
}

PG_TEST(hung_daemon_is_replaced) {
  setup();
  start("--impl", spec, NULL, NULL, NULL, NULL);
  PG_CHECK_EQ_INT(1, su_wait_count(tag, NULL, 1, 10000));
  int pid = su_pidfile(ctl);
  kill(pid, SIGSTOP); /* listening, never answering */
  int c;
  double t = su_now_ms();
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err));
  double ms = su_now_ms() - t;
  PG_CHECK_MSG(ms < PG_SERVE_ANSWER_MS + 500, "connect to a hung daemon took %.0f ms", ms);
  PG_CHECK(strstr(err.message, "did not answer") != NULL);
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  PG_CHECK(strstr(out, "running on") && !strstr(out, "already"));
  PG_CHECK(su_wait_gone(pid, 3000));
  PG_CHECK(su_pidfile(ctl) != pid);
  /* the hung daemon's worker saw EOF when it died */
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 3000));
  stop_and_check();
}

PG_TEST(another_build_replaces_the_daemon) {
  setup();
  char other[4300], cmd[9000];
  snprintf(other, sizeof other, "%s/phasegate_other_build", tmp);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", PG_PHASEGATE, other);
  PG_CHECK_OK(system(cmd));
  int rc = su_cli_exe(other, out, sizeof out, "serve", "--control", ctl, "--idle-timeout", "60",
                      (const char *)NULL);
  PG_CHECK_MSG(rc == 0, "%s", out);
  int old = su_pidfile(ctl);
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  PG_CHECK_MSG(strstr(out, "running on") && !strstr(out, "already"), "%s", out);
  PG_CHECK(su_wait_gone(old, 3000));
  PG_CHECK(su_pidfile(ctl) != old);
  stop_and_check();
}

PG_TEST(idle_worker_death_is_noticed) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  int first = p.pid;
  pg_serve_release(conn, &p, 1);
  kill(first, SIGKILL);
  cJSON *a = NULL;
  int n = 1;
  for (int i = 0; i < 100 && n; i++) {
    usleep(20000);
    PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
    n = cJSON_GetArraySize(cJSON_GetObjectItem(a, "processes"));
    cJSON_Delete(a);
  }
  PG_CHECK_EQ_INT(0, n);
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK(p.pid != first);
  check_ok_call(&p, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* ------------------------------------------------------------------ failures mid-lease */

PG_TEST(daemon_killed_mid_lease) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p, q;
  lease_ok(conn, spec, "sim", 0, &p);
  lease_ok(conn, spec, "sim", 1, &q);
  int wp = p.pid, wq = q.pid;
  kill(su_pidfile(ctl), SIGKILL);
  usleep(50 * 1000);
  check_ok_call(&p, NULL); /* the worker is talked to directly: the call still works */
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_release(conn, &p, 1));
  PG_CHECK(su_wait_gone(wp, 2000));
  /* a crash with no daemon to ask: the process ended, how is unknown */
  struct pg_proc_result r;
  su_call(&q, "crash", NULL, 10, &r);
  PG_CHECK_EQ_INT(PG_PROC_EXITED, r.end);
  PG_CHECK(!pg_proc_alive(&q));
  pg_proc_result_reset(&r);
  pg_proc_stop(&q, 0, 0);
  PG_CHECK(su_wait_gone(wq, 2000));
  pg_serve_disconnect(conn);
  int c;
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_serve_connect(ctl, &c, &err));
  PG_CHECK_EQ_INT(0, su_wait_count(tag, NULL, 0, 3000));
  /* a new start reclaims the dead daemon's files */
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  stop_and_check();
}

PG_TEST(client_killed_mid_call_kills_its_worker) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int pfd[2];
  PG_CHECK_OK(pipe(pfd));
  pid_t kid = fork();
  if (kid == 0) {
    int conn = -1;
    struct pg_proc p;
    struct pg_proc_result sf;
    if (pg_serve_connect(ctl, &conn, NULL) != PG_OK ||
        su_lease(conn, spec, "sim", 0, 0, 10, &p, &sf, NULL) != PG_OK)
      _exit(3);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "action", "hang");
    int64_t id;
    pg_proc_send(&p, req, -1, &id, NULL);
    if (write(pfd[1], &p.pid, sizeof p.pid) < 0) _exit(4);
    for (;;) pause();
  }
  int wpid = 0;
  PG_CHECK_EQ_INT((int)sizeof wpid, (int)read(pfd[0], &wpid, sizeof wpid));
  usleep(100 * 1000);
  PG_CHECK(!su_gone(wpid));
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  PG_CHECK_MSG(su_wait_gone(wpid, 3000), "the daemon kept a worker whose client died");
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK(p.pid != wpid);
  PG_CHECK_EQ_INT(0, p.calls);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* The facts of each way a call can end, leased and standalone: the same. */
PG_TEST(worker_ends_are_reported_as_standalone) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct {
    const char *action;
    int code;
    double timeout;
    int end, exited, exit_code, signaled, signo;
  } cases[] = {
      {"crash", 0, 10, PG_PROC_EXITED, 0, 0, 1, SIGSEGV},
      {"abort", 0, 10, PG_PROC_EXITED, 0, 0, 1, SIGABRT},
      {"exit", 5, 10, PG_PROC_EXITED, 1, 5, 0, 0},
      {"hang", 0, 0.3, PG_PROC_TIMEOUT, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct pg_proc_result rl, rs, sf;
    struct pg_proc p, s;
    pg_proc_result_init(&sf);
    lease_ok(conn, spec, "sim", 0, &p);
    int wpid = p.pid;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "code", cases[i].code);
    su_call(&p, cases[i].action, x, cases[i].timeout, &rl);
    PG_CHECK_OK(standalone_start(spec, &s, &sf, 10));
    x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "code", cases[i].code);
    su_call(&s, cases[i].action, x, cases[i].timeout, &rs);
    const struct pg_proc_result *both[2] = {&rl, &rs};
    for (int k = 0; k < 2; k++) {
      const struct pg_proc_result *r = both[k];
      PG_CHECK_MSG((int)r->end == cases[i].end && r->exited == cases[i].exited &&
                       r->exit_code == cases[i].exit_code && r->signaled == cases[i].signaled &&
                       r->signo == cases[i].signo,
                   "%s (%s): end %d exited %d code %d signaled %d signo %d", cases[i].action,
                   k ? "standalone" : "leased", (int)r->end, r->exited, r->exit_code,
                   r->signaled, r->signo);
    }
    PG_CHECK_EQ_STR(rs.captured ? rs.captured : "", rl.captured ? rl.captured : "");
    PG_CHECK(!pg_proc_alive(&p) && !pg_proc_alive(&s));
    PG_CHECK(su_wait_gone(wpid, 2000));
    pg_proc_stop(&p, 0, 0);
    pg_proc_stop(&s, 0, 0);
    pg_proc_result_reset(&rl);
    pg_proc_result_reset(&rs);
    pg_proc_result_reset(&sf);
  }
  /* a healthy process ended by the client: release(ok = 0), and pg_proc_stop */
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  int wpid = p.pid;
  PG_CHECK_OK(pg_serve_release(conn, &p, 0));
  PG_CHECK(su_wait_gone(wpid, 2000));
  lease_ok(conn, spec, "sim", 0, &p);
  wpid = p.pid;
  pg_proc_stop(&p, 2.0, 0);
  PG_CHECK(su_wait_gone(wpid, 2000));
  cJSON *a = NULL;
  PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
  PG_CHECK_EQ_INT(0, cJSON_GetArraySize(cJSON_GetObjectItem(a, "processes")));
  cJSON_Delete(a);
  pg_serve_disconnect(conn);
  stop_and_check();
}

PG_TEST(protocol_break_between_calls_replaces_the_process) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  int wpid = p.pid;
  struct pg_proc_result r;
  su_call(&p, "twice", NULL, 10, &r); /* a second answer nobody asked for */
  PG_CHECK_EQ_INT(PG_PROC_ANSWERED, r.end);
  pg_proc_result_reset(&r);
  usleep(50 * 1000);
  pg_serve_release(conn, &p, 1);
  PG_CHECK(su_wait_gone(wpid, 3000));
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK(p.pid != wpid);
  check_ok_call(&p, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* ------------------------------------------------------------------ starts */

PG_TEST(start_failures_are_reported_as_standalone) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct {
    const char *extra;
    double timeout;
    int end;
  } cases[] = {
      {"--fail-start 3", 10, PG_PROC_EXITED},
      {"--garbage-start", 10, PG_PROC_PROTOCOL},
      {"--start-ms 3000", 0.4, PG_PROC_TIMEOUT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char sp[8400];
    snprintf(sp, sizeof sp, "%s %s", spec, cases[i].extra);
    struct pg_proc p, s;
    struct pg_proc_result rl, rs;
    pg_proc_result_init(&rl);
    pg_proc_result_init(&rs);
    struct pg_error el, es;
    int rc = su_lease(conn, sp, "sim", 0, 0, cases[i].timeout, &p, &rl, &el);
    PG_CHECK_MSG(rc == PG_EIMPL, "%s: lease returned %s: %s", cases[i].extra, pg_err_name(rc),
                 el.message);
    PG_CHECK(!pg_proc_alive(&p) && p.sock < 0);
    PG_CHECK_EQ_INT(PG_EIMPL, standalone_start(sp, &s, &rs, cases[i].timeout));
    es = err;
    PG_CHECK_EQ_INT(cases[i].end, (int)rl.end);
    PG_CHECK_EQ_INT((int)rs.end, (int)rl.end);
    PG_CHECK_EQ_INT(rs.exited, rl.exited);
    PG_CHECK_EQ_INT(rs.exit_code, rl.exit_code);
    PG_CHECK_EQ_INT(rs.signaled, rl.signaled);
    PG_CHECK_EQ_STR(rs.protocol, rl.protocol);
    PG_CHECK_EQ_STR(rs.captured ? rs.captured : "", rl.captured ? rl.captured : "");
    /* the messages differ only in the log's path */
    char *cut_l = strstr(el.message, "its log: "), *cut_s = strstr(es.message, "its log: ");
    PG_CHECK(cut_l && cut_s);
    *cut_l = *cut_s = '\0';
    PG_CHECK_EQ_STR(es.message, el.message);
    pg_proc_result_reset(&rl);
    pg_proc_result_reset(&rs);
  }
  if (1) { /* exit 3 carried through */
    char sp[8400];
    snprintf(sp, sizeof sp, "%s --fail-start 3", spec);
    struct pg_proc p;
    struct pg_proc_result rl;
    pg_proc_result_init(&rl);
    PG_CHECK_EQ_INT(PG_EIMPL, su_lease(conn, sp, "sim", 0, 0, 10, &p, &rl, &err));
    PG_CHECK(rl.exited && rl.exit_code == 3);
    PG_CHECK(rl.captured && strstr(rl.captured, "failing before the handshake"));
    pg_proc_result_reset(&rl);
  }
  /* a kind the daemon does not know: refused, nothing started */
  struct pg_proc p;
  struct pg_proc_program odd = {(enum pg_proc_kind)7, (char *)"true"};
  PG_CHECK_EQ_INT(PG_EINVAL, pg_serve_lease(conn, &odd, "sim", 0, 0, 10, &p, NULL, &err));
  PG_CHECK_MSG(strstr(err.message, "kind 'none' is not a persistent process") != NULL, "%s",
               err.message);
  /* an impl whose calls need no process has no program to lease */
  PG_CHECK_EQ_INT(PG_EINVAL, su_lease(conn, "exec:true", "sim", 0, 0, 10, &p, NULL, &err));
  PG_CHECK_EQ_STR("'exec:' impls run no persistent process", err.message);
  cJSON *a = NULL;
  PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
  PG_CHECK_EQ_INT(4, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "start_failures")));
  cJSON_Delete(a);
  pg_serve_disconnect(conn);
  stop_and_check();
}

PG_TEST(prestarted_process_is_leased) {
  setup();
  start("--impl", spec, "--modes", "sim", NULL, NULL);
  PG_CHECK_EQ_INT(1, su_wait_count(tag, NULL, 1, 10000));
  int conn = conn_open();
  cJSON *a = NULL;
  int pre = 0;
  for (int i = 0; i < 200 && !pre; i++) { /* until its handshake is in */
    PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "processes"), 0);
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(p0, "state"));
    if (st && strcmp(st, "idle") == 0)
      pre = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(p0, "pid"));
    cJSON_Delete(a);
    if (!pre) usleep(20000);
  }
  PG_CHECK(pre > 0);
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  PG_CHECK_EQ_INT(pre, p.pid);
  PG_CHECK_EQ_INT(0, p.calls);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* Starts run in threads: two slow starts overlap, and the daemon answers meanwhile. */
PG_TEST(slow_starts_do_not_block_the_daemon) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  char sp[8400];
  snprintf(sp, sizeof sp, "%s --start-ms 2000", spec);
  double t0 = su_now_ms();
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      int conn = -1;
      struct pg_proc p;
      if (pg_serve_connect(ctl, &conn, NULL) != PG_OK ||
          su_lease(conn, sp, "sim", k, 0, 10, &p, NULL, NULL) != PG_OK)
        _exit(3);
      pg_serve_release(conn, &p, 1);
      pg_serve_disconnect(conn);
      _exit(0);
    }
  }
  usleep(300 * 1000);
  int conn = conn_open();
  double t = su_now_ms();
  cJSON *a = NULL;
  PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
  PG_CHECK_MSG(su_now_ms() - t < 500, "status took %.0f ms during starts", su_now_ms() - t);
  PG_CHECK_EQ_INT(2, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "waiting")));
  cJSON_Delete(a);
  for (int k = 0; k < 2; k++) {
    int st;
    waitpid(kids[k], &st, 0);
    PG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  double both = su_now_ms() - t0;
  PG_CHECK_MSG(both < 3500, "two 2 s starts took %.0f ms: not concurrent", both);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* ------------------------------------------------------------------ keys */

PG_TEST(changed_files_replace_processes) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  char copy[4300], cmd[9000], sp[8400];
  snprintf(copy, sizeof copy, "%s/worker_copy", tmp);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", PG_SERVE_WORKER, copy);
  PG_CHECK_OK(system(cmd));
  snprintf(sp, sizeof sp, "worker:exec %s --tag %s", copy, tag);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, sp, "sim", 0, &p);
  int first = p.pid;
  pg_serve_release(conn, &p, 1);
  lease_ok(conn, sp, "sim", 0, &p);
  PG_CHECK_EQ_INT(first, p.pid);
  pg_serve_release(conn, &p, 1);
  /* rebuilt: a new file at the same path */
  snprintf(cmd, sizeof cmd, "cp '%s' '%s.new' && mv '%s.new' '%s'", PG_SERVE_WORKER, copy, copy,
           copy);
  PG_CHECK_OK(system(cmd));
  lease_ok(conn, sp, "sim", 0, &p);
  PG_CHECK(p.pid != first);
  PG_CHECK_EQ_INT(0, p.calls);
  PG_CHECK(su_wait_gone(first, 3000));
  /* changed while leased: replaced at release */
  int second = p.pid;
  struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 0}};
  PG_CHECK_OK(utimensat(AT_FDCWD, copy, ts, 0));
  struct pg_proc q;
  PG_CHECK_EQ_INT(PG_ELIMIT, su_lease(conn, sp, "sim", 0, 0, 10, &q, NULL, &err));
  pg_serve_release(conn, &p, 1);
  PG_CHECK(su_wait_gone(second, 3000));
  lease_ok(conn, sp, "sim", 0, &p);
  PG_CHECK(p.pid != second);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

PG_TEST(keys_device_env_cwd_umask) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p;
  struct pg_proc_result r;
  lease_ok(conn, spec, "npu", 3, &p);
  int dev3 = p.pid;
  su_call(&p, "device", NULL, 10, &r);
  PG_CHECK_EQ_STR("npu 3", su_msg(&r));
  pg_proc_result_reset(&r);
  pg_serve_release(conn, &p, 1);
  /* the client's environment, CTest's per-test resource variables aside */
  setenv("SERVE_TEST_VAR", "one", 1);
  setenv("CTEST_RESOURCE_GROUP_0", "npus", 1);
  setenv("CTEST_RESOURCE_GROUP_0_NPUS", "id:3,slots:1", 1);
  setenv("PHASEGATE_DEVICE_ID", "99", 1); /* never shadows the process's own */
  lease_ok(conn, spec, "npu", 3, &p);
  int env1 = p.pid;
  PG_CHECK(env1 != dev3);
  cJSON *x = cJSON_CreateObject();
  cJSON_AddStringToObject(x, "name", "SERVE_TEST_VAR");
  su_call(&p, "env", x, 10, &r);
  PG_CHECK_EQ_STR("one", su_msg(&r));
  pg_proc_result_reset(&r);
  su_call(&p, "device", NULL, 10, &r);
  PG_CHECK_EQ_STR("npu 3", su_msg(&r));
  pg_proc_result_reset(&r);
  pg_serve_release(conn, &p, 1);
  setenv("CTEST_RESOURCE_GROUP_0_NPUS", "id:3,slots:2", 1);
  lease_ok(conn, spec, "npu", 3, &p);
  PG_CHECK_EQ_INT(env1, p.pid);
  pg_serve_release(conn, &p, 1);
  setenv("SERVE_TEST_VAR", "two", 1);
  lease_ok(conn, spec, "npu", 3, &p);
  PG_CHECK(p.pid != env1);
  pg_serve_release(conn, &p, 1);
  unsetenv("SERVE_TEST_VAR");
  /* working directory and umask */
  char sub[4300];
  snprintf(sub, sizeof sub, "%s/sub", tmp);
  mkdir(sub, 0755);
  char *old = getcwd(NULL, 0);
  PG_CHECK_OK(chdir(sub));
  mode_t om = umask(027);
  lease_ok(conn, spec, "sim", 0, &p);
  su_call(&p, "cwd", NULL, 10, &r);
  PG_CHECK_EQ_STR(sub, su_msg(&r));
  pg_proc_result_reset(&r);
  su_call(&p, "umask", NULL, 10, &r);
  PG_CHECK_EQ_STR("027", su_msg(&r));
  pg_proc_result_reset(&r);
  pg_serve_release(conn, &p, 1);
  umask(om);
  PG_CHECK_OK(chdir(old));
  free(old);
  /* a relative worker command runs from the client's directory */
  char cmd[9000], sp[8400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s/rel_worker'", PG_SERVE_WORKER, sub);
  PG_CHECK_OK(system(cmd));
  snprintf(sp, sizeof sp, "worker:exec ./rel_worker --tag %s", tag);
  PG_CHECK_OK(chdir(sub));
  lease_ok(conn, sp, "sim", 0, &p);
  check_ok_call(&p, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* ------------------------------------------------------------------ queueing */

/* A child that leases (sim, 0) and reports the pid, then waits for a byte to release. */
static pid_t lease_in_child(int report_fd, int go_fd, const char *sp) {
  pid_t kid = fork();
  if (kid != 0) return kid;
  int conn = -1;
  struct pg_proc p;
  if (pg_serve_connect(ctl, &conn, NULL) != PG_OK ||
      su_lease(conn, sp, "sim", 0, 0, 10, &p, NULL, NULL) != PG_OK)
    _exit(3);
  if (write(report_fd, &p.pid, sizeof p.pid) < 0) _exit(4);
  char b;
  if (read(go_fd, &b, 1) < 0) _exit(5);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  _exit(0);
}

PG_TEST(busy_key_queues_until_release) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL); /* --slots 1 */
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  int rep[2], go[2];
  PG_CHECK_OK(pipe(rep));
  PG_CHECK_OK(pipe(go));
  pid_t kid = lease_in_child(rep[1], go[0], spec);
  struct pollfd pf = {rep[0], POLLIN, 0};
  PG_CHECK_EQ_INT(0, poll(&pf, 1, 400)); /* still waiting */
  cJSON *a = NULL;
  PG_CHECK_OK(pg_serve_request(conn, "status", 1000, &a, &err));
  PG_CHECK_EQ_INT(1, (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "waiting")));
  cJSON_Delete(a);
  int mine = p.pid;
  PG_CHECK_OK(pg_serve_release(conn, &p, 1));
  int theirs = 0;
  PG_CHECK_EQ_INT(1, poll(&pf, 1, 5000));
  PG_CHECK_EQ_INT((int)sizeof theirs, (int)read(rep[0], &theirs, sizeof theirs));
  PG_CHECK_EQ_INT(mine, theirs); /* the same warm process, handed over */
  PG_CHECK_EQ_INT(1, (int)write(go[1], "x", 1));
  int st;
  waitpid(kid, &st, 0);
  PG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  pg_serve_disconnect(conn);
  stop_and_check();
}

PG_TEST(slots_serve_concurrent_clients) {
  setup();
  start("--slots", "2", NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p, q, r3;
  lease_ok(conn, spec, "sim", 0, &p);
  lease_ok(conn, spec, "sim", 0, &q); /* a second slot: a second process */
  PG_CHECK(p.pid != q.pid);
  PG_CHECK_EQ_INT(PG_ELIMIT, su_lease(conn, spec, "sim", 0, 0, 10, &r3, NULL, &err));
  PG_CHECK(strstr(err.message, "--slots") != NULL);
  check_ok_call(&p, NULL);
  check_ok_call(&q, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_release(conn, &q, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

/* ------------------------------------------------------------------ paths */

PG_TEST(long_control_path) {
  setup();
  snprintf(ctl, sizeof ctl, "%s/a_rather_long_directory_name_for_a_build_tree/"
           "another_level_of_nesting_as_cmake_makes_it/phasegate-serve-control", tmp);
  PG_CHECK(strlen(ctl) + strlen("/serve.sock") >= sizeof(((struct sockaddr_un *)0)->sun_path));
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, spec, "sim", 0, &p);
  check_ok_call(&p, NULL);
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}

#ifdef PG_FAKE_PLUGIN
PG_TEST(plugin_host_lease) {
  setup();
  start(NULL, NULL, NULL, NULL, NULL, NULL);
  char so[4300], cmd[9000], sp[4400];
  snprintf(so, sizeof so, "%s/fake_impl_copy.so", tmp);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", PG_FAKE_PLUGIN, so);
  PG_CHECK_OK(system(cmd));
  snprintf(sp, sizeof sp, "plugin:%s", so);
  int conn = conn_open();
  struct pg_proc p;
  lease_ok(conn, sp, "sim", 0, &p);
  int first = p.pid;
  pg_serve_release(conn, &p, 1);
  lease_ok(conn, sp, "sim", 0, &p);
  PG_CHECK_EQ_INT(first, p.pid);
  pg_serve_release(conn, &p, 1);
  struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 0}};
  PG_CHECK_OK(utimensat(AT_FDCWD, so, ts, 0));
  lease_ok(conn, sp, "sim", 0, &p);
  PG_CHECK(p.pid != first);
  PG_CHECK(su_wait_gone(first, 3000));
  pg_serve_release(conn, &p, 1);
  pg_serve_disconnect(conn);
  stop_and_check();
}
#endif
