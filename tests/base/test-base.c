/* phasegate tests — runner/base: pg_read_file, the runner's one whole-file read (its
 * limit, its errors, regular files, empty files, procfs files and pipes). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "pg_test.h"

static char *write_file(const char *name, const char *text, size_t len) {
  char *path = pg_path_fmt("%s/%s", pg_test_tmpdir(), name);
  FILE *f = fopen(path, "wb");
  PG_CHECK(f != NULL);
  if (f) {
    PG_CHECK(fwrite(text, 1, len, f) == len);
    fclose(f);
  }
  return path;
}

PG_TEST(read_regular_and_empty) {
  char *p = write_file("a.txt", "hello\0world", 11), *text = NULL;
  size_t len = 0;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_OK(pg_read_file(p, 1000, &text, &len, &err));
  PG_CHECK_EQ_INT(11, (int)len);
  PG_CHECK(text && memcmp(text, "hello\0world", 12) == 0); /* NUL-terminated, NULs kept */
  free(text);
  PG_CHECK_OK(pg_read_file(p, 11, &text, &len, &err)); /* exactly the limit */
  free(text);
  free(p);
  p = write_file("empty.txt", "", 0);
  PG_CHECK_OK(pg_read_file(p, 0, &text, &len, &err));
  PG_CHECK(text && len == 0 && text[0] == '\0');
  free(text);
  free(p);
}

PG_TEST(read_limit) {
  char *p = write_file("big.txt", "0123456789", 10), *text = (char *)1;
  size_t len = 0;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_read_file(p, 9, &text, &len, &err));
  PG_CHECK(text == NULL);
  PG_CHECK_EQ_INT(10, (int)len); /* the size, for the caller's message */
  char want[600];
  snprintf(want, sizeof want, "%s: larger than 9 bytes", p);
  PG_CHECK_EQ_STR(want, err.message);
  free(p);
  /* a limit in whole MiB reads as such */
  char *big = calloc(1, (1 << 20) + 1);
  PG_CHECK(big != NULL);
  p = write_file("mib.txt", big, (1 << 20) + 1);
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_read_file(p, 1 << 20, &text, &len, &err));
  snprintf(want, sizeof want, "%s: larger than 1 MiB", p);
  PG_CHECK_EQ_STR(want, err.message);
  PG_CHECK_OK(pg_read_file(p, SIZE_MAX, &text, &len, &err));
  PG_CHECK_EQ_INT((1 << 20) + 1, (int)len);
  free(text);
  free(big);
  free(p);
}

PG_TEST(read_errors) {
  char *text;
  size_t len;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_EQ_INT(PG_ENOENT, pg_read_file("/nonexistent/x.json", 100, &text, &len, &err));
  PG_CHECK_EQ_STR("/nonexistent/x.json: cannot open: No such file or directory", err.message);
  PG_CHECK_EQ_INT(PG_EIO, pg_read_file(pg_test_tmpdir(), 100, &text, &len, &err));
  PG_CHECK(strstr(err.message, ": cannot read: Is a directory") != NULL);
  /* procfs says size 0: read to the end all the same */
  PG_CHECK_OK(pg_read_file("/proc/self/status", SIZE_MAX, &text, &len, &err));
  PG_CHECK(len > 0 && strstr(text, "Pid:") != NULL);
  free(text);
}

/* A pipe has no size: read up to one byte past the limit, then refused with that count. */
static void pipe_read(size_t bytes, size_t limit, int want_rc) {
  char *fifo = pg_path_fmt("%s/fifo%zu", pg_test_tmpdir(), bytes);
  unlink(fifo);
  PG_CHECK(mkfifo(fifo, 0600) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = fopen(fifo, "wb");
    for (size_t i = 0; f && i < bytes; i++) fputc('x', f);
    if (f) fclose(f);
    free(fifo);
    _exit(0); /* a short-read pipe just gets SIGPIPE */
  }
  char *text = NULL;
  size_t len = 0;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_EQ_INT(want_rc, pg_read_file(fifo, limit, &text, &len, &err));
  PG_CHECK_EQ_INT((int)(want_rc == PG_OK ? bytes : limit + 1), (int)len);
  free(text);
  waitpid(pid, NULL, 0);
  unlink(fifo);
  free(fifo);
}

PG_TEST(read_pipe) {
  pipe_read(200000, 300000, PG_OK);
  pipe_read(200000, 100000, PG_ELIMIT);
  pipe_read(10, 10, PG_OK);
}

