/* phasegate runner — the warm processes of one impl (docs/design.md §6): one persistent
 * process per (mode, device) — a forked --jobs worker has its own pool — started on
 * first use (or leased from `phasegate serve`), replaced after any failure, recycled
 * after max_calls, ended by pg_impl_close (the ops' close of the plugin and worker
 * adapters). The pool lives in impl->state. Internal to runner/impl/. */
#ifndef PHASEGATE_IMPL_POOL_H
#define PHASEGATE_IMPL_POOL_H

#include "impl/adapter.h"
#include "impl/proc.h"

/* The process for this call's (mode, device), started now if needed. NULL when it
 * could not be started: then either err is set (PG_EIO/PG_ENOMEM: the runner's fault)
 * or, with PG_EIMPL, *start_fail holds what the process did instead of its handshake
 * (and err the sentence saying so). */
struct pg_proc *pg__pool_acquire(const struct pg_impl *impl, const struct pg_impl_request *req,
                                 struct pg_proc_result *start_fail, struct pg_error *err);

/* Starts the process of (mode, device) now without waiting for its handshake, so its
 * start-up (exec, dlopen, import torch, a device context) overlaps the runner's own
 * work; the first pg__pool_acquire of that pair then waits for the handshake. Nothing
 * with --fresh-process or when processes are leased from `phasegate serve`. The
 * prestart operation of the persistent adapters. */
void pg__pool_prestart(struct pg_impl *impl, const char *mode, int device, uint64_t rlimit_as,
                       double timeout_s);

/* The load check of a prestarted process (pg_impl_check's plugin probe, when the host
 * it would duplicate is already starting): 0 when no process of the impl is waiting
 * for its handshake; else 1, with *rc the handshake's result (PG_OK: the process is up
 * and serves the first call; otherwise start_fail and err as pg__pool_acquire fills
 * them, and the slot is left stopped). */
int pg__pool_await_prestarted(const struct pg_impl *impl, struct pg_proc_result *start_fail,
                              int *rc, struct pg_error *err);
int pg__pool_has_prestarted(const struct pg_impl *impl);

/* After a call: healthy = the process answered properly and may serve again. A
 * process that is not healthy is ended (its log kept: a message names it). */
void pg__pool_release(const struct pg_impl *impl, struct pg_proc *p, int healthy);

/* The call memory kept with a pool process (the plugin host's): a memfd of at least
 * `size` bytes, mapped here at the returned address, reused from call to call so its
 * pages are touched once, not once per call. *fd is the memfd; *fresh = 1 when it is
 * new to the process (first call, grown, or the process was replaced) and must travel
 * with the request. NULL on failure (err set). */
void *pg__pool_memory(const struct pg_impl *impl, const struct pg_proc *p, size_t size, int *fd,
                      int *fresh, struct pg_error *err);

/* Ends every process of the pool (a leased one goes back to the daemon warm) and
 * frees it: the close operation of the persistent adapters. */
void pg__pool_close(struct pg_impl *impl);


#endif
