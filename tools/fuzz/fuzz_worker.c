/* phasegate fuzz harness — the runner's side of worker protocol v1 (runner/impl/proc.c,
 * docs/worker_protocol.md): each input is everything a worker writes on its protocol
 * socket, then EOF.
 *
 *   build/asan/tools/fuzz/fuzz_worker tests/fuzz-corpus/worker
 *
 * The bytes go into one end of a socketpair; the other end is a struct pg_proc as
 * pg_proc_spawn leaves it, except that its process is "remote" (the path of a process
 * leased from `phasegate serve`): ending it calls a callback here instead of waitpid and
 * kill, so no process is needed and none is signalled (fuzz_nokill.h as a second
 * guard). Then the runner's own calls read it: pg_proc_handshake, and pg_proc_wait for
 * requests 1, 2, … while answers come. Promises checked: a handshake either succeeds or
 * ends the process with a message; an answer is a JSON object with the id waited for and
 * a "status" string; anything else ends the process with a protocol reason (or EOF);
 * the process never serves again once ended.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "fuzz_nokill.h"
#include "impl/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static int ended;

static void remote_end(void *ctx, struct pg_proc *p, int wait_ms, struct pg_proc_result *r) {
  (void)ctx, (void)p, (void)wait_ms;
  ended++;
  if (r) r->exited = 1, r->exit_code = 0;
}

/* Writes all of data to fd (a socketpair end with room for it). */
static int put(int fd, const uint8_t *data, size_t size) {
  while (size) {
    ssize_t w = write(fd, data, size);
    if (w <= 0) return -1;
    data += w, size -= (size_t)w;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0; /* stays below the socket buffer: the writer never blocks */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  int big = 1 << 20;
  setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  if (put(sv[1], data, size) != 0) {
    close(sv[0]), close(sv[1]);
    return 0;
  }
  shutdown(sv[1], SHUT_WR);

  struct pg_proc p;
  pg_proc_init(&p);
  p.pid = 999999999; /* never signalled: remote_end below stands for waitpid + kill */
  p.sock = sv[0];
  p.remote_end = remote_end;
  p.handshake_pending = 1;
  p.handshake_timeout_s = 10;
  p.sent_ms = pg_now_ms();
  snprintf(p.what, sizeof p.what, "fuzz-worker");
  ended = 0;

  struct pg_proc_result r;
  struct pg_error err;
  pg_proc_result_init(&r);
  pg_error_clear(&err);
  int rc = pg_proc_handshake(&p, &r, &err);
  if (rc != PG_OK) {
    check(rc == PG_EIMPL && err.message[0] && ended == 1 && p.pid == 0 && p.sock < 0);
    check(r.end != PG_PROC_ANSWERED);
    pg_proc_result_reset(&r);
  } else {
    pg_proc_result_reset(&r);
    for (int64_t id = 1; p.pid > 0 && id <= 1000; id++) {
      pg_proc_result_init(&r);
      p.next_id = id + 1;
      p.sent_ms = pg_now_ms();
      rc = pg_proc_wait(&p, id, 10, &r, &err);
      if (rc != PG_OK) {
        check(rc == PG_ENOMEM);
        pg_proc_result_reset(&r);
        break;
      }
      if (r.end == PG_PROC_ANSWERED) {
        const cJSON *a = r.answer, *aid = cJSON_GetObjectItemCaseSensitive(a, "id");
        check(cJSON_IsObject(a) && cJSON_IsNumber(aid) && aid->valuedouble == (double)id);
        check(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "status")));
        check(p.calls == (int)id && p.pid > 0);
      } else {
        check(r.answer == NULL && ended == 1 && p.pid == 0);
        if (r.end == PG_PROC_PROTOCOL) check(r.protocol[0] != '\0');
      }
      pg_proc_result_reset(&r);
    }
  }
  /* an answer that never came (or the end of the input): what pg_impl does at the end */
  pg_proc_stop(&p, 0, 0);
  check(ended <= 1);
  close(sv[1]);
  return 0;
}
