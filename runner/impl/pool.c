/* phasegate runner — the warm process pool of an impl (pool.h). */
#include "impl/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define PG_POOL_MAX 32

struct pg_pool_slot {
  char mode[64];
  int device;
  int used;
  struct pg_proc proc;
};

struct pg_pool {
  struct pg_pool_slot slot[PG_POOL_MAX];
};

static const char *spec_prefix(const struct pg_impl *impl) {
  return impl->kind == PG_IMPL_WORKER ? "worker:" : "plugin:";
}

struct pg_proc *pg__pool_acquire(const struct pg_impl *impl, const struct pg_impl_request *req,
                                 struct pg_proc_result *start_fail, struct pg_error *err) {
  struct pg_impl *mut = (struct pg_impl *)impl; /* the pool is the impl's mutable part */
  if (!mut->pool && !(mut->pool = calloc(1, sizeof *mut->pool))) {
    pg_error_set(err, PG_ENOMEM, "out of memory");
    return NULL;
  }
  struct pg_pool *pool = mut->pool;
  struct pg_pool_slot *s = NULL, *free_slot = NULL;
  for (int i = 0; i < PG_POOL_MAX && !s; i++) {
    struct pg_pool_slot *c = &pool->slot[i];
    if (c->used && c->device == req->device_id && strcmp(c->mode, req->mode) == 0) s = c;
    else if (!c->used && !free_slot) free_slot = c;
  }
  if (!s) {
    if (!free_slot) {
      pg_error_set(err, PG_ELIMIT, "more than %d (mode, device) pairs", PG_POOL_MAX);
      return NULL;
    }
    s = free_slot;
    memset(s, 0, sizeof *s);
    pg_proc_init(&s->proc);
    snprintf(s->mode, sizeof s->mode, "%s", req->mode);
    s->device = req->device_id;
    s->used = 1;
  }
  if (pg_proc_alive(&s->proc)) return &s->proc;
  char *spec = pg_path_fmt("%s%s", spec_prefix(impl), impl->target);
  char *tag = pg_path_fmt("%s-%d", req->mode, req->device_id);
  struct pg_proc_argv a;
  int rc = spec && tag ? pg_proc_argv_build(spec, req->mode, req->device_id, &a, err)
                       : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    /* an ASan-built plugin host reserves terabytes of shadow memory: no RLIMIT_AS */
    uint64_t as = impl->kind == PG_IMPL_PLUGIN && PG_SANDBOX_ASAN ? 0 : req->rlimit_as;
    struct pg_proc_spec ps = {a.argv, a.env, impl->log_dir, tag, as,
                              req->timeout_s > 0 ? req->timeout_s : 120};
    rc = pg_proc_start(&s->proc, &ps, start_fail, err);
    pg_proc_argv_reset(&a);
  }
  free(spec);
  free(tag);
  return rc == PG_OK ? &s->proc : NULL;
}

void pg__pool_release(const struct pg_impl *impl, struct pg_proc *p, int healthy) {
  if (!healthy) pg_proc_stop(p, 0, 1);
  else if (impl->fresh_process || (impl->max_calls > 0 && p->calls >= impl->max_calls))
    pg_proc_stop(p, 2.0, 0);
}

void pg_impl_close(struct pg_impl *impl) {
  if (!impl || !impl->pool) return;
  for (int i = 0; i < PG_POOL_MAX; i++)
    if (impl->pool->slot[i].used) pg_proc_stop(&impl->pool->slot[i].proc, 2.0, 0);
  free(impl->pool);
  impl->pool = NULL;
}

void pg__proc_to_sandbox(const struct pg_proc_result *r, struct pg_sandbox_result *sr) {
  sr->timed_out = r->end == PG_PROC_TIMEOUT;
  sr->exited = r->exited;
  sr->exit_code = r->exit_code;
  sr->signaled = r->signaled && !sr->timed_out;
  sr->signo = r->signo;
  sr->wall_ms = r->wall_ms;
  free(sr->err);
  sr->err = r->captured ? pg_strdup(r->captured) : NULL;
  sr->err_len = r->captured ? r->captured_len : 0;
  sr->err_truncated = r->captured_truncated;
}
