/* phasegate fuzz harnesses — a kill() that signals nothing, for the harnesses of the
 * process protocols (worker, serve_daemon, serve_client).
 *
 * The code under test kills the process group of a worker that breaks the protocol,
 * and the client side kills a pid a daemon's answer names. In a harness those pids come
 * from the fuzzer's bytes: the real kill() could hit any process of the user (pid 1
 * means all of them). This definition in the harness executable takes the place of
 * libc's for the statically linked runner library; it records nothing and reports the
 * process as gone (ESRCH), which is what the code sees for a pid that has ended.
 * Everything else (sockets, parsing, the state machines) runs unchanged. A signal for
 * every process (pid -1), for the caller's own group (0) or for the caller itself is
 * never right, whatever the bytes said: that traps, so libFuzzer keeps the input. */
#ifndef PHASEGATE_FUZZ_NOKILL_H
#define PHASEGATE_FUZZ_NOKILL_H

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int kill(pid_t pid, int sig);
int kill(pid_t pid, int sig) {
  (void)sig;
  if (pid == -1 || pid == 0 || pid == getpid() || pid == -getpid()) __builtin_trap();
  errno = ESRCH;
  return -1;
}

#endif
