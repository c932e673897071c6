/* phasegate runner — the exec adapter: `exec:COMMAND`.
 *
 * For each (case, mode) call: a fresh directory <work>/<case>.<mode>.XXXXXX with
 * in/<name>.npy (primary inputs), out/ (empty) and request.json describing the call;
 * then `/bin/sh -c COMMAND` runs in the sandbox with PHASEGATE_REQUEST, _MODE,
 * _SUFFIX, _IN_DIR, _OUT_DIR, _DEVICE_ID set. Exit 77 = mode unavailable; any other
 * non-zero exit is reported as that fact; out/<name>.npy (or out/outputs.safetensors)
 * is read back with count/shape/dtype checks. tools/pg_exec_helper.py is the Python
 * side of this protocol. A fresh process per call: nothing is kept between calls.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/adapter.h"
#include "base/base.h"
#include "phasegate/impl.h"
#include "tensors/tensors.h"

#define PG_EXEC_N_ENV 6

/* One call's state (pg_impl_pending.call). */
struct exec_call {
  struct pg_sandbox_proc proc;
  char *dir; /* the case directory */
};

struct exec_ctx {
  const char *command;
  char *env[PG_EXEC_N_ENV];
};

static int exec_child(void *vctx) {
  struct exec_ctx *c = vctx;
  for (int i = 0; i < PG_EXEC_N_ENV; i++) putenv(c->env[i]);
  execl("/bin/sh", "sh", "-c", c->command, (char *)NULL);
  fprintf(stderr, "phasegate: cannot exec /bin/sh: %s\n", strerror(errno));
  return 126;
}

static cJSON *shape_json(int ndim, const int64_t *shape) {
  if (ndim < 0) return cJSON_CreateNull(); /* any shape (impl.h) */
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

/* Adds key: "<case_dir>/<sub>[/<name>.npy]" to o; 0 when out of memory. */
static int add_path(cJSON *o, const char *key, const char *case_dir, const char *sub,
                    const char *name) {
  char *p = name ? pg_path_fmt("%s/%s/%s.npy", case_dir, sub, name)
                 : pg_path_fmt("%s/%s", case_dir, sub);
  int ok = p && cJSON_AddStringToObject(o, key, p);
  free(p);
  return ok;
}

static cJSON *tensor_json(const char *name, enum pg_dtype dtype, int ndim, const int64_t *shape,
                          const char *case_dir, const char *sub, int *ok) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "dtype", pg_dtype_name(dtype));
  cJSON_AddItemToObject(o, "shape", shape_json(ndim, shape));
  *ok &= add_path(o, "path", case_dir, sub, name);
  return o;
}

/* The request object: everything the impl needs to know about the call (request.json
 * for exec:, one protocol line for worker:). NULL when out of memory. */
cJSON *pg__exec_request_json(const char *case_dir, const struct pg_impl_request *req) {
  cJSON *r = pg__call_json(req);
  if (!r) return NULL;
  int ok = add_path(r, "in_dir", case_dir, "in", NULL);
  ok &= add_path(r, "out_dir", case_dir, "out", NULL);
  cJSON *ins = cJSON_AddArrayToObject(r, "inputs");
  for (int i = 0; ins && i < req->n_inputs; i++) {
    const struct pg_tensor *t = &req->inputs[i];
    cJSON_AddItemToArray(ins, tensor_json(t->name, t->dtype, t->dl.ndim, t->shape, case_dir,
                                          "in", &ok));
  }
  cJSON *outs = cJSON_AddArrayToObject(r, "outputs");
  for (int i = 0; outs && i < req->n_outputs; i++) {
    const struct pg_impl_output_spec *s = &req->outputs[i];
    cJSON_AddItemToArray(outs, tensor_json(s->name, s->dtype, s->ndim, s->shape, case_dir,
                                           "out", &ok));
  }
  if (!ok) {
    cJSON_Delete(r);
    return NULL;
  }
  return r;
}

/* request.json in the case directory. */
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

/* A fresh <base>/pg-<case>.<mode>.XXXXXX with in/ (the inputs), out/ and, with
 * request_file, request.json. */
int pg__exec_case_dir(const struct pg_impl_request *req, int request_file, char **dir_out,
                      struct pg_error *err) {
  const char *base = req->work_dir;
  if (!base || !*base) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char cid[128], mode[64];
  safe_name(req->case_id, cid, sizeof cid);
  safe_name(req->mode, mode, sizeof mode);
  mkdir(base, 0777);
  char *dir = pg_path_fmt("%s/pg-%s.%s.XXXXXX", base, cid, mode);
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (!mkdtemp(dir)) {
    int e = errno;
    free(dir);
    return pg_error_set(err, PG_EIO, "cannot create a case directory under %s: %s", base,
                        strerror(e));
  }
  *dir_out = dir;
  char *in_dir = pg_path_join(dir, "in"), *out_dir = pg_path_join(dir, "out");
  char *request = pg_path_join(dir, "request.json");
  int rc = PG_OK;
  if (!in_dir || !out_dir || !request)
    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  else if (mkdir(in_dir, 0777) != 0 || mkdir(out_dir, 0777) != 0)
    rc = pg_error_set(err, PG_EIO, "%s: cannot create in/ and out/: %s", dir, strerror(errno));
  for (int i = 0; rc == PG_OK && i < req->n_inputs; i++) {
    char *path = pg_path_fmt("%s/%s.npy", in_dir, req->inputs[i].name);
    rc = path ? pg_npy_write(path, &req->inputs[i], err)
              : pg_error_set(err, PG_ENOMEM, "out of memory");
    free(path);
  }
  if (rc == PG_OK && request_file) rc = write_request(request, dir, req, err);
  free(in_dir);
  free(out_dir);
  free(request);
  return rc;
}

/* The case directory is kept for the user (keep_work) or removed; dir is freed. */
void pg__exec_case_dir_done(const struct pg_impl_request *req, char *dir,
                            struct pg_impl_outcome *out) {
  if (!dir) return;
  if (req->keep_work) {
    free(out->work_dir);
    out->work_dir = dir;
    return;
  }
  pg_remove_tree(dir);
  free(dir);
}

static int exec_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  struct exec_call *c = calloc(1, sizeof *c);
  if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int rc = pg__exec_case_dir(req, 1, &c->dir, err);
  /* ctx only needs to live until the fork: the child has its own copy */
  struct exec_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.command = p->impl->target;
  if (rc == PG_OK) {
    ctx.env[0] = pg_path_fmt("PHASEGATE_REQUEST=%s/request.json", c->dir);
    ctx.env[1] = pg_path_fmt("PHASEGATE_MODE=%s", req->mode);
    ctx.env[2] = pg_path_fmt("PHASEGATE_SUFFIX=%s", req->suffix);
    ctx.env[3] = pg_path_fmt("PHASEGATE_IN_DIR=%s/in", c->dir);
    ctx.env[4] = pg_path_fmt("PHASEGATE_OUT_DIR=%s/out", c->dir);
    ctx.env[5] = pg_path_fmt("PHASEGATE_DEVICE_ID=%d", req->device_id);
    for (int i = 0; i < PG_EXEC_N_ENV; i++)
      if (!ctx.env[i]) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  struct pg_sandbox_opts so = {req->timeout_s, req->rlimit_as, 0, 1};
  if (rc == PG_OK) rc = pg_sandbox_start(exec_child, &ctx, &so, &c->proc, err);
  for (int i = 0; i < PG_EXEC_N_ENV; i++) free(ctx.env[i]);
  if (rc != PG_OK) {
    pg__exec_case_dir_done(req, c->dir, out);
    free(c);
    return rc;
  }
  p->call = c;
  p->running = 1;
  return PG_OK;
}

/* What the finished command did: an abnormal end, "unavailable", a non-zero exit, or the
 * outputs it left in out/. */
static int exec_fact(const struct exec_call *c, const struct pg_impl_request *req,
                     struct pg_impl_outcome *out, struct pg_error *err) {
  const struct pg_sandbox_result *sr = &out->sandbox;
  if (pg__impl_abnormal(sr, req, "the exec impl", out)) return PG_OK;
  if (sr->exit_code == PG_UNAVAILABLE)
    return pg__impl_fact(out, PG_IMPL_FACT_UNAVAILABLE, "mode '%s' is unavailable (the command "
                         "exited with status 77)", req->mode), PG_OK;
  if (sr->exit_code != 0) {
    char last[200];
    pg__last_line(sr->err, last, sizeof last);
    out->code = sr->exit_code;
    return pg__impl_fact(out, PG_IMPL_FACT_EXIT_NONZERO, "the exec impl exited with status %d "
                         "in mode '%s'%s%s%s", sr->exit_code, req->mode,
                         sr->exit_code == 127 ? " (command not found?)" : "",
                         last[0] ? ": " : "", last), PG_OK;
  }
  return pg__collect_case_outputs(c->dir, req, out, err);
}

static int exec_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                       struct pg_error *err) {
  struct exec_call *c = p->call;
  int rc = pg__impl_wait(&c->proc, out, err);
  if (rc == PG_OK) rc = exec_fact(c, p->req, out, err);
  pg__exec_case_dir_done(p->req, c->dir, out);
  free(c);
  p->call = NULL;
  return rc;
}

int pg__command_probe(struct pg_impl_probe *p, struct pg_error *err) {
  for (const char *c = p->impl->target; *c; c++)
    if (*c != ' ' && *c != '\t' && *c != '\n') return PG_OK;
  return pg_error_set(err, PG_EINVAL, "--impl '%s:%s': the command is empty",
                      p->impl->ops->name, p->impl->target);
}

const struct pg_impl_ops pg__exec_ops = {
    .name = "exec",
    .usage = "exec:COMMAND",
    .probe_start = pg__command_probe,
    .start = exec_start,
    .finish = exec_finish,
};
