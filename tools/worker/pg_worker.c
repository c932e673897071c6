/* pg_worker_c — the worker protocol (version 1, docs/worker_protocol.md) in C: a no-op impl.
 *
 * Started by phasegate as `worker:COMMAND` (under /bin/sh -c, with PHASEGATE_WORKER=1,
 * PHASEGATE_MODE, PHASEGATE_DEVICE_ID and PHASEGATE_WORKER_FDS=R,W), it writes the
 * handshake {"phasegate_worker": 1} on fd W, then for every request line on fd R (the
 * exec adapter's request.json object plus "id") writes each expected output as a
 * valid .npy of the declared dtype and shape, filled with zeros (or PG_WORKER_VALUE),
 * and answers {"id": <same>, "status": "ok"}. End of file on R: exit 0.
 *
 * It is the smallest correct worker, for benchmarks (protocol overhead without any
 * compute) and for tests of the runner's side. It is not an impl of any op.
 *
 * Environment:
 *   PG_WORKER_VALUE=X      fill value (default 0; integers truncate, bool is X != 0)
 *   PG_WORKER_DELAY_MS=N   sleep N ms in every call before answering
 *   PG_WORKER_MODES=a,b    modes it serves; any other answers "unavailable" (default: all)
 *   PG_WORKER_FAULT=F[,F…] misbehave on purpose (for the runner's fault tests):
 *     never_handshake     never writes the handshake (reads on until EOF)
 *     junk                answers a line that is not JSON
 *     wrong_id            answers with id + 1
 *     exit_between_calls  exits 0 after answering the first call
 *     hang                never answers (sleeps until killed)
 *     segfault            SIGSEGV in every call
 *     crash_on_call=N     SIGSEGV in the N-th call (1-based), earlier calls succeed
 *     stdout_write        writes to fd 1 (write(2) and stdio) in every call, then answers
 *     background_child    the first call leaves a child running (sleep 300, inheriting
 *                         stdout/stderr), then answers
 *     error               answers "error" in every call
 *     unavailable         answers "unavailable" in every call
 *     no_output           answers "ok" without writing any output
 *   PG_WORKER_LOG=1        one line per call on stderr (call count, id, case, mode, pid)
 *
 * Exit status: 0 at EOF, 2 for a bad environment, 3 for a request that is not a JSON
 * object with an integer "id" (nothing is answered: the runner classifies it).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phasegate/tensor.h"

struct options {
  double value;
  long delay_ms;
  const char *modes;
  int never_handshake, junk, wrong_id, exit_between_calls, hang, segfault, crash_on_call,
      stdout_write, background_child, error, unavailable, no_output, log;
};

/* 1 when `list` (comma-separated) holds `word` exactly, or `word=…` (value in *val). */
static int has_word(const char *list, const char *word, long *val) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len >= n && strncmp(p, word, n) == 0) {
      if (len == n) return 1;
      if (p[n] == '=' && val) {
        *val = strtol(p + n + 1, NULL, 10);
        return 1;
      }
    }
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static void parse_options(struct options *o) {
  memset(o, 0, sizeof *o);
  const char *v = getenv("PG_WORKER_VALUE");
  if (v && *v) o->value = strtod(v, NULL);
  v = getenv("PG_WORKER_DELAY_MS");
  if (v && *v) o->delay_ms = strtol(v, NULL, 10);
  o->modes = getenv("PG_WORKER_MODES");
  v = getenv("PG_WORKER_LOG");
  o->log = v && strcmp(v, "1") == 0;
  const char *f = getenv("PG_WORKER_FAULT");
  if (!f) return;
  long n = 0;
  o->never_handshake = has_word(f, "never_handshake", NULL);
  o->junk = has_word(f, "junk", NULL);
  o->wrong_id = has_word(f, "wrong_id", NULL);
  o->exit_between_calls = has_word(f, "exit_between_calls", NULL);
  o->hang = has_word(f, "hang", NULL);
  o->segfault = has_word(f, "segfault", NULL);
  if (has_word(f, "crash_on_call", &n)) o->crash_on_call = (int)n;
  o->stdout_write = has_word(f, "stdout_write", NULL);
  o->background_child = has_word(f, "background_child", NULL);
  o->error = has_word(f, "error", NULL);
  o->unavailable = has_word(f, "unavailable", NULL);
  o->no_output = has_word(f, "no_output", NULL);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Writes all of buf to fd; -1 on error. */
static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w, n -= (size_t)w;
  }
  return 0;
}

static const char *npy_descr(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F32: return "<f4";
    case PG_DTYPE_F16: return "<f2";
    case PG_DTYPE_BF16: return "<u2"; /* as phasegate's own .npy writer (docs/tensors.md) */
    case PG_DTYPE_F64: return "<f8";
    case PG_DTYPE_I8: return "|i1";
    case PG_DTYPE_U8: return "|u1";
    case PG_DTYPE_I32: return "<i4";
    case PG_DTYPE_I64: return "<i8";
    case PG_DTYPE_BOOL: return "|b1";
    default: return NULL;
  }
}

/* Writes path as a version-1.0 .npy of dtype/shape filled with `value`.
 * Returns 0, or -1 with a message in msg. */
static int write_npy(const char *path, enum pg_dtype dt, int ndim, const int64_t *shape,
                     double value, char *msg, size_t msg_size) {
  const char *descr = npy_descr(dt);
  if (!descr) return snprintf(msg, msg_size, "unsupported dtype"), -1;
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  int64_t count = 1;
  for (int i = 0; i < ndim; i++) {
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i],
                  i + 1 < ndim ? " " : "");
    count *= shape[i];
  }
  if (ndim > 1) n--; /* numpy writes (2, 3) but (4,) */
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  /* magic(6) + version(2) + header length(2) + dict + padding + '\n', a multiple of 64 */
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  unsigned char head[600];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  uint16_t hlen = (uint16_t)((size_t)n + pad + 1);
  head[8] = (unsigned char)(hlen & 0xff), head[9] = (unsigned char)(hlen >> 8);
  memcpy(head + 10, dict, (size_t)n);
  memset(head + 10 + n, ' ', pad);
  head[10 + (size_t)n + pad] = '\n';

  _Alignas(8) unsigned char elem[8] = {0};
  size_t es = pg_dtype_size(dt);
  pg_store_f64(elem, dt, 0, dt == PG_DTYPE_BOOL ? (value != 0) : value);
  unsigned char chunk[65536];
  size_t per = sizeof chunk / es;
  for (size_t i = 0; i < per; i++) memcpy(chunk + i * es, elem, es);

  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return snprintf(msg, msg_size, "%s: %s", path, strerror(errno)), -1;
  int rc = write_all(fd, head, 10 + (size_t)n + pad + 1);
  for (int64_t left = count; rc == 0 && left > 0;) {
    size_t k = (size_t)left < per ? (size_t)left : per;
    rc = write_all(fd, chunk, k * es);
    left -= (int64_t)k;
  }
  if (close(fd) != 0) rc = -1;
  if (rc != 0) return snprintf(msg, msg_size, "%s: %s", path, strerror(errno)), -1;
  return 0;
}

/* Writes every expected output of the request; 0, or -1 with msg. */
static int write_outputs(const cJSON *req, double value, char *msg, size_t msg_size) {
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(req, "outputs");
  const char *out_dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "out_dir"));
  if (!cJSON_IsArray(outs)) return snprintf(msg, msg_size, "request has no \"outputs\" array"), -1;
  const cJSON *o;
  cJSON_ArrayForEach(o, outs) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
    const char *dts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "dtype"));
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "path"));
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
    if (!name || !dts || !cJSON_IsArray(shape))
      return snprintf(msg, msg_size, "an output lacks name, dtype or shape"), -1;
    enum pg_dtype dt = pg_dtype_parse(dts);
    if (dt == PG_DTYPE_INVALID)
      return snprintf(msg, msg_size, "output '%s': unknown dtype '%s'", name, dts), -1;
    int64_t dims[PG_MAX_NDIM];
    int ndim = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
      if (ndim == PG_MAX_NDIM || !cJSON_IsNumber(d) || d->valuedouble < 0)
        return snprintf(msg, msg_size, "output '%s': bad shape", name), -1;
      dims[ndim++] = (int64_t)d->valuedouble;
    }
    char buf[4600];
    if (!path) {
      if (!out_dir) return snprintf(msg, msg_size, "output '%s' has no path and no out_dir", name), -1;
      snprintf(buf, sizeof buf, "%s/%s.npy", out_dir, name);
      path = buf;
    }
    if (write_npy(path, dt, ndim, dims, value, msg, msg_size) != 0) return -1;
  }
  return 0;
}

/* 1 when mode is in the comma-separated list (or there is no list). */
static int mode_served(const char *modes, const char *mode) {
  return !modes || !*modes || (mode && has_word(modes, mode, NULL));
}

/* Sends one answer line; exits 0 when the runner is gone. */
static void answer(int w, long id, const char *status, const char *message) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "id", (double)id);
  cJSON_AddStringToObject(a, "status", status);
  if (message) cJSON_AddStringToObject(a, "message", message);
  char *text = cJSON_PrintUnformatted(a);
  cJSON_Delete(a);
  if (!text) {
    fprintf(stderr, "pg_worker_c: out of memory\n");
    _exit(2);
  }
  size_t n = strlen(text);
  int rc = write_all(w, text, n);
  if (rc == 0) rc = write_all(w, "\n", 1);
  free(text);
  if (rc != 0) _exit(0); /* EPIPE: nobody reads the answers any more */
}

/* Reads one line from fd r into *buf (grown as needed, NUL-terminated, without the
 * newline). Returns its length, or -1 at end of file (a partial last line counts). */
static long read_line(int r, char **buf, size_t *cap, char *rbuf, size_t *rpos, size_t *rlen) {
  size_t n = 0;
  for (;;) {
    if (*rpos == *rlen) {
      ssize_t got = read(r, rbuf, 65536);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return n > 0 ? (long)n : -1;
      *rpos = 0, *rlen = (size_t)got;
    }
    char c = rbuf[(*rpos)++];
    if (c == '\n') break;
    if (n + 2 > *cap) {
      size_t nc = *cap ? *cap * 2 : 4096;
      char *nb = realloc(*buf, nc);
      if (!nb) {
        fprintf(stderr, "pg_worker_c: out of memory reading a request\n");
        _exit(2);
      }
      *buf = nb, *cap = nc;
    }
    (*buf)[n++] = c;
  }
  if (!*buf) {
    *buf = malloc(1);
    if (!*buf) _exit(2);
    *cap = 1;
  }
  (*buf)[n] = '\0';
  return (long)n;
}

/* Default dispositions: a sanitizer runtime installs handlers before main; a fault of
 * this worker must end it with that signal, as it would end an uninstrumented one. */
static void default_signals(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
}

int main(void) {
  default_signals();
  struct options o;
  parse_options(&o);
  const char *fds = getenv("PHASEGATE_WORKER_FDS");
  int r = -1, w = -1;
  if (!fds || sscanf(fds, "%d,%d", &r, &w) != 2 || r < 0 || w < 0 || r == w || r == 1 ||
      r == 2 || w <= 2) {
    fprintf(stderr, "pg_worker_c: PHASEGATE_WORKER_FDS must be 'R,W' (two protocol fds, W > 2), "
            "got '%s'; run it as `phasegate run --impl worker:...`\n", fds ? fds : "");
    return 2;
  }
  /* The protocol fds are never inherited by children; fd 1 becomes stderr, so neither
   * printf nor a library's write(1, …) can reach the protocol. */
  fcntl(r, F_SETFD, FD_CLOEXEC);
  fcntl(w, F_SETFD, FD_CLOEXEC);
  fflush(stdout);
  if (dup2(2, 1) < 0) {
    fprintf(stderr, "pg_worker_c: dup2: %s\n", strerror(errno));
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  static char rbuf[65536];
  size_t rpos = 0, rlen = 0, cap = 0;
  char *line = NULL;
  if (!o.never_handshake) {
    const char hello[] = "{\"phasegate_worker\": 1}\n";
    if (write_all(w, hello, sizeof hello - 1) != 0) return 0;
  }
  long calls = 0;
  for (;;) {
    long n = read_line(r, &line, &cap, rbuf, &rpos, &rlen);
    if (n < 0) break; /* EOF: exit now */
    if (n == 0) continue;
    if (o.never_handshake) continue;
    cJSON *req = cJSON_Parse(line);
    const cJSON *jid = req ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
    if (!cJSON_IsObject(req) || !cJSON_IsNumber(jid) || jid->valuedouble != floor(jid->valuedouble)) {
      fprintf(stderr, "pg_worker_c: request %ld is not a JSON object with an integer \"id\": "
              "exiting\n", calls + 1);
      cJSON_Delete(req);
      free(line);
      return 3;
    }
    long id = (long)jid->valuedouble;
    calls++;
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "mode"));
    const char *case_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "case"));
    if (o.log)
      fprintf(stderr, "pg_worker_c: call %ld (id %ld): case %s, mode %s, pid %ld\n", calls, id,
              case_id ? case_id : "?", mode ? mode : "?", (long)getpid());
    if (o.segfault || (o.crash_on_call > 0 && calls == o.crash_on_call)) {
      fflush(stderr);
      raise(SIGSEGV);
    }
    if (o.hang)
      for (;;) pause();
    if (o.stdout_write) {
      static const char noise[] = "pg_worker_c: stray write(1) — must not reach the protocol\n";
      write_all(1, noise, sizeof noise - 1);
      printf("pg_worker_c: stray printf to stdout\n");
      fflush(stdout);
    }
    if (o.background_child && calls == 1) {
      pid_t c = fork();
      if (c == 0) {
        close(r), close(w); /* CLOEXEC does not apply to fork; a sleeping child holds stdio */
        sleep(300);
        _exit(0);
      }
    }
    if (o.delay_ms > 0) sleep_ms(o.delay_ms);
    char msg[600] = "";
    if (o.junk) {
      const char junk[] = "this is not JSON\n";
      write_all(w, junk, sizeof junk - 1);
    } else if (o.error) {
      answer(w, id, "error", "pg_worker_c: PG_WORKER_FAULT=error");
    } else if (o.unavailable) {
      answer(w, id, "unavailable", "pg_worker_c: PG_WORKER_FAULT=unavailable");
    } else if (!mode_served(o.modes, mode)) {
      snprintf(msg, sizeof msg, "pg_worker_c serves modes '%s', not '%s'", o.modes,
               mode ? mode : "");
      answer(w, id, "unavailable", msg);
    } else if (!o.no_output && write_outputs(req, o.value, msg, sizeof msg) != 0) {
      answer(w, id, "error", msg);
    } else {
      answer(w, o.wrong_id ? id + 1 : id, "ok", NULL);
    }
    cJSON_Delete(req);
    if (o.exit_between_calls) {
      free(line);
      return 0;
    }
  }
  free(line);
  return 0;
}
