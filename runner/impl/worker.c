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
 *
 * A worker whose handshake offered protocol v1.1 ("shm": 1) gets its tensors in call
 * memory instead (docs/worker_protocol.md "Version 1.1"): the pool's memfd, laid out
 * and checked as the plugin host's (impl/plugin_shm.h), passed with the request line
 * (SCM_RIGHTS) when the process does not have it yet; no case directory, no files. The
 * answer must say which memory it used; guard bytes and the NaN prefill are checked as
 * for a plugin. --keep-work keeps files (the case directory is what it keeps).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "impl/adapter.h"
#include "impl/plugin_shm.h"
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
  int shm;              /* v1.1: the tensors are in call memory, not files */
  struct pg_callmem_layout lay;
  int mem_fd;           /* the pool's memfd holding them */
};

/* Outputs that point into the pool's call memory are never freed through them. */
static void drop_memory_outputs(struct worker_call *c, struct pg_impl_outcome *out) {
  if (!c->shm) return;
  for (int i = 0; i < out->n_outputs; i++) out->outputs[i].dl.data = NULL;
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
  out->n_outputs = 0;
}

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

/* Lays a v1.1 call out in the pool's call memory (impl/plugin_shm.h): outputs
 * prefilled and guarded, inputs copied in, each listed with its offset; "memory" says
 * how many bytes the call uses and whether its fd rides with this line (*send_fd). */
static int fill_memory(const struct pg_impl_pending *p, struct worker_call *c,
                       struct pg_impl_outcome *out, cJSON *request, int *send_fd,
                       struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__callmem_layout(p->req, out, &c->lay, err));
  int fresh = 0;
  char *base = pg__pool_memory(p->impl, c->proc, c->lay.size, &c->mem_fd, &fresh, err);
  if (!base) return err->code;
  *send_fd = fresh ? c->mem_fd : -1;
  pg__callmem_fill(base, &c->lay, p->req, out, request);
  cJSON *mem = cJSON_AddObjectToObject(request, "memory");
  if (!mem || !cJSON_AddNumberToObject(mem, "size", (double)c->lay.size) ||
      !cJSON_AddBoolToObject(mem, "new", fresh))
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  return PG_OK;
}

/* The request object of the call, with its tensors in files (a case directory, made
 * on first need) or in call memory (shm); plus the adapter's fields. *send_fd: the
 * memfd to pass along, or -1. */
static int build_request(struct pg_impl_pending *p, struct worker_call *c,
                         struct pg_impl_outcome *out, int shm, cJSON **request, int *send_fd,
                         struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  *request = NULL;
  *send_fd = -1;
  drop_memory_outputs(c, out); /* a resent call is laid out afresh */
  c->shm = shm;
  if (!c->shm && !c->dir) PG_RETURN_IF_ERROR(pg__exec_case_dir(req, 0, &c->dir, err));
  cJSON *r = c->shm ? pg__call_json(req) : pg__exec_request_json(c->dir, req);
  if (r && c->shm &&
      (!cJSON_AddArrayToObject(r, "inputs") || !cJSON_AddArrayToObject(r, "outputs"))) {
    cJSON_Delete(r);
    r = NULL;
  }
  if (r && c->extend && c->extend(p, r) != PG_OK) {
    cJSON_Delete(r);
    r = NULL;
  }
  if (!r) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int rc = c->shm ? fill_memory(p, c, out, r, send_fd, err) : PG_OK;
  if (rc != PG_OK) {
    drop_memory_outputs(c, out);
    c->shm = 0;
    cJSON_Delete(r);
    return rc;
  }
  *request = r;
  return PG_OK;
}

/* The request for the process now serving the call: in call memory when its handshake
 * offered protocol v1.1 (not under --keep-work, whose case directory is meant to hold
 * the files, nor for an output whose shape only the answer says), else, or when no call memory can be made (no memfd or seals here, none
 * left), in files: v1.1 workers serve both. */
static int request_json(struct pg_impl_pending *p, struct worker_call *c,
                        struct pg_impl_outcome *out, cJSON **request, int *send_fd,
                        struct pg_error *err) {
  int shm = c->proc->shm && !p->req->keep_work;
  /* an output of any shape (the inspection companion's probe, ndim -1) has no place to
   * be laid out in advance: files */
  for (int i = 0; i < p->req->n_outputs; i++) shm &= p->req->outputs[i].ndim >= 0;
  int rc = build_request(p, c, out, shm, request, send_fd, err);
  if (rc != PG_OK && shm) {
    pg_error_clear(err);
    rc = build_request(p, c, out, 0, request, send_fd, err);
  }
  return rc;
}

int pg__worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     pg__worker_extend_fn extend, struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  struct worker_call *c = calloc(1, sizeof *c);
  if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory");
  c->extend = extend;
  int rc = PG_OK, send_fd = -1;
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
  cJSON *request = NULL;
  if (rc == PG_OK && c->proc) {
    c->log_path = pg_strdup(c->proc->log_path);
    out->startup_ms = c->proc->calls == 0 ? c->proc->start_ms : 0;
    rc = request_json(p, c, out, &request, &send_fd, err);
  }
  if (rc == PG_OK && c->proc) rc = pg_proc_send(c->proc, request, send_fd, &c->id, err);
  cJSON_Delete(request);
  if (rc != PG_OK || !c->proc) { /* an error, or a fact already recorded */
    drop_memory_outputs(c, out);
    call_free(c, req, out);
    return rc;
  }
  p->call = c;
  p->running = 1;
  return PG_OK;
}

/* A v1.1 worker broke the extension: the fact; the process is not trusted again. */
static int broke_memory(struct pg_impl_outcome *out, const struct pg_impl_request *req,
                        const char *what) {
  pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the worker broke protocol v1.1 (tensors in "
                "call memory) in mode '%s': %.400s", req->mode, what);
  return 0;
}

/* What a v1.1 "ok" answer may say about outputs it could not write as declared:
 * "outputs": [{"name", "dtype", "shape"}, …] in declared order. 1: every entry is well
 * formed (a dtype or shape other than the declared one is then the impl's WRONG_OUTPUT
 * fact, *wrong = 1); 0: the list is malformed (why says how). */
static int described_outputs(const cJSON *list, const struct pg_impl_request *req,
                             struct pg_impl_outcome *out, int *wrong, char *why, size_t size) {
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != req->n_outputs)
    return snprintf(why, size, "\"outputs\" in its answer must list the %d output(s) in "
                    "declared order", req->n_outputs), 0;
  for (int i = 0; i < req->n_outputs && !*wrong; i++) {
    const cJSON *e = cJSON_GetArrayItem(list, i);
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    enum pg_dtype dt =
        pg_dtype_parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "dtype")));
    if (!name || strcmp(name, req->outputs[i].name) != 0)
      return snprintf(why, size, "\"outputs\"[%d] in its answer names '%.60s', expected "
                      "'%.60s'", i, name ? name : "(no name)", req->outputs[i].name), 0;
    int ndim = cJSON_IsArray(sh) ? cJSON_GetArraySize(sh) : -1, ok = dt != PG_DTYPE_INVALID;
    int64_t shape[PG_MAX_NDIM] = {0};
    ok = ok && ndim >= 0 && ndim <= PG_MAX_NDIM;
    for (int a = 0; ok && a < ndim; a++) {
      const cJSON *d = cJSON_GetArrayItem(sh, a);
      ok = cJSON_IsNumber(d) && d->valuedouble >= 0 && d->valuedouble < 9e15 &&
           d->valuedouble == floor(d->valuedouble);
      if (ok) shape[a] = (int64_t)d->valuedouble;
    }
    struct pg_tensor t;
    struct pg_error e2;
    pg_tensor_init(&t);
    if (!ok || pg_tensor_describe(&t, dt, ndim, shape, &e2) != PG_OK)
      return snprintf(why, size, "\"outputs\"[%d] ('%.60s') in its answer needs a dtype of "
                      "phasegate's vocabulary and a shape of at most %d non-negative integers",
                      i, name, PG_MAX_NDIM), 0;
    pg_tensor_set_name(&t, name);
    *wrong = !pg__impl_check_output(&t, req, i, out);
  }
  return 1;
}

/* The "ok" answer of a call in memory: the memory it used, the guard bytes, what it
 * says it could not write, outputs never written. Returns 1 when the process may serve
 * again. */
static int answered_in_memory(const struct worker_call *c, const struct pg_impl_request *req,
                              const cJSON *a, struct pg_impl_outcome *out) {
  char why[300];
  const cJSON *mem = cJSON_GetObjectItemCaseSensitive(a, "memory");
  if (!cJSON_IsNumber(mem)) {
    snprintf(why, sizeof why, "its \"ok\" answer has no \"memory\": %zu (the size of the "
             "call memory it used, from the request), as if it wrote files", c->lay.size);
    return broke_memory(out, req, why);
  }
  if (mem->valuedouble != (double)c->lay.size) {
    snprintf(why, sizeof why, "its answer says it used %.0f bytes of call memory, the request "
             "gave %zu", mem->valuedouble, c->lay.size);
    return broke_memory(out, req, why);
  }
  struct stat st;
  if (fstat(c->mem_fd, &st) != 0 || (uint64_t)st.st_size < (uint64_t)c->lay.size) {
    snprintf(why, sizeof why, "the call memory is %lld bytes after the call, the call needs "
             "%zu (truncated)", (long long)st.st_size, c->lay.size);
    return broke_memory(out, req, why);
  }
  size_t at = 0;
  int hit = pg__callmem_canary_hit(out, &c->lay, &at);
  if (hit >= 0) {
    out->output = hit;
    pg__impl_fact(out, PG_IMPL_FACT_CANARY_HIT, "the worker wrote past output buffer '%s' in "
                  "call memory (guard byte %zu after its %zu bytes was overwritten, mode '%s')",
                  req->outputs[hit].name, at, out->outputs[hit].nbytes, req->mode);
    return 0;
  }
  const cJSON *listed = cJSON_GetObjectItemCaseSensitive(a, "outputs");
  int wrong = 0;
  if (listed && !described_outputs(listed, req, out, &wrong, why, sizeof why))
    return broke_memory(out, req, why);
  if (wrong) return 1;
  int unwritten = pg__callmem_unwritten(out);
  if (unwritten >= 0) {
    out->output = unwritten;
    pg__impl_fact(out, PG_IMPL_FACT_UNWRITTEN_OUTPUT, "the worker answered \"ok\" but never "
                  "wrote output '%s' in call memory (still NaN-prefilled, mode '%s')",
                  req->outputs[unwritten].name, req->mode);
    return 1;
  }
  pg__impl_fact(out, PG_IMPL_FACT_OK, NULL);
  return 1;
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
    if (c->shm) return answered_in_memory(c, req, a, out);
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

static int resend(struct pg_impl_pending *p, struct worker_call *c, struct pg_impl_outcome *out,
                  struct pg_error *err) {
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
  if (!c->proc) return PG_EIMPL;
  cJSON *request = NULL;
  int send_fd = -1;
  int rc = request_json(p, c, out, &request, &send_fd, err);
  if (rc == PG_OK) rc = pg_proc_send(c->proc, request, send_fd, &c->id, err);
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
  if (rc == PG_OK && exited_between_calls(&r, c) && resend(p, c, out, err) == PG_OK) {
    pg_proc_result_reset(&r);
    pg_proc_result_init(&r);
    rc = pg_proc_wait(c->proc, c->id, req->timeout_s, &r, err);
  }
  if (!c->proc) { /* the fresh process could not be had: report the first ending */
    ended(p->impl, &r, req, "during the call", NULL, out);
    drop_memory_outputs(c, out);
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
  if (c->shm) { /* the outputs leave the call memory (copied when the call is DONE) */
    if (rc != PG_OK) out->status = PG_IMPL_FAILED;
    int crc = pg__callmem_outputs_out(out, err);
    if (rc == PG_OK) rc = crc;
  }
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
