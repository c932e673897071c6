/* phasegate runner — `phasegate serve`: the daemon's setup, poll loop and shutdown (serve.h, daemon.h,
 * docs/serve.md). */
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

/* mkdir -p DIR, the last component mode 0700; an existing one must be ours and gets
 * 0700. */
int pg__serve_prepare_dir(const char *dir, struct pg_error *err) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    char *parent = pg_strdup(dir);
    if (!parent) return pg_error_set(err, PG_ENOMEM, "out of memory");
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
      *slash = '\0';
      if (pg_mkdir_p(parent) != 0) {
        int rc = pg_error_set(err, PG_EIO, "cannot create %s: %s", parent, strerror(errno));
        free(parent);
        return rc;
      }
    }
    free(parent);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
      return pg_error_set(err, PG_EIO, "cannot create %s: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0)
      return pg_error_set(err, PG_EIO, "%s: %s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "control directory %s is not a directory", dir);
  if (st.st_uid != geteuid())
    return pg_error_set(err, PG_EINVAL, "control directory %s belongs to uid %d, not to us "
                        "(%d)", dir, (int)st.st_uid, (int)geteuid());
  if ((st.st_mode & 0777) != 0700 && chmod(dir, 0700) != 0)
    return pg_error_set(err, PG_EIO, "chmod 0700 %s: %s", dir, strerror(errno));
  return PG_OK;
}

/* An absolute form of dir (the daemon's threads change directory). */
static char *absolute(const char *dir) {
  if (dir[0] == '/') return pg_strdup(dir);
  char *cwd = getcwd(NULL, 0);
  char *abs = cwd ? pg_path_join(cwd, dir) : NULL;
  free(cwd);
  return abs;
}

/* Takes the pidfile's lock (held for the daemon's life: a live holder is a live
 * daemon, whatever the file says). */
static int lock_pidfile(struct daemon *d, struct pg_error *err) {
  for (int tries = 0; tries < 50; tries++) {
    int fd = open(d->pid_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return pg_error_set(err, PG_EIO, "%s: %s", d->pid_path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = "";
      ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
      buf[n > 0 ? n : 0] = '\0';
      close(fd);
      return pg_error_set(err, PG_EINVAL, "another phasegate serve (pid %d) owns %s",
                          atoi(buf), d->dir);
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(d->pid_path, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      d->pid_fd = fd;
      return PG_OK;
    }
    close(fd); /* unlinked by a daemon that was exiting: take the new file */
  }
  return pg_error_set(err, PG_EIO, "%s keeps changing", d->pid_path);
}

static int daemon_setup(struct daemon *d, struct pg_error *err) {
  d->lsock = d->sigfd = d->jobs_r = d->jobs_w = d->pid_fd = -1;
  d->started_ms = d->last_active_ms = pg_now_ms();
  d->next_check_ms = d->started_ms + SERVE_CHECK_MS;
  d->exe = pg_serve_exe_fp();
  if (!(d->dir = absolute(d->o->control_dir)))
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  PG_RETURN_IF_ERROR(pg__serve_prepare_dir(d->dir, err));
  d->sock_path = pg_path_join(d->dir, PG_SERVE_SOCK);
  d->pid_path = pg_path_join(d->dir, PG_SERVE_PID);
  d->workers = pg_path_join(d->dir, PG_SERVE_WORKERS);
  if (!d->sock_path || !d->pid_path || !d->workers)
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (mkdir(d->workers, 0700) != 0 && errno != EEXIST)
    return pg_error_set(err, PG_EIO, "cannot create %s: %s", d->workers, strerror(errno));
  PG_RETURN_IF_ERROR(lock_pidfile(d, err));

  unlink(d->sock_path); /* stale: its daemon no longer holds the pidfile */
  struct sockaddr_un sa;
  int dirfd;
  if (pg_serve_sock_addr(d->dir, &sa, &dirfd) != 0)
    return pg_error_set(err, PG_EIO, "%s: %s", d->dir, strerror(errno));
  d->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  mode_t old = umask(077);
  int b = d->lsock >= 0 ? bind(d->lsock, (struct sockaddr *)&sa, sizeof sa) : -1;
  int e = errno;
  umask(old);
  if (dirfd >= 0) close(dirfd);
  if (b != 0 || listen(d->lsock, 128) != 0)
    return pg_error_set(err, PG_EIO, "cannot listen on %s: %s", d->sock_path,
                        strerror(b != 0 ? e : errno));
  struct stat st;
  if (stat(d->dir, &st) != 0) return pg_error_set(err, PG_EIO, "%s: %s", d->dir, strerror(errno));
  d->dir_dev = st.st_dev, d->dir_ino = st.st_ino;
  if (stat(d->sock_path, &st) != 0)
    return pg_error_set(err, PG_EIO, "%s: %s", d->sock_path, strerror(errno));
  d->sock_dev = st.st_dev, d->sock_ino = st.st_ino;

  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return pg_error_set(err, PG_EIO, "pipe: %s", strerror(errno));
  d->jobs_r = p[0], d->jobs_w = p[1];
  fcntl(d->jobs_r, F_SETFL, O_NONBLOCK); /* the loop drains it; the threads' writes block */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  d->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (d->sigfd < 0) return pg_error_set(err, PG_EIO, "signalfd: %s", strerror(errno));

  char pid[32];
  int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  if (ftruncate(d->pid_fd, 0) != 0 || pwrite(d->pid_fd, pid, (size_t)n, 0) != n)
    return pg_error_set(err, PG_EIO, "%s: %s", d->pid_path, strerror(errno));
  return PG_OK;
}

/* Prestart: one process per (mode, device) of --impl, with the daemon's own
 * environment and directory (the start fixture's), concurrently with serving. */
static void prestart(struct daemon *d) {
  const struct pg_proc_program *prog = d->o->prestart;
  if (!prog || !prog->target) return;
  const char *modes = d->o->modes && *d->o->modes ? d->o->modes : "sim";
  const char *devices = d->o->devices && *d->o->devices ? d->o->devices : "0";
  size_t n_env = 0;
  while (d->start_env && d->start_env[n_env]) n_env++;
  const char *host = prog->kind == PG_PROC_PLUGIN ? d->host : NULL;
  for (const char *m = modes; m && *m;) {
    const char *me = strchr(m, ',');
    char mode[64];
    snprintf(mode, sizeof mode, "%.*s", (int)(me ? (size_t)(me - m) : strlen(m)), m);
    for (const char *v = devices; v && *v;) {
      int device = atoi(v);
      struct pool *pl = pg__serve_pool_get(d, prog->kind, prog->target, mode, device, d->o->rlimit_as, d->start_cwd,
                                 pg_serve_current_umask(), d->start_env, n_env, host);
      struct pg_error err;
      if (pl) {
        pg__serve_pool_refresh(d, pl,
                               pg_serve_program_fp(prog->kind, prog->target, d->start_cwd, host));
        if (pg__serve_pool_alive(pl, d, 0, 1) == 0 && pg__serve_start_proc(d, pl, d->o->start_timeout_s, &err) != PG_OK)
          pg__serve_dlog(d, "prestart: %s", err.message);
      }
      v = strchr(v, ',');
      v = v ? v + 1 : NULL;
    }
    m = me ? me + 1 : NULL;
  }
}

/* ------------------------------------------------------------------ the loop */

static void check_dir(struct daemon *d) {
  struct stat st;
  if (stat(d->dir, &st) != 0 || st.st_ino != d->dir_ino || st.st_dev != d->dir_dev) {
    d->exiting = 1;
    d->exit_reason = "its control directory is gone";
  } else if (stat(d->sock_path, &st) != 0 || st.st_ino != d->sock_ino ||
             st.st_dev != d->sock_dev) {
    d->exiting = 1;
    d->exit_reason = "its socket is gone";
  }
}

static void on_signals(struct daemon *d) {
  struct signalfd_siginfo si;
  int chld = 0;
  while (read(d->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGCHLD) chld = 1;
    else if (!d->exiting) {
      d->exiting = 1;
      d->exit_reason = si.ssi_signo == SIGTERM ? "SIGTERM" : si.ssi_signo == SIGINT ? "SIGINT"
                                                                                  : "SIGHUP";
    }
  }
  if (chld) pg__serve_reap_all(d);
}

static void on_jobs(struct daemon *d) {
  struct job *j;
  while (read(d->jobs_r, &j, sizeof j) == (ssize_t)sizeof j) pg__serve_job_done(d, j);
}

static void loop(struct daemon *d) {
  size_t cap = 0;
  struct pollfd *pfd = NULL;
  void **obj = NULL;
  while (!d->exiting) {
    size_t need = 3 + (size_t)d->n_conns;
    for (struct wproc *w = d->procs; w; w = w->next) need++;
    if (need > cap) {
      cap = need * 2;
      struct pollfd *np = realloc(pfd, cap * sizeof *pfd);
      if (np) pfd = np;
      void **no = realloc(obj, cap * sizeof *obj);
      if (no) obj = no;
      if (!np || !no) {
        d->exiting = 1;
        d->exit_reason = "out of memory";
        break;
      }
    }
    size_t n = 0, first_conn, first_proc;
    pfd[n++] = (struct pollfd){d->lsock, POLLIN, 0};
    pfd[n++] = (struct pollfd){d->sigfd, POLLIN, 0};
    pfd[n++] = (struct pollfd){d->jobs_r, POLLIN, 0};
    first_conn = n;
    for (struct conn *c = d->conns; c; c = c->next)
      if (!c->closed) obj[n] = c, pfd[n++] = (struct pollfd){c->fd, POLLIN, 0};
    first_proc = n;
    double now = pg_now_ms(), wake = d->next_check_ms;
    for (struct wproc *w = d->procs; w; w = w->next) {
      if (w->gone) continue;
      if (w->state == W_IDLE && w->p.sock >= 0)
        obj[n] = w, pfd[n++] = (struct pollfd){w->p.sock, POLLIN, 0};
      if (w->state == W_DYING && !w->killed && w->deadline < wake) wake = w->deadline;
      /* killed after its SIGCHLD was taken (it died unseen): look again soon */
      if (w->state == W_DYING && w->killed && now + 20 < wake) wake = now + 20;
    }
    double idle_at = d->last_active_ms + d->o->idle_timeout_s * 1000;
    if (d->n_conns == 0 && idle_at < wake) wake = idle_at;
    int timeout = wake > now ? (int)(wake - now) + 1 : 0;
    int pr = poll(pfd, n, timeout);
    if (pr < 0 && errno != EINTR) {
      d->exiting = 1;
      d->exit_reason = "poll failed";
      break;
    }
    if (pr > 0) {
      if (pfd[1].revents) on_signals(d);
      if (pfd[2].revents) on_jobs(d);
      if (pfd[0].revents) pg__serve_on_accept(d);
      for (size_t i = first_conn; i < first_proc; i++)
        if (pfd[i].revents) pg__serve_conn_read(d, obj[i]);
      for (size_t i = first_proc; i < n; i++) {
        struct wproc *w = obj[i];
        if (pfd[i].revents && !w->gone && w->state == W_IDLE)
          pg__serve_w_retire(d, w, "it wrote or closed its socket while idle");
      }
    }
    now = pg_now_ms();
    int dying = 0;
    for (struct wproc *w = d->procs; w; w = w->next) {
      if (w->gone || w->state != W_DYING) continue;
      if (!w->killed && now >= w->deadline) pg__serve_kill_group(w);
      dying |= w->killed;
    }
    if (dying) pg__serve_reap_all(d);
    if (now >= d->next_check_ms) {
      d->next_check_ms = now + SERVE_CHECK_MS;
      pg__serve_reap_all(d);
      check_dir(d);
    }
    if (!d->exiting && d->n_conns == 0 && now >= d->last_active_ms + d->o->idle_timeout_s * 1000) {
      d->exiting = 1;
      d->exit_reason = "idle";
    }
    for (struct conn *c = d->conns; c; c = c->next) pg__serve_conn_lines(d, c);
    pg__serve_collect(d);
  }
  free(pfd);
  free(obj);
}

/* Ends every process: starts in flight are cut short (their process killed), idle ones
 * get EOF and a grace, then every group is killed and every pid reaped. */
static void shutdown_all(struct daemon *d) {
  while (d->n_jobs > 0) {
    for (struct wproc *w = d->procs; w; w = w->next)
      if (!w->gone && w->state == W_STARTING && w->job) {
        int pid = __atomic_load_n(&w->job->p.pid, __ATOMIC_RELAXED);
        if (pid > 0) kill(-pid, SIGKILL);
      }
    struct pollfd p = {d->jobs_r, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) on_jobs(d);
  }
  for (struct wproc *w = d->procs; w; w = w->next)
    if (!w->gone && !w->reaped && w->p.sock >= 0) shutdown(w->p.sock, SHUT_RDWR);
  double until = pg_now_ms() + SERVE_GRACE_MS;
  for (;;) {
    int left = 0;
    for (struct wproc *w = d->procs; w; w = w->next)
      left += !w->gone && !w->reaped && w->pid > 0 && pg_child_exited(w->pid, 0) == 0;
    if (!left || pg_now_ms() >= until) break;
    usleep(5000);
  }
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone || w->pid <= 0) continue;
    /* one reaped before (died while leased) had its leftovers killed then, and its
     * pid may be a stranger's now */
    if (!w->reaped) { /* the group, and children that left it too */
      w->status = pg_reap_child(w->pid, w->p.tag, NULL, 0, 200);
      w->reaped = 1;
    }
    if (w->end_to) pg__serve_answer_end(d, w->end_to, w, 0);
    pg__serve_w_remove(w);
  }
  pg__serve_collect(d);
}

static void daemon_free(struct daemon *d) {
  for (struct conn *c = d->conns; c; c = c->next)
    if (!c->closed) pg__serve_conn_close(d, c);
  pg__serve_collect(d);
  for (struct pool *pl = d->pools, *next; pl; pl = next) {
    next = pl->next;
    for (struct waiter *q = pl->queue, *qn; q; q = qn) qn = q->next, free(q);
    free(pl->target), free(pl->mode), free(pl->cwd), free(pl->host);
    pg_serve_free_strv(pl->env);
    free(pl);
  }
  if (d->lsock >= 0) close(d->lsock);
  if (d->sigfd >= 0) close(d->sigfd);
  if (d->jobs_r >= 0) close(d->jobs_r);
  if (d->jobs_w >= 0) close(d->jobs_w);
  if (d->pid_fd >= 0) close(d->pid_fd);
  free(d->dir), free(d->sock_path), free(d->pid_path), free(d->workers);
  pg_serve_free_strv(d->start_env);
  free(d->start_cwd);
  free(d->host);
}

void pg_serve_options_init(struct pg_serve_options *o) {
  memset(o, 0, sizeof *o);
  o->slots = 1;
  o->idle_timeout_s = 600;
  o->start_timeout_s = 120;
}

int pg_serve_daemon(const struct pg_serve_options *o, FILE *log, struct pg_error *err) {
  if (!o || !o->control_dir || !*o->control_dir)
    return pg_error_set(err, PG_EINVAL, "serve needs a control directory");
  if (o->detached) { /* nothing inherited from the starter's parent (CTest's pipes…) */
    int keep = log ? fileno(log) : -1;
    if (keep >= 3) {
      if (keep > 3) close_range(3, (unsigned)keep - 1, 0);
      close_range((unsigned)keep + 1, ~0u, 0);
    } else {
      close_range(3, ~0u, 0);
    }
  }
  struct daemon d;
  memset(&d, 0, sizeof d);
  struct pg_serve_options opts = *o;
  if (opts.slots < 1) opts.slots = 1;
  if (opts.idle_timeout_s <= 0) opts.idle_timeout_s = 600;
  d.o = &opts;
  d.log = log;

  /* The environment goes to workers only as their clients' (prestart: this one). */
  size_t n_env = 0;
  while (environ && environ[n_env]) n_env++;
  d.start_env = calloc(n_env + 1, sizeof *d.start_env);
  for (size_t i = 0; d.start_env && i < n_env; i++) d.start_env[i] = pg_strdup(environ[i]);
  d.start_cwd = getcwd(NULL, 0);
  d.host = pg_strdup(pg_plugin_host_path());

  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe);

  int rc = d.start_env && d.start_cwd ? daemon_setup(&d, err)
                                      : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    clearenv();
    if (chdir("/") != 0) {
    }
    pg__serve_dlog(&d, "serving %s (pid %d, slots %d, idle timeout %g s)", d.dir, (int)getpid(),
         opts.slots, opts.idle_timeout_s);
    prestart(&d);
    loop(&d);
    pg__serve_dlog(&d, "exiting: %s", d.exit_reason ? d.exit_reason : "?");
    /* Nobody can connect any more; then every process goes. */
    close(d.lsock);
    d.lsock = -1;
    struct stat st;
    if (stat(d.sock_path, &st) == 0 && st.st_ino == d.sock_ino && st.st_dev == d.sock_dev)
      unlink(d.sock_path);
    shutdown_all(&d);
    if (fstat(d.pid_fd, &st) == 0) {
      struct stat now;
      if (stat(d.pid_path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
        unlink(d.pid_path);
    }
    if (d.stop_conn) {
      cJSON *a = cJSON_CreateObject();
      cJSON_AddStringToObject(a, "status", "ok");
      cJSON_AddNumberToObject(a, "pid", getpid());
      pg__serve_answer(&d, d.stop_conn, a, -1);
      cJSON_Delete(a);
    }
    pg__serve_dlog(&d, "stopped");
  }
  daemon_free(&d);
  sigaction(SIGPIPE, &old_pipe, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}
