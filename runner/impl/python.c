/* phasegate runner — the python adapter: `python:PATH.py[::FUNCTION]`, an impl module
 * written for the pypto op workflow, unchanged (docs/design.md §6, docs/python.md), or
 * `python:DIR`, a directory of the workflow's staged files, one per phase.
 *
 * It is the worker adapter (impl/worker.c, the same pool, serve leases and checks) with
 * phasegate's own Python worker as the command — `<python> -m phasegate.worker`, the
 * package found by python_package_dir — and a "call" object added to every request:
 * the module's absolute path and the function of the phase, `<op>_module<suffix>_wrapper`
 * (pg_impl_symbol) or FUNCTION for every phase. The worker imports the module, calls the
 * function with the primary inputs and writes the returned leaves as the outputs; a
 * missing function or a wrong leaf count comes back as "structural". Reports facts;
 * run/classify.c decides. Python goldens send the same "call" object from the request
 * (run/py_golden.c: one worker for every golden file, leaves cast to declared dtypes).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/adapter.h"
#include "impl/pool.h"

#ifndef PG_PYTHON_INSTALL_DIR
#define PG_PYTHON_INSTALL_DIR "../lib/python3/dist-packages"
#endif

/* ------------------------------------------------------------------ the package */

static int has_worker(const char *dir) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/phasegate/worker.py", dir);
  return n > 0 && (size_t)n < sizeof path && access(path, R_OK) == 0;
}

/* phasegate's Python package (tools/python, or where it is installed): the directory
 * that holds phasegate/worker.py. $PHASEGATE_PYTHON_DIR, else the install location
 * relative to the running executable, else the source tree (compile-time path). NULL
 * when none exists. */
static const char *python_package_dir(void) {
  static __thread char path[PATH_MAX];
  const char *env = getenv("PHASEGATE_PYTHON_DIR");
  if (env && *env) return env;
  /* installed: PG_PYTHON_INSTALL_DIR, absolute or relative to the executable's dir */
  if (PG_PYTHON_INSTALL_DIR[0] == '/') {
    if (has_worker(PG_PYTHON_INSTALL_DIR)) return PG_PYTHON_INSTALL_DIR;
  } else {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
      *slash = '\0';
      int m = snprintf(path, sizeof path, "%s/%s", exe, PG_PYTHON_INSTALL_DIR);
      if (m > 0 && (size_t)m < sizeof path && has_worker(path)) return path;
    }
  }
#ifdef PG_PYTHON_SOURCE_DIR
  if (has_worker(PG_PYTHON_SOURCE_DIR)) return PG_PYTHON_SOURCE_DIR;
#endif
  return NULL;
}

const char *pg_python_interpreter(const char *python) {
  if (python && *python) return python;
  const char *env = getenv("PHASEGATE_PYTHON");
  return env && *env ? env : "python3";
}

/* s in single quotes for /bin/sh ('…'\''…'); NULL when out of memory. */
static char *shell_quote(const char *s) {
  size_t n = 3;
  for (const char *c = s; *c; c++) n += *c == '\'' ? 4 : 1;
  char *q = malloc(n), *o = q;
  if (!q) return NULL;
  *o++ = '\'';
  for (const char *c = s; *c; c++) {
    if (*c == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *c;
    }
  }
  *o++ = '\'';
  *o = '\0';
  return q;
}

int pg_python_worker_command(const char *python, char **command, struct pg_error *err) {
  *command = NULL;
  const char *dir = python_package_dir();
  if (!dir)
    return pg_error_set(err, PG_ENOENT, "phasegate's Python package (phasegate/worker.py) was "
                        "not found: not installed next to this executable (%s), not in the "
                        "source tree; set PHASEGATE_PYTHON_DIR to the directory holding it",
                        PG_PYTHON_INSTALL_DIR);
  char *qdir = shell_quote(dir), *qpy = shell_quote(pg_python_interpreter(python));
  /* the package ahead of the caller's PYTHONPATH; exec: the worker is the shell's pid */
  if (qdir && qpy)
    *command = pg_path_fmt("PYTHONPATH=%s${PYTHONPATH:+:\"$PYTHONPATH\"}; "
                        "export PYTHONPATH; exec %s -m phasegate.worker", qdir, qpy);
  free(qdir);
  free(qpy);
  return *command ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------ the spec */

/* PATH.py[::FUNCTION] split: the file into `file`, the function (or "") into `fn`. */
static int split_target(const char *target, char *file, size_t fsize, char *fn, size_t nsize) {
  const char *sep = NULL;
  for (const char *s = strstr(target, "::"); s; s = strstr(s + 1, "::")) sep = s;
  size_t flen = sep ? (size_t)(sep - target) : strlen(target);
  const char *name = sep ? sep + 2 : "";
  if (flen >= fsize || strlen(name) >= nsize) return -1;
  memcpy(file, target, flen);
  file[flen] = '\0';
  snprintf(fn, nsize, "%s", name);
  return 0;
}

/* The module of one phase. PATH a directory is the verifier workflow's modules/ with one
 * staged file per phase: phase <suffix> is DIR/<op>_module<suffix>_impl.py (a missing one
 * is the worker's "structural", naming it), so bisection reaches the earlier phases. */
static int phase_file(const char *target, const char *op, const char *suffix, char *file,
                      size_t fsize, char *fn, size_t nsize) {
  if (split_target(target, file, fsize, fn, nsize) != 0) return -1;
  struct stat st;
  if (stat(file, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  size_t len = strlen(file);
  while (len > 1 && file[len - 1] == '/') file[--len] = '\0';
  int n = snprintf(file + len, fsize - len, "/%s_module%s_impl.py", op, suffix);
  return n > 0 && (size_t)n < fsize - len ? 0 : -1;
}

/* Is `python` an executable file, directly or found on PATH? */
static int interpreter_found(const char *python) {
  if (strchr(python, '/')) return access(python, X_OK) == 0;
  const char *path = getenv("PATH");
  for (const char *d = path ? path : "/usr/bin:/bin"; d && *d;) {
    const char *e = strchr(d, ':');
    size_t len = e ? (size_t)(e - d) : strlen(d);
    char cand[PATH_MAX];
    int n = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, len ? d : ".", python);
    if (n > 0 && (size_t)n < sizeof cand && access(cand, X_OK) == 0) return 1;
    d = e ? e + 1 : NULL;
  }
  return 0;
}

/* Before any case runs: the module file exists, FUNCTION (if given) is a name, the
 * package and the interpreter are there. Every failure names what is missing. */
static int python_probe(struct pg_impl_probe *p, struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  char file[PATH_MAX], fn[256];
  if (split_target(impl->target, file, sizeof file, fn, sizeof fn) != 0)
    return pg_error_set(err, PG_ELIMIT, "--impl 'python:%s': path or function name too long",
                        impl->target);
  struct stat st;
  if (!file[0])
    return pg_error_set(err, PG_EINVAL, "--impl 'python:%s': no Python file before '::'",
                        impl->target);
  if (stat(file, &st) != 0)
    return pg_error_set(err, PG_ENOENT, "impl python file '%s' does not exist (%s)", file,
                        strerror(errno));
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "impl python file '%s' is neither a regular file nor "
                        "a directory of staged files", file);
  size_t ok = strspn(fn, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
  if (strstr(impl->target, "::") && (!fn[0] || fn[ok] || (fn[0] >= '0' && fn[0] <= '9')))
    return pg_error_set(err, PG_EINVAL, "--impl 'python:%s': '%s' after '::' is not a Python "
                        "function name", impl->target, fn);
  if (!python_package_dir()) {
    char *command;
    return pg_python_worker_command(impl->python, &command, err); /* its message */
  }
  const char *python = pg_python_interpreter(impl->python);
  if (!interpreter_found(python))
    return pg_error_set(err, PG_ENOENT, "the Python interpreter '%s' was not found (--python "
                        "PATH or PHASEGATE_PYTHON names another)", python);
  return PG_OK;
}

/* The Python worker's command (the probe made sure the package is there; should it go
 * away since, the call says so: the pool's start error). */
static int python_process(const struct pg_impl *impl, struct pg_proc_program *out,
                          struct pg_error *err) {
  out->kind = PG_PROC_COMMAND;
  return pg_python_worker_command(impl->python, &out->target, err);
}

/* ------------------------------------------------------------------ one call */

/* The "call" object: the module by absolute path, the phase's function. */
static int add_call(const struct pg_impl_pending *p, cJSON *request) {
  char file[PATH_MAX], fn[256], abs[PATH_MAX], sym[320];
  if (phase_file(p->impl->target, p->req->op, p->req->suffix, file, sizeof file, fn,
                 sizeof fn) != 0)
    return PG_ELIMIT;
  if (!realpath(file, abs)) snprintf(abs, sizeof abs, "%s", file); /* the worker names it */
  if (fn[0]) snprintf(sym, sizeof sym, "%s", fn);
  else pg_impl_symbol(p->req->op, p->req->suffix, sym, sizeof sym);
  return pg__call_object_add(request, abs, sym, 0); /* an impl's dtypes stay as returned */
}

static int python_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                        struct pg_error *err) {
  return pg__worker_start(p, out, add_call, err);
}

const struct pg_impl_ops pg__python_ops = {
    .name = "python",
    .usage = "python:FILE.py[::FUNCTION]",
    .probe_start = python_probe,
    .start = python_start,
    .finish = pg__worker_finish,
    .prestart = pg__pool_prestart,
    .close = pg__pool_close,
    .process = python_process,
};
