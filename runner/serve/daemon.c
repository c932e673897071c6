/* phasegate runner — `phasegate serve`: the daemon's pools, leases and connections
 * (serve.h, daemon.h, docs/serve.md); setup and the loop are in loop.c.
 *
 * The daemon is one poll() loop (listening socket, client connections, idle workers'
 * sockets, a signalfd for SIGCHLD/SIGTERM, a pipe from start threads). Starting a
 * process can take seconds (Python + torch), so each start runs pg_proc_start in a
 * short-lived thread that first gives itself a private cwd/umask (unshare(CLONE_FS))
 * and enters the client's working directory; the finished start comes back to the
 * loop through the pipe, and everything else — pools, processes, connections,
 * counters — belongs to the loop alone. Processes are reaped with waitpid(pid) on the
 * loop's own pids only (never waitpid(-1): a start thread reaps a process whose
 * handshake failed).
 *
 * Control protocol (one JSON object per line each way, on <control>/serve.sock):
 *   {"op":"ping"}                 → {"status":"ok","serve_protocol":2,"pid":P,"exe":"…"}
 *   {"op":"status"}               → {"status":"ok", pid, uptime, counters, processes:[…]}
 *   {"op":"stop"}                 → {"status":"ok","pid":P} once every worker is gone
 *   {"op":"lease", kind, target, mode, device, rlimit_as, start_timeout_s, cwd, umask, env:[…],
 *    host}                        → {"status":"ok", pid, log, start_ms, calls, next_id,
 *                                    fresh, shm} + the worker's socket (SCM_RIGHTS), or
 *                                   {"status":"error", code, message, start facts…}
 *   {"op":"release", pid, ok:true, calls, next_id}          → (no answer)
 *   {"op":"release", pid, ok:false, wait_ms, calls, next_id} → {"status":"ok", exited,
 *                                    exit_code, signaled, signo, killed}
 */
#include "serve/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

extern char **environ;

static const char *const wstate_name[] = {"starting", "idle", "leased", "ending"};

void pg__serve_dlog(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pg__serve_dlog(struct daemon *d, const char *fmt, ...) {
  if (!d->log) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%H:%M:%S", &tm);
  fprintf(d->log, "[phasegate serve %d %s.%03ld] ", (int)getpid(), when, ts.tv_nsec / 1000000);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(d->log, fmt, ap);
  va_end(ap);
  fputc('\n', d->log);
  fflush(d->log);
}

void pg__serve_answer(struct daemon *d, struct conn *c, cJSON *o, int attach_fd) {
  if (!c || c->closed) return;
  if (pg_proc_send_line(c->fd, o, attach_fd, 1000) != 0)
    pg__serve_dlog(d, "client %d: an answer could not be sent (%s)", c->id, strerror(errno));
}

static void answer_error(struct daemon *d, struct conn *c, int code, const char *msg) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "error");
  cJSON_AddNumberToObject(o, "code", code);
  cJSON_AddStringToObject(o, "message", msg);
  pg__serve_answer(d, c, o, -1);
  cJSON_Delete(o);
}

/* ------------------------------------------------------------------ process states */

void pg__serve_kill_group(struct wproc *w) {
  /* once reaped, its pid may be another process's (pid_max wraps): what it left
   * behind was killed when it was reaped (reap_one) */
  if (w->pid > 0 && !w->reaped) kill(-w->pid, SIGKILL);
  w->killed = 1;
}

/* Forgets a process whose pid is reaped (or that never started): closes the daemon's
 * descriptors, removes its log unless a message may name it. Freed by pg__serve_collect(). */
void pg__serve_w_remove(struct wproc *w) {
  if (w->gone) return;
  w->gone = 1;
  w->p.pid = 0; /* reaped already: pg_proc_stop only closes */
  pg_proc_stop(&w->p, 0, w->keep_log);
}

/* The end of a process as the client's remote_end expects it: got = it ended by itself
 * within the wait (exit fields filled), else it was killed (fields unknown). */
void pg__serve_answer_end(struct daemon *d, struct conn *c, const struct wproc *w, int got) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  int st = w->status;
  cJSON_AddBoolToObject(o, "exited", got && WIFEXITED(st));
  cJSON_AddNumberToObject(o, "exit_code", got && WIFEXITED(st) ? WEXITSTATUS(st) : 0);
  cJSON_AddBoolToObject(o, "signaled", got && WIFSIGNALED(st));
  cJSON_AddNumberToObject(o, "signo", got && WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  cJSON_AddBoolToObject(o, "killed", !got);
  pg__serve_answer(d, c, o, -1);
  cJSON_Delete(o);
  if (c) c->waiting = 0;
}

/* An idle process that must go (stale fingerprint, unsolicited bytes, shutdown): EOF
 * first ("exit now"), SIGKILL after the grace. */
void pg__serve_w_retire(struct daemon *d, struct wproc *w, const char *why) {
  pg__serve_dlog(d, "pid %d (%s %s %s dev %d): ending, %s", w->pid,
                 pg_proc_kind_name(w->pool->kind), w->pool->target, w->pool->mode,
                 w->pool->device, why);
  w->state = W_DYING;
  w->end_to = NULL;
  w->deadline = pg_now_ms() + SERVE_GRACE_MS;
  if (w->p.sock >= 0) shutdown(w->p.sock, SHUT_RDWR);
  d->retired++;
}

static int reap_one(struct wproc *w);
static void on_reaped(struct daemon *d, struct wproc *w);

/* ------------------------------------------------------------------ starts */

static void job_free(struct job *j) {
  if (!j) return;
  for (size_t i = 0; i < j->n_own; i++) free(j->envp[i]);
  free(j->envp);
  pg_proc_argv_reset(&j->a);
  pg_proc_result_reset(&j->r);
  pg_proc_program_reset(&j->prog);
  free(j->cwd);
  free(j->host);
  free(j->log_dir);
  free(j);
}

static void *job_main(void *arg) {
  struct job *j = arg;
  /* A private cwd and umask for this thread (and so for what it spawns). */
  if (unshare(CLONE_FS) != 0) {
    j->rc = pg_error_set(&j->err, PG_EIO, "unshare(CLONE_FS): %s", strerror(errno));
  } else if (chdir(j->cwd) != 0) {
    j->rc = pg_error_set(&j->err, PG_EIO, "cannot enter %s: %s", j->cwd, strerror(errno));
  } else {
    umask((mode_t)j->umask);
    struct pg_proc_spec s = {j->a.argv, (const char *const *)j->envp, j->log_dir, j->tag,
                             j->rlimit_as, j->timeout_s};
    j->rc = pg_proc_start(&j->p, &s, &j->r, &j->err);
  }
  while (write(j->done_fd, &j, sizeof j) < 0 && errno == EINTR) {
  }
  return NULL;
}

/* Starts a process for pool in a thread; the wproc is STARTING until job_done. */
int pg__serve_start_proc(struct daemon *d, struct pool *pl, double timeout_s, struct pg_error *err) {
  struct job *j = calloc(1, sizeof *j);
  struct wproc *w = calloc(1, sizeof *w);
  if (!j || !w) {
    free(j);
    free(w);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  pg_proc_init(&w->p);
  pg_proc_init(&j->p);
  j->prog.kind = pl->kind;
  j->prog.target = pg_strdup(pl->target);
  j->cwd = pg_strdup(pl->cwd);
  j->host = pg_strdup(pl->host);
  j->log_dir = pg_strdup(d->workers);
  snprintf(j->tag, sizeof j->tag, "%s-%d", pl->mode, pl->device);
  j->umask = pl->umask;
  j->rlimit_as = pl->rlimit_as;
  j->timeout_s = timeout_s > 0 ? timeout_s : 120;
  j->done_fd = d->jobs_w;
  j->w = w;
  /* a plugin runs the client's host on the .so */
  int rc = j->prog.target && j->cwd && j->log_dir && (j->host || !pl->host)
               ? pg_proc_argv_build(&j->prog, j->host, pl->mode, pl->device, &j->a, err)
               : pg_error_set(err, PG_ENOMEM, "out of memory");
  size_t n_env = 0, n_add = 0;
  while (pl->env && pl->env[n_env]) n_env++;
  while (j->a.env[n_add]) n_add++;
  if (rc == PG_OK && !(j->envp = calloc(n_env + n_add + 1, sizeof *j->envp)))
    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (size_t i = 0; rc == PG_OK && i < n_env; i++)
    if (!(j->envp[j->n_own++] = pg_strdup(pl->env[i])))
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (size_t i = 0; rc == PG_OK && i < n_add; i++) j->envp[n_env + i] = (char *)j->a.env[i];
  if (rc == PG_OK && (errno = pthread_create(&j->th, NULL, job_main, j)) != 0)
    rc = pg_error_set(err, PG_EIO, "cannot start a thread: %s", strerror(errno));
  if (rc != PG_OK) {
    job_free(j);
    free(w);
    return rc;
  }
  w->pool = pl;
  w->state = W_STARTING;
  w->job = j;
  w->fp = pl->fp;
  w->next = d->procs;
  d->procs = w;
  d->n_jobs++;
  pg__serve_dlog(d, "starting %s %s (%s, device %d)", pg_proc_kind_name(pl->kind), pl->target,
                 pl->mode, pl->device);
  return PG_OK;
}

/* ------------------------------------------------------------------ leases */

static void grant(struct daemon *d, struct wproc *w, struct conn *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "pid", w->pid);
  cJSON_AddStringToObject(o, "log", w->p.log_path ? w->p.log_path : "");
  cJSON_AddNumberToObject(o, "start_ms", w->start_ms);
  cJSON_AddNumberToObject(o, "calls", w->calls);
  cJSON_AddNumberToObject(o, "next_id", (double)w->next_id);
  cJSON_AddBoolToObject(o, "fresh", w->leases == 0);
  cJSON_AddBoolToObject(o, "shm", w->p.shm != 0); /* its handshake offered protocol v1.1 */
  pg__serve_answer(d, c, o, w->p.sock);
  cJSON_Delete(o);
  w->state = W_LEASED;
  w->holder = c;
  w->leases++;
  c->waiting = 0;
  d->leases++;
}

int pg__serve_pool_alive(const struct pool *pl, const struct daemon *d, enum wstate only, int any) {
  int n = 0;
  for (const struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone && (any || w->state == only)) n++;
  return n;
}

/* Serves the queue of pl: idle processes to the first waiters, then as many starts as
 * waiters still need, up to --slots processes (ending ones included: a device context
 * is free only once its process is gone). */
static void dispatch(struct daemon *d, struct pool *pl) {
  while (pl->queue && !d->exiting) {
    struct wproc *idle = NULL;
    for (struct wproc *w = d->procs; w && !idle; w = w->next)
      if (w->pool == pl && !w->gone && w->state == W_IDLE && w->fp == pl->fp) idle = w;
    if (!idle) break;
    struct waiter *h = pl->queue;
    pl->queue = h->next;
    grant(d, idle, h->c);
    free(h);
  }
  int waiting = 0;
  for (struct waiter *q = pl->queue; q; q = q->next) waiting++;
  int starting = pg__serve_pool_alive(pl, d, W_STARTING, 0), alive = pg__serve_pool_alive(pl, d, 0, 1);
  struct waiter **q = &pl->queue;
  for (int i = 0; i < starting && *q; i++) q = &(*q)->next;
  while (*q && !d->exiting && starting < waiting && alive < d->o->slots) {
    struct pg_error err;
    if (pg__serve_start_proc(d, pl, (*q)->start_timeout_s, &err) != PG_OK) {
      /* could not even try (a spec the host cannot run, out of memory): this waiter
       * gets what pg_proc_start's caller would have got */
      pg__serve_dlog(d, "cannot start: %s", err.message);
      struct waiter *x = *q;
      *q = x->next;
      waiting--;
      answer_error(d, x->c, err.code, err.message);
      x->c->waiting = 0;
      free(x);
      continue;
    }
    starting++, alive++;
    q = &(*q)->next;
  }
}

void pg__serve_job_done(struct daemon *d, struct job *j) {
  pthread_join(j->th, NULL);
  d->n_jobs--;
  struct wproc *w = j->w;
  struct pool *pl = w->pool;
  w->job = NULL;
  if (j->rc == PG_OK) {
    w->p = j->p;
    pg_proc_init(&j->p);
    w->pid = w->p.pid;
    w->start_ms = w->p.start_ms;
    w->next_id = 1;
    w->state = W_IDLE;
    d->starts++;
    pg__serve_dlog(d, "pid %d ready in %.0f ms: %s %s (%s, device %d), log %s", w->pid,
                   w->start_ms, pg_proc_kind_name(pl->kind), pl->target, pl->mode, pl->device,
                   w->p.log_path);
    if (reap_one(w)) on_reaped(d, w); /* died right after its handshake */
    else if (w->fp != pl->fp) pg__serve_w_retire(d, w, "what it runs changed while it started");
  } else {
    d->start_failures++;
    pg__serve_dlog(d, "start failed: %s", j->err.message);
    w->state = W_DYING;
    pg__serve_w_remove(w);
    struct waiter *h = d->exiting ? NULL : pl->queue; /* stopping: waiters just see EOF */
    if (h) {
      pl->queue = h->next;
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "status", "error");
      cJSON_AddNumberToObject(o, "code", j->rc);
      cJSON_AddStringToObject(o, "message", j->err.message);
      if (j->rc == PG_EIMPL) {
        cJSON_AddNumberToObject(o, "end", j->r.end);
        cJSON_AddBoolToObject(o, "exited", j->r.exited);
        cJSON_AddNumberToObject(o, "exit_code", j->r.exit_code);
        cJSON_AddBoolToObject(o, "signaled", j->r.signaled);
        cJSON_AddNumberToObject(o, "signo", j->r.signo);
        cJSON_AddStringToObject(o, "protocol", j->r.protocol);
        cJSON_AddStringToObject(o, "captured", j->r.captured ? j->r.captured : "");
        cJSON_AddBoolToObject(o, "captured_truncated", j->r.captured_truncated);
        cJSON_AddNumberToObject(o, "wall_ms", j->r.wall_ms);
      }
      pg__serve_answer(d, h->c, o, -1);
      cJSON_Delete(o);
      h->c->waiting = 0;
      free(h);
    }
  }
  job_free(j);
  dispatch(d, pl);
}

struct pool *pg__serve_pool_get(struct daemon *d, enum pg_proc_kind kind, const char *target,
                                const char *mode, int device, uint64_t rlimit_as, const char *cwd, int umask_, char **env,
                             size_t n_env, const char *host) {
  uint64_t eh = pg_serve_env_hash(env, n_env);
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    if (pl->kind == kind && strcmp(pl->target, target) == 0 && strcmp(pl->mode, mode) == 0 && pl->device == device &&
        pl->rlimit_as == rlimit_as && strcmp(pl->cwd, cwd) == 0 && pl->umask == umask_ &&
        pl->env_hash == eh && ((!pl->host && !host) || (pl->host && host &&
                                                        strcmp(pl->host, host) == 0)))
      return pl;
  struct pool *pl = calloc(1, sizeof *pl);
  if (!pl) return NULL;
  pl->kind = kind;
  pl->target = pg_strdup(target);
  pl->mode = pg_strdup(mode);
  pl->cwd = pg_strdup(cwd);
  pl->host = pg_strdup(host);
  pl->device = device;
  pl->umask = umask_;
  pl->rlimit_as = rlimit_as;
  pl->env_hash = eh;
  pl->env = calloc(n_env + 1, sizeof *pl->env);
  int ok = pl->target && pl->mode && pl->cwd && (pl->host || !host) && pl->env;
  for (size_t i = 0, k = 0; ok && i < n_env; i++)
    if (!pg_serve_env_is_ours(env[i]) && !(pl->env[k++] = pg_strdup(env[i]))) ok = 0;
  if (!ok) {
    free(pl->target), free(pl->mode), free(pl->cwd), free(pl->host), pg_serve_free_strv(pl->env);
    free(pl);
    return NULL;
  }
  pl->next = d->pools;
  d->pools = pl;
  return pl;
}

/* A new fingerprint for pl: idle processes that run the old files go. */
void pg__serve_pool_refresh(struct daemon *d, struct pool *pl, uint64_t fp) {
  if (pl->fp == fp) return;
  pl->fp = fp;
  for (struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone && w->state == W_IDLE && w->fp != fp)
      pg__serve_w_retire(d, w, "what it runs changed on disk");
}

static void on_lease(struct daemon *d, struct conn *c, const cJSON *req) {
  const char *kind_name = pg_serve_str(req, "kind"), *target = pg_serve_str(req, "target");
  const char *mode = pg_serve_str(req, "mode"), *cwd = pg_serve_str(req, "cwd");
  const char *host = pg_serve_str(req, "host");
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
  if (!kind_name || !target || !*target || !mode || !cwd || !cJSON_IsArray(env)) {
    answer_error(d, c, PG_EINVAL, "a lease needs kind, target, mode, cwd and env");
    return;
  }
  enum pg_proc_kind kind;
  if (pg_proc_kind_from_name(kind_name, &kind) != PG_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "kind '%.100s' is not a persistent process (worker or plugin)",
             kind_name);
    answer_error(d, c, PG_EINVAL, msg);
    return;
  }
  if (kind != PG_PROC_PLUGIN) host = NULL;
  else if (!host) host = d->host;
  size_t n_env = (size_t)cJSON_GetArraySize(env), k = 0;
  char **ev = calloc(n_env + 1, sizeof *ev);
  const cJSON *e;
  cJSON_ArrayForEach(e, env) if (ev && cJSON_IsString(e)) ev[k++] = e->valuestring;
  struct pool *pl = ev ? pg__serve_pool_get(d, kind, target, mode, (int)pg_serve_int(req, "device", 0, INT_MIN, INT_MAX),
                                  (uint64_t)pg_serve_int(req, "rlimit_as", 0, 0, INT64_MAX), cwd,
                                  (int)pg_serve_int(req, "umask", 022, 0, 0777), ev, k, host)
                       : NULL;
  free(ev);
  if (!pl) {
    answer_error(d, c, PG_ENOMEM, "out of memory");
    return;
  }
  pg__serve_pool_refresh(d, pl, pg_serve_program_fp(kind, target, cwd, host));
  /* Waiting would never end when this client holds every slot itself. */
  int mine = 0, others = 0;
  for (struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone) {
      if (w->state == W_LEASED && w->holder == c) mine++;
      else others++;
    }
  if (mine && !others && mine >= d->o->slots) {
    answer_error(d, c, PG_ELIMIT, "this connection already holds every process of its key "
                 "(phasegate serve --slots)");
    return;
  }
  struct waiter *q = calloc(1, sizeof *q), **tail = &pl->queue;
  if (!q) {
    answer_error(d, c, PG_ENOMEM, "out of memory");
    return;
  }
  q->c = c;
  q->start_timeout_s = pg_serve_num(req, "start_timeout_s", 120);
  while (*tail) tail = &(*tail)->next;
  *tail = q;
  c->waiting = 1;
  dispatch(d, pl);
}

static struct wproc *held(struct daemon *d, struct conn *c, int pid) {
  for (struct wproc *w = d->procs; w; w = w->next)
    if (!w->gone && w->state == W_LEASED && w->holder == c && w->pid == pid) return w;
  return NULL;
}

static void on_release(struct daemon *d, struct conn *c, const cJSON *req) {
  int ok = pg_serve_is_true(req, "ok");
  struct wproc *w = held(d, c, (int)pg_serve_int(req, "pid", 0, 0, INT_MAX));
  if (!w) {
    if (!ok) answer_error(d, c, PG_EINVAL, "no such lease on this connection");
    return;
  }
  int calls = (int)pg_serve_int(req, "calls", w->calls, 0, INT_MAX);
  if (calls > w->calls) d->calls += calls - w->calls;
  w->calls = calls;
  w->next_id = pg_serve_int(req, "next_id", w->next_id, 1, INT64_MAX);
  w->holder = NULL;
  struct pool *pl = w->pool;
  if (ok) {
    if (w->reaped) {
      w->keep_log = 1;
      pg__serve_w_remove(w);
    } else if (w->fp != pl->fp) {
      pg__serve_w_retire(d, w, "what it runs changed on disk");
    } else {
      w->state = W_IDLE;
    }
    dispatch(d, pl);
    return;
  }
  w->keep_log = 1; /* its end may be shown to a user, naming the log */
  reap_one(w);
  if (w->reaped) {
    pg__serve_answer_end(d, c, w, !w->killed);
    pg__serve_w_remove(w);
    dispatch(d, pl);
    return;
  }
  int wait_ms = (int)pg_serve_int(req, "wait_ms", 0, 0, INT_MAX);
  w->state = W_DYING;
  w->end_to = c;
  w->deadline = pg_now_ms() + wait_ms;
  c->waiting = 1;
  if (wait_ms <= 0) pg__serve_kill_group(w);
}

static cJSON *status_json(struct daemon *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "serve_protocol", PG_SERVE_PROTOCOL);
  cJSON_AddNumberToObject(o, "pid", getpid());
  cJSON_AddStringToObject(o, "control", d->dir);
  if (d->o->op_dir) cJSON_AddStringToObject(o, "op_dir", d->o->op_dir);
  cJSON_AddNumberToObject(o, "uptime_s", (pg_now_ms() - d->started_ms) / 1000);
  cJSON_AddNumberToObject(o, "slots", d->o->slots);
  cJSON_AddNumberToObject(o, "idle_timeout_s", d->o->idle_timeout_s);
  cJSON_AddNumberToObject(o, "clients", d->n_conns);
  cJSON_AddNumberToObject(o, "clients_total", (double)d->clients);
  cJSON_AddNumberToObject(o, "leases", (double)d->leases);
  cJSON_AddNumberToObject(o, "calls", (double)d->calls);
  cJSON_AddNumberToObject(o, "starts", (double)d->starts);
  cJSON_AddNumberToObject(o, "start_failures", (double)d->start_failures);
  cJSON_AddNumberToObject(o, "ended", (double)d->retired);
  int waiting = 0;
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    for (struct waiter *q = pl->queue; q; q = q->next) waiting++;
  cJSON_AddNumberToObject(o, "waiting", waiting);
  cJSON *procs = cJSON_AddArrayToObject(o, "processes");
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone) continue;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "pid", w->pid);
    cJSON_AddStringToObject(p, "state", wstate_name[w->state]);
    cJSON_AddStringToObject(p, "kind", pg_proc_kind_name(w->pool->kind));
    cJSON_AddStringToObject(p, "target", w->pool->target);
    cJSON_AddStringToObject(p, "mode", w->pool->mode);
    cJSON_AddNumberToObject(p, "device", w->pool->device);
    cJSON_AddNumberToObject(p, "calls", w->calls);
    cJSON_AddNumberToObject(p, "leases", w->leases);
    cJSON_AddNumberToObject(p, "start_ms", w->start_ms);
    if (w->p.log_path) cJSON_AddStringToObject(p, "log", w->p.log_path);
    cJSON_AddItemToArray(procs, p);
  }
  return o;
}

/* One request line of c. */
static void on_line(struct daemon *d, struct conn *c, const char *line) {
  cJSON *req = cJSON_Parse(line);
  const char *op = pg_serve_str(req, "op");
  if (!op) {
    answer_error(d, c, PG_EINVAL, "not a request: expected {\"op\": ...}");
  } else if (strcmp(op, "ping") == 0) {
    cJSON *o = cJSON_CreateObject();
    char exe[32];
    snprintf(exe, sizeof exe, "%016" PRIx64, d->exe);
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "serve_protocol", PG_SERVE_PROTOCOL);
    cJSON_AddNumberToObject(o, "pid", getpid());
    cJSON_AddStringToObject(o, "exe", exe);
    pg__serve_answer(d, c, o, -1);
    cJSON_Delete(o);
  } else if (strcmp(op, "lease") == 0) {
    on_lease(d, c, req);
  } else if (strcmp(op, "release") == 0) {
    on_release(d, c, req);
  } else if (strcmp(op, "status") == 0) {
    cJSON *o = status_json(d);
    pg__serve_answer(d, c, o, -1);
    cJSON_Delete(o);
  } else if (strcmp(op, "stop") == 0) {
    d->exiting = 1;
    d->exit_reason = "stop requested";
    d->stop_conn = c;
    c->waiting = 1;
  } else {
    answer_error(d, c, PG_EINVAL, "unknown op");
  }
  cJSON_Delete(req);
}

/* The lines c has sent, while nothing of it is pending. */
void pg__serve_conn_lines(struct daemon *d, struct conn *c) {
  while (!c->closed && !c->waiting && c->len) {
    char *nl = memchr(c->buf, '\n', c->len);
    if (!nl) break;
    *nl = '\0';
    size_t n = (size_t)(nl - c->buf) + 1;
    on_line(d, c, c->buf);
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
  }
}

/* A client went away: its place in queues goes, and the processes it held die with it
 * (their state is unknown: it may have died mid-call). */
void pg__serve_conn_close(struct daemon *d, struct conn *c) {
  if (c->closed) return;
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    for (struct waiter **q = &pl->queue; *q;) {
      if ((*q)->c == c) {
        struct waiter *x = *q;
        *q = x->next;
        free(x);
      } else {
        q = &(*q)->next;
      }
    }
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone) continue;
    if (w->end_to == c) w->end_to = NULL;
    if (w->state == W_LEASED && w->holder == c) {
      pg__serve_dlog(d, "client %d left holding pid %d: killing it", c->id, w->pid);
      w->holder = NULL;
      w->keep_log = 1;
      w->state = W_DYING;
      pg__serve_kill_group(w);
      if (w->reaped) pg__serve_w_remove(w);
    }
  }
  if (d->stop_conn == c) d->stop_conn = NULL;
  close(c->fd);
  c->closed = 1;
  d->n_conns--;
  d->last_active_ms = pg_now_ms();
}

void pg__serve_conn_read(struct daemon *d, struct conn *c) {
  if (c->closed) return;
  for (;;) {
    if (c->cap - c->len < 4096) {
      size_t cap = c->cap ? c->cap * 2 : 8192;
      char *b = cap <= PG_SERVE_MAX_LINE * 2 ? realloc(c->buf, cap) : NULL;
      if (!b) {
        pg__serve_dlog(d, "client %d: request too long or out of memory", c->id);
        pg__serve_conn_close(d, c);
        return;
      }
      c->buf = b, c->cap = cap;
    }
    ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got <= 0) {
      pg__serve_conn_lines(d, c); /* a release sent just before the exit still counts */
      pg__serve_conn_close(d, c);
      return;
    }
    c->len += (size_t)got;
  }
  d->last_active_ms = pg_now_ms();
  pg__serve_conn_lines(d, c);
}

void pg__serve_on_accept(struct daemon *d) {
  for (;;) {
    int fd = accept4(d->lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    c->id = ++d->next_conn_id;
    c->next = d->conns;
    d->conns = c;
    d->n_conns++;
    d->clients++;
    d->last_active_ms = pg_now_ms();
  }
}

/* ------------------------------------------------------------------ reaping */

static void on_reaped(struct daemon *d, struct wproc *w) {
  struct pool *pl = w->pool;
  switch (w->state) {
    case W_IDLE:
      pg__serve_dlog(d, "pid %d died while idle (status 0x%x)", w->pid, (unsigned)w->status);
      w->keep_log = 1;
      pg__serve_w_remove(w);
      dispatch(d, pl);
      break;
    case W_LEASED: /* its client learns it by EOF and asks how it ended */
      break;
    case W_DYING:
      if (w->end_to) pg__serve_answer_end(d, w->end_to, w, !w->killed);
      pg__serve_w_remove(w);
      dispatch(d, pl);
      break;
    case W_STARTING:
      break;
  }
}

/* 1 when w's pid has been reaped now (its status kept in w). */
static int reap_one(struct wproc *w) {
  if (w->gone || w->reaped || w->state == W_STARTING || w->pid <= 0) return 0;
  int e = pg_child_exited(w->pid, 0);
  if (e == 0) return 0;
  /* what it left behind in its group, and children that left it (setsid); by tag only:
   * see proc.c. (-1: not a child any more, nothing of it to kill or reap.) */
  w->status = e == 1 ? pg_reap_child(w->pid, w->p.tag, NULL, 0, 200) : 0;
  w->reaped = 1;
  return 1;
}

void pg__serve_reap_all(struct daemon *d) {
  for (struct wproc *w = d->procs; w; w = w->next)
    if (reap_one(w)) on_reaped(d, w);
}

/* Frees what is gone (closed connections, forgotten processes). */
void pg__serve_collect(struct daemon *d) {
  for (struct conn **c = &d->conns; *c;) {
    if ((*c)->closed) {
      struct conn *x = *c;
      *c = x->next;
      free(x->buf);
      free(x);
    } else {
      c = &(*c)->next;
    }
  }
  for (struct wproc **w = &d->procs; *w;) {
    if ((*w)->gone) {
      struct wproc *x = *w;
      *w = x->next;
      free(x);
    } else {
      w = &(*w)->next;
    }
  }
}

/* ------------------------------------------------------------------ setup */
