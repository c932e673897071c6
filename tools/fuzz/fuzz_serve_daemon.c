/* phasegate fuzz harness — the daemon's side of the serve protocol (runner/
 * serve/daemon.c, runner/impl/serve_wire.c, docs/serve.md): each input is everything one client
 * writes on its connection, then EOF.
 *
 *   build/asan/tools/fuzz/fuzz_serve_daemon tests/fuzz-corpus/serve_daemon
 *
 * The daemon is a struct daemon as pg_serve_daemon sets it up, without the listening
 * socket and with --slots 0, so no request can start a process; one pool holds a
 * process (a pid that cannot exist) leased to the connection, so release, lease-from-
 * idle and the end of a lease are reached too. The connection is one end of a
 * socketpair; the bytes come in through the daemon's own pg__serve_conn_read (which
 * splits the lines and answers them, then closes the connection at EOF, as in the poll
 * loop). Promises checked: every answer is one line holding a JSON object with a
 * "status" string, and closing the connection leaves no waiter and no lease behind.
 * kill() is fuzz_nokill.h's.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "fuzz_nokill.h"
#include "serve/daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond) __builtin_trap();
}

/* Every answer line the daemon wrote to the client's end. */
static void check_answers(int fd) {
  static char buf[1 << 21];
  size_t len = 0;
  for (;;) {
    ssize_t got = recv(fd, buf + len, sizeof buf - 1 - len, MSG_DONTWAIT);
    if (got <= 0) break;
    len += (size_t)got;
    if (len == sizeof buf - 1) break;
  }
  buf[len] = '\0';
  check(len == 0 || buf[len - 1] == '\n');
  for (char *line = buf, *nl; (nl = memchr(line, '\n', (size_t)(buf + len - line))); line = nl + 1) {
    *nl = '\0';
    cJSON *a = cJSON_Parse(line);
    check(cJSON_IsObject(a) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "status")));
    cJSON_Delete(a);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0; /* the answers of one input fit the socket buffer */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) return 0;
  int big = 1 << 21;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  if (size && write(sv[1], data, size) != (ssize_t)size) {
    close(sv[0]), close(sv[1]);
    return 0;
  }
  shutdown(sv[1], SHUT_WR);

  struct pg_serve_options o;
  pg_serve_options_init(&o);
  o.control_dir = "/nonexistent/phasegate-fuzz";
  o.slots = 0; /* no request may start a process */
  struct daemon d;
  memset(&d, 0, sizeof d);
  d.o = &o;
  d.dir = (char *)o.control_dir;
  d.lsock = d.sigfd = d.jobs_r = d.jobs_w = d.pid_fd = -1;
  d.started_ms = d.last_active_ms = pg_now_ms();

  struct conn *c = calloc(1, sizeof *c);
  check(c != NULL);
  c->fd = sv[0];
  c->id = ++d.next_conn_id;
  d.conns = c;
  d.n_conns = 1;
  d.clients = 1;

  /* a process of key (worker ./w.sh, sim, 0, ...) leased to this connection */
  char *env[] = {(char *)"PATH=/usr/bin", NULL};
  struct pool *pl = pg__serve_pool_get(&d, PG_PROC_COMMAND, "./w.sh", "sim", 0, 0, "/", 022, env, 1, NULL);
  struct wproc *w = calloc(1, sizeof *w);
  check(pl && w);
  pg_proc_init(&w->p);
  w->pool = pl;
  w->state = W_LEASED;
  w->holder = c;
  w->pid = 999999999; /* above any pid_max: waitpid says ECHILD, nothing is signalled */
  w->fp = pl->fp;
  w->leases = 1;
  w->next_id = 1;
  d.procs = w;

  pg__serve_conn_read(&d, c); /* reads to EOF, answers every line, closes */
  check(c->closed && d.n_conns == 0);
  check_answers(sv[1]);
  for (struct pool *q = d.pools; q; q = q->next) check(q->queue == NULL);
  for (struct wproc *x = d.procs; x; x = x->next) check(x->gone || x->holder != c);

  pg__serve_collect(&d);
  for (struct wproc *x = d.procs, *next; x; x = next) {
    next = x->next;
    pg_proc_stop(&x->p, 0, 0);
    free(x);
  }
  for (struct pool *q = d.pools, *next; q; q = next) {
    next = q->next;
    free(q->target), free(q->mode), free(q->cwd), free(q->host);
    pg_serve_free_strv(q->env);
    free(q);
  }
  close(sv[1]);
  return 0;
}
