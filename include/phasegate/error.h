/* phasegate — error codes and the caller-owned error buffer.
 *
 * Every fallible phasegate function returns an int: PG_OK (0) or a negative PG_E*
 * code, and takes a `struct pg_error *err` last. The caller owns the buffer (stack is
 * fine); NULL is accepted everywhere. Messages from loaders start "path:line:col: "
 * so editors can jump to them; line/column are also stored as numbers.
 * Header-only: this is part of the ABI and must not need a library to link.
 */
#ifndef PHASEGATE_ERROR_H
#define PHASEGATE_ERROR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One table, from which the enum, pg_err_name() and pg_strerror() are generated. */
#define PG_ERRNO_MAP(XX)                                              \
  XX(ENOENT, -2, "no such file or directory")                         \
  XX(EIO, -5, "i/o error")                                            \
  XX(ENOMEM, -12, "out of memory")                                    \
  XX(EINVAL, -22, "invalid argument")                                 \
  XX(EPARSE, -4001, "malformed input")                                \
  XX(EVALIDATE, -4002, "validation failed")                           \
  XX(ESHAPE, -4003, "tensor shapes are incompatible")                 \
  XX(EDTYPE, -4004, "unsupported or mismatching dtype")               \
  XX(ENOTSUP, -4005, "operation not supported")                       \
  XX(EOVERFLOW, -4006, "value out of range")                          \
  XX(ELIMIT, -4007, "size limit exceeded")                            \
  XX(ENOSYM, -4008, "symbol not found")                               \
  XX(EIMPL, -4009, "implementation failed")                           \
  XX(ETIMEOUT, -4010, "timed out")                                    \
  XX(ENOTFOUND, -4011, "no such item")                                \
  XX(EINTERNAL, -4012, "internal error")

enum pg_status {
  PG_OK = 0,
#define PG__ERR_ENUM(name, value, msg) PG_##name = (value),
  PG_ERRNO_MAP(PG__ERR_ENUM)
#undef PG__ERR_ENUM
};

#define PG_ERROR_MESSAGE_MAX 1024

struct pg_error {
  char message[PG_ERROR_MESSAGE_MAX]; /* NUL-terminated; truncated, never overrun */
  int code;                           /* last code set (PG_OK if none) */
  int line, column;                   /* 1-based position in the input; 0 = none */
};

static inline const char *pg_err_name(int code) {
  switch (code) {
    case PG_OK: return "OK";
#define PG__ERR_NAME(name, value, msg) \
  case PG_##name: return "PG_" #name;
    PG_ERRNO_MAP(PG__ERR_NAME)
#undef PG__ERR_NAME
    default: return "PG_EUNKNOWN";
  }
}

static inline const char *pg_strerror(int code) {
  switch (code) {
    case PG_OK: return "success";
#define PG__ERR_STR(name, value, msg) \
  case PG_##name: return msg;
    PG_ERRNO_MAP(PG__ERR_STR)
#undef PG__ERR_STR
    default: return "unknown error";
  }
}

static inline void pg_error_clear(struct pg_error *err) {
  if (!err) return;
  err->message[0] = '\0';
  err->code = PG_OK;
  err->line = err->column = 0;
}

/* Sets the message (printf-style) and returns `code`, so an error path is one line:
 *   return pg_error_set(err, PG_EPARSE, "expected a mapping");                      */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int pg_error_set(struct pg_error *err, int code, const char *fmt, ...) {
  if (!err) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  err->code = code;
  err->line = err->column = 0;
  return code;
}

/* Like pg_error_set, with a "file:line:col: error: " prefix and the numbers stored. */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static inline int pg_error_set_at(struct pg_error *err, int code, const char *file, int line,
                                  int column, const char *fmt, ...) {
  if (!err) return code;
  int n = snprintf(err->message, sizeof err->message, "%s:%d:%d: error: ",
                   file ? file : "<input>", line, column);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof err->message) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
    va_end(ap);
  }
  err->code = code;
  err->line = line;
  err->column = column;
  return code;
}

/* Prepends context once per component boundary: "loading 'x.yaml': <old message>". */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void pg_error_prefix(struct pg_error *err, const char *fmt, ...) {
  if (!err) return;
  char old[PG_ERROR_MESSAGE_MAX];
  memcpy(old, err->message, sizeof old);
  old[sizeof old - 1] = '\0';
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof err->message)
    snprintf(err->message + n, sizeof err->message - (size_t)n, "%s", old);
}

#define PG_RETURN_IF_ERROR(expr)     \
  do {                               \
    int pg__rc_ = (expr);            \
    if (pg__rc_ != PG_OK) return pg__rc_; \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_ERROR_H */
