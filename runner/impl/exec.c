/* phasegate runner — the exec adapter: `exec:COMMAND`.
 *
 * For each (case, mode) call: a fresh directory <work>/<case>.<mode>.XXXXXX with
 * in/<name>.npy (primary inputs), out/ (empty) and request.json describing the call;
 * then `/bin/sh -c COMMAND` runs in the sandbox with PHASEGATE_REQUEST, _MODE,
 * _SUFFIX, _IN_DIR, _OUT_DIR, _DEVICE_ID set. Exit 77 = mode unavailable; any other
 * non-zero exit is a runtime failure; out/<name>.npy (or out/outputs.safetensors) is
 * read back with count/shape/dtype checks. tools/pg_exec_helper.py is the Python
 * side of this protocol.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/impl.h"
#include "base/base.h"
#include "phasegate/impl.h"
#include "tensors/tensors.h"

struct exec_ctx {
  const char *command;
  char env[6][4400];
};

static int exec_child(void *vctx) {
  struct exec_ctx *c = vctx;
  for (int i = 0; i < 6; i++) putenv(c->env[i]);
  execl("/bin/sh", "sh", "-c", c->command, (char *)NULL);
  fprintf(stderr, "phasegate: cannot exec /bin/sh: %s\n", strerror(errno));
  return 126;
}

static cJSON *shape_json(int ndim, const int64_t *shape) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
  return a;
}

static int write_text(const char *path, const char *text, struct pg_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return pg_error_set(err, PG_EIO, "%s: %s", path, strerror(errno));
  int ok = fputs(text, f) >= 0;
  ok &= fclose(f) == 0;
  return ok ? PG_OK : pg_error_set(err, PG_EIO, "%s: write failed", path);
}

/* The request object: everything the impl needs to know about the call (written as
 * request.json for exec:, sent as one protocol line for worker:). NULL when out of
 * memory. */
cJSON *pg__exec_request_json(const char *case_dir, const struct pg_impl_request *req) {
  cJSON *r = cJSON_CreateObject();
  if (!r) return NULL;
  cJSON_AddNumberToObject(r, "schema_version", 1);
  cJSON_AddStringToObject(r, "op", req->op);
  cJSON_AddStringToObject(r, "suffix", req->suffix);
  cJSON_AddNumberToObject(r, "up_to_module", req->up_to_module);
  cJSON_AddNumberToObject(r, "total_modules", req->total_modules);
  cJSON_AddStringToObject(r, "mode", req->mode);
  cJSON_AddNumberToObject(r, "device_id", req->device_id);
  cJSON_AddStringToObject(r, "case", req->case_id);
  cJSON *dims = cJSON_AddObjectToObject(r, "dims");
  for (int i = 0; dims && i < req->n_dims; i++)
    cJSON_AddNumberToObject(dims, req->dim_names[i], (double)req->dim_values[i]);
  cJSON *knobs = req->knobs_json ? cJSON_Parse(req->knobs_json) : NULL;
  cJSON_AddItemToObject(r, "knobs", knobs ? knobs : cJSON_CreateObject());
  char p[4600];
  snprintf(p, sizeof p, "%s/in", case_dir);
  cJSON_AddStringToObject(r, "in_dir", p);
  snprintf(p, sizeof p, "%s/out", case_dir);
  cJSON_AddStringToObject(r, "out_dir", p);
  cJSON *ins = cJSON_AddArrayToObject(r, "inputs");
  for (int i = 0; ins && i < req->n_inputs; i++) {
    const struct pg_tensor *t = &req->inputs[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "dtype", pg_dtype_name(t->dtype));
    cJSON_AddItemToObject(o, "shape", shape_json(t->dl.ndim, t->shape));
    snprintf(p, sizeof p, "%s/in/%s.npy", case_dir, t->name);
    cJSON_AddStringToObject(o, "path", p);
    cJSON_AddItemToArray(ins, o);
  }
  cJSON *outs = cJSON_AddArrayToObject(r, "outputs");
  for (int i = 0; outs && i < req->n_outputs; i++) {
    const struct pg_impl_output_spec *s = &req->outputs[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddStringToObject(o, "dtype", pg_dtype_name(s->dtype));
    cJSON_AddItemToObject(o, "shape", shape_json(s->ndim, s->shape));
    snprintf(p, sizeof p, "%s/out/%s.npy", case_dir, s->name);
    cJSON_AddStringToObject(o, "path", p);
    cJSON_AddItemToArray(outs, o);
  }
  return r;
}

static int write_request(const char *path, const char *case_dir,
                         const struct pg_impl_request *req, struct pg_error *err) {
  cJSON *r = pg__exec_request_json(case_dir, req);
  char *text = r ? cJSON_Print(r) : NULL;
  cJSON_Delete(r);
  if (!text) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int rc = write_text(path, text, err);
  free(text);
  return rc;
}

/* Case ids and modes are [A-Za-z0-9_.-]; anything else becomes '_' in file names. */
static void safe_name(const char *s, char *buf, size_t size) {
  size_t n = 0;
  for (; s && *s && n + 1 < size; s++)
    buf[n++] = ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                *s == '_' || *s == '.' || *s == '-') ? *s : '_';
  buf[n] = '\0';
}

/* A fresh case directory <work>/pg-<case>.<mode>.XXXXXX (into p->work) with in/<name>.npy
 * and an empty out/. On failure the directory is gone (or kept with keep_work). */
int pg__exec_case_dir(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  const char *base = req->work_dir;
  if (!base || !*base) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char cid[128], mode[64];
  safe_name(req->case_id, cid, sizeof cid);
  safe_name(req->mode, mode, sizeof mode);
  mkdir(base, 0777);
  char *dir = p->work;
  snprintf(p->work, sizeof p->work, "%s/pg-%s.%s.XXXXXX", base, cid, mode);
  if (!mkdtemp(dir)) {
    p->work[0] = '\0';
    return pg_error_set(err, PG_EIO, "cannot create a case directory under %s: %s", base,
                        strerror(errno));
  }
  char in_dir[4200], out_dir[4200];
  snprintf(in_dir, sizeof in_dir, "%s/in", dir);
  snprintf(out_dir, sizeof out_dir, "%s/out", dir);
  int rc = PG_OK;
  if (mkdir(in_dir, 0777) != 0 || mkdir(out_dir, 0777) != 0) {
    rc = pg_error_set(err, PG_EIO, "%s: cannot create in/ and out/: %s", dir, strerror(errno));
    goto fail;
  }
  for (int i = 0; i < req->n_inputs; i++) {
    char path[4600];
    snprintf(path, sizeof path, "%s/%s.npy", in_dir, req->inputs[i].name);
    rc = pg_npy_write(path, &req->inputs[i], err);
    if (rc != PG_OK) goto fail;
  }
  return PG_OK;
fail:
  if (req->keep_work) snprintf(out->work_dir, sizeof out->work_dir, "%s", dir);
  else pg_remove_tree(dir);
  return rc;
}

int pg__exec_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                   struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  const struct pg_impl_request *req = p->req;
  int rc = pg__exec_case_dir(p, out, err);
  if (rc != PG_OK) return rc;
  const char *dir = p->work;
  char in_dir[4200], out_dir[4200], request[4200];
  snprintf(in_dir, sizeof in_dir, "%s/in", dir);
  snprintf(out_dir, sizeof out_dir, "%s/out", dir);
  snprintf(request, sizeof request, "%s/request.json", dir);
  rc = write_request(request, dir, req, err);
  if (rc != PG_OK) goto fail;

  /* ctx only needs to live until the fork: the child has its own copy */
  struct exec_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.command = impl->target;
  snprintf(ctx.env[0], sizeof ctx.env[0], "PHASEGATE_REQUEST=%s", request);
  snprintf(ctx.env[1], sizeof ctx.env[1], "PHASEGATE_MODE=%s", req->mode);
  snprintf(ctx.env[2], sizeof ctx.env[2], "PHASEGATE_SUFFIX=%s", req->suffix);
  snprintf(ctx.env[3], sizeof ctx.env[3], "PHASEGATE_IN_DIR=%s", in_dir);
  snprintf(ctx.env[4], sizeof ctx.env[4], "PHASEGATE_OUT_DIR=%s", out_dir);
  snprintf(ctx.env[5], sizeof ctx.env[5], "PHASEGATE_DEVICE_ID=%d", req->device_id);
  struct pg_sandbox_opts so = {req->timeout_s, req->rlimit_as, 0, 1};
  rc = pg_sandbox_start(exec_child, &ctx, &so, &p->proc, err);
  if (rc != PG_OK) goto fail;
  p->running = 1;
  return PG_OK;
fail:
  if (req->keep_work) snprintf(out->work_dir, sizeof out->work_dir, "%s", dir);
  else pg_remove_tree(dir);
  return rc;
}

int pg__exec_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                    struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  const char *dir = p->work;
  char out_dir[4200];
  snprintf(out_dir, sizeof out_dir, "%s/out", dir);
  int rc = pg_sandbox_wait(&p->proc, &out->sandbox, err);
  if (rc != PG_OK) goto done;
  out->wall_ms = out->sandbox.wall_ms;
  const struct pg_sandbox_result *sr = &out->sandbox;
  if (pg__classify_abnormal(sr, req, "the exec impl", out)) goto done;
  if (sr->exit_code == PG_UNAVAILABLE) {
    out->status = PG_IMPL_UNAVAILABLE;
    snprintf(out->summary, sizeof out->summary, "mode '%s' is unavailable (the command exited "
             "with status 77)", req->mode);
    goto done;
  }
  if (sr->exit_code != 0) {
    char last[200];
    pg__last_line(sr->err, last, sizeof last);
    pg__outcome_fail(out, PG_CAT_RUNTIME, "the exec impl exited with status %d in mode '%s'%s%s%s",
                     sr->exit_code, req->mode,
                     sr->exit_code == 127 ? " (command not found?)" : "", last[0] ? ": " : "",
                     last);
    goto done;
  }
  rc = pg__collect_outputs(out_dir, req, out, err);
done:
  if (req->keep_work) snprintf(out->work_dir, sizeof out->work_dir, "%s", dir);
  else pg_remove_tree(dir);
  return rc;
}
