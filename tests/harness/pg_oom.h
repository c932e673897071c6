/* phasegate tests — a shared out-of-memory sweep harness (docs/testing.md "Out-of-memory sweeps").
 *
 * Link the pg_oom object library (tests/CMakeLists.txt): it wraps malloc, calloc,
 * realloc, strdup, strndup, aligned_alloc, posix_memalign and pthread_create at link
 * time (-Wl,--wrap=...), so every such call made by code linked statically into the
 * test (the phasegate libraries, the test itself) goes through one counter. Calls made
 * inside shared libraries (libyaml, OpenBLAS, glibc's own fopen/opendir buffers) are
 * not counted, nor are mmap()-backed buffers (large .npy reads, MAP_POPULATE golden
 * buffers); cJSON is counted when the test installs pg_oom_cjson_malloc as its hook.
 *
 * pg_oom_sweep(name, fn, ctx) first runs fn once with no fault (the reference run,
 * `reference` = 1) and remembers its status; then, for k = 1, 2, …, it makes the k-th
 * counted call fail — once (transient) or from then on (persistent) — until a run
 * completes with no fault fired. Every faulted run must return the reference status
 * or PG_ENOMEM with an intact message (non-empty, saying it ran out of memory), and
 * fn itself checks that a run which absorbed a fault produced the reference result
 * (return PG_EINTERNAL with a message otherwise). The first k that breaks is printed
 * with its mode, status and message, and the sweep stops there.
 *
 * Leaks: under ASan/LSan the sweep runs a recoverable leak check after each mode (and
 * after every run with PG_OOM_LEAKCHECK_EACH=1, to name the k); elsewhere the process
 * exit check of the sanitizer build is what catches them. PG_OOM_TRAP=k raises SIGTRAP
 * when the k-th call fails, for a debugger. Test-only global state: not thread-safe
 * across concurrent sweeps (the counter itself is atomic: workers may allocate).
 */
#ifndef PG_OOM_H
#define PG_OOM_H

#include <stddef.h>

#include "phasegate/error.h"

/* One run of the code under test. It must release everything it allocated before it
 * returns (so that leaks are the code's, not the test's) and return its status.
 * `reference` is 1 for the unfaulted first run (store its result in ctx), 0 after. */
typedef int (*pg_oom_fn)(void *ctx, int reference, struct pg_error *err);

enum pg_oom_mode { PG_OOM_TRANSIENT = 1, PG_OOM_PERSISTENT = 2, PG_OOM_BOTH = 3 };

struct pg_oom_opts {
  int modes;              /* PG_OOM_* bits; 0 = both */
  long min_sites;         /* fail the sweep when fewer calls were swept (0: 5, <0: 0) */
  int count_threads;      /* 1: pthread_create also counts (fails with EAGAIN) */
  const char *must_say;   /* a PG_ENOMEM message must contain this (NULL: "memory" or
                             "allocat") */
};

/* Runs the sweep(s). Returns 0 when every faulted run behaved, 1 otherwise (after
 * printing "not ok - NAME MODE k=K: …"); prints "ok - NAME MODE: N sites swept". */
int pg_oom_sweep(const char *name, pg_oom_fn fn, void *ctx);
int pg_oom_sweep_ex(const char *name, pg_oom_fn fn, void *ctx, const struct pg_oom_opts *o);

/* A counted allocator for library hooks (cJSON_InitHooks). */
void *pg_oom_malloc(size_t n);

/* Allocations outside the sweep's counting (the test's own buffers). */
void *pg_oom_real_malloc(size_t n);
void pg_oom_real_free(void *p);

/* FNV-1a over bytes, to fingerprint a run's result (start with h = 0). */
unsigned long long pg_oom_hash(unsigned long long h, const void *p, size_t n);
/* In the reference run stores h in *slot; later returns PG_EINTERNAL ("result differs
 * from the reference run: WHAT") when h differs, else PG_OK. */
int pg_oom_same(unsigned long long *slot, int reference, unsigned long long h, const char *what,
                struct pg_error *err);

/* Suspends (1) / resumes (0) counting, for fn's own checks after the call under test
 * (e.g. parsing its output through a counted cJSON). */
void pg_oom_hold(int on);

/* 1 while a sweep is running a faulted run (for fn to know; rarely needed). */
int pg_oom_active(void);

#endif
