/* phasegate runner — `phasegate serve`: the control-protocol wire helpers — fingerprints, environment keys, socket
 * addresses, JSON lines with an optional fd (serve_client.h,
 * docs/serve.md). */
#include "impl/serve_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

extern char **environ;

/* ================================================================== shared helpers */

/* FNV-1a, for fingerprints and environment hashes (equality only, never security). */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
#define FNV_INIT 14695981039346656037ull

/* Mixes (dev, ino, size, mtime) of path into h when it names a regular file. */
static uint64_t file_fp(uint64_t h, const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return h;
  int64_t f[6] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size,
                  (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec,
                  (int64_t)st.st_ctim.tv_sec};
  h = fnv(h, path, strlen(path));
  return fnv(h, f, sizeof f);
}

/* What the process runs, as it is on disk now: the plugin .so and the host for a
 * plugin, every word of a worker command that names a regular file (relative words
 * from cwd; quotes around a word are ignored). */
uint64_t pg_serve_program_fp(enum pg_proc_kind kind, const char *target, const char *cwd,
                              const char *host) {
  uint64_t h = FNV_INIT;
  if (kind == PG_PROC_PLUGIN) {
    const char *so = target;
    char *path = so[0] == '/' ? pg_strdup(so) : pg_path_fmt("%s/%s", cwd, so);
    h = file_fp(h, path);
    free(path);
    return file_fp(h, host);
  }
  const char *s = target;
  while (*s) {
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
    size_t n = (size_t)(e - s);
    if (n && (*s == '\'' || *s == '"')) s++, n--;
    if (n && (s[n - 1] == '\'' || s[n - 1] == '"')) n--;
    if (n) {
      char *path = s[0] == '/' ? pg_path_fmt("%.*s", (int)n, s)
                               : pg_path_fmt("%s/%.*s", cwd, (int)n, s);
      h = file_fp(h, path);
      free(path);
    }
    s = e;
  }
  return h;
}

/* The executable running now (a rebuilt phasegate is another daemon). */
uint64_t pg_serve_exe_fp(void) { return file_fp(FNV_INIT, "/proc/self/exe"); }

/* Environment entries set by pg_proc_argv_build for every process: never copied from
 * a client (they would shadow the process's own). */
int pg_serve_env_is_ours(const char *e) {
  static const char *const names[] = {"PHASEGATE_WORKER=", "PHASEGATE_WORKER_FDS=",
                                      "PHASEGATE_MODE=", "PHASEGATE_DEVICE_ID=", NULL};
  for (int i = 0; names[i]; i++)
    if (strncmp(e, names[i], strlen(names[i])) == 0) return 1;
  return 0;
}

/* Entries that differ between tests (or shells) without changing what a process does:
 * left out of the key. CTest sets CTEST_RESOURCE_GROUP_* per test (the device id they
 * carry is a key field of its own); PHASEGATE_SERVE* tells a case test where the
 * daemon is, and the start fixture that prestarts need not set it. */
static int env_is_volatile(const char *e) {
  return strncmp(e, "CTEST_RESOURCE_GROUP_", 21) == 0 || strncmp(e, "_=", 2) == 0 ||
         strncmp(e, "PWD=", 4) == 0 || strncmp(e, "OLDPWD=", 7) == 0 ||
         strncmp(e, "SHLVL=", 6) == 0 || strncmp(e, "PHASEGATE_SERVE", 15) == 0 ||
         pg_serve_env_is_ours(e);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Hash of the environment without volatile entries, in sorted order. */
uint64_t pg_serve_env_hash(char **env, size_t n) {
  char **sorted = malloc((n ? n : 1) * sizeof *sorted);
  uint64_t h = FNV_INIT;
  if (!sorted) return h;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!env_is_volatile(env[i])) sorted[k++] = env[i];
  qsort(sorted, k, sizeof *sorted, cmp_str);
  for (size_t i = 0; i < k; i++) h = fnv(h, sorted[i], strlen(sorted[i]) + 1);
  free(sorted);
  return h;
}

void pg_serve_free_strv(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

/* This process's umask, without changing it (other threads may be creating files). */
int pg_serve_current_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  int mask = -1;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Umask:", 6) == 0) mask = (int)strtol(line + 6, NULL, 8);
  if (f) fclose(f);
  if (mask < 0) {
    mask = (int)umask(022);
    umask((mode_t)mask);
  }
  return mask;
}

/* 1 when pid is gone (or a zombie nobody reaps: it no longer runs anything). */
int pg_serve_pid_gone(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 1;
  char state = 0;
  if (pg__proc_stat(pid, &state, NULL, NULL) != 0) return 1;
  return state == 'Z' || state == 'X';
}

/* SIGKILL to the group of a process that is not our child, and a wait (<= 1 s) until
 * it has gone. Its parent (the daemon) may have reaped it already, and then the pid may
 * be a stranger's: the pidfd taken with the lease (-1: none) says whether it is not. */
void pg_serve_kill_foreign(int pid, int pidfd) {
  if (pid <= 0 || (pidfd >= 0 && !pg__pidfd_alive(pidfd))) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  for (int i = 0; i < 200 && !pg_serve_pid_gone(pid); i++) usleep(5000);
}

/* ------------------------------------------------------------------ the socket address */

/* The address of <dir>/serve.sock. sun_path holds 107 bytes: a longer path is reached
 * through /proc/self/fd/<fd of dir>/serve.sock (*dirfd >= 0 then: close it after the
 * bind or connect). ENOENT etc. in errno when the directory cannot be opened. */
int pg_serve_sock_addr(const char *dir, struct sockaddr_un *sa, int *dirfd) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  *dirfd = -1;
  size_t n = strlen(dir);
  if (n + 1 + strlen(PG_SERVE_SOCK) < sizeof sa->sun_path) {
    snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", dir, PG_SERVE_SOCK);
    return 0;
  }
  *dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (*dirfd < 0) return -1;
  snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/%s", *dirfd, PG_SERVE_SOCK);
  return 0;
}

/* ------------------------------------------------------------------ lines */

/* The first descriptor passed goes to *(int *)ctx (when ctx is not NULL and it is still
 * -1); any other is closed. */
static void keep_first_fd(void *ctx, int fd) {
  int *got_fd = ctx;
  if (got_fd && *got_fd < 0) *got_fd = fd;
  else close(fd);
}

/* Reads one answer line from the daemon (who sends nothing unasked, so no byte of a
 * later line can arrive with it). A descriptor passed with it lands in *got_fd (when
 * got_fd is not NULL; else it is closed). 1: *out parsed (NULL if not JSON); 0: EOF or
 * an error; -1: nothing within timeout_ms (< 0: no limit). */
int pg_serve_recv_json(int fd, int timeout_ms, cJSON **out, int *got_fd) {
  *out = NULL;
  if (got_fd) *got_fd = -1;
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  if (!buf) return 0;
  double deadline = timeout_ms >= 0 ? pg_now_ms() + timeout_ms : 0;
  int rc = 0;
  for (;;) {
    int wait = -1;
    if (timeout_ms >= 0) {
      double left = deadline - pg_now_ms();
      if (left <= 0) {
        rc = -1;
        break;
      }
      wait = (int)left + 1;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, wait);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      rc = -1;
      break;
    }
    if (pr < 0) break;
    if (cap - len < 1024) {
      if (cap >= PG_SERVE_MAX_LINE) break;
      char *b = realloc(buf, cap * 2);
      if (!b) break;
      buf = b, cap *= 2;
    }
    ssize_t got = pg__recv_fds(fd, buf + len, cap - len - 1, keep_first_fd, got_fd);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    len += (size_t)got;
    buf[len] = '\0';
    if (memchr(buf, '\n', len)) {
      *out = cJSON_Parse(buf);
      rc = 1;
      break;
    }
  }
  free(buf);
  if (rc != 1 && got_fd && *got_fd >= 0) {
    close(*got_fd);
    *got_fd = -1;
  }
  return rc;
}

double pg_serve_num(const cJSON *o, const char *key, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* Integers from the other side are clamped, not cast: a cast of a double outside the
 * target type is undefined behaviour (1e300 as a pid; found by fuzz_serve_daemon). */
int64_t pg_serve_int(const cJSON *o, const char *key, int64_t dflt, int64_t lo, int64_t hi) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble) return dflt;
  if (v->valuedouble <= (double)lo) return lo;
  if (v->valuedouble >= (double)hi) return hi;
  return (int64_t)v->valuedouble;
}

const char *pg_serve_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

int pg_serve_is_true(const cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

int pg_serve_status_ok(const cJSON *a) {
  const char *s = pg_serve_str(a, "status");
  return s && strcmp(s, "ok") == 0;
}
