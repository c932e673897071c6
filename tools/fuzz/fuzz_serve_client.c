/* phasegate fuzz harness — the client's side of the serve protocol (runner/impl/
 * serve_client.c, serve_wire.c, docs/serve.md): each input is what a daemon answers.
 *
 *   build/asan/tools/fuzz/fuzz_serve_client tests/fuzz-corpus/serve_client
 *
 * Byte 0 chooses the client's moves; the rest, cut after each '\n', are the daemon's
 * answers, one per request, sent by a thread standing for the daemon (it reads one
 * request line, sends the next answer; bit 0 of byte 0: a socket rides with the
 * first answer, as with a lease that is granted). The client, on the other end of a
 * socketpair, makes the calls `phasegate run` makes: a "status" request (bit 1), a
 * lease, and for a granted lease its release, good (bit 2) or after a failed call
 * (which asks the daemon how the process ended). Promises checked: a lease either
 * fails with a message and no process, or holds a process with its socket; releases
 * leave nothing open. kill() is fuzz_nokill.h's (a lease names a pid: it must never be
 * signalled here).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_nokill.h"
#include "impl/proc.h"
#include "impl/serve_client.h"

/* what a worker: impl running ./w.sh leases */
static const struct pg_proc_program w_sh = {PG_PROC_COMMAND, (char *)"./w.sh"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond) __builtin_trap();
}

struct daemon_side {
  int fd;
  const uint8_t *data;
  size_t size;
  int attach; /* a socket to pass with the first answer, or -1 */
};

/* Sends n bytes (with fd attached to the first, when >= 0). */
static int send_chunk(int sock, const uint8_t *p, size_t n, int fd) {
  while (n) {
    ssize_t w = pg__send_with_fd(sock, p, n, fd);
    if (w <= 0) return -1;
    p += w, n -= (size_t)w, fd = -1;
  }
  return 0;
}

/* The daemon: one answer per request line; EOF once the answers run out. */
static void *daemon_main(void *arg) {
  struct daemon_side *s = arg;
  size_t off = 0;
  char buf[65536];
  size_t pending = 0; /* request bytes since the last newline */
  int out_open = 1;
  for (;;) {
    ssize_t got = recv(s->fd, buf, sizeof buf, 0);
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; i++) {
      if (buf[i] != '\n') {
        pending++;
        continue;
      }
      pending = 0;
      if (!out_open) continue;
      if (off >= s->size) {
        shutdown(s->fd, SHUT_WR);
        out_open = 0;
        continue;
      }
      const uint8_t *nl = memchr(s->data + off, '\n', s->size - off);
      size_t n = nl ? (size_t)(nl - (s->data + off)) + 1 : s->size - off;
      if (send_chunk(s->fd, s->data + off, n, s->attach) != 0) out_open = 0;
      s->attach = -1;
      off += n;
      if (!nl && out_open) {
        shutdown(s->fd, SHUT_WR); /* an unterminated last answer: then EOF */
        out_open = 0;
      }
    }
  }
  (void)pending;
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  int moves = data[0];
  int sv[2], wp[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  if ((moves & 1) && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, wp) != 0) {
    close(sv[0]), close(sv[1]);
    return 0;
  }
  struct daemon_side s = {sv[1], data + 1, size - 1, wp[0]};
  pthread_t th;
  check(pthread_create(&th, NULL, daemon_main, &s) == 0);

  int conn = sv[0];
  struct pg_error err;
  pg_error_clear(&err);
  if (moves & 2) {
    cJSON *a = NULL;
    int rc = pg_serve_request(conn, "status", 10000, &a, &err);
    check(rc == PG_OK ? a != NULL : a == NULL && err.message[0]);
    cJSON_Delete(a);
  }
  struct pg_proc p;
  struct pg_proc_result fail;
  pg_proc_result_init(&fail);
  int rc = pg_serve_lease(conn, &w_sh, "sim", 0, 0, 10, &p, &fail, &err);
  if (rc != PG_OK) {
    check(err.message[0] && p.pid == 0 && p.sock < 0 && p.remote_end == NULL);
  } else {
    check(p.sock >= 0 && p.remote_end != NULL);
    if (moves & 4) {
      pg_serve_release(conn, &p, 1);
    } else {
      struct pg_proc_result r;
      pg_proc_result_init(&r);
      pg_proc_stop(&p, 0, 1); /* a call that went wrong: the daemon says how it ended */
      pg_proc_result_reset(&r);
      pg_serve_release(conn, &p, 0);
    }
    check(p.pid == 0 && p.sock < 0 && p.log_path == NULL);
  }
  pg_proc_result_reset(&fail);
  shutdown(conn, SHUT_RDWR);
  pthread_join(th, NULL);
  close(sv[0]), close(sv[1]);
  if (wp[0] >= 0) close(wp[0]), close(wp[1]);
  return 0;
}
