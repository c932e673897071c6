/* phasegate runner — what every impl adapter shares, below all of them (adapter.h):
 * the request object, outcomes and their facts, abnormal child endings (timeout,
 * signal, sanitizer report, out of memory), dumped outputs read back with structural
 * checks, and the wrapper symbol of a phase. adapter.c (the ops table and the calls
 * dispatched through it) and every adapter file call these; this file calls none of
 * them. Never decides a verdict. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "impl/adapter.h"
#include "base/base.h"
#include "tensors/tensors.h"

void pg_impl_symbol(const char *op, const char *suffix, char *buf, size_t size) {
  snprintf(buf, size, "%s_module%s_wrapper", op, suffix);
}

/* The persistent program of plugin: and worker: impls is their target as given. */
int pg__process_of_target(const struct pg_impl *impl, enum pg_proc_kind kind,
                          struct pg_proc_program *out, struct pg_error *err) {
  out->kind = kind;
  out->target = pg_strdup(impl->target);
  return out->target ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------ outcomes (facts) */

cJSON *pg__call_json(const struct pg_impl_request *req) {
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
  if (req->call_file)
    pg__call_object_add(r, req, req->call_file, req->call_function, req->call_cast_outputs);
  cJSON *call = cJSON_GetObjectItemCaseSensitive(r, "call");
  if (call && req->call_kind) cJSON_AddStringToObject(call, "kind", req->call_kind);
  if (call && req->call_result_file)
    cJSON_AddStringToObject(call, "result_file", req->call_result_file);
  cJSON *args = req->arguments_json ? cJSON_Parse(req->arguments_json) : NULL;
  if (args) cJSON_AddItemToObject(r, "arguments", args);
  if (call && req->call_precision) cJSON_AddStringToObject(call, "precision", req->call_precision);
  return r;
}

int pg__call_object_add(cJSON *request, const struct pg_impl_request *req, const char *file,
                        const char *function, int cast_outputs) {
  cJSON *call = cJSON_AddObjectToObject(request, "call");
  if (!call || !cJSON_AddStringToObject(call, "file", file) ||
      !cJSON_AddStringToObject(call, "function", function ? function : "") ||
      !cJSON_AddBoolToObject(call, "cast_outputs", cast_outputs != 0))
    return PG_ENOMEM;
  if (req->call_probe && !cJSON_AddStringToObject(call, "inspect_probe", req->call_probe))
    return PG_ENOMEM;
  if (req->n_kwarg_outputs > 0 && req->n_kwarg_outputs <= req->n_outputs) {
    cJSON *kw = cJSON_AddArrayToObject(call, "inspect_kwargs");
    if (!kw) return PG_ENOMEM;
    for (int i = req->n_outputs - req->n_kwarg_outputs; i < req->n_outputs; i++)
      if (!cJSON_AddItemToArray(kw, cJSON_CreateString(req->outputs[i].name))) return PG_ENOMEM;
  }
  return PG_OK;
}

void pg_impl_outcome_init(struct pg_impl_outcome *o) {
  memset(o, 0, sizeof *o);
  o->output = -1;
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&o->outputs[i]);
  pg_sandbox_result_init(&o->sandbox);
}

void pg_impl_outcome_reset(struct pg_impl_outcome *o) {
  if (!o) return;
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&o->outputs[i]);
  pg_sandbox_result_reset(&o->sandbox);
  o->device_name[0] = '\0';
  free(o->work_dir);
  pg_impl_outcome_init(o);
}

int pg__impl_fact(struct pg_impl_outcome *out, enum pg_impl_fact fact, const char *fmt, ...) {
  out->fact = fact;
  out->status = fact == PG_IMPL_FACT_OK            ? PG_IMPL_DONE
                : fact == PG_IMPL_FACT_UNAVAILABLE ? PG_IMPL_UNAVAILABLE
                                                   : PG_IMPL_FAILED;
  out->summary[0] = '\0';
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->summary, sizeof out->summary, fmt, ap);
    va_end(ap);
  }
  if (fact != PG_IMPL_FACT_OK) {
    /* A wrong shape or dtype keeps the tensors read so far, the rejected one included
     * (for --save-data: they are what the impl wrote); nothing compares them. */
    if (fact != PG_IMPL_FACT_WRONG_OUTPUT_SHAPE && fact != PG_IMPL_FACT_WRONG_OUTPUT_DTYPE)
      for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
  }
  return 0;
}

int pg__impl_wait(struct pg_sandbox_proc *proc, struct pg_impl_outcome *out,
                  struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_sandbox_wait(proc, &out->sandbox, err));
  out->wall_ms = out->sandbox.wall_ms;
  return PG_OK;
}

int pg__impl_abnormal(const struct pg_sandbox_result *sr, const struct pg_impl_request *req,
                      const char *what, struct pg_impl_outcome *out) {
  if (sr->timed_out)
    return pg__impl_fact(out, PG_IMPL_FACT_TIMEOUT,
                         "%s timed out after %g s in mode '%s' (process group killed)", what,
                         req->timeout_s, req->mode),
           1;
  if (sr->signaled) {
    char buf[32];
    const char *sig = pg_signal_name(sr->signo, buf, sizeof buf);
    if (sr->says_oom)
      return pg__impl_fact(out, PG_IMPL_FACT_OOM,
                           "allocation failure: %s ran out of memory and died with %s in "
                           "mode '%s'", what, sig, req->mode),
             1;
    return pg__impl_fact(out, PG_IMPL_FACT_SIGNAL, "%s crashed with %s in mode '%s'", what, sig,
                         req->mode),
           1;
  }
  if (sr->exited && sr->exit_code != 0 && sr->sanitizer_report) {
    out->code = sr->exit_code;
    return pg__impl_fact(out, PG_IMPL_FACT_SANITIZER_REPORT, "%s crashed in mode '%s' "
                         "(sanitizer report in the captured output)", what, req->mode),
           1;
  }
  if (sr->exited && sr->exit_code != 0 && sr->says_oom) {
    out->code = sr->exit_code;
    return pg__impl_fact(out, PG_IMPL_FACT_OOM,
                         "allocation failure: %s ran out of memory (exit status %d) in mode "
                         "'%s'", what, sr->exit_code, req->mode),
           1;
  }
  return 0;
}

void pg__impl_quote(const struct pg_impl *impl, const char *text, char *buf, size_t size) {
  if (!impl || !impl->quote || !text || !*text) {
    snprintf(buf, size, "%s", text ? text : "");
    return;
  }
  char *safe = impl->quote(text);
  snprintf(buf, size, "%s", safe ? safe : "(withheld)");
  free(safe);
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

/* ------------------------------------------------------------------ dumped outputs */

static int has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

int pg__impl_check_output(const struct pg_tensor *t, const struct pg_impl_request *req, int i,
                        struct pg_impl_outcome *out) {
  const struct pg_impl_output_spec *spec = &req->outputs[i];
  if (t->dtype != spec->dtype) {
    out->output = i;
    out->expected = (int)spec->dtype;
    out->got = (int)t->dtype;
    return pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_DTYPE,
                         "output '%s' has dtype %s, the contract declares %s", spec->name,
                         pg_dtype_name(t->dtype), pg_dtype_name(spec->dtype));
  }
  if (spec->ndim < 0) return 1; /* any shape: the caller checks what came (run/inspect.c) */
  int same = t->dl.ndim == spec->ndim;
  for (int a = 0; same && a < spec->ndim; a++) same = t->shape[a] == spec->shape[a];
  if (!same) {
    char got[160], want[160];
    pg_shape_format(t->dl.ndim, t->shape, got, sizeof got);
    pg_shape_format(spec->ndim, spec->shape, want, sizeof want);
    out->output = i;
    return pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_SHAPE,
                         "output '%s' has shape %s, expected %s", spec->name, got, want);
  }
  return 1;
}

static int declared(const struct pg_impl_request *req, const char *name, size_t len) {
  for (int i = 0; i < req->n_outputs; i++)
    if (strlen(req->outputs[i].name) == len && strncmp(req->outputs[i].name, name, len) == 0)
      return i;
  return -1;
}

/* How an output file is opened. Impl-written outputs (exec:, worker:) are opened
 * strictly: never through a symlink (O_NOFOLLOW, relative to out/ opened the same way),
 * never a hard link to a file elsewhere (a link count above 1), never a FIFO or a device
 * (O_NONBLOCK, then a regular file required), and read into memory rather than mapped
 * (a live worker could truncate a mapped file under the runner: SIGBUS). The impl owns
 * its case directory but cannot make the runner read anything outside it. Replayed
 * dumps are the user's own files and may be links. */
struct out_dir {
  int fd;              /* out/ (O_DIRECTORY) */
  const char *shown;   /* its path, for messages */
  int strict;
};

/* Opens output file `file` of out/ into *fd. 1: open; 0: a fact is recorded (missing:
 * WRONG_OUTPUT_COUNT, unsafe: UNSAFE_OUTPUT); -1: no memory (err). */
static int open_output(const struct out_dir *od, const char *file, int i, int n_npy,
                       const struct pg_impl_request *req, struct pg_impl_outcome *out, int *fd,
                       struct pg_error *err) {
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (od->strict ? O_NOFOLLOW : 0);
  *fd = openat(od->fd, file, flags);
  int e = errno;
  struct stat st;
  const char *why = NULL;
  if (*fd < 0 && e == ENOENT) {
    out->output = i;
    out->expected = req->n_outputs;
    out->got = n_npy;
    if (i < 0) return pg__impl_fact(out, PG_IMPL_FACT_PROTOCOL_ERROR, "cannot read %s", file);
    pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_COUNT,
                  "wrong output count: missing output '%s' (no %s; %d of %d declared "
                  "outputs written)", req->outputs[i].name, file, n_npy, req->n_outputs);
    return 0;
  }
  if (*fd < 0 && e == ENOMEM) return pg_error_set(err, PG_ENOMEM, "out of memory"), -1;
  if (*fd < 0) why = e == ELOOP ? "a symbolic link" : strerror(e);
  else if (fstat(*fd, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode)
                                       ? "a directory" : "not a regular file";
  else if (od->strict && st.st_nlink != 1) why = "a hard link to a file elsewhere";
  if (!why) return 1;
  if (*fd >= 0) close(*fd);
  *fd = -1;
  out->output = i;
  if (!od->strict) /* replay: the user's own file, reported as unreadable */
    return pg__impl_fact(out, PG_IMPL_FACT_PROTOCOL_ERROR, "cannot read %s/%s: %s", od->shown,
                         file, why);
  pg__impl_fact(out, PG_IMPL_FACT_UNSAFE_OUTPUT, "the impl left out/%s as %s, not a file it "
                "wrote: not read (phasegate reads outputs only from regular files inside the "
                "case directory)", file, why);
  return 0;
}

/* outputs.safetensors: one file holding every output, by name. */
static int collect_safetensors(const struct out_dir *od, const struct pg_impl_request *req,
                               struct pg_impl_outcome *out, struct pg_error *err) {
  struct pg_tensor *list = NULL;
  int count = 0, fd = -1;
  int got = open_output(od, "outputs.safetensors", -1, 1, req, out, &fd, err);
  if (got <= 0) return got < 0 ? err->code : PG_OK;
  struct pg_error e;
  pg_error_clear(&e);
  char *shown = pg_path_fmt("%s/outputs.safetensors", od->shown);
  int rc = pg_safetensors_read_fd(fd, shown ? shown : "outputs.safetensors", &list, &count, &e);
  close(fd);
  free(shown);
  if (rc != PG_OK)
    return pg__impl_fact(out, PG_IMPL_FACT_PROTOCOL_ERROR, "cannot read outputs.safetensors: %s",
                         e.message), PG_OK;
  for (int j = 0; j < count; j++)
    if (declared(req, list[j].name, strlen(list[j].name)) < 0) {
      pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_NAME,
                    "wrong output count: outputs.safetensors holds '%s', which the contract "
                    "does not declare at this boundary (%d expected)",
                    list[j].name, req->n_outputs);
      pg_tensor_list_free(list, count);
      return PG_OK;
    }
  for (int i = 0; i < req->n_outputs; i++) {
    int found = -1;
    for (int j = 0; j < count; j++)
      if (strcmp(list[j].name, req->outputs[i].name) == 0) found = j;
    if (found < 0) {
      out->output = i;
      pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_NAME,
                    "wrong output count: outputs.safetensors has no tensor '%s'",
                    req->outputs[i].name);
      pg_tensor_list_free(list, count);
      return PG_OK;
    }
    pg_tensor_move(&out->outputs[i], &list[found]);
    pg_tensor_set_name(&out->outputs[i], req->outputs[i].name);
    if (!pg__impl_check_output(&out->outputs[i], req, i, out)) {
      pg_tensor_list_free(list, count);
      return PG_OK;
    }
  }
  pg_tensor_list_free(list, count);
  out->n_outputs = req->n_outputs;
  return pg__impl_fact(out, PG_IMPL_FACT_OK, NULL), PG_OK;
}

/* <name>.npy per output: first files nobody asked for (wrong output count). */
static int collect_npy(const struct out_dir *od, const struct pg_impl_request *req,
                       struct pg_impl_outcome *out, struct pg_error *err) {
  int lfd = fcntl(od->fd, F_DUPFD_CLOEXEC, 0);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d) {
    if (lfd >= 0) close(lfd);
    return pg_error_set(err, PG_EIO, "%s: cannot open output directory: %s", od->shown,
                        strerror(errno));
  }
  struct dirent *de;
  char extra[256] = "";
  int n_npy = 0;
  while ((de = readdir(d)) != NULL) {
    if (!has_suffix(de->d_name, ".npy")) continue;
    n_npy++;
    if (declared(req, de->d_name, strlen(de->d_name) - 4) < 0 && !extra[0])
      snprintf(extra, sizeof extra, "%s", de->d_name);
  }
  closedir(d);
  if (extra[0]) {
    out->expected = req->n_outputs;
    out->got = n_npy;
    pg__impl_fact(out, PG_IMPL_FACT_WRONG_OUTPUT_COUNT,
                  "wrong output count: the impl wrote %d output file(s) including '%s', the "
                  "contract declares %d at this boundary", n_npy, extra, req->n_outputs);
    return PG_OK;
  }
  for (int i = 0; i < req->n_outputs; i++) {
    const char *name = req->outputs[i].name;
    char *file = pg_path_fmt("%s.npy", name), *shown = pg_path_fmt("%s/%s.npy", od->shown, name);
    int fd = -1, got = file && shown ? open_output(od, file, i, n_npy, req, out, &fd, err)
                                     : (pg_error_set(err, PG_ENOMEM, "out of memory"), -1);
    struct pg_error e;
    pg_error_clear(&e);
    /* ml_dtypes saves bfloat16 as '<V2'; accept it exactly where bfloat16 is expected. */
    unsigned flags = (req->outputs[i].dtype == PG_DTYPE_BF16 ? PG_NPY_ACCEPT_V2_AS_BF16 : 0u) |
                     (od->strict ? PG_NPY_NO_MMAP : 0u);
    if (got == 1 && pg_npy_read_fd(fd, shown, flags, &out->outputs[i], &e) != PG_OK) {
      out->output = i;
      pg__impl_fact(out, PG_IMPL_FACT_PROTOCOL_ERROR, "cannot read output '%s': %s", name,
                    e.message);
      got = 0;
    }
    if (fd >= 0) close(fd);
    free(file);
    free(shown);
    if (got < 0) return err->code;
    if (got == 0) return PG_OK;
    pg_tensor_set_name(&out->outputs[i], name);
    if (!pg__impl_check_output(&out->outputs[i], req, i, out)) return PG_OK;
  }
  out->n_outputs = req->n_outputs;
  pg__impl_fact(out, PG_IMPL_FACT_OK, NULL);
  return PG_OK;
}

static int collect(const struct out_dir *od, const struct pg_impl_request *req,
                   struct pg_impl_outcome *out, struct pg_error *err) {
  struct stat st;
  if (fstatat(od->fd, "outputs.safetensors", &st, AT_SYMLINK_NOFOLLOW) == 0)
    return collect_safetensors(od, req, out, err);
  return collect_npy(od, req, out, err);
}

int pg__collect_outputs(const char *dir, const struct pg_impl_request *req,
                        struct pg_impl_outcome *out, struct pg_error *err) {
  struct out_dir od = {open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dir, 0};
  if (od.fd < 0)
    return pg_error_set(err, PG_EIO, "%s: cannot open output directory: %s", dir,
                        strerror(errno));
  int rc = collect(&od, req, out, err);
  close(od.fd);
  return rc;
}

int pg__collect_case_outputs(const char *case_dir, const struct pg_impl_request *req,
                             struct pg_impl_outcome *out, struct pg_error *err) {
  const int dflags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int cfd = open(case_dir, dflags), e = errno;
  struct out_dir od = {cfd >= 0 ? openat(cfd, "out", dflags) : -1, case_dir, 1};
  if (cfd >= 0) e = errno;
  if (cfd >= 0) close(cfd);
  char *shown = pg_path_join(case_dir, "out");
  if (!shown) {
    if (od.fd >= 0) close(od.fd);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  int rc = PG_OK;
  if (od.fd < 0) {
    /* the impl removed or replaced its case directory or out/: nothing is read */
    pg__impl_fact(out, PG_IMPL_FACT_UNSAFE_OUTPUT, "the impl %s %s%s: no output read "
                  "(phasegate reads outputs only from the case directory's own out/)",
                  e == ENOENT ? "removed" : "replaced", cfd < 0 ? "its case directory" : "out/",
                  e == ENOENT ? "" : " by a symlink or a file");
  } else {
    od.shown = shown;
    rc = collect(&od, req, out, err);
    close(od.fd);
  }
  free(shown);
  return rc;
}
