/* phasegate serve — the daemon that keeps plugin and worker impls warm across CTest
 * tests (docs/design.md §6 "Under CTest", §9; docs/serve.md). The work is in
 * runner/serve/ (the daemon) and runner/impl/serve_client.c; this file parses options, prints and picks the exit code.
 *
 *   phasegate serve --control DIR [--impl SPEC --modes a,b --devices 0,1 …]  start, detached
 *   phasegate serve --control DIR --foreground [...]                          run in this process
 *   phasegate serve --control DIR --stop | --status
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "impl/impl.h"
#include "serve/serve.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate serve --control DIR [options]\n"
          "       phasegate serve --control DIR --stop [--timeout S]\n"
          "       phasegate serve --control DIR --status\n"
          "\n"
          "Keeps plugin:, worker: and python: impl processes warm across CTest tests: `phasegate run`\n"
          "leases a process from the daemon when one answers on DIR, and runs standalone\n"
          "(same results) when none does. Without --foreground the daemon is started\n"
          "detached (new session, stdio to DIR/serve.log) and this command returns once it\n"
          "answers; a daemon already serving DIR is kept, a stale one replaced.\n"
          "\n"
          "options:\n"
          "  --control DIR        control directory (created mode 0700): serve.sock,\n"
          "                       serve.pid, serve.lock, serve.log, workers/\n"
          "  --op-dir DIR         the op served (shown by --status)\n"
          "  --impl SPEC          start worker:CMD / plugin:PATH / python:FILE.py processes at\n"
          "                       once, one per mode and device (the first test then finds\n"
          "                       them warm)\n"
          "  --python PATH        interpreter of a python: impl, as run --python\n"
          "  --modes a,b          modes to start (default sim)\n"
          "  --devices 0,1        device ids to start (default 0)\n"
          "  --memory-limit N     RLIMIT_AS of started processes, as run --memory-limit\n"
          "  --slots N            processes per (impl, mode, device) (default 1)\n"
          "  --idle-timeout S     exit after S seconds without clients (default 600)\n"
          "  --start-timeout S    handshake limit for --impl processes (default 120)\n"
          "  --foreground         run the daemon in this process (log on stderr)\n"
          "  --detached           (set by the detached start for the daemon it spawns:\n"
          "                       close every inherited descriptor above stderr)\n"
          "  --stop               stop the daemon and every process it owns (idempotent)\n"
          "  --status             print the daemon's state as JSON (exit 1: not running)\n"
          "  --timeout S          how long --stop waits (default 10)\n"
          "\n"
          "The daemon exits by itself when idle, when DIR or its socket disappears, on\n"
          "SIGTERM, or on --stop. Exit codes: 0 done, 1 the daemon failed (or is not\n"
          "running, for --status), 2 usage.\n");
}

/* The daemon's command line: this executable, `serve --foreground --detached` and the
 * options given (the control directory made absolute). */
static int daemon_argv(int argc, char **argv, const char *control, const char **out,
                       char *exe, size_t exe_size) {
  ssize_t n = readlink("/proc/self/exe", exe, exe_size - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  int k = 0;
  out[k++] = exe;
  out[k++] = "serve";
  out[k++] = "--foreground";
  out[k++] = "--detached";
  out[k++] = "--control";
  out[k++] = control;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--control") == 0) {
      i++;
      continue;
    }
    out[k++] = argv[i];
  }
  out[k] = NULL;
  return 0;
}

static int status(const char *control) {
  int conn;
  struct pg_error err;
  if (pg_serve_connect(control, &conn, &err) != PG_OK) {
    printf("{\"status\": \"not running\", \"control\": \"%s\"}\n", control);
    return PG_EXIT_FAIL;
  }
  cJSON *a = NULL;
  int rc = pg_serve_request(conn, "status", PG_SERVE_ANSWER_MS, &a, &err);
  pg_serve_disconnect(conn);
  if (rc != PG_OK) {
    fprintf(stderr, "phasegate serve: error: %s\n", err.message);
    return PG_EXIT_FAIL;
  }
  char *text = cJSON_Print(a);
  printf("%s\n", text ? text : "{}");
  free(text);
  cJSON_Delete(a);
  return PG_EXIT_PASS;
}

/* What the command does once its options are parsed: --status, --stop, the daemon in
 * this process, or a detached start. */
static int act(struct pg_serve_options *opts, int argc, char **argv, int foreground, int stop,
               int show, double stop_timeout) {
  struct pg_serve_options o = *opts;
  struct pg_error err;
  pg_error_clear(&err);
  if (show) return status(o.control_dir);
  if (stop) {
    int pid = 0;
    int rc = pg_serve_stop(o.control_dir, stop_timeout, &pid, &err);
    if (rc != PG_OK) {
      fprintf(stderr, "phasegate serve: error: %s\n", err.message);
      return PG_EXIT_FAIL;
    }
    if (pid) printf("phasegate serve: stopped (pid %d)\n", pid);
    else printf("phasegate serve: not running on %s\n", o.control_dir);
    return PG_EXIT_PASS;
  }
  if (foreground) {
    int rc = pg_serve_daemon(&o, stderr, &err);
    if (rc != PG_OK) {
      fprintf(stderr, "phasegate serve: error: %s\n", err.message);
      return PG_EXIT_FAIL;
    }
    return PG_EXIT_PASS;
  }

  char *control = o.control_dir[0] == '/' ? pg_strdup(o.control_dir) : NULL;
  if (!control) {
    char *cwd = getcwd(NULL, 0);
    control = cwd ? pg_path_join(cwd, o.control_dir) : NULL;
    free(cwd);
  }
  const char **dargv = calloc((size_t)argc + 8, sizeof *dargv);
  char exe[4096];
  if (!control || !dargv || daemon_argv(argc, argv, control, dargv, exe, sizeof exe) != 0) {
    free(control);
    free(dargv);
    fprintf(stderr, "phasegate serve: error: cannot find this executable (/proc/self/exe)\n");
    return PG_EXIT_FAIL;
  }
  o.control_dir = control;
  int pid = 0, already = 0;
  int rc = pg_serve_start(&o, dargv, &pid, &already, &err);
  if (rc == PG_OK)
    printf("phasegate serve: %s on %s (pid %d)\n", already ? "already running" : "running",
           control, pid);
  else
    fprintf(stderr, "phasegate serve: error: %s\n", err.message);
  free(control);
  free(dargv);
  return rc == PG_OK ? PG_EXIT_PASS : PG_EXIT_FAIL;
}

int pg_cmd_serve(int argc, char **argv) {
  struct pg_serve_options o;
  pg_serve_options_init(&o);
  int foreground = 0, stop = 0, show = 0;
  const char *python = NULL, *impl_spec = NULL;
  double stop_timeout = 10;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return PG_EXIT_PASS;
    }
    if (strcmp(a, "--foreground") == 0) foreground = 1;
    else if (strcmp(a, "--detached") == 0) o.detached = 1;
    else if (strcmp(a, "--stop") == 0) stop = 1;
    else if (strcmp(a, "--status") == 0) show = 1;
    else if (strncmp(a, "--", 2) != 0)
      return pg_cli_usage_error("serve", "unexpected argument '%s' (see --help)", a);
    else if (!v)
      return pg_cli_usage_error("serve", "%s needs a value (or is not an option of serve)", a);
    else {
      i++;
      double x = 0;
      if (strcmp(a, "--control") == 0) o.control_dir = v;
      else if (strcmp(a, "--op-dir") == 0) o.op_dir = v;
      else if (strcmp(a, "--impl") == 0) impl_spec = v;
      else if (strcmp(a, "--python") == 0) python = v;
      else if (strcmp(a, "--modes") == 0) o.modes = v;
      else if (strcmp(a, "--devices") == 0) o.devices = v;
      else if (strcmp(a, "--memory-limit") == 0) {
        if (pg_cli_parse_bytes(v, &o.rlimit_as) != 0)
          return pg_cli_usage_error("serve", "--memory-limit: expected a byte count, got '%s'", v);
      } else if (strcmp(a, "--slots") == 0) {
        if (pg_cli_parse_number("serve", a, v, 1, &x) != PG_EXIT_PASS) return PG_EXIT_ERROR;
        if (x != floor(x) || x > 1024)
          return pg_cli_usage_error("serve", "--slots needs a whole number 1..1024, got '%s'", v);
        o.slots = (int)x;
      } else if (strcmp(a, "--idle-timeout") == 0) {
        if (pg_cli_parse_number("serve", a, v, 1, &o.idle_timeout_s) != PG_EXIT_PASS) return PG_EXIT_ERROR;
      } else if (strcmp(a, "--start-timeout") == 0) {
        if (pg_cli_parse_number("serve", a, v, 1, &o.start_timeout_s) != PG_EXIT_PASS) return PG_EXIT_ERROR;
      } else if (strcmp(a, "--timeout") == 0) {
        if (pg_cli_parse_number("serve", a, v, 1, &stop_timeout) != PG_EXIT_PASS) return PG_EXIT_ERROR;
      } else {
        return pg_cli_usage_error("serve", "unknown option '%s' (see --help)", a);
      }
    }
  }
  if (!o.control_dir || !*o.control_dir)
    return pg_cli_usage_error("serve", "--control DIR is required");
  if (stop + show + foreground > 1)
    return pg_cli_usage_error("serve", "--stop, --status and --foreground exclude each other");
  /* The adapter's row says what its persistent process runs (python: phasegate's Python
   * worker for the interpreter given, the process a run leases for it). */
  struct pg_proc_program prog = {0};
  if (impl_spec) {
    struct pg_impl impl;
    struct pg_error e;
    if (pg_impl_parse(impl_spec, &impl, &e) != PG_OK)
      return pg_cli_usage_error("serve", "%s", e.message);
    impl.python = python;
    if (pg_impl_process(&impl, &prog, &e) != PG_OK)
      return pg_cli_usage_error("serve", "--impl: '%s' is not a persistent impl (worker:, "
                                "plugin: or python:): %s", impl_spec, e.message);
    o.prestart = &prog;
  }

  int rc = act(&o, argc, argv, foreground, stop, show, stop_timeout);
  pg_proc_program_reset(&prog);
  return rc;
}
