/* Hostile plugins: the fault zoo's correct attention impl (fault_impl.c, FZ_NONE) whose
 * M1 wrapper attacks the process it runs in (the plugin host, or a forked child with
 * --fresh-process) on call HOSTILE_CALL of that process (default 2) — once per run when
 * HOSTILE_ONCE names a marker file that does not exist yet; in case HOSTILE_CASE instead
 * when that is set —, compiled once per
 * attack with -DHOSTILE_ATTACK=HA_…:
 *
 *   HA_CLOSE_FDS   closes every fd above 2 (a daemonising library): the host loses its
 *                  protocol socket
 *   HA_DUP2_FDS    dup2()s the host's answer fd onto stdout, then prints
 *   HA_SIGSTOP     stops its own process
 *   HA_FORK_BOMB   forks HOSTILE_FORKS (200) children that sleep 60 s, then returns
 *   HA_SETSID      the same, each child in a session of its own (setsid)
 *   HA_LOCK        holds an exclusive flock on HOSTILE_LOCK from its first call on and
 *                  never releases it; "device busy" (returns 5) when it cannot take it;
 *                  leaks 1 MiB per call as well; crashes on call HOSTILE_CRASH (0: never)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define attention_module1_wrapper fz_inner_module1
#define attention_module12_wrapper fz_inner_module12
#define attention_module123_wrapper fz_inner_module123
#include "../../run/faultzoo/fault_impl.c"
#undef attention_module1_wrapper

#define HA_CLOSE_FDS 1
#define HA_DUP2_FDS 2
#define HA_SIGSTOP 3
#define HA_FORK_BOMB 4
#define HA_LOCK 5
#define HA_SETSID 6

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

#if HOSTILE_ATTACK == HA_LOCK
/* The "device": taken on the first call, held until the process ends. */
static int device_locked(void) {
  static int fd = -1;
  if (fd >= 0) return 1;
  const char *path = getenv("HOSTILE_LOCK");
  int f = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
  if (f < 0) return 0;
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    fprintf(stderr, "hostile plugin: device busy (%s): a replaced host still holds it\n",
            strerror(errno));
    close(f);
    return 0;
  }
  fd = f;
  return 1;
}
#endif

/* 1 the first time in the run (HOSTILE_ONCE names a marker file), then 0. */
static int first_attack(void) {
  const char *once = getenv("HOSTILE_ONCE");
  int fd = once && *once ? open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -2;
  if (fd >= 0) close(fd);
  return fd != -1;
}

static void attack(int call, const char *case_id) {
  const char *only = getenv("HOSTILE_CASE"); /* --fresh-process: every call is a 1st */
  int due = only && *only ? strcmp(case_id, only) == 0 : call == env_int("HOSTILE_CALL", 2);
  if (!due || !first_attack()) return;
#if HOSTILE_ATTACK == HA_CLOSE_FDS
  for (int fd = 3; fd < 1024; fd++) close(fd);
#elif HOSTILE_ATTACK == HA_DUP2_FDS
  const char *fds = getenv("PHASEGATE_WORKER_FDS");
  int r = 3, w = 4;
  if (fds) sscanf(fds, "%d,%d", &r, &w);
  fflush(stdout);
  dup2(w, 1); /* stdout onto the host's answer fd: a print lands in the protocol */
  printf("hostile plugin: hello on the protocol\n");
  fflush(stdout);
#elif HOSTILE_ATTACK == HA_SIGSTOP
  raise(SIGSTOP);
#elif HOSTILE_ATTACK == HA_FORK_BOMB || HOSTILE_ATTACK == HA_SETSID
  int n = env_int("HOSTILE_FORKS", 200);
  for (int i = 0; i < n; i++)
    if (fork() == 0) {
      if (HOSTILE_ATTACK == HA_SETSID) setsid(); /* out of the process group */
      sleep(60);
      _exit(0);
    }
#endif
}

EXPORT int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                     int32_t n_out, const pg_call *call);
int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                              const pg_call *call) {
  static int calls;
  ++calls;
#if HOSTILE_ATTACK == HA_LOCK
  if (!device_locked()) return 5;
  if (calls == env_int("HOSTILE_CRASH", 0)) raise(SIGSEGV);
  static char *hoard[64]; /* never freed: recycling the host gives it back */
  hoard[calls % 64] = malloc(1 << 20);
  if (hoard[calls % 64]) memset(hoard[calls % 64], calls, 1 << 20);
#endif
  attack(calls, call->case_id);
  return fz_inner_module1(in, n_in, out, n_out, call);
}
