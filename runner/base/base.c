/* phasegate runner — base helpers (base.h): the one copy of each. */
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double pg_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double pg_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void pg_wall_format(double t, char *buf, size_t size) {
  time_t s = (time_t)(t / 1e3);
  struct tm tmv;
  gmtime_r(&s, &tmv);
  char day[40];
  strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tmv);
  snprintf(buf, size, "%s.%03dZ", day, (int)(t - (double)s * 1e3));
}

char *pg_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int pg_array_reserve(void *items, int *capacity, int count, size_t elem_size) {
  if (count < *capacity) return 0;
  int cap = *capacity ? *capacity * 2 : 16;
  /* items points at a `T *`: copied as bytes, never read through a void * lvalue */
  void *old, *grown;
  memcpy(&old, items, sizeof old);
  if (!(grown = realloc(old, (size_t)cap * elem_size))) return -1;
  memcpy(items, &grown, sizeof grown);
  *capacity = cap;
  return 0;
}

int pg_mkdir_p(const char *path) {
  char *buf = pg_strdup(path);
  if (!buf) {
    errno = ENOMEM;
    return -1;
  }
  int rc = 0;
  for (char *p = buf + 1; *p && rc == 0; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) rc = -1;
    *p = '/';
  }
  if (rc == 0 && mkdir(buf, 0777) != 0 && errno != EEXIST) rc = -1;
  if (rc == 0 && !pg_is_dir(buf)) {
    errno = ENOTDIR;
    rc = -1;
  }
  int saved = errno;
  free(buf);
  errno = saved;
  return rc;
}

int pg_is_file(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int pg_is_dir(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Empties the directory dfd (closed here), depth levels at most. Every step is relative
 * to an fd opened with O_NOFOLLOW: a tree whose owner is still running (a persistent
 * worker cleaning up late) cannot swap a subdirectory for a symlink between a check and
 * the removal and so steer it outside the tree, as a path-based walk (nftw) could. */
static void empty_dir(int dfd, int depth) {
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return;
  }
  for (int pass = 0; pass < 4; pass++) { /* entries added meanwhile: a few more passes */
    int removed_all = 1;
    struct dirent *de;
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
      if (unlinkat(dfd, de->d_name, 0) == 0) continue;
      int sub = depth > 0 ? openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                   O_CLOEXEC) : -1;
      if (sub >= 0) empty_dir(sub, depth - 1);
      if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) != 0) removed_all = 0;
    }
    if (removed_all) break;
  }
  closedir(d);
}

void pg_remove_tree(const char *path) {
  if (!path || !*path) return;
  if (unlink(path) == 0) return; /* a file, or a symlink (never followed) */
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return;
  empty_dir(dfd, 64);
  rmdir(path);
}

char *pg_path_join(const char *a, const char *b) {
  if (!b || !*b) return pg_strdup(a);
  return pg_path_fmt("%s/%s", a, b);
}

char *pg_path_fmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

void pg_shape_format(int ndim, const int64_t *shape, char *buf, size_t size) {
  if (size == 0) return;
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (n < size) {
    snprintf(buf + n, size - n, "]");
  } else if (size >= 5) {
    memcpy(buf + size - 5, "...]", 5);
  }
}

void pg_num_short(double v, char *buf, size_t size) {
  char g[40], e[40];
  snprintf(g, sizeof g, "%g", v);
  double gv = strtod(g, NULL);
  int p = 0;
  while (p < 6 && (snprintf(e, sizeof e, "%.*e", p, v), strtod(e, NULL) != gv)) p++;
  /* drop the exponent's '+' and leading zeros: 1e-03 -> 1e-3 */
  for (char *x = strchr(e, 'e'); x && x[1];) {
    if (x[1] == '+' || (x[1] == '0' && x[2])) memmove(x + 1, x + 2, strlen(x + 2) + 1);
    else if (x[1] == '-' && x[2] == '0' && x[3]) memmove(x + 2, x + 3, strlen(x + 3) + 1);
    else break;
  }
  if (size) snprintf(buf, size, "%s", strlen(e) < strlen(g) ? e : g);
}

/* Reads fd to EOF into *buf (capacity *cap, grown by doubling), at most limit + 1 bytes
 * so an oversize stream is seen without reading it all; 0, or -1 with errno set. */
static int read_all(int fd, size_t limit, char **buf, size_t *cap, size_t *n) {
  size_t most = limit < SIZE_MAX - 1 ? limit + 1 : SIZE_MAX - 1; /* bytes worth reading */
  while (*n < most) {
    if (*n + 1 >= *cap) { /* room for one more byte and the NUL */
      size_t ncap = *cap < 32768 ? 65536 : *cap * 2;
      if (ncap <= *cap) { /* overflow */
        errno = ENOMEM;
        return -1;
      }
      if (ncap > most + 1) ncap = most + 1; /* > *cap, as *n < most */
      char *nb = realloc(*buf, ncap);
      if (!nb) {
        errno = ENOMEM;
        return -1;
      }
      *buf = nb;
      *cap = ncap;
    }
    size_t want = *cap - 1 - *n;
    if (want > most - *n) want = most - *n;
    ssize_t got = read(fd, *buf + *n, want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) return 0;
    *n += (size_t)got;
  }
  return 0;
}

/* "<path>: larger than 512 MiB" (a limit in whole MiB) or "... than 1000 bytes". */
static int too_large(const char *path, size_t limit, struct pg_error *err) {
  if (limit >= 1 << 20 && limit % (1 << 20) == 0)
    return pg_error_set(err, PG_ELIMIT, "%s: larger than %zu MiB", path, limit >> 20);
  return pg_error_set(err, PG_ELIMIT, "%s: larger than %zu bytes", path, limit);
}

int pg_read_file(const char *path, size_t limit, char **out, size_t *len, struct pg_error *err) {
  *out = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
  struct stat st;
  int bad = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (bad) {
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: cannot read: %s", path, strerror(bad));
  }
  /* a regular file's size says both the limit and the buffer (procfs says 0: read on) */
  int regular = S_ISREG(st.st_mode);
  uint64_t size = regular && st.st_size > 0 ? (uint64_t)st.st_size : 0;
  if (size > limit) {
    close(fd);
    *len = size > SIZE_MAX ? SIZE_MAX : (size_t)size;
    return too_large(path, limit, err);
  }
  size_t cap = size ? (size_t)size + 2 : 0, n = 0; /* +2: EOF is seen without a regrow */
  char *buf = cap ? malloc(cap) : NULL;
  int e = 0; /* errno of a failed allocation or read */
  if (cap && !buf) e = ENOMEM;
  else if (read_all(fd, limit, &buf, &cap, &n) != 0) e = errno;
  close(fd);
  if (e || n > limit || (regular && n < size)) {
    free(buf);
    if (e == ENOMEM)
      return pg_error_set(err, PG_ENOMEM, "%s: out of memory reading %zu bytes", path,
                          size ? (size_t)size : n + 1);
    if (e) return pg_error_set(err, PG_EIO, "%s: cannot read: %s", path, strerror(e));
    if (n > limit) {
      *len = n;
      return too_large(path, limit, err);
    }
    return pg_error_set(err, PG_EIO, "%s: short read: %zu of %llu bytes", path, n,
                        (unsigned long long)size);
  }
  if (!buf && !(buf = malloc(1))) /* an empty stream */
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return PG_OK;
}
