/* tests/harness/pg_npy_mini.c — the test drivers' own .npy reader and writer (see
 * pg_npy_mini.h for why it is not runner/tensors/npy.c). */
#include "pg_npy_mini.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  enum pg_dtype dtype;
  const char *descr;
} descrs[] = {
    {PG_DTYPE_F32, "<f4"}, {PG_DTYPE_F16, "<f2"}, {PG_DTYPE_BF16, "<u2"},
    {PG_DTYPE_F64, "<f8"}, {PG_DTYPE_I8, "|i1"},  {PG_DTYPE_U8, "|u1"},
    {PG_DTYPE_I32, "<i4"}, {PG_DTYPE_I64, "<i8"}, {PG_DTYPE_BOOL, "|b1"},
};

const char *pg_test_npy_descr(enum pg_dtype t) {
  for (size_t i = 0; i < sizeof descrs / sizeof *descrs; i++)
    if (descrs[i].dtype == t) return descrs[i].descr;
  return NULL;
}

static int fail(char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && size) vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return -1;
}

int pg_test_npy_read(const char *path, struct pg_tensor *t, char *why, size_t why_size) {
  pg_tensor_init(t);
  FILE *f = fopen(path, "rb");
  if (!f) return fail(why, why_size, "%s: %s", path, strerror(errno));
  unsigned char pre[12];
  char *h = NULL;
  int rc = -1;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 ||
      pre[6] > 3) {
    fail(why, why_size, "%s: not a .npy file", path);
    goto out;
  }
  size_t hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      fail(why, why_size, "%s: truncated header", path);
      goto out;
    }
    hlen |= ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
  }
  h = calloc(1, hlen + 1);
  if (!h || fread(h, 1, hlen, f) != hlen) {
    fail(why, why_size, "%s: truncated header", path);
    goto out;
  }
  const char *d = strstr(h, "'descr':"), *s = strstr(h, "'shape':");
  char descr[16] = "";
  if (!d || !s || !strstr(h, "'fortran_order': False") ||
      sscanf(d + 8, " '%15[^']'", descr) != 1) {
    fail(why, why_size, "%s: unsupported header (need descr, shape, C order)", path);
    goto out;
  }
  enum pg_dtype dt = PG_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof descrs / sizeof *descrs; i++)
    if (strcmp(descrs[i].descr, descr) == 0) dt = descrs[i].dtype;
  if (dt == PG_DTYPE_INVALID) {
    fail(why, why_size, "%s: unsupported dtype '%s'", path, descr);
    goto out;
  }
  int64_t shape[PG_MAX_NDIM];
  int nd = 0;
  const char *p = strchr(s, '(');
  for (p = p ? p + 1 : NULL; p && *p && *p != ')';) {
    if (!isdigit((unsigned char)*p)) {
      p++;
      continue;
    }
    if (nd == PG_MAX_NDIM) {
      fail(why, why_size, "%s: more than %d dimensions", path, PG_MAX_NDIM);
      goto out;
    }
    char *end;
    shape[nd++] = strtoll(p, &end, 10);
    p = end;
  }
  if (pg_tensor_alloc(t, dt, nd, shape, NULL) != PG_OK) {
    fail(why, why_size, "%s: cannot allocate the tensor", path);
    goto out;
  }
  if (fread(t->dl.data, 1, t->nbytes, f) != t->nbytes) {
    pg_tensor_reset(t);
    fail(why, why_size, "%s: short data", path);
    goto out;
  }
  rc = 0;
out:
  free(h);
  fclose(f);
  return rc;
}

int pg_test_npy_write(const char *path, const struct pg_tensor *t) {
  const char *descr = pg_test_npy_descr(t->dtype);
  if (!descr) return -1;
  char shape[256] = "";
  size_t u = 0;
  for (int i = 0; i < t->dl.ndim && u < sizeof shape; i++)
    u += (size_t)snprintf(shape + u, sizeof shape - u, "%lld,%s", (long long)t->shape[i],
                          i + 1 < t->dl.ndim ? " " : "");
  char hdr[512];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   descr, shape);
  if (n < 0 || (size_t)n >= sizeof hdr) return -1;
  size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64, hl = (size_t)n + pad + 1;
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  pre[8] = (unsigned char)(hl & 0xff);
  pre[9] = (unsigned char)(hl >> 8);
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF && fwrite(t->dl.data, 1, t->nbytes, f) == t->nbytes;
  return fclose(f) == 0 && ok ? 0 : -1;
}
