/* tests/serve: what the client believes of a daemon's answers (runner/impl/
 * serve_client.c, serve_wire.c) — regressions of fuzz_serve_client and fuzz_serve_daemon
 * (docs/testing.md "Fuzzing campaigns"). No daemon runs: the answer is written into one
 * end of a socketpair before the client reads it, as the daemon would send it. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "impl/proc.h"
#include "impl/serve_client.h"
#include "pg_test.h"

/* what a worker: impl running ./w.sh leases */
static const struct pg_proc_program w_sh = {PG_PROC_COMMAND, (char *)"./w.sh"};

/* Sends `answer` on fd with a descriptor attached (SCM_RIGHTS) when attach >= 0. */
static void send_answer(int fd, const char *answer, int attach) {
  PG_CHECK(pg__send_with_fd(fd, answer, strlen(answer), attach) == (ssize_t)strlen(answer));
}

/* A lease "granted" for pid 1 (or 0) is refused: ending it would signal the group of
 * pid 1, i.e. kill(-1, SIGKILL), every process of the user. */
PG_TEST(lease_for_pid_1_is_refused) {
  const char *answers[] = {
      "{\"status\":\"ok\",\"pid\":1,\"log\":\"\",\"calls\":0,\"next_id\":1}\n",
      "{\"status\":\"ok\",\"pid\":0,\"log\":\"\"}\n",
      "{\"status\":\"ok\",\"pid\":-1e300,\"log\":\"\"}\n"};
  for (int i = 0; i < 3; i++) {
    int sv[2], wp[2];
    PG_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    PG_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, wp) == 0);
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    send_answer(sv[1], answers[i], wp[0]);
    struct pg_proc p;
    struct pg_proc_result fail;
    struct pg_error err;
    pg_proc_result_init(&fail);
    int rc = pg_serve_lease(sv[0], &w_sh, "sim", 0, 0, 10, &p, &fail, &err);
    PG_CHECK(rc != PG_OK);
    PG_CHECK_MSG(strstr(err.message, "names no process") != NULL, "%s", err.message);
    PG_CHECK(p.pid == 0 && p.sock < 0 && p.remote_end == NULL);
    pg_proc_result_reset(&fail);
    close(sv[0]), close(sv[1]), close(wp[0]), close(wp[1]);
  }
}

/* Numbers outside their type (1e300 as an exit code) are clamped, never cast: the
 * start facts of a failed start stay in range. */
PG_TEST(start_facts_out_of_range_are_clamped) {
  int sv[2];
  PG_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  int big = 1 << 20;
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  send_answer(sv[1], "{\"status\":\"error\",\"code\":-4009,\"message\":\"no start\",\"end\":1e300,"
              "\"exited\":true,\"exit_code\":1e300,\"signaled\":true,\"signo\":-1e300}\n", -1);
  struct pg_proc p;
  struct pg_proc_result fail;
  struct pg_error err;
  pg_proc_result_init(&fail);
  int rc = pg_serve_lease(sv[0], &w_sh, "sim", 0, 0, 10, &p, &fail, &err);
  PG_CHECK_EQ_INT(PG_EIMPL, rc);
  PG_CHECK_EQ_INT(PG_PROC_PROTOCOL, (int)fail.end);
  PG_CHECK_EQ_INT(INT_MAX, fail.exit_code);
  PG_CHECK_EQ_INT(0, fail.signo);
  pg_proc_result_reset(&fail);
  close(sv[0]), close(sv[1]);
}

/* A refusal with an empty message still says what happened. */
PG_TEST(refusal_without_message) {
  int sv[2];
  PG_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  int big = 1 << 20;
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  send_answer(sv[1], "{\"code\":9,\"message\":\"\"}\n", -1);
  struct pg_proc p;
  struct pg_proc_result fail;
  struct pg_error err;
  pg_proc_result_init(&fail);
  PG_CHECK(pg_serve_lease(sv[0], &w_sh, "sim", 0, 0, 10, &p, &fail, &err) != PG_OK);
  PG_CHECK_EQ_STR("the daemon refused the lease", err.message);
  pg_proc_result_reset(&fail);
  close(sv[0]), close(sv[1]);
}

PG_TEST(serve_int_clamps) {
  cJSON *o = cJSON_Parse("{\"big\":1e300,\"small\":-1e300,\"mid\":42.9,\"s\":\"7\"}");
  PG_CHECK(o != NULL);
  PG_CHECK(pg_serve_int(o, "big", 5, 0, INT_MAX) == INT_MAX);
  PG_CHECK(pg_serve_int(o, "small", 5, 1, INT64_MAX) == 1);
  PG_CHECK(pg_serve_int(o, "big", 5, 1, INT64_MAX) == INT64_MAX);
  PG_CHECK(pg_serve_int(o, "mid", 5, 0, 100) == 42);
  PG_CHECK(pg_serve_int(o, "s", 5, 0, 100) == 5);    /* not a number: the default */
  PG_CHECK(pg_serve_int(o, "none", 5, 0, 100) == 5);
  cJSON_Delete(o);
}
