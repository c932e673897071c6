/* phasegate runner — the sandbox: runs one piece of impl code in a child process so
 * that a crash, a hang or a runaway allocation in the impl is a result, not the end
 * of the runner (docs/design.md §6).
 *
 * The child is forked, put in its own process group, given rlimits (RLIMIT_CORE 0,
 * optional RLIMIT_AS), its stdout/stderr captured through pipes (the last
 * `capture_max` bytes of each are kept), and killed with its whole group when the
 * timeout expires. Whatever the child must hand back in bulk goes through memory the
 * caller mapped MAP_SHARED before calling (see impl/plugin.c).
 */
#ifndef PHASEGATE_SANDBOX_H
#define PHASEGATE_SANDBOX_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "phasegate/error.h"

/* 1 when this build runs under AddressSanitizer: RLIMIT_AS is then not applied (ASan
 * reserves terabytes of shadow address space). */
#if defined(__SANITIZE_ADDRESS__)
#define PG_SANDBOX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PG_SANDBOX_ASAN 1
#endif
#endif
#ifndef PG_SANDBOX_ASAN
#define PG_SANDBOX_ASAN 0
#endif

/* Every process the impl room starts carries a unique PHASEGATE_PROC_TAG=… entry in its
 * environment, inherited by whatever it forks. A child that leaves its process group
 * (setsid(), setpgid()) escapes kill(-pgid) but not its environment: the end of a
 * process kills the group and every process still carrying the tag (or, for the forks
 * of a forked child, whose /proc environ is the runner's, still holding the capture
 * pipe or log it inherited). Not covered: a descendant that also drops its environment
 * (execve with a clean one) and closes what it inherited — a cgroup would be needed,
 * and none is available to an unprivileged runner. */
#define PG_PROC_TAG_MAX 80
void pg__proc_tag(const void *owner, char *buf, size_t size);

/* 1 when the child pid has exited, without reaping it (waitid WNOWAIT); 0 when it runs;
 * -1 when it is not a child. block: wait for the exit. Callers reap only after killing
 * what it left behind: while its zombie stays, neither its pid nor its group id can be
 * given to another process (pid_max is 32768 on many machines and wraps within a test
 * run), so kill(-pid) and pg_reap_child's sweep cannot reach a stranger. */
int pg_child_exited(int pid, int block);
/* Ends child pid for good, in the order that keeps every kill on its own processes:
 * while its zombie still holds the pid and the group id, kills (SIGKILL) its group, every
 * process whose environment holds `tag` (may be NULL) and every one started since the tag
 * that holds one of fds open, until none is left or max_ms passed; then the reap, so
 * that whatever the impl held (a flock, a device) is released. Returns the wait status. */
int pg_reap_child(int pid, const char *tag, const int *fds, int n_fds, double max_ms);

/* Nothing outlives the runner (docs/runner.md "Nothing outlives the runner"): makes the
 * calling process die (SIGKILL) when `parent` — the process that started it — ends,
 * kill -9 included. PR_SET_PDEATHSIG fires when the *thread* that forked/spawned exits:
 * phasegate starts its processes from the thread that lives as long as the process
 * (the run's main thread). The parent may be gone before the prctl: then getppid()
 * already differs, and this returns -1 (the caller exits at once); 0 otherwise.
 * Survives execve (not set-uid ones), not fork: each generation sets its own.
 * Header-only: the plugin host uses it too. */
static inline int pg__die_with(long parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return 0; /* no such kernel: best effort */
  return (long)getppid() == parent ? 0 : -1;
}
/* The watchdog (docs/runner.md "Nothing outlives the runner"): what the death signal
 * cannot reach — the forks of an impl process, which do not inherit it — is swept by a
 * small process the runner forks first, before any other process or thread
 * (pg_impl_watchdog_start, impl.h). It is told, through a page of shared memory, the
 * process group and tag of every process the impl room starts and has not reaped yet
 * (by the runner and by its --jobs job processes, which inherit the page), with the
 * files (at most 2 of fds) that mark its forks which left the group; it dies
 * with nobody, but wakes when the runner ends (its own death signal, kill -9 of the
 * runner included) and kills every listed group and every process carrying a listed
 * tag, then exits. In a process that never started one (`phasegate serve`, whose
 * processes outlive their clients by design), add and remove do nothing. Best effort
 * past PG__WATCH_SLOTS live processes. */
void pg__watch_add(int pgid, const char *tag, const int *fds, int n_fds);
void pg__watch_remove(int pgid);

/* The environment entry naming the process a persistent process must die with
 * (PHASEGATE_DIE_WITH=<pid>): set by the runner on what it spawns itself (never on a
 * leased `phasegate serve` process), read by the plugin host, its exec shim and
 * phasegate's Python worker. */
#define PG_DIE_WITH_ENV "PHASEGATE_DIE_WITH"

/* The fields of /proc/<pid>/stat phasegate reads (each pointer may be NULL): the state
 * ('R', 'S', 'Z', …), the process group, the start time in clock ticks since boot.
 * 0, or -1 when there is no such process (or its stat cannot be read). */
int pg__proc_stat(long pid, char *state, int *pgrp, unsigned long long *start);

/* pidfd_open(2), -1 where the kernel has none; pg__pidfd_alive: 1 while the process is
 * not reaped (running or a zombie: its pid and group id are still its own). For a
 * process that is not our child (a leased worker), a pid alone may name a stranger. */
int pg__pidfd_open(int pid);
int pg__pidfd_alive(int pidfd);

/* Runs in the child; its return value becomes the child's exit status. It may also
 * exec() another program (the exec adapter does). */
typedef int (*pg_sandbox_fn)(void *ctx);

struct pg_sandbox_opts {
  double timeout_s;     /* <= 0: no timeout */
  uint64_t rlimit_as;   /* address-space limit in bytes for the child; 0 = inherited */
  size_t capture_max;   /* bytes kept per stream (the tail); 0 = 64 KiB */
  int stamp_exit;       /* pg_sandbox_start: note when the child exits (a helper thread
                           waits for it), for a child that exec()s and so cannot stamp
                           its own end; see wall_ms */
};

struct pg_sandbox_result {
  int exited, exit_code;   /* normal exit and its status */
  int signaled, signo;     /* killed by a signal (not counting our timeout kill) */
  int timed_out;           /* we killed it after timeout_s */
  double wall_ms;
  char *out, *err;         /* captured tails, NUL-terminated, owned (may be NULL) */
  size_t out_len, err_len;
  int out_truncated, err_truncated;
  /* What the captured text says, read once where it is captured (the impl room's only
   * text scans of impl output; what it means for a failure's subcategory is
   * run/classify.c's table): */
  int says_oom;            /* an allocation failure (pg_sandbox_text_says_oom) */
  int sanitizer_report;    /* a sanitizer's crash report (AddressSanitizer: SEGV, …) on stderr */
};

void pg_sandbox_result_init(struct pg_sandbox_result *r);
void pg_sandbox_result_reset(struct pg_sandbox_result *r);

/* Forks, runs fn(ctx) in the child under `opts`, waits (at most the timeout), and
 * fills `r`. Returns PG_OK whenever the child was started, whatever it did; PG_EIO
 * (with err) only when the sandbox itself could not be set up (pipe, fork). */
int pg_sandbox_run(pg_sandbox_fn fn, void *ctx, const struct pg_sandbox_opts *opts,
                   struct pg_sandbox_result *r, struct pg_error *err);

/* The same in two steps, so the caller can work while the child runs (the runner
 * computes the golden meanwhile). pg_sandbox_start forks and returns at once;
 * pg_sandbox_wait must then be called exactly once (it reaps the child, closes the
 * pipes, frees `p`). The timeout counts from the fork — unless a capture pipe is full
 * when waiting starts (the child may have been blocked on the caller), then from then.
 * wall_ms is the child's own: from the fork to when fn returned in the child, or else
 * to when it exited (opts->stamp_exit), or else to the reap. The child dies with the
 * thread that started it (pg__die_with): start and wait from one that outlives it. */
struct pg_sandbox_proc {
  int pid;                 /* 0: nothing started */
  char tag[PG_PROC_TAG_MAX]; /* the child's PHASEGATE_PROC_TAG entry (pg__proc_tag) */
  char die_with[48];       /* the child's PHASEGATE_DIE_WITH entry (set in the child) */
  int pidfd, out_fd, err_fd;
  size_t cap;
  double t0, timeout_ms;
  volatile double *end_ms; /* shared page stamped by the child */
  void *exit_stamp;        /* the helper of opts->stamp_exit, or NULL */
};
int pg_sandbox_start(pg_sandbox_fn fn, void *ctx, const struct pg_sandbox_opts *opts,
                     struct pg_sandbox_proc *p, struct pg_error *err);
int pg_sandbox_wait(struct pg_sandbox_proc *p, struct pg_sandbox_result *r,
                    struct pg_error *err);

/* Default dispositions for the signals a crash or a stop raises: the runner (or a
 * sanitizer runtime, before main) may have handlers or ignore them, and an impl that
 * crashes must end its process with that signal. For a forked child and for the
 * programs that host impls (the plugin host). */
static inline void pg_sandbox_default_signals(void) {
  static const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                             SIGABRT, SIGTRAP};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
}

/* "SIGSEGV" for SIGSEGV, "signal 42" for unknown numbers (buf holds the latter). */
const char *pg_signal_name(int signo, char *buf, size_t size);

/* 1 when captured text looks like an allocation failure (MemoryError, bad_alloc,
 * "Cannot allocate memory", "out of memory"). */
int pg_sandbox_text_says_oom(const char *text);

/* Sets says_oom and sanitizer_report from the captured text: the one place the impl room
 * scans the text of an impl's output (also for persistent processes' captured logs);
 * run/classify.c matches its table of environment failures and device labels against
 * the same captured text. */
void pg_sandbox_result_scan(struct pg_sandbox_result *r);

#endif
