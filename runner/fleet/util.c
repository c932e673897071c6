/* phasegate runner — the fleet room's helpers: a string map, spawning ctest, atomic
 * writes, the host name. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"

extern char **environ;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void pg__fleet_map_reset(struct pg__fleet_map *m) {
  for (int i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static int slot_of(const struct pg__fleet_map *m, const char *key) {
  int i = (int)(hash_str(key) & (uint64_t)(m->cap - 1));
  while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
  return i;
}

static int grow(struct pg__fleet_map *m) {
  struct pg__fleet_map g = {calloc(m->cap ? (size_t)m->cap * 2 : 64, sizeof(char *)),
                            calloc(m->cap ? (size_t)m->cap * 2 : 64, sizeof(double)),
                            m->cap ? m->cap * 2 : 64, m->n};
  if (!g.keys || !g.vals) {
    free(g.keys);
    free(g.vals);
    return -1;
  }
  for (int i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    int s = slot_of(&g, m->keys[i]);
    g.keys[s] = m->keys[i];
    g.vals[s] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  *m = g;
  return 0;
}

int pg__fleet_map_put(struct pg__fleet_map *m, const char *key, double val) {
  if ((m->n + 1) * 2 > m->cap && grow(m) != 0) return -1;
  int s = slot_of(m, key);
  if (!m->keys[s]) {
    if (!(m->keys[s] = pg_strdup(key))) return -1;
    m->n++;
  }
  m->vals[s] = val;
  return 0;
}

int pg__fleet_map_get(const struct pg__fleet_map *m, const char *key, double *val) {
  if (!m->cap) return 0;
  int s = slot_of(m, key);
  if (!m->keys[s]) return 0;
  if (val) *val = m->vals[s];
  return 1;
}

/* environ plus env_add (replacing a variable of the same name). malloc'ed array. */
static char **child_env(const char *const *env_add, int n_env) {
  int n = 0;
  while (environ[n]) n++;
  char **e = calloc((size_t)(n + n_env + 1), sizeof *e);
  if (!e) return NULL;
  int k = 0;
  for (int i = 0; i < n; i++) {
    int replaced = 0;
    for (int j = 0; j < n_env; j++) {
      size_t l = strcspn(env_add[j], "=");
      replaced |= strncmp(environ[i], env_add[j], l + 1) == 0;
    }
    if (!replaced) e[k++] = environ[i];
  }
  for (int j = 0; j < n_env; j++) e[k++] = (char *)env_add[j];
  return e;
}

int pg__fleet_spawn(char *const *argv, const char *const *env_add, int n_env,
                    char **capture, size_t *cap_len, int *exit_code, struct pg_error *err) {
  int fds[2] = {-1, -1};
  if (capture && pipe2(fds, O_CLOEXEC) != 0)
    return pg_error_set(err, PG_EIO, "cannot make a pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (capture) posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  char **env = child_env(env_add, n_env);
  pid_t pid = -1;
  int rc = env ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, env) : ENOMEM;
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  if (capture) close(fds[1]);
  if (rc != 0) {
    if (capture) close(fds[0]);
    return pg_error_set(err, PG_EIO, "cannot start %s: %s", argv[0], strerror(rc));
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int oom = 0;
  while (capture) {
    if (len + 65536 + 1 > cap) {
      size_t nc = cap ? cap * 2 : 131072;
      char *nb = realloc(buf, nc);
      if (!nb) {
        oom = 1;
        len = 0; /* keep draining so the child never blocks */
      } else buf = nb, cap = nc;
    }
    ssize_t got = read(fds[0], buf + len, cap - len - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    len += (size_t)got;
  }
  if (capture) close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (capture) {
    if (oom || !buf) {
      free(buf);
      return pg_error_set(err, PG_ENOMEM, "out of memory reading %s's output", argv[0]);
    }
    buf[len] = '\0';
    *capture = buf;
    if (cap_len) *cap_len = len;
  }
  return PG_OK;
}

int pg__fleet_write_file(const char *path, const char *text, struct pg_error *err) {
  char *tmp = pg_path_fmt("%s.tmp.%ld", path, (long)getpid());
  if (!tmp) return pg_error_set(err, PG_ENOMEM, "out of memory");
  FILE *f = fopen(tmp, "wb");
  int ok = f && fputs(text, f) >= 0;
  if (f) ok &= fclose(f) == 0;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    free(tmp);
    return pg_error_set(err, PG_EIO, "%s: cannot write: %s", path, strerror(e));
  }
  free(tmp);
  return PG_OK;
}

void pg__fleet_host(char *buf, size_t size) {
  if (gethostname(buf, size) != 0 || !buf[0]) snprintf(buf, size, "unknown");
  buf[size - 1] = '\0';
}
