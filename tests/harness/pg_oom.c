/* phasegate tests — the out-of-memory sweep harness: link-time allocator wrappers, the
 * fault schedule and the transient / persistent sweep driver. See pg_oom.h. */
#include "pg_oom.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define PG_OOM_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PG_OOM_LSAN 1
#endif
#endif
#ifdef PG_OOM_LSAN
#include <sanitizer/lsan_interface.h>
#endif

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                          void *arg);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                          void *arg);

/* Test-only global state: the fault schedule. Counters are atomic because worker
 * threads of the code under test allocate too. */
static atomic_long alloc_count, fired;
static atomic_long fail_at;      /* 0: no fault */
static atomic_int persistent, count_threads, hold;
static long trap_at;             /* PG_OOM_TRAP */

static int should_fail(void) {
  long at = atomic_load(&fail_at);
  if (at <= 0 || atomic_load(&hold)) return 0;
  long n = atomic_fetch_add(&alloc_count, 1) + 1;
  if (n == at || (atomic_load(&persistent) && n > at)) {
    atomic_fetch_add(&fired, 1);
    if (trap_at && n == trap_at) raise(SIGTRAP);
    return 1;
  }
  return 0;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return should_fail() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) {
  return should_fail() ? NULL : __real_strndup(s, n);
}
void *__wrap_aligned_alloc(size_t a, size_t n) {
  return should_fail() ? NULL : __real_aligned_alloc(a, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n) {
  return should_fail() ? ENOMEM : __real_posix_memalign(p, a, n);
}
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                          void *arg) {
  if (atomic_load(&count_threads) && should_fail()) return EAGAIN;
  return __real_pthread_create(t, a, fn, arg);
}

void *pg_oom_malloc(size_t n) { return __wrap_malloc(n); }
void *pg_oom_real_malloc(size_t n) { return __real_malloc(n); }
void pg_oom_real_free(void *p) { free(p); }
void pg_oom_hold(int on) { atomic_store(&hold, on); }
int pg_oom_active(void) { return atomic_load(&fail_at) > 0; }

unsigned long long pg_oom_hash(unsigned long long h, const void *p, size_t n) {
  const unsigned char *b = p;
  if (!h) h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

int pg_oom_same(unsigned long long *slot, int reference, unsigned long long h, const char *what,
                struct pg_error *err) {
  if (reference) {
    *slot = h;
    return PG_OK;
  }
  if (*slot != h)
    return pg_error_set(err, PG_EINTERNAL, "result differs from the reference run: %s", what);
  return PG_OK;
}

/* 1 if a PG_ENOMEM message is intact: terminated, non-empty, saying what happened. */
static int message_ok(const struct pg_error *err, const char *must_say) {
  if (!memchr(err->message, '\0', sizeof err->message) || !err->message[0]) return 0;
  if (must_say) return strstr(err->message, must_say) != NULL;
  return strstr(err->message, "memory") || strstr(err->message, "allocat");
}

static int leak_check(void) {
#ifdef PG_OOM_LSAN
  return __lsan_do_recoverable_leak_check();
#else
  return 0;
#endif
}

static int sweep_mode(const char *name, pg_oom_fn fn, void *ctx, const struct pg_oom_opts *o,
                      int persistent_mode, int expect) {
  const char *mode = persistent_mode ? "persistent" : "transient";
  const char *each = getenv("PG_OOM_LEAKCHECK_EACH");
  int check_each = each && *each && strcmp(each, "0") != 0;
  long min_sites = o->min_sites > 0 ? o->min_sites : o->min_sites < 0 ? 0 : 5;
  atomic_store(&persistent, persistent_mode);
  for (long k = 1; k < 10000000; k++) {
    struct pg_error err;
    pg_error_clear(&err);
    atomic_store(&alloc_count, 0);
    atomic_store(&fired, 0);
    atomic_store(&fail_at, k);
    int rc = fn(ctx, 0, &err);
    atomic_store(&fail_at, 0);
    atomic_store(&hold, 0);
    long fired_now = atomic_load(&fired);
    const char *why = NULL;
    if (rc == PG_ENOMEM && rc != expect) {
      if (!message_ok(&err, o->must_say)) why = "PG_ENOMEM without an intact out-of-memory message";
    } else if (rc != expect) {
      why = "unexpected status";
    }
    if (!why && check_each && leak_check()) why = "leak (see the LeakSanitizer report above)";
    if (why) {
      printf("not ok - %s %s k=%ld: %s: %s (expected %s or PG_ENOMEM): %s\n"
             "# rerun under a debugger with PG_OOM_TRAP=%ld\n",
             name, mode, k, why, pg_err_name(rc), pg_err_name(expect), err.message, k);
      fflush(stdout);
      return 1;
    }
    if (fired_now == 0) {
      if (leak_check()) {
        printf("not ok - %s %s: leak on an error path (LeakSanitizer report above; "
               "PG_OOM_LEAKCHECK_EACH=1 names the k)\n", name, mode);
        return 1;
      }
      if (k - 1 < min_sites) {
        printf("not ok - %s %s: only %ld allocation sites swept (a sweep that faults "
               "nothing tests nothing)\n", name, mode, k - 1);
        return 1;
      }
      printf("ok - %s %s (%s): %ld allocation sites swept\n", name, mode, pg_err_name(expect),
             k - 1);
      fflush(stdout);
      return 0;
    }
  }
  printf("not ok - %s %s: did not converge\n", name, mode);
  return 1;
}

int pg_oom_sweep_ex(const char *name, pg_oom_fn fn, void *ctx, const struct pg_oom_opts *o) {
  struct pg_oom_opts def = {0};
  if (!o) o = &def;
  const char *trap = getenv("PG_OOM_TRAP");
  trap_at = trap ? atol(trap) : 0;
  atomic_store(&count_threads, o->count_threads);
  struct pg_error err;
  pg_error_clear(&err);
  atomic_store(&fail_at, 0);
  int expect = fn(ctx, 1, &err); /* the reference run, no fault */
  if (expect == PG_ENOMEM || expect == PG_EINTERNAL) {
    printf("not ok - %s: the reference run failed: %s: %s\n", name, pg_err_name(expect),
           err.message);
    return 1;
  }
  int modes = o->modes ? o->modes : PG_OOM_BOTH;
  int bad = 0;
  if (modes & PG_OOM_TRANSIENT) bad |= sweep_mode(name, fn, ctx, o, 0, expect);
  if (!bad && (modes & PG_OOM_PERSISTENT)) bad |= sweep_mode(name, fn, ctx, o, 1, expect);
  atomic_store(&count_threads, 0);
  return bad;
}

int pg_oom_sweep(const char *name, pg_oom_fn fn, void *ctx) {
  return pg_oom_sweep_ex(name, fn, ctx, NULL);
}
