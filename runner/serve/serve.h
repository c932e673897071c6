/* phasegate runner — the serve room: `phasegate serve`, a daemon that owns warm impl
 * processes across CTest tests (docs/design.md §6 "Under CTest", docs/serve.md): its
 * options, the daemon itself (daemon.c: pools, leases, connections; loop.c: setup,
 * the poll loop, shutdown) and starting and stopping it (ctl.c). The client half a
 * run uses to lease a process, and the control protocol's wire, stay in the impl room
 * (impl/serve_client.h), which this room builds on. Only cli/cmd_serve.c calls it.
 */
#ifndef PHASEGATE_SERVE_H
#define PHASEGATE_SERVE_H

#include <stdint.h>
#include <stdio.h>

#include "impl/impl.h"

/* ------------------------------------------------------------------ daemon */

struct pg_serve_options {
  const char *control_dir;   /* required; created mode 0700 */
  const char *op_dir;        /* informational (shown by status) */
  const struct pg_proc_program *prestart; /* what to prestart, NULL for nothing */
  const char *modes;         /* prestart: comma list (default "sim") */
  const char *devices;       /* prestart: comma list of device ids (default "0") */
  uint64_t rlimit_as;        /* prestart: RLIMIT_AS as `run --memory-limit` passes it */
  int slots;                 /* processes per key (default 1) */
  double idle_timeout_s;     /* exit after this long without clients (default 600) */
  double start_timeout_s;    /* prestart handshake limit (default 120) */
  int detached;              /* spawned by pg_serve_start: close fds >= 3 (but the log's) */
};

void pg_serve_options_init(struct pg_serve_options *o);

/* Runs the daemon in this process until it is stopped (--stop, SIGTERM/SIGINT), idle
 * for idle_timeout_s, or its control directory (or socket) disappears; then kills
 * every process it owns and removes its socket and pidfile. Event lines go to `log`
 * (may be NULL). PG_OK after an orderly end. PG_EINVAL: another daemon holds the
 * control directory, or the directory is not ours; PG_EIO: it could not be set up.
 * Clears this process's environment (workers get their client's). */
int pg_serve_daemon(const struct pg_serve_options *o, FILE *log, struct pg_error *err);

/* Makes sure a daemon serves o->control_dir and returns once it answers: under an
 * flock of <control>/serve.lock (racing starters: one daemon), a daemon that answers
 * with the same executable is kept (*already = 1); one of another build is stopped;
 * a stale socket / pidfile (no live holder) is removed, a hung holder killed; then
 * daemon_argv (a command running pg_serve_daemon, e.g. `phasegate serve --foreground
 * --detached …`) is spawned in a new session, stdin /dev/null, stdout and stderr
 * appended to <control>/serve.log, and waited for until it answers a ping (at most
 * 30 s). *pid: the daemon's pid. PG_EIO with the log's tail when it did not come up. */
int pg_serve_start(const struct pg_serve_options *o, const char *const *daemon_argv, int *pid,
                   int *already, struct pg_error *err);

/* Stops the daemon of control_dir (if any) and waits until it is gone with every
 * process it owned; removes stale files. Idempotent: *pid = 0 when none was running.
 * PG_ETIMEOUT when it did not go within timeout_s (then it has been killed). */
int pg_serve_stop(const char *control_dir, double timeout_s, int *pid, struct pg_error *err);

#endif
