/* phasegate runner — the worker adapter: `worker:COMMAND`, a persistent exec impl
 * (docs/design.md §6 "Worker protocol, version 1", docs/worker_protocol.md).
 *
 * The command is started once per (mode, device) as `/bin/sh -c COMMAND` (or leased
 * warm from `phasegate serve`) and serves every call of the run: each call gets the
 * exec adapter's case directory (in/<name>.npy, empty out/) and its request object plus
 * an "id" as one line on the protocol socket; the worker writes out/<name>.npy and
 * answers ok / unavailable / error / structural. Outputs are read back with the exec adapter's
 * checks. A call without a proper answer (timeout, crash, exit, a line that is not the
 * answer) ends the process; the next call starts a fresh one, so one bad case never
 * changes another case's verdict. Reports facts; run/classify.c decides.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "impl/adapter.h"
#include "impl/pool.h"
#include "phasegate/impl.h"

/* One call's state (pg_impl_pending.call). */
struct worker_call {
  char *dir;            /* the case directory */
  pg__worker_extend_fn extend; /* adds the adapter's fields to the request (or NULL) */
  struct pg_proc *proc; /* the pool's process serving the call */
  int64_t id;
  int retried;          /* sent once more after the process exited 0 (see resend) */
  char *log_path;       /* the process's log, named in failure summaries */
};

static void call_free(struct worker_call *c, const struct pg_impl_request *req,
                      struct pg_impl_outcome *out) {
  if (!c) return;
  pg__exec_case_dir_done(req, c->dir, out);
  free(c->log_path);
  free(c);
}

/* Appends " (worker log: PATH)" to the summary: the log keeps the whole story (an
 * empty one is not kept, so not named). */
static void name_log(struct pg_impl_outcome *out, const char *log_path) {
  size_t n = strlen(out->summary);
  if (pg_proc_log_has_bytes(log_path) && n + 32 < sizeof out->summary)
    snprintf(out->summary + n, sizeof out->summary - n, " (worker log: %s)", log_path);
}

/* /bin/sh reports a child killed by signal N as status 128+N when it did not exec the
 * command itself: that is a crash, not an exit. */
static void shell_signal(struct pg_proc_result *r) {
  if (r->exited && r->exit_code > 128 && r->exit_code < 128 + 65) {
    r->exited = 0;
    r->signaled = 1;
    r->signo = r->exit_code - 128;
  }
}

/* The facts of a process that ended without a proper answer (in the call or before
 * its handshake, `when`). */
static void ended(const struct pg_impl *impl, struct pg_proc_result *r,
                  const struct pg_impl_request *req, const char *when, const char *start_error,
                  struct pg_impl_outcome *out) {
  shell_signal(r);
  pg__proc_to_sandbox(r, &out->sandbox);
  out->wall_ms = r->wall_ms;
  if (start_error && r->end != PG_PROC_EXITED) { /* no handshake: say what was expected */
    pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "%.480s", start_error);
    return;
  }
  if (pg__impl_abnormal(&out->sandbox, req, "the worker", out)) return;
  char line[200], last[200];
  pg__last_line(out->sandbox.err, line, sizeof line);
  pg__impl_quote(impl, line, last, sizeof last);
  if (r->end == PG_PROC_PROTOCOL) {
    pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the worker broke the protocol %s in mode "
                  "'%s': %s", when, req->mode, r->protocol);
  } else if (start_error) {
    pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "%.300s%s%.150s", start_error,
                  last[0] ? ": " : "", last);
  } else if (r->exited) {
    out->code = r->exit_code;
    pg__impl_fact(out, PG_IMPL_FACT_EXIT_NONZERO, "the worker exited with status %d %s in mode "
                  "'%s'%s%s", r->exit_code, when, req->mode, last[0] ? ": " : "", last);
  } else {
    pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the worker closed its protocol fds %s in "
                  "mode '%s'", when, req->mode);
  }
}

/* The request object of the call: exec's, plus the adapter's fields. NULL: no memory. */
static cJSON *request_json(const struct pg_impl_pending *p, const struct worker_call *c) {
  cJSON *request = pg__exec_request_json(c->dir, p->req);
  if (request && c->extend && c->extend(p, request) != PG_OK) {
    cJSON_Delete(request);
    request = NULL;
  }
  return request;
}

int pg__worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     pg__worker_extend_fn extend, struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  struct worker_call *c = calloc(1, sizeof *c);
  if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory");
  c->extend = extend;
  int rc = pg__exec_case_dir(req, 0, &c->dir, err);
  cJSON *request = rc == PG_OK ? request_json(p, c) : NULL;
  if (rc == PG_OK && !request) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    struct pg_proc_result sf;
    pg_proc_result_init(&sf);
    struct pg_error se;
    pg_error_clear(&se);
    c->proc = pg__pool_acquire(p->impl, req, &sf, &se);
    if (!c->proc && se.code == PG_EIMPL) { /* it did something else than its handshake */
      ended(p->impl, &sf, req, "before its handshake", se.message, out);
    } else if (!c->proc) {
      *err = se;
      rc = se.code;
    }
    pg_proc_result_reset(&sf);
  }
  if (rc == PG_OK && c->proc) {
    c->log_path = pg_strdup(c->proc->log_path);
    out->startup_ms = c->proc->calls == 0 ? c->proc->start_ms : 0;
    rc = pg_proc_send(c->proc, request, -1, &c->id, err);
  }
  cJSON_Delete(request);
  if (rc != PG_OK || !c->proc) { /* an error, or a fact already recorded */
    call_free(c, req, out);
    return rc;
  }
  p->call = c;
  p->running = 1;
  return PG_OK;
}

/* An answer line: ok → outputs, unavailable → SKIPPED, error → a worker error, structural
 * → the impl's shape is wrong (a missing function, an output too many). Returns 1
 * when it was one of those (the process may serve again). */
static int answered(const struct pg_impl *impl, struct worker_call *c,
                    const struct pg_impl_request *req, const cJSON *a,
                    struct pg_impl_outcome *out, int *rc, struct pg_error *err) {
  const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status"));
  const char *said = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "message"));
  /* the worker's words pass the impl's barrier; the sentences around them are ours */
  char msg[420];
  pg__impl_quote(impl, said, msg, sizeof msg);
  if (strcmp(status, "ok") == 0) {
    /* optional (docs/worker_protocol.md "The protocol"): the device the impl ran on */
    const char *dev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "device_name"));
    if (dev) snprintf(out->device_name, sizeof out->device_name, "%s", dev);
    *rc = pg__collect_case_outputs(c->dir, req, out, err);
    return 1;
  }
  if (strcmp(status, "unavailable") == 0) {
    pg__impl_fact(out, PG_IMPL_FACT_UNAVAILABLE, "mode '%s' is unavailable (%.400s)", req->mode,
                  *msg ? msg : "the worker answered \"unavailable\"");
    return 1;
  }
  if (strcmp(status, "structural") == 0) {
    /* "missing": the function (or staged file) the phase calls is not there */
    int missing = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "missing"));
    pg__impl_fact(out, missing ? PG_IMPL_FACT_MISSING_FUNCTION : PG_IMPL_FACT_WORKER_STRUCTURAL,
                  "the worker found the impl malformed in mode '%s': %.400s", req->mode,
                  *msg ? msg : "(no message)");
    return 1;
  }
  if (strcmp(status, "error") == 0) {
    const char *stage = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "stage"));
    int import = stage && strcmp(stage, "import") == 0;
    int oom = !import && (pg_sandbox_text_says_oom(said) || out->sandbox.says_oom);
    pg__impl_fact(out, import ? PG_IMPL_FACT_IMPORT_FAILED
                       : oom  ? PG_IMPL_FACT_OOM
                              : PG_IMPL_FACT_WORKER_ERROR,
                  "%sthe worker reported an error %sin mode '%s': %.400s",
                  oom ? "allocation failure: " : "", import ? "importing the impl " : "",
                  req->mode, *msg ? msg : "(no message)");
    /* the exception as data, for classify's table of environment failures */
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "exc_type"));
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "exc_message"));
    snprintf(out->exc_type, sizeof out->exc_type, "%s", type ? type : "");
    snprintf(out->exc_message, sizeof out->exc_message, "%s", text ? text : "");
    return 1;
  }
  char what[64];
  pg__impl_quote(impl, status, what, sizeof what);
  pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the worker broke the protocol in mode '%s': "
                "unknown status '%.60s' (expected ok, unavailable, error or structural)", req->mode, what);
  return 0;
}

/* A process that exited 0 while the request was pending most likely ended between calls
 * (its exit raced with the request): the request goes once more to a fresh process, so
 * the case is not blamed for the previous one's exit. */
static int exited_between_calls(const struct pg_proc_result *r, const struct worker_call *c) {
  return !c->retried && r->end == PG_PROC_EXITED && r->exited && r->exit_code == 0;
}

static int resend(struct pg_impl_pending *p, struct worker_call *c, struct pg_error *err) {
  struct pg_proc_result sf;
  pg_proc_result_init(&sf);
  struct pg_error se;
  pg_error_clear(&se);
  c->retried = 1;
  pg__pool_release(p->impl, c->proc, 0);
  c->proc = pg__pool_acquire(p->impl, p->req, &sf, &se);
  pg_proc_result_reset(&sf);
  if (c->proc) {
    free(c->log_path);
    c->log_path = pg_strdup(c->proc->log_path);
  }
  cJSON *request = c->proc ? request_json(p, c) : NULL;
  int rc = request ? pg_proc_send(c->proc, request, -1, &c->id, err) : PG_EIMPL;
  cJSON_Delete(request);
  return rc;
}

int pg__worker_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err) {
  struct worker_call *c = p->call;
  const struct pg_impl_request *req = p->req;
  struct pg_proc_result r;
  pg_proc_result_init(&r);
  int rc = pg_proc_wait(c->proc, c->id, req->timeout_s, &r, err);
  if (rc == PG_OK && exited_between_calls(&r, c) && resend(p, c, err) == PG_OK) {
    pg_proc_result_reset(&r);
    pg_proc_result_init(&r);
    rc = pg_proc_wait(c->proc, c->id, req->timeout_s, &r, err);
  }
  if (!c->proc) { /* the fresh process could not be had: report the first ending */
    ended(p->impl, &r, req, "during the call", NULL, out);
    pg_proc_result_reset(&r);
    call_free(c, req, out);
    p->call = NULL;
    return rc;
  }
  int healthy = 0;
  if (rc == PG_OK && r.end == PG_PROC_ANSWERED) {
    pg__proc_to_sandbox(&r, &out->sandbox);
    out->wall_ms = r.wall_ms;
    healthy = answered(p->impl, c, req, r.answer, out, &rc, err);
    if (!healthy) name_log(out, c->log_path);
  } else if (rc == PG_OK) {
    ended(p->impl, &r, req, "during the call", NULL, out);
    name_log(out, c->log_path);
  }
  pg_proc_result_reset(&r);
  pg__pool_release(p->impl, c->proc, rc == PG_OK && healthy);
  call_free(c, req, out);
  p->call = NULL;
  return rc;
}

static int worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                        struct pg_error *err) {
  return pg__worker_start(p, out, NULL, err);
}

static int worker_process(const struct pg_impl *impl, struct pg_proc_program *out,
                          struct pg_error *err) {
  return pg__process_of_target(impl, PG_PROC_COMMAND, out, err);
}

const struct pg_impl_ops pg__worker_ops = {
    .name = "worker",
    .usage = "worker:COMMAND",
    .probe_start = pg__command_probe,
    .start = worker_start,
    .finish = pg__worker_finish,
    .prestart = pg__pool_prestart,
    .close = pg__pool_close,
    .process = worker_process,
};
