/* Unit tests for runner/impl/sandbox.c: exit codes, signals, timeouts that kill the whole
 * process group, children that leave it with setsid(), bounded capture, rlimits; and the
 * removal of case directories (pg_remove_tree) that never follows a link; and the
 * primitives that keep kills after an exit from reaching a reused pid. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"
#include "base/base.h"
#include "impl/sandbox.h"

static int say_and_exit(void *ctx) {
  printf("out line\n");
  fprintf(stderr, "err line\n");
  return *(int *)ctx;
}

PG_TEST(sandbox_exit_code_and_capture) {
  int code = 7;
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {5, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_run(say_and_exit, &code, &o, &r, NULL));
  PG_CHECK(r.exited);
  PG_CHECK_EQ_INT(7, r.exit_code);
  PG_CHECK(!r.signaled && !r.timed_out);
  PG_CHECK_EQ_STR("out line\n", r.out);
  PG_CHECK_EQ_STR("err line\n", r.err);
  pg_sandbox_result_reset(&r);
}

static int segv(void *ctx) {
  (void)ctx;
  raise(SIGSEGV);
  return 0;
}

PG_TEST(sandbox_signal) {
  struct pg_sandbox_result r;
  PG_CHECK_OK(pg_sandbox_run(segv, NULL, NULL, &r, NULL));
  PG_CHECK(r.signaled);
  PG_CHECK_EQ_INT(SIGSEGV, r.signo);
  char buf[32];
  PG_CHECK_EQ_STR("SIGSEGV", pg_signal_name(r.signo, buf, sizeof buf));
  pg_sandbox_result_reset(&r);
}

/* A child that forks a grandchild holding the pipes, then both sleep forever. */
static int hang_with_grandchild(void *ctx) {
  (void)ctx;
  if (fork() == 0) for (;;) pause();
  printf("started\n");
  fflush(stdout);
  for (;;) pause();
  return 0;
}

PG_TEST(sandbox_timeout_kills_group) {
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {0.3, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_run(hang_with_grandchild, NULL, &o, &r, NULL));
  PG_CHECK(r.timed_out);
  PG_CHECK(r.wall_ms >= 250 && r.wall_ms < 3000);
  PG_CHECK_EQ_STR("started\n", r.out);
  pg_sandbox_result_reset(&r);
}

/* The child exits at once but leaves a grandchild with the pipes open. */
static int orphan_grandchild(void *ctx) {
  (void)ctx;
  if (fork() == 0) for (;;) pause();
  return 0;
}

PG_TEST(sandbox_straggler_does_not_stall) {
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {10, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_run(orphan_grandchild, NULL, &o, &r, NULL));
  PG_CHECK(r.exited && r.exit_code == 0);
  PG_CHECK(!r.timed_out);
  PG_CHECK(r.wall_ms < 2000);
  pg_sandbox_result_reset(&r);
}

static int flood(void *ctx) {
  (void)ctx;
  char line[101];
  memset(line, 'x', 99);
  line[99] = '\n';
  line[100] = 0;
  for (int i = 0; i < 5000; i++) fputs(line, stdout); /* 500 KB */
  printf("THE END\n");
  return 0;
}

PG_TEST(sandbox_capture_is_bounded_tail) {
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {10, 0, 4096, 0};
  PG_CHECK_OK(pg_sandbox_run(flood, NULL, &o, &r, NULL));
  PG_CHECK(r.exited && r.exit_code == 0);
  PG_CHECK_EQ_INT(4096, r.out_len);
  PG_CHECK(r.out_truncated);
  PG_CHECK(strstr(r.out, "THE END\n") != NULL);
  pg_sandbox_result_reset(&r);
}

static int check_limits(void *ctx) {
  (void)ctx;
  struct rlimit rl;
  getrlimit(RLIMIT_CORE, &rl);
  if (rl.rlim_cur != 0) return 1;
  getrlimit(RLIMIT_AS, &rl);
  if (rl.rlim_cur != (rlim_t)1 << 34) return 2;
  void *p = malloc((size_t)1 << 35); /* beyond the limit */
  if (p) return 3;
  return 0;
}

PG_TEST(sandbox_rlimits) {
  if (PG_SANDBOX_ASAN) PG_SKIP("RLIMIT_AS is not applied under AddressSanitizer");
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {10, (uint64_t)1 << 34, 0, 0};
  PG_CHECK_OK(pg_sandbox_run(check_limits, NULL, &o, &r, NULL));
  PG_CHECK(r.exited);
  PG_CHECK_EQ_INT(0, r.exit_code);
  pg_sandbox_result_reset(&r);
}

PG_TEST(sandbox_oom_text) {
  PG_CHECK(pg_sandbox_text_says_oom("Traceback...\nMemoryError\n"));
  PG_CHECK(pg_sandbox_text_says_oom("terminate called after throwing 'std::bad_alloc'"));
  PG_CHECK(!pg_sandbox_text_says_oom("all good"));
  PG_CHECK(!pg_sandbox_text_says_oom(NULL));
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int quick(void *ctx) {
  (void)ctx;
  printf("quick\n");
  return 3;
}

/* start + wait with the caller busy in between (the runner computes the golden
 * meanwhile): the result is the child's, and wall_ms is the child's own time, not
 * the time until the caller came back. */
PG_TEST(sandbox_start_wait_overlap) {
  struct pg_sandbox_proc p;
  struct pg_sandbox_opts o = {5, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_start(quick, NULL, &o, &p, NULL));
  PG_CHECK(p.pid > 0);
  sleep_ms(300);
  struct pg_sandbox_result r;
  PG_CHECK_OK(pg_sandbox_wait(&p, &r, NULL));
  PG_CHECK(r.exited);
  PG_CHECK_EQ_INT(3, r.exit_code);
  PG_CHECK_EQ_STR("quick\n", r.out);
  PG_CHECK(r.wall_ms >= 0 && r.wall_ms < 250);
  PG_CHECK_EQ_INT(0, p.pid);
  pg_sandbox_result_reset(&r);
}

/* A child that writes far more than a pipe holds, then exits: it blocks on the pipe
 * while the caller is away. Coming back after the timeout must not blame the child. */
static int chatty(void *ctx) {
  (void)ctx;
  char line[1024];
  memset(line, 'x', sizeof line - 1);
  line[sizeof line - 1] = '\n';
  for (int i = 0; i < 512; i++) fwrite(line, 1, sizeof line, stdout);
  return 0;
}

PG_TEST(sandbox_wait_late_with_full_pipe_is_not_a_timeout) {
  struct pg_sandbox_proc p;
  struct pg_sandbox_opts o = {0.2, 0, 4096, 0};
  PG_CHECK_OK(pg_sandbox_start(chatty, NULL, &o, &p, NULL));
  sleep_ms(400); /* past the timeout, the child stuck on a full pipe */
  struct pg_sandbox_result r;
  PG_CHECK_OK(pg_sandbox_wait(&p, &r, NULL));
  PG_CHECK(!r.timed_out);
  PG_CHECK(r.exited);
  PG_CHECK_EQ_INT(0, r.exit_code);
  PG_CHECK(r.out_truncated);
  PG_CHECK_EQ_INT(4096, (int)r.out_len);
  pg_sandbox_result_reset(&r);
}

/* A child that hangs is still killed at its timeout when the caller comes back late. */
PG_TEST(sandbox_wait_late_still_times_out) {
  struct pg_sandbox_proc p;
  struct pg_sandbox_opts o = {0.2, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_start(hang_with_grandchild, NULL, &o, &p, NULL));
  sleep_ms(300);
  struct pg_sandbox_result r;
  PG_CHECK_OK(pg_sandbox_wait(&p, &r, NULL));
  PG_CHECK(r.timed_out);
  pg_sandbox_result_reset(&r);
}

static int exec_true(void *ctx) {
  (void)ctx;
  execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
  return 127;
}

/* A child that exec()s cannot stamp its own end: with stamp_exit a helper notes its
 * exit, so a late wait still reports the child's time. */
PG_TEST(sandbox_stamp_exit_for_exec) {
  struct pg_sandbox_proc p;
  struct pg_sandbox_opts o = {5, 0, 0, 1};
  PG_CHECK_OK(pg_sandbox_start(exec_true, NULL, &o, &p, NULL));
  sleep_ms(400);
  struct pg_sandbox_result r;
  PG_CHECK_OK(pg_sandbox_wait(&p, &r, NULL));
  PG_CHECK(r.exited);
  PG_CHECK_EQ_INT(5, r.exit_code);
  PG_CHECK(r.wall_ms >= 0 && r.wall_ms < 300);
  pg_sandbox_result_reset(&r);
}

/* The child leaves a grandchild in a session of its own (setsid: out of the process
 * group), which reports its pid through a pipe; the sandbox must kill it all the same
 * (it carries the child's PHASEGATE_PROC_TAG). */
static int escape_with_setsid(void *ctx) {
  int *fds = ctx;
  pid_t g = fork();
  if (g == 0) {
    setsid();
    pid_t me[2] = {getpid(), getpid()}; /* one for the child, one for the test */
    if (write(fds[1], me, sizeof me) != (ssize_t)sizeof me) _exit(1);
    for (int i = 0; i < 600; i++) sleep(1); /* bounded: 10 minutes at most */
    _exit(0);
  }
  pid_t got;
  return read(fds[0], &got, sizeof got) == (ssize_t)sizeof got ? 0 : 1; /* it is running */
}

PG_TEST(sandbox_kills_setsid_escapee) {
  int fds[2];
  PG_CHECK(pipe(fds) == 0);
  struct pg_sandbox_result r;
  struct pg_sandbox_opts o = {10, 0, 0, 0};
  PG_CHECK_OK(pg_sandbox_run(escape_with_setsid, fds, &o, &r, NULL));
  PG_CHECK(r.exited && r.exit_code == 0);
  pid_t escapee = 0;
  PG_CHECK(read(fds[0], &escapee, sizeof escapee) == (ssize_t)sizeof escapee);
  close(fds[0]);
  close(fds[1]);
  /* gone, or a zombie of init's at most: never a live process */
  char path[64], st[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)escapee);
  FILE *f = fopen(path, "r");
  char state = 'X';
  if (f && fgets(st, sizeof st, f) && strrchr(st, ')')) state = strrchr(st, ')')[2];
  if (f) fclose(f);
  PG_CHECK_MSG(state == 'X' || state == 'Z', "escapee %d still running (state %c)",
               (int)escapee, state);
  if (state != 'X' && state != 'Z') kill(escapee, SIGKILL);
  pg_sandbox_result_reset(&r);
}

/* Case directories are removed by pg_remove_tree: links in them are removed, never
 * followed (the directory and file they point to stay whole). */
PG_TEST(remove_tree_never_follows_links) {
  char root[] = "/tmp/pg-remove-tree-XXXXXX";
  PG_CHECK(mkdtemp(root) != NULL);
  char *outside = pg_path_fmt("%s/outside", root), *tree = pg_path_fmt("%s/tree", root);
  char *keep = pg_path_fmt("%s/keep.txt", outside), *deep = pg_path_fmt("%s/a/b/c", tree);
  char *l1 = pg_path_fmt("%s/a/out", tree), *l2 = pg_path_fmt("%s/a/b/file.npy", tree);
  PG_CHECK(mkdir(outside, 0700) == 0 && pg_mkdir_p(deep) == 0);
  FILE *f = fopen(keep, "w");
  PG_CHECK(f != NULL);
  if (f) fputs("keep\n", f), fclose(f);
  PG_CHECK(symlink(outside, l1) == 0 && symlink(keep, l2) == 0);
  pg_remove_tree(tree);
  PG_CHECK(!pg_is_dir(tree));
  PG_CHECK(pg_is_file(keep));
  pg_remove_tree(root);
  PG_CHECK(!pg_is_dir(root));
  free(outside), free(tree), free(keep), free(deep), free(l1), free(l2);
}

/* The state of pid as /proc shows it ('R', 'S', 'Z', …; 0: no such process). */
static char proc_state(pid_t pid) {
  char state = 0;
  return pg__proc_stat(pid, &state, NULL, NULL) == 0 ? state : 0;
}

/* What makes kills after an exit safe (sandbox.h): pg_child_exited sees the exit and
 * leaves the zombie, which keeps the pid (and so the group id) from being reused until
 * the caller reaps it; the pidfd says "ours" until then and not after. */
PG_TEST(child_exited_keeps_the_zombie_until_reaped) {
  int go[2];
  PG_CHECK_OK(pipe(go));
  pid_t kid = fork();
  if (kid == 0) {
    char b;
    close(go[1]);
    _exit(read(go[0], &b, 1) == 1 ? 5 : 6);
  }
  close(go[0]);
  PG_CHECK(kid > 0);
  setpgid(kid, kid);
  int pidfd = pg__pidfd_open(kid);
  PG_CHECK_EQ_INT(0, pg_child_exited(kid, 0)); /* running */
  if (pidfd >= 0) PG_CHECK_EQ_INT(1, pg__pidfd_alive(pidfd));
  PG_CHECK_EQ_INT(1, (int)write(go[1], "x", 1));
  close(go[1]);
  PG_CHECK_EQ_INT(1, pg_child_exited(kid, 1)); /* waits for the exit */
  PG_CHECK_EQ_INT(1, pg_child_exited(kid, 0)); /* and again: not reaped by the first */
  PG_CHECK_EQ_INT('Z', proc_state(kid));
  if (pidfd >= 0) PG_CHECK_EQ_INT(1, pg__pidfd_alive(pidfd)); /* a zombie: still its pid */
  PG_CHECK(kill(-kid, 0) == 0); /* its group id is still held */
  int st = 0;
  PG_CHECK_EQ_INT((int)kid, (int)waitpid(kid, &st, 0));
  PG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5); /* the status was kept for the reaper */
  PG_CHECK_EQ_INT(0, (int)proc_state(kid));
  if (pidfd >= 0) {
    PG_CHECK_EQ_INT(0, pg__pidfd_alive(pidfd)); /* reaped: the number is nobody's */
    close(pidfd);
  }
  PG_CHECK_EQ_INT(-1, pg_child_exited(kid, 0)); /* no longer a child */
  PG_CHECK_EQ_INT(-1, pg_child_exited(1, 0));   /* never was */
}
