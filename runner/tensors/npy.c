/* phasegate runner — .npy files (NEP 1 format 1.0 / 2.0 / 3.0): a strict reader
 * (from a path, mmap()ed when large, or from a buffer) and an atomic writer, which
 * safetensors.c writes through too.
 *
 * The reader refuses anything it cannot represent exactly (Fortran order, object and
 * structured dtypes, shapes that disagree with the file size) with "path: what"; it
 * never reads outside the buffer. bfloat16 travels as '<u2' (numpy rejects extra
 * header keys, so there is nowhere to say "bfloat16"): see docs/tensors.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensors/tensors.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER ((size_t)1 << 20)
#define NPY_MMAP_MIN ((size_t)1 << 20)

struct npy_header {
  int major;
  size_t data_offset;
  enum pg_dtype dtype;
  int swap;
  int ndim;
  int64_t shape[PG_MAX_NDIM];
  int fortran;
  size_t nbytes;
};

/* ------------------------------------------------------------------ header dict */

struct hparse {
  const char *src; /* path for messages */
  const char *s;
  size_t n, p;
  size_t base; /* file offset of s[0], for messages */
  struct pg_error *err;
};

static int herr(struct hparse *h, const char *what) {
  return pg_error_set(h->err, PG_EPARSE, "%s: bad .npy header at byte %zu: %s", h->src,
                      h->base + h->p, what);
}

static void hws(struct hparse *h) {
  while (h->p < h->n && (h->s[h->p] == ' ' || h->s[h->p] == '\t' || h->s[h->p] == '\n' ||
                         h->s[h->p] == '\r'))
    h->p++;
}

static int hpeek(struct hparse *h) { return h->p < h->n ? (unsigned char)h->s[h->p] : -1; }

/* A Python string literal without escapes; returns a pointer into the header. */
static int hstring(struct hparse *h, const char **str, size_t *len) {
  hws(h);
  int q = hpeek(h);
  if (q != '\'' && q != '"') return herr(h, "expected a quoted string");
  size_t start = ++h->p;
  while (h->p < h->n && h->s[h->p] != q) {
    if (h->s[h->p] == '\\') return herr(h, "escape sequences are not supported in keys/values");
    h->p++;
  }
  if (h->p >= h->n) return herr(h, "unterminated string");
  *str = h->s + start;
  *len = h->p - start;
  h->p++;
  return PG_OK;
}

static int hexpect(struct hparse *h, char ch, const char *what) {
  hws(h);
  if (hpeek(h) != ch) return herr(h, what);
  h->p++;
  return PG_OK;
}

static int descr_dtype(struct hparse *h, const char *d, size_t len, unsigned flags,
                       struct npy_header *out) {
  char buf[32];
  if (len >= sizeof buf) return herr(h, "unsupported dtype descr");
  memcpy(buf, d, len);
  buf[len] = '\0';
  char order = '=';
  const char *k = buf;
  if (*k == '<' || *k == '>' || *k == '|' || *k == '=') order = *k++;
  struct { const char *code; enum pg_dtype t; } table[] = {
      {"f2", PG_DTYPE_F16}, {"f4", PG_DTYPE_F32},  {"f8", PG_DTYPE_F64},
      {"b1", PG_DTYPE_BOOL}, {"i1", PG_DTYPE_I8},  {"u1", PG_DTYPE_U8},
      {"i4", PG_DTYPE_I32}, {"i8", PG_DTYPE_I64},  {"u2", PG_DTYPE_BF16}, /* our bf16 */
  };
  out->dtype = PG_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (strcmp(k, table[i].code) == 0) out->dtype = table[i].t;
  if (out->dtype == PG_DTYPE_INVALID && strcmp(k, "V2") == 0 && (flags & PG_NPY_ACCEPT_V2_AS_BF16))
    out->dtype = PG_DTYPE_BF16;
  if (out->dtype == PG_DTYPE_INVALID) {
    char msg[160];
    if (k[0] == 'O')
      snprintf(msg, sizeof msg, "object arrays ('%s') are not supported", buf);
    else if (strcmp(k, "V2") == 0)
      snprintf(msg, sizeof msg, "dtype '%s' (ml_dtypes bfloat16?) is accepted only with the "
               "V2-as-bfloat16 option", buf);
    else
      snprintf(msg, sizeof msg, "unsupported dtype '%s' (supported: f2 f4 f8 b1 i1 u1 i4 i8, u2 "
               "as bfloat16)", buf);
    h->p -= len + 1;
    return pg_error_set(h->err, PG_EDTYPE, "%s: %s", h->src, msg);
  }
  out->swap = order == '>' && pg_dtype_size(out->dtype) > 1;
  return PG_OK;
}

static int hshape(struct hparse *h, struct npy_header *out) {
  PG_RETURN_IF_ERROR(hexpect(h, '(', "expected '(' starting the shape tuple"));
  int n = 0, commas = 0;
  for (;;) {
    hws(h);
    if (hpeek(h) == ')') {
      h->p++;
      break;
    }
    if (!(hpeek(h) >= '0' && hpeek(h) <= '9')) return herr(h, "expected a non-negative integer dimension");
    int64_t v = 0;
    while (hpeek(h) >= '0' && hpeek(h) <= '9') {
      int dgt = hpeek(h) - '0';
      if (v > (INT64_MAX - dgt) / 10) return herr(h, "dimension too large");
      v = v * 10 + dgt;
      h->p++;
    }
    if (hpeek(h) == 'L') h->p++; /* Python 2 long suffix */
    if (n == PG_MAX_NDIM)
      return pg_error_set(h->err, PG_ELIMIT, "%s: array has more than %d dimensions", h->src,
                          PG_MAX_NDIM);
    out->shape[n++] = v;
    hws(h);
    if (hpeek(h) == ',') {
      h->p++;
      commas++;
      continue;
    }
    if (hpeek(h) == ')') {
      h->p++;
      break;
    }
    return herr(h, "expected ',' or ')' in the shape tuple");
  }
  if (n == 1 && commas == 0) return herr(h, "a 1-d shape needs a trailing comma, as in (3,)");
  out->ndim = n;
  return PG_OK;
}

static int parse_dict(struct hparse *h, unsigned flags, struct npy_header *out) {
  int have_descr = 0, have_fortran = 0, have_shape = 0;
  PG_RETURN_IF_ERROR(hexpect(h, '{', "expected '{' starting the header dict"));
  for (;;) {
    hws(h);
    if (hpeek(h) == '}') {
      h->p++;
      break;
    }
    const char *key;
    size_t klen;
    size_t key_at = h->p;
    PG_RETURN_IF_ERROR(hstring(h, &key, &klen));
    PG_RETURN_IF_ERROR(hexpect(h, ':', "expected ':' after a key"));
    hws(h);
    if (klen == 5 && memcmp(key, "descr", 5) == 0) {
      if (have_descr++) return h->p = key_at, herr(h, "duplicate key 'descr'");
      if (hpeek(h) == '[')
        return pg_error_set(h->err, PG_EDTYPE, "%s: structured dtypes are not supported", h->src);
      const char *d;
      size_t dlen;
      PG_RETURN_IF_ERROR(hstring(h, &d, &dlen));
      PG_RETURN_IF_ERROR(descr_dtype(h, d, dlen, flags, out));
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
      if (have_fortran++) return h->p = key_at, herr(h, "duplicate key 'fortran_order'");
      if (h->n - h->p >= 4 && memcmp(h->s + h->p, "True", 4) == 0) out->fortran = 1, h->p += 4;
      else if (h->n - h->p >= 5 && memcmp(h->s + h->p, "False", 5) == 0) out->fortran = 0, h->p += 5;
      else return herr(h, "fortran_order must be True or False");
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
      if (have_shape++) return h->p = key_at, herr(h, "duplicate key 'shape'");
      PG_RETURN_IF_ERROR(hshape(h, out));
    } else {
      h->p = key_at;
      return herr(h, "unknown key (numpy allows only 'descr', 'fortran_order', 'shape')");
    }
    hws(h);
    if (hpeek(h) == ',') {
      h->p++;
      continue;
    }
    if (hpeek(h) == '}') {
      h->p++;
      break;
    }
    return herr(h, "expected ',' or '}' in the header dict");
  }
  hws(h);
  if (h->p != h->n) return herr(h, "unexpected text after the header dict");
  if (!have_descr) return herr(h, "missing key 'descr'");
  if (!have_fortran) return herr(h, "missing key 'fortran_order'");
  if (!have_shape) return herr(h, "missing key 'shape'");
  return PG_OK;
}

/* Parses the preamble and header in buf[0..size). `size` may be the whole file or just
 * its start; `file_size` is the whole length. */
static int parse_header(const char *src, const unsigned char *buf, size_t size,
                        uint64_t file_size, unsigned flags, struct npy_header *h,
                        struct pg_error *err) {
  memset(h, 0, sizeof *h);
  if (size < 10 || memcmp(buf, NPY_MAGIC, 6) != 0)
    return pg_error_set(err, PG_EPARSE, "%s: not a .npy file (bad magic)", src);
  h->major = buf[6];
  if (h->major < 1 || h->major > 3 || buf[7] != 0)
    return pg_error_set(err, PG_ENOTSUP, "%s: unsupported .npy format version %d.%d", src,
                        buf[6], buf[7]);
  size_t pre = h->major == 1 ? 10 : 12, hlen;
  if (size < pre) return pg_error_set(err, PG_EPARSE, "%s: truncated .npy preamble", src);
  if (h->major == 1) hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
  else hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
  if (hlen > NPY_MAX_HEADER)
    return pg_error_set(err, PG_ELIMIT, "%s: .npy header of %zu bytes is too large", src, hlen);
  if (pre + hlen > file_size)
    return pg_error_set(err, PG_EPARSE, "%s: truncated .npy header (%zu bytes announced, file has "
                        "%llu)", src, hlen, (unsigned long long)file_size);
  if (pre + hlen > size) return PG_EINTERNAL; /* caller did not pass enough */
  for (size_t i = 0; i < hlen; i++)
    if (buf[pre + i] == 0 || (h->major < 3 && buf[pre + i] >= 0x80))
      return pg_error_set(err, PG_EPARSE, "%s: bad .npy header at byte %zu: %s", src, pre + i,
                          buf[pre + i] ? "non-ASCII byte in a version 1/2 header" : "NUL byte");
  struct hparse hp = {src, (const char *)buf + pre, hlen, 0, pre, err};
  PG_RETURN_IF_ERROR(parse_dict(&hp, flags, h));
  if (h->fortran) {
    int big = 0;
    for (int i = 0; i < h->ndim; i++) big += h->shape[i] > 1;
    if (big > 1)
      return pg_error_set(err, PG_ENOTSUP, "%s: Fortran-order arrays are not supported (save "
                          "with np.ascontiguousarray)", src);
  }
  int64_t numel = 0;
  struct pg_error tmp;
  if (pg_shape_numel(h->ndim, h->shape, &numel, &tmp) != PG_OK ||
      (uint64_t)numel > (uint64_t)(SIZE_MAX / 2) / pg_dtype_size(h->dtype))
    return pg_error_set(err, PG_ELIMIT, "%s: absurd shape (element count overflows)", src);
  h->nbytes = (size_t)numel * pg_dtype_size(h->dtype);
  h->data_offset = pre + hlen;
  uint64_t have = file_size - h->data_offset;
  if (have < h->nbytes)
    return pg_error_set(err, PG_EPARSE, "%s: truncated data: the header's shape and dtype need "
                        "%zu bytes, the file has %llu", src, h->nbytes, (unsigned long long)have);
  if (have > h->nbytes)
    return pg_error_set(err, PG_EPARSE, "%s: %llu bytes after the data: the header's shape and "
                        "dtype (%zu bytes) do not match the file size", src,
                        (unsigned long long)(have - h->nbytes), h->nbytes);
  return PG_OK;
}

static void swap_bytes(void *data, size_t n, size_t size) {
  unsigned char *p = data;
  for (size_t i = 0; i < n; i++, p += size)
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static void fix_up(struct pg_tensor *t, const struct npy_header *h) {
  if (h->swap) swap_bytes(t->dl.data, (size_t)t->numel, pg_dtype_size(t->dtype));
  if (t->dtype == PG_DTYPE_BOOL) { /* any non-zero byte is true; keep 0/1 downstream */
    uint8_t *b = t->dl.data;
    for (int64_t i = 0; i < t->numel; i++) b[i] = b[i] != 0;
  }
}

/* ------------------------------------------------------------------ readers */

int pg_npy_read_buffer_ex(const void *data, size_t size, unsigned flags, struct pg_tensor *out,
                          struct pg_error *err) {
  struct npy_header h;
  if (!data && size) return pg_error_set(err, PG_EINVAL, "<buffer>: NULL data");
  PG_RETURN_IF_ERROR(parse_header("<buffer>", data, size, size, flags, &h, err));
  struct pg_tensor t;
  pg_tensor_init(&t);
  pg_tensor_set_name(&t, out->name);
  PG_RETURN_IF_ERROR(pg_tensor_alloc(&t, h.dtype, h.ndim, h.shape, err));
  if (h.nbytes) memcpy(t.dl.data, (const unsigned char *)data + h.data_offset, h.nbytes);
  fix_up(&t, &h);
  pg_tensor_move(out, &t);
  return PG_OK;
}

int pg_npy_read_buffer(const void *data, size_t size, struct pg_tensor *out,
                       struct pg_error *err) {
  return pg_npy_read_buffer_ex(data, size, 0, out, err);
}

static int read_full(int fd, void *buf, size_t n, uint64_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? -2 : -1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* Like pg_tensor_alloc, but large buffers are 2 MiB aligned and advised to use
 * transparent huge pages (as numpy does): reading into fresh memory is bound by page
 * faults, and huge pages cut them 512-fold. free() still releases it. */
static int alloc_big(struct pg_tensor *t, const struct npy_header *h, struct pg_error *err) {
  const size_t huge = (size_t)2 << 20;
  if (h->nbytes < 2 * huge) return pg_tensor_alloc(t, h->dtype, h->ndim, h->shape, err);
  PG_RETURN_IF_ERROR(pg_tensor_describe(t, h->dtype, h->ndim, h->shape, err));
  size_t bytes = (t->nbytes + huge - 1) / huge * huge;
  void *p = aligned_alloc(huge, bytes);
  if (!p) return pg_error_set(err, PG_ENOMEM, "cannot allocate %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
  t->owned = p;
  t->release = NULL;
  t->dl.data = p;
  return PG_OK;
}

static void release_mmap(struct pg_tensor *t) {
  if (t->owned) munmap(t->owned, (size_t)(uintptr_t)t->release_ctx);
}

/* The reader proper: reads the open file fd (closed here), `path` names it in messages. */
static int read_open_fd(int fd, const char *path, unsigned flags, struct pg_tensor *out,
                        struct pg_error *err);

int pg_npy_read_ex(const char *path, unsigned flags, struct pg_tensor *out, struct pg_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
  return read_open_fd(fd, path, flags, out, err);
}

int pg_npy_read_fd(int fd, const char *what, unsigned flags, struct pg_tensor *out,
                   struct pg_error *err) {
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return pg_error_set(err, PG_EIO, "%s: %s", what, strerror(errno));
  return read_open_fd(own, what, flags, out, err);
}

static int read_open_fd(int fd, const char *path, unsigned flags, struct pg_tensor *out,
                        struct pg_error *err) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: not a regular file", path);
  }
  uint64_t fsize = (uint64_t)st.st_size;
  unsigned char pre[12];
  size_t npre = fsize < sizeof pre ? (size_t)fsize : sizeof pre;
  int rc;
  if (read_full(fd, pre, npre, 0) != 0) {
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: read error", path);
  }
  struct npy_header h;
  rc = parse_header(path, pre, npre, fsize, flags, &h, err);
  if (rc == PG_EINTERNAL) { /* preamble fine: fetch the whole header and parse again */
    size_t hl = pre[6] == 1 ? 10 + ((size_t)pre[8] | (size_t)pre[9] << 8)
                            : 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 |
                                    (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
    unsigned char *hb = malloc(hl);
    if (!hb) {
      close(fd);
      return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
    }
    if (read_full(fd, hb, hl, 0) != 0) rc = pg_error_set(err, PG_EIO, "%s: read error", path);
    else rc = parse_header(path, hb, hl, fsize, flags, &h, err);
    free(hb);
  }
  if (rc != PG_OK) {
    close(fd);
    return rc;
  }
  struct pg_tensor t;
  pg_tensor_init(&t);
  pg_tensor_set_name(&t, out->name);
  if (!(flags & PG_NPY_NO_MMAP) && h.nbytes >= NPY_MMAP_MIN && h.data_offset % 64 == 0 &&
      !h.swap && h.dtype != PG_DTYPE_BOOL) {
    /* Private writable mapping: callers may scribble on it without touching the file. */
    void *m = mmap(NULL, (size_t)fsize, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      close(fd);
      rc = pg_tensor_describe(&t, h.dtype, h.ndim, h.shape, err);
      if (rc != PG_OK) {
        munmap(m, (size_t)fsize);
        return rc;
      }
      t.owned = m;
      t.release = release_mmap;
      t.release_ctx = (void *)(uintptr_t)fsize;
      t.dl.data = (unsigned char *)m + h.data_offset;
      pg_tensor_move(out, &t);
      return PG_OK;
    }
  }
  rc = alloc_big(&t, &h, err);
  if (rc != PG_OK) {
    close(fd);
    pg_error_prefix(err, "%s: ", path);
    return rc;
  }
  if (h.nbytes && read_full(fd, t.dl.data, h.nbytes, h.data_offset) != 0) {
    close(fd);
    pg_tensor_reset(&t);
    return pg_error_set(err, PG_EIO, "%s: read error (file changed while reading?)", path);
  }
  close(fd);
  fix_up(&t, &h);
  pg_tensor_move(out, &t);
  return PG_OK;
}

int pg_npy_read(const char *path, struct pg_tensor *out, struct pg_error *err) {
  return pg_npy_read_ex(path, 0, out, err);
}

/* ------------------------------------------------------------------ writer */

static const char *npy_descr(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F32: return "<f4";
    case PG_DTYPE_F16: return "<f2";
    case PG_DTYPE_BF16: return "<u2";
    case PG_DTYPE_F64: return "<f8";
    case PG_DTYPE_I8: return "|i1";
    case PG_DTYPE_U8: return "|u1";
    case PG_DTYPE_I32: return "<i4";
    case PG_DTYPE_I64: return "<i8";
    case PG_DTYPE_BOOL: return "|b1";
    default: return NULL;
  }
}

/* Writes all of buf; -1 on error (errno set). */
static int write_full(int fd, const void *buf, size_t n) {
  const unsigned char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int pg__atomic_write(const char *path, const void *head, size_t head_len,
                     const void *const *parts, const size_t *lens, int n_parts,
                     struct pg_error *err) {
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 16);
  if (!tmp) return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return pg_error_set(err, PG_EIO, "%s: cannot create a temporary file next to it: %s", path,
                        strerror(e));
  }
  int bad = write_full(fd, head, head_len) != 0;
  for (int i = 0; !bad && i < n_parts; i++)
    if (lens[i]) bad = write_full(fd, parts[i], lens[i]) != 0;
  int e = errno;
  if (!bad && fchmod(fd, 0644) != 0) { /* mkstemp makes 0600; data files are for sharing */
    bad = 1;
    e = errno;
  }
  if (close(fd) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  if (!bad && rename(tmp, path) != 0) {
    bad = 1;
    e = errno;
  }
  if (bad) {
    unlink(tmp);
    free(tmp);
    return pg_error_set(err, PG_EIO, "%s: write failed: %s", path, strerror(e));
  }
  free(tmp);
  return PG_OK;
}

int pg_npy_write(const char *path, const struct pg_tensor *t, struct pg_error *err) {
  const char *descr = npy_descr(t->dtype);
  if (!descr) return pg_error_set(err, PG_EDTYPE, "%s: cannot write dtype %d", path, (int)t->dtype);
  int ndim = t->dl.ndim;
  int64_t numel = 0;
  PG_RETURN_IF_ERROR(pg_shape_numel(ndim, t->shape, &numel, err));
  size_t nbytes = (size_t)numel * pg_dtype_size(t->dtype);
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < ndim; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", ndim == 1 ? "," : "");
  /* pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n' */
  size_t total = 10 + (size_t)n + 1;
  total = (total + 63) / 64 * 64;
  unsigned char head[640];
  size_t hlen = total - 10;
  memcpy(head, NPY_MAGIC, 6);
  head[6] = 1;
  head[7] = 0;
  head[8] = (unsigned char)(hlen & 0xff);
  head[9] = (unsigned char)(hlen >> 8);
  memcpy(head + 10, dict, (size_t)n);
  memset(head + 10 + n, ' ', hlen - (size_t)n - 1);
  head[total - 1] = '\n';
  const void *data = (const unsigned char *)t->dl.data + t->dl.byte_offset;
  if (nbytes && !t->dl.data) return pg_error_set(err, PG_EINVAL, "%s: tensor has no data", path);
  return pg__atomic_write(path, head, total, &data, &nbytes, 1, err);
}
