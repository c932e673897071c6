/* phasegate runner — adapter dispatch and the pieces the three adapters share:
 * spec parsing, outcome helpers, reading dumped outputs back with structural checks,
 * and the classification of abnormal child endings (timeout, signal, OOM). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/impl.h"
#include "base/base.h"
#include "tensors/tensors.h"

int pg_impl_parse(const char *spec, struct pg_impl *impl, struct pg_error *err) {
  static const struct { const char *prefix; enum pg_impl_kind kind; } kinds[] = {
      {"plugin:", PG_IMPL_PLUGIN}, {"exec:", PG_IMPL_EXEC}, {"replay:", PG_IMPL_REPLAY},
      {"worker:", PG_IMPL_WORKER}};
  memset(impl, 0, sizeof *impl);
  if (!spec || !*spec) return pg_error_set(err, PG_EINVAL, "empty --impl");
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    size_t n = strlen(kinds[i].prefix);
    if (strncmp(spec, kinds[i].prefix, n) == 0) {
      if (!spec[n])
        return pg_error_set(err, PG_EINVAL, "--impl '%s': nothing after '%s'", spec,
                            kinds[i].prefix);
      if (strlen(spec + n) >= sizeof impl->target)
        return pg_error_set(err, PG_ELIMIT, "--impl: spec too long");
      impl->kind = kinds[i].kind;
      snprintf(impl->target, sizeof impl->target, "%s", spec + n);
      return PG_OK;
    }
  }
  size_t len = strlen(spec);
  if (len > 3 && strcmp(spec + len - 3, ".so") == 0 && len < sizeof impl->target) {
    impl->kind = PG_IMPL_PLUGIN;
    snprintf(impl->target, sizeof impl->target, "%s", spec);
    return PG_OK;
  }
  size_t scheme = strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
  if (scheme > 0 && spec[scheme] == ':')
    return pg_error_set(err, PG_EINVAL,
                        "--impl '%s': unknown scheme '%.*s:'; expected plugin:PATH.so, "
                        "exec:COMMAND, worker:COMMAND or replay:DIR", spec, (int)scheme, spec);
  return pg_error_set(err, PG_EINVAL,
                      "--impl '%s': expected plugin:PATH.so, exec:COMMAND, worker:COMMAND or "
                      "replay:DIR", spec);
}

int pg_impl_check_start(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                        struct pg_impl_probe *p, struct pg_error *err) {
  memset(p, 0, sizeof *p);
  p->impl = impl;
  p->timeout_s = timeout_s;
  struct stat st;
  switch (impl->kind) {
    case PG_IMPL_PLUGIN: return pg__plugin_probe_start(p, rlimit_as, err);
    case PG_IMPL_EXEC:
    case PG_IMPL_WORKER:
      for (const char *c = impl->target; *c; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n') return PG_OK;
      return pg_error_set(err, PG_EINVAL, "--impl '%s:%s': the command is empty",
                          impl->kind == PG_IMPL_EXEC ? "exec" : "worker", impl->target);
    case PG_IMPL_REPLAY:
      if (stat(impl->target, &st) != 0)
        return pg_error_set(err, PG_ENOENT, "replay directory '%s' does not exist (%s)",
                            impl->target, strerror(errno));
      if (!S_ISDIR(st.st_mode))
        return pg_error_set(err, PG_EINVAL, "replay directory '%s' is not a directory",
                            impl->target);
      return PG_OK;
  }
  return pg_error_set(err, PG_EINVAL, "unknown impl kind");
}

int pg_impl_check_finish(struct pg_impl_probe *p, struct pg_error *err) {
  return p->running ? pg__plugin_probe_finish(p, err) : PG_OK;
}

void pg_impl_check_cancel(struct pg_impl_probe *p) {
  if (!p->running) return;
  kill(-p->proc.pid, SIGKILL); /* its own process group (sandbox) */
  kill(p->proc.pid, SIGKILL);
  struct pg_error e;
  pg_impl_check_finish(p, &e);
}

int pg_impl_check(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                  struct pg_error *err) {
  struct pg_impl_probe p;
  int rc = pg_impl_check_start(impl, timeout_s, rlimit_as, &p, err);
  return rc == PG_OK ? pg_impl_check_finish(&p, err) : rc;
}

const char *pg_category_name(enum pg_category c) {
  switch (c) {
    case PG_CAT_PRECISION: return "precision";
    case PG_CAT_STRUCTURAL: return "structural";
    case PG_CAT_RUNTIME: return "runtime";
    case PG_CAT_INFRA: return "infra";
    case PG_CAT_OTHER: return "other";
    default: return NULL;
  }
}

void pg_impl_symbol(const char *op, const char *suffix, char *buf, size_t size) {
  snprintf(buf, size, "%s_module%s_wrapper", op, suffix);
}

void pg_impl_outcome_init(struct pg_impl_outcome *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&o->outputs[i]);
  pg_sandbox_result_init(&o->sandbox);
}

void pg_impl_outcome_reset(struct pg_impl_outcome *o) {
  if (!o) return;
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&o->outputs[i]);
  pg_sandbox_result_reset(&o->sandbox);
  pg_impl_outcome_init(o);
}

int pg__outcome_fail(struct pg_impl_outcome *out, enum pg_category cat, const char *fmt, ...) {
  out->status = PG_IMPL_FAILED;
  out->category = cat;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->summary, sizeof out->summary, fmt, ap);
  va_end(ap);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
  out->n_outputs = 0;
  return 0;
}

int pg__classify_abnormal(const struct pg_sandbox_result *sr, const struct pg_impl_request *req,
                          const char *what, struct pg_impl_outcome *out) {
  int oom = pg_sandbox_text_says_oom(sr->err) || pg_sandbox_text_says_oom(sr->out);
  if (sr->timed_out)
    return pg__outcome_fail(out, PG_CAT_RUNTIME,
                            "%s timed out after %g s in mode '%s' (process group killed)", what,
                            req->timeout_s, req->mode),
           1;
  if (sr->signaled) {
    char buf[32];
    const char *sig = pg_signal_name(sr->signo, buf, sizeof buf);
    if (oom)
      return pg__outcome_fail(out, PG_CAT_RUNTIME,
                              "allocation failure: %s ran out of memory and died with %s in "
                              "mode '%s'", what, sig, req->mode),
             1;
    return pg__outcome_fail(out, PG_CAT_RUNTIME, "%s crashed with %s in mode '%s'", what, sig,
                            req->mode),
           1;
  }
  /* A sanitizer runtime turns a crash into a report and exit(1). */
  if (sr->exited && sr->exit_code != 0 && sr->err &&
      (strstr(sr->err, "AddressSanitizer: SEGV") || strstr(sr->err, "AddressSanitizer: BUS") ||
       strstr(sr->err, "AddressSanitizer: FPE") || strstr(sr->err, "AddressSanitizer: ILL")))
    return pg__outcome_fail(out, PG_CAT_RUNTIME, "%s crashed in mode '%s' (sanitizer report "
                            "in the captured output)", what, req->mode),
           1;
  if (sr->exited && sr->exit_code != 0 && oom)
    return pg__outcome_fail(out, PG_CAT_RUNTIME,
                            "allocation failure: %s ran out of memory (exit status %d) in mode "
                            "'%s'", what, sr->exit_code, req->mode),
           1;
  return 0;
}

void pg__last_line(const char *text, char *buf, size_t size) {
  buf[0] = '\0';
  if (!text || size == 0) return;
  size_t end = strlen(text);
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' '))
    end--;
  size_t start = end;
  while (start > 0 && text[start - 1] != '\n') start--;
  size_t n = end - start;
  if (n >= size) {
    start = end - (size - 4);
    n = size - 4;
    snprintf(buf, size, "...%.*s", (int)n, text + start);
    return;
  }
  snprintf(buf, size, "%.*s", (int)n, text + start);
}

static int has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Checks one read tensor against its expected spec; returns 1 if fine. */
static int check_output(const struct pg_tensor *t, const struct pg_impl_output_spec *spec,
                        struct pg_impl_outcome *out) {
  if (t->dtype != spec->dtype)
    return pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                            "output '%s' has dtype %s, the contract declares %s", spec->name,
                            pg_dtype_name(t->dtype), pg_dtype_name(spec->dtype)),
           0;
  int same = t->dl.ndim == spec->ndim;
  for (int i = 0; same && i < spec->ndim; i++) same = t->shape[i] == spec->shape[i];
  if (!same) {
    char a[160], b[160];
    pg_shape_format(t->dl.ndim, t->shape, a, sizeof a);
    pg_shape_format(spec->ndim, spec->shape, b, sizeof b);
    return pg__outcome_fail(out, PG_CAT_STRUCTURAL, "output '%s' has shape %s, expected %s",
                            spec->name, a, b),
           0;
  }
  return 1;
}

int pg__collect_outputs(const char *dir, const struct pg_impl_request *req,
                        struct pg_impl_outcome *out, struct pg_error *err) {
  char path[4600];
  snprintf(path, sizeof path, "%s/outputs.safetensors", dir);
  struct stat st;
  if (stat(path, &st) == 0) {
    struct pg_tensor *list = NULL;
    int count = 0;
    struct pg_error e;
    pg_error_clear(&e);
    if (pg_safetensors_read(path, &list, &count, &e) != PG_OK)
      return pg__outcome_fail(out, PG_CAT_STRUCTURAL, "cannot read outputs.safetensors: %s",
                              e.message);
    for (int j = 0; j < count; j++) {
      int known = 0;
      for (int i = 0; i < req->n_outputs; i++) known |= strcmp(list[j].name, req->outputs[i].name) == 0;
      if (!known) {
        pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                         "wrong output count: outputs.safetensors holds '%s', which the "
                         "contract does not declare at this boundary (%d expected)",
                         list[j].name, req->n_outputs);
        pg_tensor_list_free(list, count);
        return PG_OK;
      }
    }
    for (int i = 0; i < req->n_outputs; i++) {
      int found = -1;
      for (int j = 0; j < count; j++)
        if (strcmp(list[j].name, req->outputs[i].name) == 0) found = j;
      if (found < 0) {
        pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                         "wrong output count: outputs.safetensors has no tensor '%s'",
                         req->outputs[i].name);
        pg_tensor_list_free(list, count);
        return PG_OK;
      }
      if (!check_output(&list[found], &req->outputs[i], out)) {
        pg_tensor_list_free(list, count);
        return PG_OK;
      }
      pg_tensor_move(&out->outputs[i], &list[found]);
      pg_tensor_set_name(&out->outputs[i], req->outputs[i].name);
    }
    pg_tensor_list_free(list, count);
    out->n_outputs = req->n_outputs;
    out->status = PG_IMPL_DONE;
    return PG_OK;
  }

  /* .npy files: first look for files nobody asked for (wrong output count). */
  DIR *d = opendir(dir);
  if (!d) return pg_error_set(err, PG_EIO, "%s: cannot open output directory: %s", dir,
                              strerror(errno));
  struct dirent *de;
  char extra[256] = "";
  int n_npy = 0;
  while ((de = readdir(d)) != NULL) {
    if (!has_suffix(de->d_name, ".npy")) continue;
    n_npy++;
    size_t len = strlen(de->d_name) - 4;
    int known = 0;
    for (int i = 0; i < req->n_outputs; i++)
      known |= strlen(req->outputs[i].name) == len &&
               strncmp(req->outputs[i].name, de->d_name, len) == 0;
    if (!known && !extra[0]) snprintf(extra, sizeof extra, "%s", de->d_name);
  }
  closedir(d);
  if (extra[0])
    return pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                            "wrong output count: the impl wrote %d output file(s) including "
                            "'%s', the contract declares %d at this boundary",
                            n_npy, extra, req->n_outputs);
  for (int i = 0; i < req->n_outputs; i++) {
    snprintf(path, sizeof path, "%s/%s.npy", dir, req->outputs[i].name);
    if (stat(path, &st) != 0)
      return pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                              "wrong output count: missing output '%s' (no %s.npy; %d of %d "
                              "declared outputs written)",
                              req->outputs[i].name, req->outputs[i].name, n_npy,
                              req->n_outputs);
    struct pg_error e;
    pg_error_clear(&e);
    /* ml_dtypes saves bfloat16 as '<V2'; accept it exactly where bfloat16 is expected. */
    unsigned flags = req->outputs[i].dtype == PG_DTYPE_BF16 ? PG_NPY_ACCEPT_V2_AS_BF16 : 0u;
    if (pg_npy_read_ex(path, flags, &out->outputs[i], &e) != PG_OK)
      return pg__outcome_fail(out, PG_CAT_STRUCTURAL, "cannot read output '%s': %s",
                              req->outputs[i].name, e.message);
    pg_tensor_set_name(&out->outputs[i], req->outputs[i].name);
    if (!check_output(&out->outputs[i], &req->outputs[i], out)) return PG_OK;
  }
  out->n_outputs = req->n_outputs;
  out->status = PG_IMPL_DONE;
  return PG_OK;
}

int pg_impl_start(const struct pg_impl *impl, const struct pg_impl_request *req,
                  struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err) {
  memset(p, 0, sizeof *p);
  p->impl = impl;
  p->req = req;
  pg_impl_outcome_init(out);
  if (req->n_outputs > PG_IMPL_MAX_OUTPUTS)
    p->rc = pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", PG_IMPL_MAX_OUTPUTS);
  else if (impl->kind == PG_IMPL_PLUGIN)
    p->rc = pg__plugin_start(p, out, err);
  else if (impl->kind == PG_IMPL_EXEC)
    p->rc = pg__exec_start(p, out, err);
  else if (impl->kind == PG_IMPL_WORKER)
    p->rc = pg__worker_start(p, out, err);
  else if (impl->kind == PG_IMPL_REPLAY)
    p->rc = pg__replay_invoke(impl, req, out, err);
  else
    p->rc = pg_error_set(err, PG_EINVAL, "unknown impl kind");
  return p->rc;
}

int pg_impl_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err) {
  if (p->running)
    p->rc = p->impl->kind == PG_IMPL_EXEC     ? pg__exec_finish(p, out, err)
            : p->impl->kind == PG_IMPL_WORKER ? pg__worker_finish(p, out, err)
                                              : pg__plugin_finish(p, out, err);
  p->running = 0;
  return p->rc;
}

int pg_impl_invoke(const struct pg_impl *impl, const struct pg_impl_request *req,
                   struct pg_impl_outcome *out, struct pg_error *err) {
  struct pg_impl_pending p;
  pg_impl_start(impl, req, &p, out, err);
  return pg_impl_finish(&p, out, err);
}
