/* phasegate runner — the worker adapter: `worker:COMMAND`, a persistent exec impl
 * (DESIGN.md §6 "Worker protocol, version 1", docs/worker_protocol.md).
 *
 * The command is started once per (mode, device) as `/bin/sh -c COMMAND` and serves
 * every call of the run: each call gets the exec adapter's case directory (in/<name>.npy,
 * empty out/) and its request object plus an "id" as one line on the protocol socket;
 * the worker writes out/<name>.npy and answers ok / unavailable / error. Outputs are
 * read back with the exec adapter's checks. A call without a proper answer (timeout,
 * crash, exit, a line that is not the answer) ends the process; the next call starts
 * a fresh one, so one bad case never changes another case's verdict.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "impl/impl.h"
#include "impl/pool.h"
#include "phasegate/impl.h"

/* The worker's stderr tail keeps the reason; the summary adds where its log is. */
static void fail_with_log(struct pg_impl_outcome *out, const struct pg_proc *p,
                          const char *log_path) {
  (void)p;
  if (!log_path) return;
  size_t n = strlen(out->summary);
  snprintf(out->summary + n, sizeof out->summary - n, " (worker log: %s)", log_path);
}

/* A start that failed: the facts of what the process did instead of its handshake. */
static void start_failed(struct pg_impl_pending *p, struct pg_proc_result *r,
                         const struct pg_error *e, struct pg_impl_outcome *out) {
  pg__proc_to_sandbox(r, &out->sandbox);
  out->wall_ms = r->wall_ms;
  char last[200];
  pg__last_line(out->sandbox.err, last, sizeof last);
  if (r->end == PG_PROC_EXITED && r->signaled) {
    char sig[32];
    pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker crashed with %s before its handshake "
                     "(mode '%s')%s%s", pg_signal_name(r->signo, sig, sizeof sig),
                     p->req->mode, last[0] ? ": " : "", last);
  } else if (r->end == PG_PROC_PROTOCOL) {
    pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker did not start the worker protocol: %s",
                     r->protocol);
  } else {
    pg__outcome_fail(out, PG_CAT_RUNTIME, "%.300s%s%.150s", e->message, last[0] ? ": " : "",
                     last);
  }
}

int pg__worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     struct pg_error *err) {
  int rc = pg__exec_case_dir(p, out, err);
  if (rc != PG_OK) return rc;
  cJSON *request = pg__exec_request_json(p->work, p->req);
  if (!request) {
    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    goto fail;
  }
  struct pg_proc_result sf;
  pg_proc_result_init(&sf);
  struct pg_error se;
  pg_error_clear(&se);
  struct pg_proc *w = pg__pool_acquire(p->impl, p->req, &sf, &se);
  if (!w) {
    if (se.code != PG_EIMPL) {
      cJSON_Delete(request);
      *err = se;
      rc = se.code;
      goto fail;
    }
    start_failed(p, &sf, &se, out);
    pg_proc_result_reset(&sf);
    cJSON_Delete(request);
    if (!p->req->keep_work) pg_remove_tree(p->work);
    return PG_OK; /* the outcome says what happened; nothing is running */
  }
  rc = pg_proc_send(w, request, -1, &p->call_id, err);
  cJSON_Delete(request);
  if (rc != PG_OK) goto fail;
  p->worker = w;
  p->running = 1;
  return PG_OK;
fail:
  if (p->req->keep_work) snprintf(out->work_dir, sizeof out->work_dir, "%s", p->work);
  else pg_remove_tree(p->work);
  return rc;
}

/* An answer line: ok → outputs, unavailable → SKIPPED, error → runtime. Returns 1
 * when the answer was one of those (the process stays healthy). */
static int judge_answer(struct pg_impl_pending *p, const cJSON *a, struct pg_impl_outcome *out,
                        int *rc, struct pg_error *err) {
  const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status"));
  const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "message"));
  const struct pg_impl_request *req = p->req;
  if (strcmp(status, "ok") == 0) {
    char *out_dir = pg_path_fmt("%s/out", p->work);
    *rc = out_dir ? pg__collect_outputs(out_dir, req, out, err)
                  : pg_error_set(err, PG_ENOMEM, "out of memory");
    free(out_dir);
    return 1;
  }
  if (strcmp(status, "unavailable") == 0) {
    out->status = PG_IMPL_UNAVAILABLE;
    snprintf(out->summary, sizeof out->summary, "mode '%s' is unavailable (%.400s)", req->mode,
             msg && *msg ? msg : "the worker answered \"unavailable\"");
    return 1;
  }
  if (strcmp(status, "error") == 0) {
    int oom = pg_sandbox_text_says_oom(msg) || pg_sandbox_text_says_oom(out->sandbox.err);
    pg__outcome_fail(out, PG_CAT_RUNTIME, "%sthe worker reported an error in mode '%s': %.400s",
                     oom ? "allocation failure: " : "", req->mode,
                     msg && *msg ? msg : "(no message)");
    return 1;
  }
  pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker broke the protocol: unknown status '%.60s' "
                   "(expected ok, unavailable or error)", status);
  return 0;
}

int pg__worker_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  struct pg_proc *w = p->worker;
  char *log_path = pg_strdup(w->log_path);
  struct pg_proc_result r;
  pg_proc_result_init(&r);
  int rc = pg_proc_wait(w, p->call_id, req->timeout_s, &r, err);
  int healthy = 0;
  if (rc == PG_OK) {
    /* /bin/sh reports a child killed by signal N as status 128+N (when it did not
     * exec the command itself): a crash, not an exit. */
    if (r.exited && r.exit_code > 128 && r.exit_code < 128 + 65) {
      r.exited = 0;
      r.signaled = 1;
      r.signo = r.exit_code - 128;
    }
    pg__proc_to_sandbox(&r, &out->sandbox);
    out->wall_ms = r.wall_ms;
    if (r.end == PG_PROC_ANSWERED) {
      healthy = judge_answer(p, r.answer, out, &rc, err);
    } else if (!pg__classify_abnormal(&out->sandbox, req, "the worker", out)) {
      char last[200];
      pg__last_line(out->sandbox.err, last, sizeof last);
      if (r.end == PG_PROC_PROTOCOL)
        pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker broke the protocol in mode '%s': %s",
                         req->mode, r.protocol);
      else if (r.exited)
        pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker exited with status %d during the call "
                         "in mode '%s'%s%s", r.exit_code, req->mode, last[0] ? ": " : "", last);
      else
        pg__outcome_fail(out, PG_CAT_RUNTIME, "the worker closed its protocol fds during the "
                         "call in mode '%s'", req->mode);
    }
    if (out->status == PG_IMPL_FAILED && (!healthy || r.end != PG_PROC_ANSWERED))
      fail_with_log(out, w, log_path);
  }
  pg_proc_result_reset(&r);
  pg__pool_release(p->impl, w, rc == PG_OK && healthy);
  free(log_path);
  if (req->keep_work) snprintf(out->work_dir, sizeof out->work_dir, "%s", p->work);
  else pg_remove_tree(p->work);
  return rc;
}
