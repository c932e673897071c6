/* phasegate runner — the sandbox (see sandbox.h): fork, process group, rlimits,
 * bounded capture of stdout/stderr, timeout that kills the whole group.
 *
 * The parent waits with poll() on the two capture pipes plus a pidfd for the child
 * (Linux >= 5.3), so a fast child costs no sleep; without pidfd it falls back to
 * short polling intervals. After the child ends, the rest of its process group is
 * killed too, so a grandchild holding the pipes open cannot stall the runner.
 */
#include "impl/sandbox.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG_SANDBOX_DEFAULT_CAPTURE (64u * 1024u)

void pg_sandbox_result_init(struct pg_sandbox_result *r) { memset(r, 0, sizeof *r); }

void pg_sandbox_result_reset(struct pg_sandbox_result *r) {
  if (!r) return;
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

/* A tail buffer: keeps the last `cap` bytes written. */
struct tail {
  char *buf;
  size_t len, cap;
  int truncated;
};

static void tail_append(struct tail *t, const char *data, size_t n) {
  if (!t->buf) return;
  if (n >= t->cap) {
    memcpy(t->buf, data + (n - t->cap), t->cap);
    t->truncated |= (t->len > 0 || n > t->cap);
    t->len = t->cap;
    return;
  }
  if (t->len + n > t->cap) {
    size_t drop = t->len + n - t->cap;
    memmove(t->buf, t->buf + drop, t->len - drop);
    t->len -= drop;
    t->truncated = 1;
  }
  memcpy(t->buf + t->len, data, n);
  t->len += n;
}

/* Drains what is readable on fd into t; returns 0 on EOF/error (fd finished). */
static int drain(int fd, struct tail *t) {
  char chunk[8192];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      tail_append(t, chunk, (size_t)n);
      continue;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
    return 0;
  }
}

int pg__pidfd_open(int pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

int pg__pidfd_alive(int pidfd) {
#ifdef SYS_pidfd_send_signal
  return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
#else
  (void)pidfd;
  return 0;
#endif
}

int pg__proc_stat(long pid, char *state, int *pgrp, unsigned long long *start) {
  char path[64], st[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, st, sizeof st - 1) : -1;
  if (fd >= 0) close(fd);
  if (got <= 0) return -1;
  st[got] = '\0';
  /* "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
   * utime stime cutime cstime priority nice threads itrealvalue starttime …": comm may
   * hold anything, so the fields are read after its last ')' */
  char *rp = strrchr(st, ')'), c = 0;
  int g = 0;
  unsigned long long t = 0;
  if (!rp || sscanf(rp + 1, " %c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                    "%*d %*d %*d %llu", &c, &g, &t) != 3)
    return -1;
  if (state) *state = c;
  if (pgrp) *pgrp = g;
  if (start) *start = t;
  return 0;
}

int pg_child_exited(int pid, int block) {
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) == 0)
      return si.si_pid == (pid_t)pid;
    if (errno != EINTR) return -1;
  }
}

/* ------------------------------------------------------------------ leftovers */

/* Now in the clock ticks of /proc/<pid>/stat's starttime (boot-based), minus one tick:
 * a process started before this cannot descend from one started after it. */
static unsigned long long boot_ticks(void) {
  struct timespec ts;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return 0;
  unsigned long long t = (unsigned long long)ts.tv_sec * (unsigned long long)hz +
                         (unsigned long long)ts.tv_nsec / (1000000000ull / (unsigned long long)hz);
  return t > 1 ? t - 1 : 0;
}

void pg__proc_tag(const void *owner, char *buf, size_t size) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  /* the tag says when it was made (ticks): older processes are never searched for it */
  snprintf(buf, size, "PHASEGATE_PROC_TAG=%llu.%ld.%lx.%lld.%ld", boot_ticks(), (long)getpid(),
           (unsigned long)(uintptr_t)owner, (long long)ts.tv_sec, (long)ts.tv_nsec);
}

/* 1 when /proc/<pid>/environ holds the entry `tag` (NUL-separated entries); buf is
 * scratch space of `cap` bytes (a longer environment is searched in its first cap). */
static int environ_has(const char *pid, const char *tag, char *buf, size_t cap) {
  char path[300];
  snprintf(path, sizeof path, "/proc/%.200s/environ", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0, tl = strlen(tag);
  ssize_t n;
  while (len < cap && (n = read(fd, buf + len, cap - len)) > 0) len += (size_t)n;
  close(fd);
  int found = 0;
  for (size_t i = 0; !found && i + tl <= len; i += strnlen(buf + i, len - i) + 1)
    found = memcmp(buf + i, tag, tl) == 0 && (i + tl == len || buf[i + tl] == '\0');
  return found;
}

/* What marks a descendant besides the group: the tag in its environment (a process
 * that exec()ed since the tag was set, and its forks), or an open file it inherited
 * (the capture pipe, the log: a fork of a forked child, whose /proc environ is still
 * the runner's own). */
struct marks {
  long min_pid;             /* older pids are skipped unread (0: none skipped) */
  const char *tag;
  unsigned long long since; /* only processes started since are searched */
  int n;
  dev_t dev[4];
  ino_t ino[4];
  char *buf;                /* scratch for environments */
  size_t cap;
};

/* 1 when process pid has one of the marked files open. */
static int holds_marked_file(const char *pid, const struct marks *m) {
  if (m->n == 0) return 0;
  char path[300];
  snprintf(path, sizeof path, "/proc/%.200s/fd", pid);
  DIR *d = opendir(path);
  if (!d) return 0;
  int found = 0;
  struct dirent *de;
  while (!found && (de = readdir(d)) != NULL) {
    struct stat st;
    if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) != 0) continue;
    for (int i = 0; i < m->n && !found; i++) found = st.st_dev == m->dev[i] && st.st_ino == m->ino[i];
  }
  closedir(d);
  return found;
}

/* One pass over /proc: SIGKILL to every live member of pgid and every marked process.
 * Returns how many marked processes outside the group it killed: only those can have
 * forked since (a fork racing with the group's SIGKILL fails in the kernel), so only
 * they call for another pass. The common end, nothing escaped, costs one pass. */
static int kill_pass(int pgid, const struct marks *m) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  int n = 0;
  pid_t self = getpid();
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0 || pid < m->min_pid || pid == (long)self) continue;
    char state = 0;
    int pgrp = 0;
    unsigned long long start = 0;
    if (pg__proc_stat(pid, &state, &pgrp, &start) != 0) continue;
    if (state == 'Z' || state == 'X') continue; /* dead: holds nothing any more */
    if (pgid > 0 && pgrp == pgid) {
      kill((pid_t)pid, SIGKILL); /* dying already: the group was killed before the pass */
    } else if (start >= m->since &&
               ((m->tag && m->buf && environ_has(de->d_name, m->tag, m->buf, m->cap)) ||
                holds_marked_file(de->d_name, m))) {
      kill((pid_t)pid, SIGKILL);
      n++;
    }
  }
  closedir(d);
  return n;
}

/* Kills (SIGKILL) every live process of group pgid (> 0), every process whose
 * environment holds the entry `tag` (may be NULL) and every process started since the
 * tag that holds one of the files of fds open (the capture pipes, the log: how the forks
 * of a forked, never exec()ed child are found), over and over until none is left or
 * max_ms passed (a fork loop racing the kill), so that whatever the impl held — a
 * flock, a device — is released when this returns. Returns how many it killed. */
/* The files marks.dev/ino name: those of fds, as fstat sees them (at most 4). */
static int file_ids(const int *fds, int n_fds, dev_t *dev, ino_t *ino) {
  int n = 0;
  for (int i = 0; i < n_fds && n < 4; i++) {
    struct stat st;
    if (fds[i] >= 0 && fstat(fds[i], &st) == 0) dev[n] = st.st_dev, ino[n++] = st.st_ino;
  }
  return n;
}

/* kill_leftovers with the marked files given by identity (the watchdog holds none of
 * them open). */
static int kill_marked(int pgid, const char *tag, const dev_t *dev, const ino_t *ino, int n_files,
                       double max_ms) {
  struct marks m;
  memset(&m, 0, sizeof m);
  m.tag = tag && *tag ? tag : NULL;
  m.since = m.tag ? strtoull(strchr(m.tag, '=') + 1, NULL, 10) : 0;
  for (int i = 0; i < n_files && m.n < 4; i++) m.dev[m.n] = dev[i], m.ino[m.n++] = ino[i];
  m.cap = 64u << 10;
  m.buf = m.tag ? malloc(m.cap) : NULL;
  /* Everything to find was forked after the leader pgid, so has a greater pid unless
   * the pid counter wrapped since; skipping the older ones unread makes the pass cost
   * the processes started since, not every process on the machine. */
  long last = 0;
  FILE *f = pgid > 0 ? fopen("/proc/sys/kernel/ns_last_pid", "re") : NULL;
  if (f) {
    if (fscanf(f, "%ld", &last) != 1) last = 0;
    fclose(f);
  }
  m.min_pid = (pgid > 0 && last >= pgid) ? pgid : 0;
  if (pgid > 0) kill(-pgid, SIGKILL);
  int total = 0;
  double until = pg_now_ms() + max_ms;
  for (;;) {
    int n = kill_pass(pgid, &m);
    total += n;
    if (n == 0 || pg_now_ms() >= until) break;
    struct timespec ts = {0, 2000000}; /* SIGKILL is delivered asynchronously */
    nanosleep(&ts, NULL);
  }
  free(m.buf);
  return total;
}

static int kill_leftovers(int pgid, const char *tag, const int *fds, int n_fds, double max_ms) {
  dev_t dev[4];
  ino_t ino[4];
  int n = file_ids(fds, n_fds, dev, ino);
  return kill_marked(pgid, tag, dev, ino, n, max_ms);
}

/* ------------------------------------------------------------------ the watchdog */

#define PG__WATCH_SLOTS 512

/* One live process the impl room started: its group (0: a free slot, -1: being
 * written) and its tag. */
struct watch_slot {
  _Atomic int pgid;
  char tag[PG_PROC_TAG_MAX];
  int n_files;               /* files its forks hold (a forked child's capture pipes) */
  dev_t dev[2];
  ino_t ino[2];
};

/* The registry: set once by pg_impl_watchdog_start on the thread that starts every
 * process, before any other thread exists; shared (MAP_SHARED) with the watchdog and
 * the forked --jobs job processes, so slots are claimed with atomics. */
static struct watch_slot *watch_slots;

void pg__watch_add(int pgid, const char *tag, const int *fds, int n_fds) {
  if (!watch_slots || pgid <= 0) return;
  for (int i = 0; i < PG__WATCH_SLOTS; i++) {
    int free_slot = 0;
    if (!atomic_compare_exchange_strong(&watch_slots[i].pgid, &free_slot, -1)) continue;
    snprintf(watch_slots[i].tag, sizeof watch_slots[i].tag, "%s", tag ? tag : "");
    dev_t dev[4];
    ino_t ino[4];
    int n = file_ids(fds, n_fds < 2 ? n_fds : 2, dev, ino);
    for (int f = 0; f < n; f++) watch_slots[i].dev[f] = dev[f], watch_slots[i].ino[f] = ino[f];
    watch_slots[i].n_files = n;
    atomic_store(&watch_slots[i].pgid, pgid);
    return;
  }
}

void pg__watch_remove(int pgid) {
  if (!watch_slots || pgid <= 0) return;
  for (int i = 0; i < PG__WATCH_SLOTS; i++) {
    int want = pgid;
    if (atomic_compare_exchange_strong(&watch_slots[i].pgid, &want, -1)) {
      watch_slots[i].tag[0] = '\0';
      atomic_store(&watch_slots[i].pgid, 0);
      return;
    }
  }
}

/* The watchdog's life: deaf to the terminal and to its own group's signals, it waits
 * for the death signal of the process that forked it, then sweeps what is listed. */
static void watchdog_main(long parent) {
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGUSR1);
  sigprocmask(SIG_BLOCK, &wake, NULL);
  static const int deaf[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
  for (size_t i = 0; i < sizeof deaf / sizeof *deaf; i++) signal(deaf[i], SIG_IGN);
  setpgid(0, 0); /* a kill of the runner's group (Ctrl-C, ctest) must not end it first */
  int devnull = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && devnull >= 0; fd++) dup2(devnull, fd);
  /* holding nothing of the runner's: a pipe it keeps open would stall ctest's read */
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
    for (int fd = 3; fd < 1024; fd++) close(fd);
  if (prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0) == 0 && (long)getppid() == parent) {
    int sig;
    while (sigwait(&wake, &sig) != 0) {
    }
  }
  for (int pass = 0; pass < 2; pass++) /* a slot written while the first pass ran */
    for (int i = 0; i < PG__WATCH_SLOTS; i++) {
      int pgid = atomic_load(&watch_slots[i].pgid);
      const struct watch_slot *w = &watch_slots[i];
      if (pgid > 0) kill_marked(pgid, w->tag, w->dev, w->ino, w->n_files, 500);
    }
  _exit(0);
}

int pg_impl_watchdog_start(struct pg_error *err) {
  if (watch_slots) return PG_OK;
  struct watch_slot *slots = mmap(NULL, PG__WATCH_SLOTS * sizeof *slots, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED)
    return pg_error_set(err, PG_EIO, "watchdog: mmap: %s", strerror(errno));
  for (int i = 0; i < PG__WATCH_SLOTS; i++) atomic_init(&slots[i].pgid, 0);
  fflush(NULL); /* buffered output must not be written twice */
  long parent = (long)getpid();
  watch_slots = slots;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    watch_slots = NULL;
    munmap(slots, PG__WATCH_SLOTS * sizeof *slots);
    return pg_error_set(err, PG_EIO, "watchdog: fork: %s", strerror(e));
  }
  if (pid == 0) watchdog_main(parent);
  /* never waited for: it outlives us by design (init reaps it) */
  return PG_OK;
}

int pg_reap_child(int pid, const char *tag, const int *fds, int n_fds, double max_ms) {
  kill_leftovers(pid, tag, fds, n_fds, max_ms);
  pg__watch_remove(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* ------------------------------------------------------------------ child */

static void child_setup(const struct pg_sandbox_opts *o, int out_w, int err_w, long parent) {
  /* first: a runner killed from here on takes this child with it */
  if (pg__die_with(parent) != 0) _exit(127);
  setpgid(0, 0);
  pg_sandbox_default_signals();
  dup2(out_w, STDOUT_FILENO);
  dup2(err_w, STDERR_FILENO);
  if (out_w > STDERR_FILENO) close(out_w);
  if (err_w > STDERR_FILENO) close(err_w);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    dup2(devnull, STDIN_FILENO);
    if (devnull > STDERR_FILENO) close(devnull);
  }
  struct rlimit rl = {0, 0};
  setrlimit(RLIMIT_CORE, &rl);
  if (o && o->rlimit_as && !PG_SANDBOX_ASAN) {
    rl.rlim_cur = rl.rlim_max = (rlim_t)o->rlimit_as;
    setrlimit(RLIMIT_AS, &rl);
  }
}

/* opts->stamp_exit: a thread that notes when the child exits without reaping it
 * (WNOWAIT), so the reaper may come much later. If the reaper wins the race the
 * thread gets ECHILD and notes nothing: then the reap time is exact anyway. */
struct exit_stamp {
  pthread_t tid;
  pid_t pid;
  double at;
};

static void *exit_stamp_main(void *arg) {
  struct exit_stamp *s = arg;
  siginfo_t si;
  for (;;) {
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOWAIT) == 0) {
      s->at = pg_now_ms();
      break;
    }
    if (errno != EINTR) break;
  }
  return NULL;
}

int pg_sandbox_start(pg_sandbox_fn fn, void *ctx, const struct pg_sandbox_opts *opts,
                     struct pg_sandbox_proc *p, struct pg_error *err) {
  memset(p, 0, sizeof *p);
  p->pidfd = p->out_fd = p->err_fd = -1;
  p->cap = (opts && opts->capture_max) ? opts->capture_max : PG_SANDBOX_DEFAULT_CAPTURE;
  p->timeout_ms = (opts && opts->timeout_s > 0) ? opts->timeout_s * 1e3 : -1.0;
  int pout[2] = {-1, -1}, perr[2] = {-1, -1};
  /* One shared page: the child stamps when fn returned, so the wall time stays the
   * impl's even when the parent collects it late (it computes the golden meanwhile). */
  double *end = mmap(NULL, sizeof *end, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (end == MAP_FAILED) return pg_error_set(err, PG_ENOMEM, "sandbox: mmap: %s", strerror(errno));
  *end = 0.0;
  if (pipe2(pout, O_CLOEXEC) != 0 || pipe2(perr, O_CLOEXEC) != 0) {
    int e = errno;
    if (pout[0] >= 0) close(pout[0]), close(pout[1]);
    munmap(end, sizeof *end);
    return pg_error_set(err, PG_EIO, "sandbox: pipe: %s", strerror(e));
  }
  fflush(NULL); /* buffered parent output must not be duplicated by the child */
  pg__proc_tag(p, p->tag, sizeof p->tag);
  double t0 = pg_now_ms();
  long parent = (long)getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pout[0]), close(pout[1]), close(perr[0]), close(perr[1]);
    munmap(end, sizeof *end);
    return pg_error_set(err, PG_EIO, "sandbox: fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(pout[0]);
    close(perr[0]);
    child_setup(opts, pout[1], perr[1], parent);
    putenv(p->tag); /* the child's copy of p: lives as long as the child */
    /* what it exec()s (phasegate's Python helper) checks and renews the death signal */
    snprintf(p->die_with, sizeof p->die_with, PG_DIE_WITH_ENV "=%ld", parent);
    putenv(p->die_with);
    int rc = fn(ctx);
    fflush(NULL);
    *end = pg_now_ms();
    _exit(rc & 0xff);
  }
  setpgid(pid, pid); /* also done by the child: whichever runs first wins the race */
  int marked[2] = {pout[1], perr[1]}; /* how its forks that left the group are found */
  pg__watch_add(pid, p->tag, marked, 2);
  close(pout[1]);
  close(perr[1]);
  fcntl(pout[0], F_SETFL, O_NONBLOCK);
  fcntl(perr[0], F_SETFL, O_NONBLOCK);
  p->pid = pid;
  p->pidfd = pg__pidfd_open(pid);
  p->out_fd = pout[0];
  p->err_fd = perr[0];
  p->t0 = t0;
  p->end_ms = end;
  if (opts && opts->stamp_exit) {
    struct exit_stamp *es = calloc(1, sizeof *es);
    if (es) {
      es->pid = pid;
      if (pthread_create(&es->tid, NULL, exit_stamp_main, es) == 0) p->exit_stamp = es;
      else free(es); /* no stamp: the reap time stands in */
    }
  }
  return PG_OK;
}

/* 1 when stderr holds a sanitizer runtime's crash report: the runtime turns a crash
 * into that report and exit(1), so the exit status alone does not show it. */
static int says_sanitizer_crash(const char *err) {
  static const char *const needles[] = {"AddressSanitizer: SEGV", "AddressSanitizer: BUS",
                                        "AddressSanitizer: FPE", "AddressSanitizer: ILL"};
  for (size_t i = 0; err && i < sizeof needles / sizeof *needles; i++)
    if (strstr(err, needles[i])) return 1;
  return 0;
}

/* 1 when the pipe is (nearly) full: its writer may have been blocked on us. */
static int pipe_full(int fd) {
  int avail = 0;
  if (ioctl(fd, FIONREAD, &avail) != 0) return 0;
#ifdef F_GETPIPE_SZ
  int size = fcntl(fd, F_GETPIPE_SZ);
#else
  int size = 65536;
#endif
  return size > 0 && avail >= size - 4096;
}

int pg_sandbox_wait(struct pg_sandbox_proc *p, struct pg_sandbox_result *r,
                    struct pg_error *err) {
  (void)err;
  pg_sandbox_result_init(r);
  pid_t pid = (pid_t)p->pid;
  size_t cap = p->cap;
  struct tail tout = {malloc(cap + 1), 0, cap, 0}, terr = {malloc(cap + 1), 0, cap, 0};
  double timeout_ms = p->timeout_ms, t0 = p->t0;
  /* The timeout counts from the fork. If the caller did other work meanwhile and the
   * child filled a capture pipe, the child was stalled by us, not by itself: its clock
   * restarts now. */
  if (timeout_ms >= 0 && (pipe_full(p->out_fd) || pipe_full(p->err_fd))) {
    double late = pg_now_ms() - t0;
    if (late > 0) timeout_ms += late;
  }
  int out_open = 1, err_open = 1, exited = 0, status = 0, pidfd = p->pidfd;
  int pout0 = p->out_fd, perr0 = p->err_fd;
  double exited_at = 0.0;
  for (;;) {
    if (!exited && pg_child_exited(pid, 0) != 0) exited = 1, exited_at = pg_now_ms();
    if (exited && !out_open && !err_open) break;
    if (exited) {
      /* The child is gone: stragglers of its group must not keep the pipes open. */
      kill(-pid, SIGKILL);
      if (out_open) out_open = drain(pout0, &tout);
      if (err_open) err_open = drain(perr0, &terr);
      if (out_open || err_open) {
        struct pollfd fds[2] = {{pout0, POLLIN, 0}, {perr0, POLLIN, 0}};
        if (!out_open) fds[0].fd = -1;
        if (!err_open) fds[1].fd = -1;
        if (poll(fds, 2, 100) <= 0) break; /* nothing more within 100 ms: stop */
      }
      continue;
    }
    double elapsed = pg_now_ms() - t0;
    if (timeout_ms >= 0 && elapsed >= timeout_ms) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      pg_child_exited(pid, 1);
      exited = 1, exited_at = pg_now_ms();
      r->timed_out = 1;
      continue;
    }
    struct pollfd fds[3] = {{out_open ? pout0 : -1, POLLIN, 0},
                            {err_open ? perr0 : -1, POLLIN, 0},
                            {pidfd, POLLIN, 0}};
    int wait_ms = 1000;
    if (pidfd < 0 || (!out_open && !err_open)) wait_ms = pidfd < 0 ? 2 : 1000;
    if (timeout_ms >= 0) {
      double left = timeout_ms - elapsed;
      if (left < wait_ms) wait_ms = (int)left + 1;
    }
    int pr = poll(fds, 3, wait_ms);
    if (pr < 0 && errno != EINTR) {
      /* Should not happen; fall back to a short sleep to avoid spinning. */
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    if (pr > 0) {
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
        out_open = drain(pout0, &tout);
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
        err_open = drain(perr0, &terr);
    }
  }
  if (!exited) pg_child_exited(pid, 1), exited_at = pg_now_ms();
  int marked[2] = {pout0, perr0}; /* a forked child's forks do not show the tag */
  status = pg_reap_child(pid, p->tag, marked, 2, 1000); /* the group, children that left it */
  if (pidfd >= 0) close(pidfd);
  close(pout0);
  close(perr0);
  double end = p->end_ms ? *p->end_ms : 0.0;
  if (p->exit_stamp) {
    struct exit_stamp *es = p->exit_stamp;
    pthread_join(es->tid, NULL); /* the child is reaped: waitid has returned */
    if (end <= 0.0 && es->at > 0.0) end = es->at;
    free(es);
  }
  r->wall_ms = (end > 0.0 && !r->timed_out ? end : exited_at) - t0;
  if (p->end_ms) munmap((void *)p->end_ms, sizeof *p->end_ms);
  memset(p, 0, sizeof *p);
  p->pidfd = p->out_fd = p->err_fd = -1;
  if (!r->timed_out) {
    if (WIFEXITED(status)) {
      r->exited = 1;
      r->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r->signaled = 1;
      r->signo = WTERMSIG(status);
    }
  }
  /* Out of memory for the tails: the verdict stands, the captured text is lost. */
  if (tout.buf) tout.buf[tout.len] = '\0';
  if (terr.buf) terr.buf[terr.len] = '\0';
  r->out = tout.buf;
  r->out_len = tout.buf ? tout.len : 0;
  r->out_truncated = tout.truncated;
  r->err = terr.buf;
  r->err_len = terr.buf ? terr.len : 0;
  r->err_truncated = terr.truncated;
  pg_sandbox_result_scan(r);
  return PG_OK;
}

void pg_sandbox_result_scan(struct pg_sandbox_result *r) {
  r->says_oom = pg_sandbox_text_says_oom(r->err) || pg_sandbox_text_says_oom(r->out);
  r->sanitizer_report = says_sanitizer_crash(r->err);
}

int pg_sandbox_run(pg_sandbox_fn fn, void *ctx, const struct pg_sandbox_opts *opts,
                   struct pg_sandbox_result *r, struct pg_error *err) {
  struct pg_sandbox_proc p;
  pg_sandbox_result_init(r);
  PG_RETURN_IF_ERROR(pg_sandbox_start(fn, ctx, opts, &p, err));
  return pg_sandbox_wait(&p, r, err);
}

const char *pg_signal_name(int signo, char *buf, size_t size) {
  switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    default: snprintf(buf, size, "signal %d", signo); return buf;
  }
}

int pg_sandbox_text_says_oom(const char *text) {
  static const char *const needles[] = {"MemoryError", "bad_alloc", "Cannot allocate memory",
                                        "out of memory", "Out of memory", "OutOfMemory"};
  if (!text) return 0;
  for (size_t i = 0; i < sizeof needles / sizeof *needles; i++)
    if (strstr(text, needles[i])) return 1;
  return 0;
}
