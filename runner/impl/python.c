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
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/adapter.h"
#include "impl/pool.h"

#ifndef PG_PYTHON_INSTALL_DIR
#define PG_PYTHON_INSTALL_DIR "../lib/python3/dist-packages"
#endif

/* ------------------------------------------------------------------ the package */

static int interpreter_found(const char *python);

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

/* `<python> -m <module>` with phasegate's package ahead of the caller's PYTHONPATH, as
 * one /bin/sh command (exec: the program is the shell's pid); `args` is appended as is. */
static int python_command(const char *python, const char *module, const char *args,
                          char **command, struct pg_error *err) {
  *command = NULL;
  const char *dir = python_package_dir();
  if (!dir)
    return pg_error_set(err, PG_ENOENT, "phasegate's Python package (phasegate/worker.py) was "
                        "not found: not installed next to this executable (%s), not in the "
                        "source tree; set PHASEGATE_PYTHON_DIR to the directory holding it",
                        PG_PYTHON_INSTALL_DIR);
  char *qdir = shell_quote(dir), *qpy = shell_quote(pg_python_interpreter(python));
  if (qdir && qpy)
    *command = pg_path_fmt("PYTHONPATH=%s${PYTHONPATH:+:\"$PYTHONPATH\"}; "
                        "export PYTHONPATH; exec %s -m %s%s", qdir, qpy, module, args);
  free(qdir);
  free(qpy);
  return *command ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

int pg_python_worker_command(const char *python, char **command, struct pg_error *err) {
  return python_command(python, "phasegate.worker", "", command, err);
}

/* ------------------------------------------------------------------ the preflight */

#define PREFLIGHT_OUT_MAX (64 * 1024)
#define PREFLIGHT_TIMEOUT_MS 60000

/* Runs argv (stdout and stderr into one pipe) and reads what it writes, at most
 * PREFLIGHT_OUT_MAX bytes and PREFLIGHT_TIMEOUT_MS; *status: its wait status, -1 when it
 * had to be killed. */
static int run_capture(char *const *argv, char *out, size_t size, int *status,
                       struct pg_error *err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return pg_error_set(err, PG_EIO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pg_spawn_attr_init(&at, 0);
  pid_t pid;
  extern char **environ;
  int e = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(fds[1]);
  if (e != 0) {
    close(fds[0]);
    return pg_error_set(err, PG_EIO, "cannot start %s: %s", argv[0], strerror(e));
  }
  size_t n = 0;
  double until = pg_now_ms() + PREFLIGHT_TIMEOUT_MS;
  int killed = 0;
  for (;;) {
    int left = (int)(until - pg_now_ms());
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = left > 0 ? poll(&p, 1, left) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { /* silent past the limit: it is ours, end it */
      kill(pid, SIGKILL);
      killed = 1;
      break;
    }
    char buf[4096];
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t take = n + (size_t)got < size - 1 ? (size_t)got : size - 1 - n;
    memcpy(out + n, buf, take);
    n += take;
  }
  out[n] = '\0';
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  *status = killed ? -1 : st;
  return PG_OK;
}

/* The last line of text that starts with '{' (the preflight's answer), or NULL. */
static char *answer_line(char *text) {
  char *found = NULL;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    if (line[0] == '{') found = line;
    line = nl ? nl + 1 : NULL;
  }
  return found;
}

/* The last non-empty line of text, cut to fit buf. */
static void last_line(const char *text, char *buf, size_t size) {
  buf[0] = '\0';
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len) snprintf(buf, size, "%.*s", (int)len, line);
    line = nl ? nl + 1 : NULL;
  }
}

#define PREFLIGHT_CHOOSE "choose another interpreter with --python PATH, the environment " \
  "variable PHASEGATE_PYTHON, or (phasegate_add_op) the CMake cache variable PHASEGATE_PYTHON"

/* The error of an interpreter that lacks modules: every module and why, one sentence. */
static int lacks_error(const char *python, const char *what, const cJSON *a,
                       struct pg_error *err) {
  const char *exe = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "executable"));
  const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "version"));
  char list[700] = "";
  int n = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(a, "lacks")) {
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "module"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "why"));
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s (%s)", len ? " and " : "", m ? m : "?",
             why ? why : "needed");
    n++;
  }
  snprintf(list + strlen(list), sizeof list - strlen(list), " %s", n > 1 ? "are" : "is");
  char about[400] = "";
  if (exe || ver)
    snprintf(about, sizeof about, " (%s%s%s)", exe ? exe : "", exe && ver ? ", " : "",
             ver ? ver : "");
  if (ver) { /* "Python 3.11.2" */
    char *at = strstr(about, ver);
    size_t off = (size_t)(at - about);
    char rest[400];
    snprintf(rest, sizeof rest, "Python %s", at);
    snprintf(about + off, sizeof about - off, "%s", rest);
  }
  return pg_error_set(err, PG_ENOTSUP, "the Python interpreter '%s'%s cannot run %s: %s not "
                      "importable in it; %s, or install what it lacks into it", python, about,
                      what, list, PREFLIGHT_CHOOSE);
}

/* {"interpreter", "version", <package>: version or null…, "missing_env": ["VAR (mode)"…]}
 * from the preflight's answer,
 * into about (PG_PYTHON_ABOUT_MAX bytes; "" when it does not fit or out of memory). */
static void about_of(const cJSON *a, char *about) {
  about[0] = '\0';
  cJSON *o = cJSON_CreateObject();
  const cJSON *exe = cJSON_GetObjectItemCaseSensitive(a, "executable");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(a, "version");
  int ok = o && cJSON_AddStringToObject(o, "interpreter", cJSON_IsString(exe) ? exe->valuestring : "") &&
           cJSON_AddStringToObject(o, "version", cJSON_IsString(ver) ? ver->valuestring : "");
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(a, "versions")) {
    if (!ok || !v->string) continue;
    ok = cJSON_IsString(v) ? cJSON_AddStringToObject(o, v->string, v->valuestring) != NULL
                           : cJSON_AddNullToObject(o, v->string) != NULL;
  }
  /* the environment lines a mode needs that this environment lacks, "VAR (mode)": the
   * worker makes those modes unavailable per call, naming the variable; the provenance
   * says it once for the run (docs/pypto.md "Devices and the environment") */
  const cJSON *missing = cJSON_GetObjectItemCaseSensitive(a, "missing_env");
  cJSON *list = ok && cJSON_GetArraySize(missing) > 0 ? cJSON_AddArrayToObject(o, "missing_env")
                                                      : NULL;
  if (!list) missing = NULL;
  cJSON_ArrayForEach(v, missing) {
    const char *var = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "variable"));
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "mode"));
    char item[160];
    snprintf(item, sizeof item, "%.100s (%.40s)", var ? var : "?", mode ? mode : "?");
    cJSON *s = cJSON_CreateString(item);
    if (!s || !cJSON_AddItemToArray(list, s)) {
      cJSON_Delete(s);
      ok = 0;
      break;
    }
  }
  char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
  if (text && strlen(text) < PG_PYTHON_ABOUT_MAX) memcpy(about, text, strlen(text) + 1);
  free(text);
  cJSON_Delete(o);
}

int pg_python_preflight(const char *python, const char *what, const char *const *paths,
                        int n_paths, char *about, struct pg_error *err) {
  if (about) about[0] = '\0';
  const char *py = pg_python_interpreter(python);
  if (!interpreter_found(py))
    return pg_error_set(err, PG_ENOENT, "the Python interpreter '%s' was not found; "
                        PREFLIGHT_CHOOSE, py);
  char *command;
  PG_RETURN_IF_ERROR(python_command(python, "phasegate.preflight", " \"$@\"", &command, err));
  char *argv[72] = {"/bin/sh", "-c", command, "phasegate-preflight"};
  int argc = 4;
  for (int i = 0; i < n_paths && argc < 71; i++) argv[argc++] = (char *)paths[i];
  argv[argc] = NULL;
  char *out = malloc(PREFLIGHT_OUT_MAX);
  int status = 0, rc = out ? run_capture(argv, out, PREFLIGHT_OUT_MAX, &status, err)
                           : pg_error_set(err, PG_ENOMEM, "out of memory");
  free(command);
  if (rc != PG_OK) {
    free(out);
    return rc;
  }
  char tail[300];
  last_line(out, tail, sizeof tail);
  char *line = answer_line(out); /* splits out into lines: after last_line */
  cJSON *a = line ? cJSON_Parse(line) : NULL;
  const cJSON *lacks = cJSON_GetObjectItemCaseSensitive(a, "lacks");
  if (!cJSON_IsArray(lacks)) {
    char how[64];
    if (status == -1) snprintf(how, sizeof how, "gave no answer within %d s",
                               PREFLIGHT_TIMEOUT_MS / 1000);
    else if (WIFSIGNALED(status)) snprintf(how, sizeof how, "was killed by signal %d",
                                           WTERMSIG(status));
    else snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
    rc = pg_error_set(err, PG_ENOTSUP, "the Python interpreter '%s' cannot run %s: asked "
                      "whether it can (python -m phasegate.preflight), it %s without an "
                      "answer%s%s; %s", py, what, how, tail[0] ? ": " : "", tail,
                      PREFLIGHT_CHOOSE);
  } else if (cJSON_GetArraySize(lacks) > 0) {
    rc = lacks_error(py, what, a, err);
  }
  if (about && cJSON_IsArray(lacks)) about_of(a, about);
  cJSON_Delete(a);
  free(out);
  return rc;
}

int pg_python_golden_uses(const char *python, const char *path, char *name, size_t size,
                          struct pg_error *err) {
  if (size) name[0] = '\0';
  char *command;
  PG_RETURN_IF_ERROR(python_command(python, "phasegate.preflight", " \"$@\"", &command, err));
  char *argv[] = {"/bin/sh", "-c", command, "phasegate-preflight", "--uses", (char *)path, NULL};
  char *out = malloc(PREFLIGHT_OUT_MAX);
  int status = 0, rc = out ? run_capture(argv, out, PREFLIGHT_OUT_MAX, &status, err)
                           : pg_error_set(err, PG_ENOMEM, "out of memory");
  free(command);
  char *line = rc == PG_OK ? answer_line(out) : NULL;
  cJSON *a = line ? cJSON_Parse(line) : NULL;
  const char *uses = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "uses"));
  if (uses && size) snprintf(name, size, "%s", uses);
  cJSON_Delete(a);
  free(out);
  return rc;
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
 * is the worker's "structural", naming it), so bisection reaches the earlier phases. The
 * last phase without a staged file is the integrated DIR/<op>_impl.py when there is one
 * (an L0 op has nothing else, docs/pypto.md "L0 ops"). */
static int phase_file(const char *target, const struct pg_impl_request *req, char *file,
                      size_t fsize, char *fn, size_t nsize) {
  if (split_target(target, file, fsize, fn, nsize) != 0) return -1;
  struct stat st;
  if (stat(file, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  size_t len = strlen(file);
  while (len > 1 && file[len - 1] == '/') file[--len] = '\0';
  int n = snprintf(file + len, fsize - len, "/%s_module%s_impl.py", req->op, req->suffix);
  if (n <= 0 || (size_t)n >= fsize - len) return -1;
  if (req->up_to_module == req->total_modules && stat(file, &st) != 0) {
    char whole[PATH_MAX];
    int m = snprintf(whole, sizeof whole, "%.*s/%s_impl.py", (int)len, file, req->op);
    if (m > 0 && (size_t)m < sizeof whole && stat(whole, &st) == 0 && (size_t)m < fsize)
      memcpy(file, whole, (size_t)m + 1);
  }
  return 0;
}

/* The function the last phase falls back to when --impl names none and the file lacks
 * the phase's <op>_module<suffix>_wrapper: <op>_wrapper of the integrated <op>_impl.py
 * (its boundary is the op's final output). "" for other files and phases. */
static void fallback_function(const char *file, const struct pg_impl_request *req, char *sym,
                              size_t size) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t op = strlen(req->op);
  sym[0] = '\0';
  if (req->up_to_module == req->total_modules && strncmp(base, req->op, op) == 0 &&
      strcmp(base + op, "_impl.py") == 0)
    snprintf(sym, size, "%s_wrapper", req->op);
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
  /* the interpreter can start the worker and has what the module imports: one error
   * for the run, before any case, instead of one per case */
  char what[PATH_MAX + 64];
  snprintf(what, sizeof what, "the python: impl %.*s", PATH_MAX, file);
  const char *paths[] = {file};
  return pg_python_preflight(impl->python, what, paths, 1, p->python, err);
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
  char file[PATH_MAX], fn[256], abs[PATH_MAX], sym[320], fallback[320] = "";
  if (phase_file(p->impl->target, p->req, file, sizeof file, fn, sizeof fn) != 0)
    return PG_ELIMIT;
  if (!realpath(file, abs)) snprintf(abs, sizeof abs, "%s", file); /* the worker names it */
  if (fn[0]) {
    snprintf(sym, sizeof sym, "%s", fn);
  } else {
    pg_impl_symbol(p->req->op, p->req->suffix, sym, sizeof sym);
    fallback_function(file, p->req, fallback, sizeof fallback);
  }
  int rc = pg__call_object_add(request, p->req, abs, sym, 0); /* an impl's dtypes stay as returned */
  cJSON *call = cJSON_GetObjectItemCaseSensitive(request, "call");
  if (rc == PG_OK && fallback[0] && !cJSON_AddStringToObject(call, "fallback", fallback))
    rc = PG_ENOMEM;
  return rc;
}

static int python_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                        struct pg_error *err) {
  return pg__worker_start(p, out, add_call, err);
}

const struct pg_impl_ops pg__python_ops = {
    .name = "python",
    .usage = "python:FILE.py[::FUNCTION]",
    .bare_suffix = ".py", /* the seed's `--impl ../modules/<op>_module1_impl.py` */
    .probe_start = python_probe,
    .start = python_start,
    .finish = pg__worker_finish,
    .prestart = pg__pool_prestart,
    .close = pg__pool_close,
    .process = python_process,
};
