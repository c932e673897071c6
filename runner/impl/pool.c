/* phasegate runner — the warm process pool of an impl (pool.h). */
#include "impl/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/serve_client.h"

#define PG_POOL_MAX 32

struct pg_pool_slot {
  char mode[64];
  int device;
  int used;
  struct pg_proc proc;
  void *mem;       /* pg__pool_memory: the call memory, mapped */
  size_t mem_size;
  int mem_fd;
  int mem_pid;     /* the process that has mem_fd (0: none yet) */
};

static void slot_memory_free(struct pg_pool_slot *s) {
  if (s->mem) munmap(s->mem, s->mem_size);
  if (s->mem_fd > 0) close(s->mem_fd);
  s->mem = NULL;
  s->mem_size = 0;
  s->mem_fd = 0;
  s->mem_pid = 0;
}

struct pg_pool {
  struct pg_pool_slot slot[PG_POOL_MAX];
  int conn;          /* connection to `phasegate serve`; -1: none (standalone) */
  int tried_serve;   /* connect attempted (once per pool: per run, per --jobs worker) */
};

/* The daemon's connection, tried once: --serve-control, else PHASEGATE_SERVE_CONTROL.
 * No daemon (or a dead one) is not an error: the run starts its own processes. */
static int serve_conn(const struct pg_impl *impl, struct pg_pool *pool) {
  if (!pool->tried_serve) {
    pool->tried_serve = 1;
    const char *ctl = impl->serve_control ? impl->serve_control
                                          : getenv("PHASEGATE_SERVE_CONTROL");
    struct pg_error e;
    if (!ctl || !*ctl || pg_serve_connect(ctl, &pool->conn, &e) != PG_OK) pool->conn = -1;
  }
  return pool->conn;
}

/* Spawns the process of slot s (its handshake is read later, pg_proc_handshake). */
static int spawn_slot(const struct pg_impl *impl, struct pg_pool_slot *s,
                      const struct pg_proc_program *prog,
                      const char *mode, int device, uint64_t as, double start_timeout,
                      struct pg_error *err) {
  char *tag = pg_path_fmt("%s-%d", mode, device);
  struct pg_proc_argv a;
  int rc = tag ? pg_proc_argv_build(prog, NULL, mode, device, &a, err)
               : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    /* nothing outlives the runner: the process dies with this one (proc.h) */
    char die_with[48];
    snprintf(die_with, sizeof die_with, PG_DIE_WITH_ENV "=%ld", (long)getpid());
    int n_env = 0;
    while (a.env[n_env]) n_env++;
    a.env[n_env] = die_with; /* room: argv_build fills 4 of 8 */
    struct pg_proc_spec ps = {a.argv, a.env, impl->log_dir, tag, as, start_timeout};
    rc = pg_proc_spawn(&s->proc, &ps, err);
    s->proc.quote = impl->quote; /* before the handshake, which may quote a line */
    pg_proc_argv_reset(&a);
  }
  free(tag);
  return rc;
}

/* Starts (or leases) the process of slot s. */
static int start_slot(const struct pg_impl *impl, struct pg_pool *pool, struct pg_pool_slot *s,
                      const struct pg_proc_program *prog, const struct pg_impl_request *req,
                      uint64_t as,
                      struct pg_proc_result *start_fail, struct pg_error *err) {
  double start_timeout = req->timeout_s > 0 ? req->timeout_s : 120;
  if (!impl->fresh_process && serve_conn(impl, pool) >= 0) {
    int rc = pg_serve_lease(pool->conn, prog, req->mode, req->device_id, as, start_timeout,
                            &s->proc, start_fail, err);
    s->proc.quote = impl->quote;
    /* PG_EIMPL: the impl's own start failed, reported as a standalone start would be.
     * Anything else failed on the daemon's side (its control directory read-only or
     * full, no memory there): this process starts it itself, which gives the same
     * answer as a run without a daemon (tools/stress/serve_faults.py "unwritable"). */
    if (rc == PG_OK || rc == PG_EIMPL) return rc;
    if (rc == PG_ENOTFOUND) { /* the daemon went away: standalone from now on */
      pg_serve_disconnect(pool->conn);
      pool->conn = -1;
    }
    pg_proc_result_reset(start_fail);
    pg_error_clear(err);
  }
  int rc = spawn_slot(impl, s, prog, req->mode, req->device_id, as, start_timeout, err);
  return rc == PG_OK ? pg_proc_handshake(&s->proc, start_fail, err) : rc;
}

/* The slot of (mode, device), created when missing (NULL with err when out of room). */
static struct pg_pool_slot *slot_for(const struct pg_impl *impl, const char *mode, int device,
                                     struct pg_error *err) {
  struct pg_impl *mut = (struct pg_impl *)impl; /* the pool is the impl's mutable part */
  if (!mut->state) {
    struct pg_pool *fresh = calloc(1, sizeof *fresh);
    if (!fresh) return pg_error_set(err, PG_ENOMEM, "out of memory"), NULL;
    fresh->conn = -1;
    mut->state = fresh;
  }
  struct pg_pool *pool = mut->state;
  struct pg_pool_slot *s = NULL, *free_slot = NULL;
  for (int i = 0; i < PG_POOL_MAX && !s; i++) {
    struct pg_pool_slot *c = &pool->slot[i];
    if (c->used && c->device == device && strcmp(c->mode, mode) == 0) s = c;
    else if (!c->used && !free_slot) free_slot = c;
  }
  if (s) return s;
  if (!free_slot)
    return pg_error_set(err, PG_ELIMIT, "more than %d (mode, device) pairs", PG_POOL_MAX), NULL;
  memset(free_slot, 0, sizeof *free_slot);
  pg_proc_init(&free_slot->proc);
  snprintf(free_slot->mode, sizeof free_slot->mode, "%s", mode);
  free_slot->device = device;
  free_slot->used = 1;
  return free_slot;
}

/* The impl's persistent program (the adapter's hook), and the address-space limit its
 * process gets. */
static int program(const struct pg_impl *impl, uint64_t rlimit_as, struct pg_proc_program *prog,
                   uint64_t *as, struct pg_error *err) {
  /* the ops row itself: the pool sits below adapter.c, which dispatches to the adapters */
  memset(prog, 0, sizeof *prog);
  int rc = impl->ops && impl->ops->process
               ? impl->ops->process(impl, prog, err)
               : pg_error_set(err, PG_EINVAL, "'%s:' impls run no persistent process",
                              impl->ops ? impl->ops->name : "");
  /* an ASan-built plugin host reserves terabytes of shadow memory: no RLIMIT_AS */
  *as = prog->kind == PG_PROC_PLUGIN && PG_SANDBOX_ASAN ? 0 : rlimit_as;
  return rc;
}

struct pg_proc *pg__pool_acquire(const struct pg_impl *impl, const struct pg_impl_request *req,
                                 struct pg_proc_result *start_fail, struct pg_error *err) {
  struct pg_pool_slot *s = slot_for(impl, req->mode, req->device_id, err);
  if (!s) return NULL;
  if (s->proc.handshake_pending) /* prestarted: its handshake is due now */
    return pg_proc_handshake(&s->proc, start_fail, err) == PG_OK ? &s->proc : NULL;
  if (pg_proc_alive(&s->proc)) return &s->proc;
  uint64_t as;
  struct pg_proc_program prog;
  int rc = program(impl, req->rlimit_as, &prog, &as, err);
  if (rc == PG_OK) rc = start_slot(impl, impl->state, s, &prog, req, as, start_fail, err);
  pg_proc_program_reset(&prog);
  return rc == PG_OK ? &s->proc : NULL;
}

void pg__pool_prestart(struct pg_impl *impl, const char *mode, int device, uint64_t rlimit_as,
                       double timeout_s) {
  const char *ctl = impl->serve_control ? impl->serve_control : getenv("PHASEGATE_SERVE_CONTROL");
  if (impl->fresh_process || (ctl && *ctl)) return; /* one per call, or leased */
  struct pg_error e;
  pg_error_clear(&e);
  struct pg_pool_slot *s = slot_for(impl, mode, device, &e);
  if (!s || pg_proc_alive(&s->proc) || s->proc.handshake_pending) return;
  uint64_t as;
  struct pg_proc_program prog;
  /* a failure here shows again, with its facts, when the first call starts the process */
  if (program(impl, rlimit_as, &prog, &as, &e) == PG_OK)
    spawn_slot(impl, s, &prog, mode, device, as, timeout_s > 0 ? timeout_s : 120, &e);
  pg_proc_program_reset(&prog);
}

int pg__pool_has_prestarted(const struct pg_impl *impl) {
  const struct pg_pool *pool = impl->state;
  for (int i = 0; pool && i < PG_POOL_MAX; i++)
    if (pool->slot[i].used && pool->slot[i].proc.handshake_pending) return 1;
  return 0;
}

int pg__pool_await_prestarted(const struct pg_impl *impl, struct pg_proc_result *start_fail,
                              int *rc, struct pg_error *err) {
  struct pg_pool *pool = impl->state;
  for (int i = 0; pool && i < PG_POOL_MAX; i++)
    if (pool->slot[i].used && pool->slot[i].proc.handshake_pending) {
      *rc = pg_proc_handshake(&pool->slot[i].proc, start_fail, err);
      return 1;
    }
  return 0;
}

void *pg__pool_memory(const struct pg_impl *impl, const struct pg_proc *p, size_t size, int *fd,
                      int *fresh, struct pg_error *err) {
  struct pg_pool *pool = impl->state;
  struct pg_pool_slot *s = NULL;
  for (int i = 0; pool && i < PG_POOL_MAX && !s; i++)
    if (&pool->slot[i].proc == p) s = &pool->slot[i];
  if (!s) return pg_error_set(err, PG_EINTERNAL, "call memory for a process not in the pool"),
              NULL;
  if (s->mem && s->mem_size < size) slot_memory_free(s);
  if (!s->mem) {
    size_t grown = size < ((size_t)1 << 20) ? ((size_t)1 << 20) : size + size / 4;
    /* sealed against shrinking: the process it is lent to could otherwise truncate it
     * under the runner's mapping, and the runner's next read would be a SIGBUS
     * (docs/worker_protocol.md "Version 1.1") */
    int mfd = memfd_create("phasegate-call", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *m = MAP_FAILED;
    if (mfd >= 0 && ftruncate(mfd, (off_t)grown) == 0 &&
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) == 0)
      m = mmap(NULL, grown, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (m == MAP_FAILED) {
      if (mfd >= 0) close(mfd);
      return pg_error_set(err, PG_ENOMEM, "cannot create %zu bytes of call memory: %s", grown,
                          strerror(errno)), NULL;
    }
    s->mem = m, s->mem_size = grown, s->mem_fd = mfd, s->mem_pid = 0;
  }
  *fd = s->mem_fd;
  *fresh = s->mem_pid != p->pid;
  s->mem_pid = p->pid;
  return s->mem;
}

void pg__pool_release(const struct pg_impl *impl, struct pg_proc *p, int healthy) {
  if (!healthy) pg_proc_stop(p, 0, 1);
  else if (impl->fresh_process || (impl->max_calls > 0 && p->calls >= impl->max_calls))
    pg_proc_stop(p, 2.0, 0);
}

void pg__pool_close(struct pg_impl *impl) {
  if (!impl || !impl->state) return;
  struct pg_pool *pool = impl->state;
  for (int i = 0; i < PG_POOL_MAX; i++) {
    struct pg_proc *p = &pool->slot[i].proc;
    if (!pool->slot[i].used || !pg_proc_alive(p)) continue;
    if (p->remote_end && pool->conn >= 0) pg_serve_release(pool->conn, p, 1); /* stays warm */
    else pg_proc_stop(p, 2.0, 0);
  }
  for (int i = 0; i < PG_POOL_MAX; i++) slot_memory_free(&pool->slot[i]);
  if (pool->conn >= 0) pg_serve_disconnect(pool->conn);
  free(pool);
  impl->state = NULL;
}
