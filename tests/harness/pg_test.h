/* phasegate — a tiny unit-test harness (after libuv's test/runner.h).
 *
 *   #include "pg_test.h"
 *   PG_TEST(npy_roundtrip) { PG_CHECK_EQ_INT(2, 1 + 1); }
 *
 * Tests register themselves; link pg_test_main (tests/harness/pg_test.c) for main().
 * Each test runs in its own forked process with a timeout, output is TAP. Arguments:
 * test names to run (default all), --list, --timeout S, --no-fork (for debuggers).
 * A test may call PG_SKIP("reason"). Exit status: 0 all passed, 1 otherwise.
 */
#ifndef PG_TEST_H
#define PG_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*pg_test_fn)(void);
void pg_test_register(const char *name, pg_test_fn fn, const char *file, int line);
void pg_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void pg_test_skip(const char *reason) __attribute__((noreturn));
/* Absolute path of a file under tests/data (PG_TEST_DATA_DIR is set by CMake). */
const char *pg_test_data(const char *relative);
/* A fresh temporary directory for this test, removed when the test passes. */
const char *pg_test_tmpdir(void);

#define PG_TEST(name)                                                          \
  static void pg_test_##name(void);                                            \
  __attribute__((constructor)) static void pg_test_register_##name(void) {     \
    pg_test_register(#name, pg_test_##name, __FILE__, __LINE__);               \
  }                                                                            \
  static void pg_test_##name(void)

#define PG_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond)) pg_test_fail(__FILE__, __LINE__, "check failed: %s", #cond);  \
  } while (0)

#define PG_CHECK_MSG(cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) pg_test_fail(__FILE__, __LINE__, __VA_ARGS__);                \
  } while (0)

#define PG_CHECK_EQ_INT(expected, actual)                                      \
  do {                                                                         \
    long long pg_e_ = (long long)(expected), pg_a_ = (long long)(actual);      \
    if (pg_e_ != pg_a_)                                                        \
      pg_test_fail(__FILE__, __LINE__, "%s == %s: expected %lld, got %lld",    \
                   #expected, #actual, pg_e_, pg_a_);                          \
  } while (0)

#define PG_CHECK_EQ_STR(expected, actual)                                      \
  do {                                                                         \
    const char *pg_e_ = (expected), *pg_a_ = (actual);                         \
    if (!pg_e_ || !pg_a_ || strcmp(pg_e_, pg_a_) != 0)                         \
      pg_test_fail(__FILE__, __LINE__, "%s == %s:\n  expected: %s\n  actual:   %s", \
                   #expected, #actual, pg_e_ ? pg_e_ : "(null)",               \
                   pg_a_ ? pg_a_ : "(null)");                                  \
  } while (0)

#define PG_CHECK_NEAR(expected, actual, tol)                                   \
  do {                                                                         \
    double pg_e_ = (expected), pg_a_ = (actual);                               \
    if (!(fabs(pg_e_ - pg_a_) <= (tol)))                                       \
      pg_test_fail(__FILE__, __LINE__, "%s ~= %s: expected %.17g, got %.17g",  \
                   #expected, #actual, pg_e_, pg_a_);                          \
  } while (0)

#define PG_CHECK_OK(expr)                                                      \
  do {                                                                         \
    int pg_rc_ = (expr);                                                       \
    if (pg_rc_ != 0)                                                           \
      pg_test_fail(__FILE__, __LINE__, "%s returned %d", #expr, pg_rc_);       \
  } while (0)

#define PG_SKIP(reason) pg_test_skip(reason)

#endif /* PG_TEST_H */
