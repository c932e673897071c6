/* phasegate runner — safetensors files (huggingface/safetensors format): an 8-byte
 * little-endian header length, a JSON header {name: {dtype, shape, data_offsets},
 * "__metadata__": {str: str}}, then the tensor bytes. The reader checks what the
 * reference implementation checks (header size, JSON syntax, dtype names, byte counts,
 * offsets inside the buffer, no overlaps or holes) and names the file and tensor in
 * every refusal; the writer is atomic. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensors/tensors.h"

#define ST_MAX_HEADER 100000000ull /* the reference implementation's limit */

static const struct {
  const char *code;
  enum pg_dtype t;
} st_dtypes[] = {{"F16", PG_DTYPE_F16}, {"BF16", PG_DTYPE_BF16}, {"F32", PG_DTYPE_F32},
                 {"F64", PG_DTYPE_F64}, {"I8", PG_DTYPE_I8},     {"U8", PG_DTYPE_U8},
                 {"I32", PG_DTYPE_I32}, {"I64", PG_DTYPE_I64},   {"BOOL", PG_DTYPE_BOOL}};

static const char *st_code(enum pg_dtype t) {
  for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
    if (st_dtypes[i].t == t) return st_dtypes[i].code;
  return NULL;
}

struct st_entry {
  uint64_t begin, end;
  int index; /* header order */
};

void pg_tensor_list_free(struct pg_tensor *tensors, int count) {
  if (!tensors) return;
  for (int i = 0; i < count; i++) pg_tensor_reset(&tensors[i]);
  free(tensors);
}

static int get_u64(const cJSON *n, uint64_t *out) {
  if (!cJSON_IsNumber(n)) return 0;
  double d = n->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return 0;
  *out = (uint64_t)d;
  return 1;
}

static int cmp_entry(const void *a, const void *b) {
  const struct st_entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->index - y->index;
}

/* JSON forbids raw control bytes in strings, and cJSON would cut names at a NUL. */
static int check_header_bytes(const char *src, const char *json, size_t len,
                              struct pg_error *err) {
  if (len == 0 || json[0] != '{')
    return pg_error_set(err, PG_EPARSE, "%s: safetensors header must be a JSON object", src);
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)json[i];
    if (ch < 0x20 && ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
      return pg_error_set(err, PG_EPARSE, "%s: safetensors header: control byte 0x%02x at byte %zu",
                          src, ch, 8 + i);
    if (ch == '\\' && i + 5 < len && json[i + 1] == 'u' && memcmp(json + i + 2, "0000", 4) == 0)
      return pg_error_set(err, PG_EPARSE, "%s: safetensors header: \\u0000 in a string at byte %zu",
                          src, 8 + i);
  }
  return PG_OK;
}

/* The header text as one JSON object with nothing after it: PG_OK with *root owned. */
static int parse_header_json(const char *src, const char *json, size_t len, cJSON **root,
                             struct pg_error *err) {
  const char *end = NULL;
  *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!*root) {
    const char *at = end; /* cJSON sets it to the error position; its global error
                             pointer (cJSON_GetErrorPtr) is not thread-safe */
    size_t off = at && at >= json && at <= json + len ? (size_t)(at - json) : 0;
    return pg_error_set(err, PG_EPARSE, "%s: safetensors header: JSON syntax error at byte %zu",
                        src, 8 + off);
  }
  for (const char *p = end; p && p < json + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
      return pg_error_set(err, PG_EPARSE, "%s: safetensors header: text after the JSON object",
                          src);
  if (!cJSON_IsObject(*root))
    return pg_error_set(err, PG_EPARSE, "%s: safetensors header must be a JSON object", src);
  return PG_OK;
}

/* __metadata__: an object of strings. */
static int check_metadata(const char *src, const cJSON *c, struct pg_error *err) {
  if (!cJSON_IsObject(c))
    return pg_error_set(err, PG_EPARSE, "%s: __metadata__ must be an object of strings", src);
  for (const cJSON *m = c->child; m; m = m->next)
    if (!cJSON_IsString(m))
      return pg_error_set(err, PG_EPARSE, "%s: __metadata__ value '%s' is not a string", src,
                          m->string ? m->string : "");
  return PG_OK;
}

/* The dtype and shape of tensor entry c. */
static int entry_type(const char *src, const char *name, const cJSON *dt, const cJSON *sh,
                      enum pg_dtype *t, int *ndim, int64_t *shape, struct pg_error *err) {
  *t = PG_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
    if (strcmp(dt->valuestring, st_dtypes[i].code) == 0) *t = st_dtypes[i].t;
  if (*t == PG_DTYPE_INVALID)
    return pg_error_set(err, PG_EDTYPE, "%s: tensor '%s': unsupported dtype '%.32s' (supported: "
                        "F16 BF16 F32 F64 I8 U8 I32 I64 BOOL)", src, name, dt->valuestring);
  *ndim = cJSON_GetArraySize(sh);
  if (*ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_ELIMIT, "%s: tensor '%s': %d dimensions, at most %d supported",
                        src, name, *ndim, PG_MAX_NDIM);
  int i = 0;
  for (const cJSON *d = sh->child; d; d = d->next, i++) {
    uint64_t v;
    if (!get_u64(d, &v))
      return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': shape[%d] is not a non-negative "
                          "integer", src, name, i);
    shape[i] = (int64_t)v;
  }
  return PG_OK;
}

/* Tensor entry c (not __metadata__) into *t (described) and *e (its byte range). */
static int parse_entry(const char *src, const cJSON *c, uint64_t data_len, struct pg_tensor *t,
                       struct st_entry *e, int index, struct pg_error *err) {
  const char *name = c->string ? c->string : "";
  if (!name[0]) return pg_error_set(err, PG_EPARSE, "%s: a tensor has an empty name", src);
  if (strlen(name) >= PG_NAME_MAX)
    return pg_error_set(err, PG_ELIMIT, "%s: tensor name longer than %d bytes", src,
                        PG_NAME_MAX - 1);
  if (!cJSON_IsObject(c))
    return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': entry must be an object", src, name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(c, "shape");
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(c, "data_offsets");
  if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
    return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': needs \"dtype\" (string), \"shape\" "
                        "and \"data_offsets\" (arrays)", src, name);
  enum pg_dtype dtype = PG_DTYPE_INVALID;
  int ndim = 0;
  int64_t shape[PG_MAX_NDIM] = {0};
  PG_RETURN_IF_ERROR(entry_type(src, name, dt, sh, &dtype, &ndim, shape, err));
  uint64_t b, end;
  if (cJSON_GetArraySize(of) != 2 || !get_u64(of->child, &b) || !get_u64(of->child->next, &end))
    return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': data_offsets must be two non-negative "
                        "integers", src, name);
  pg_tensor_init(t);
  pg_tensor_set_name(t, name);
  struct pg_error sub;
  if (pg_tensor_describe(t, dtype, ndim, shape, &sub) != PG_OK)
    return pg_error_set(err, PG_ELIMIT, "%s: tensor '%s': absurd shape (%s)", src, name,
                        sub.message);
  if (b > end || end > data_len)
    return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': data_offsets [%llu, %llu] outside the "
                        "%llu-byte data section", src, name, (unsigned long long)b,
                        (unsigned long long)end, (unsigned long long)data_len);
  if (end - b != t->nbytes)
    return pg_error_set(err, PG_EPARSE, "%s: tensor '%s': data_offsets span %llu bytes, shape and "
                        "dtype need %zu", src, name, (unsigned long long)(end - b), t->nbytes);
  *e = (struct st_entry){b, end, index};
  return PG_OK;
}

/* No overlaps, no holes: sorted by offset the tensors tile the data section. */
static int check_tiling(const char *src, const struct pg_tensor *ts, const struct st_entry *es,
                        int k, uint64_t data_len, struct pg_error *err) {
  struct st_entry *sorted = malloc((size_t)(k ? k : 1) * sizeof *sorted);
  if (!sorted) return pg_error_set(err, PG_ENOMEM, "%s: out of memory", src);
  memcpy(sorted, es, (size_t)k * sizeof *sorted);
  qsort(sorted, (size_t)k, sizeof *sorted, cmp_entry);
  uint64_t pos = 0;
  int rc = PG_OK;
  for (int i = 0; i < k; i++) {
    if (sorted[i].begin < pos) {
      rc = pg_error_set(err, PG_EPARSE, "%s: tensors '%s' and '%s' overlap", src,
                        ts[sorted[i - 1].index].name, ts[sorted[i].index].name);
      break;
    }
    if (sorted[i].begin > pos) {
      rc = pg_error_set(err, PG_EPARSE, "%s: %llu unaccounted bytes before tensor '%s'", src,
                        (unsigned long long)(sorted[i].begin - pos), ts[sorted[i].index].name);
      break;
    }
    pos = sorted[i].end;
  }
  if (rc == PG_OK && pos != data_len)
    rc = pg_error_set(err, PG_EPARSE, "%s: %llu bytes after the last tensor", src,
                      (unsigned long long)(data_len - pos));
  free(sorted);
  return rc;
}

/* Parses and validates the header; on PG_OK *tensors holds described (unallocated)
 * tensors and entries their byte ranges relative to the data section. */
static int parse_header(const char *src, const char *json, size_t len, uint64_t data_len,
                        struct pg_tensor **tensors, struct st_entry **entries, int *count,
                        struct pg_error *err) {
  *tensors = NULL;
  *entries = NULL;
  *count = 0;
  PG_RETURN_IF_ERROR(check_header_bytes(src, json, len, err));
  cJSON *root = NULL;
  int rc = parse_header_json(src, json, len, &root, err);
  if (rc != PG_OK) {
    cJSON_Delete(root);
    return rc;
  }
  int n = 0;
  for (cJSON *c = root->child; c; c = c->next) n++;
  struct pg_tensor *ts = calloc((size_t)(n ? n : 1), sizeof *ts);
  struct st_entry *es = calloc((size_t)(n ? n : 1), sizeof *es);
  if (!ts || !es) rc = pg_error_set(err, PG_ENOMEM, "%s: out of memory", src);
  int k = 0;
  for (cJSON *c = root->child; rc == PG_OK && c; c = c->next) {
    const char *name = c->string ? c->string : "";
    for (cJSON *d = root->child; rc == PG_OK && d != c; d = d->next)
      if (d->string && strcmp(d->string, name) == 0)
        rc = pg_error_set(err, PG_EPARSE, "%s: duplicate tensor name '%s'", src, name);
    if (rc != PG_OK) break;
    if (strcmp(name, "__metadata__") == 0) rc = check_metadata(src, c, err);
    else if ((rc = parse_entry(src, c, data_len, &ts[k], &es[k], k, err)) == PG_OK) k++;
  }
  if (rc == PG_OK) rc = check_tiling(src, ts, es, k, data_len, err);
  cJSON_Delete(root);
  if (rc != PG_OK) {
    free(ts);
    free(es);
    return rc;
  }
  *tensors = ts;
  *entries = es;
  *count = k;
  return PG_OK;
}

static void normalise_bool(struct pg_tensor *t) {
  if (t->dtype != PG_DTYPE_BOOL) return;
  uint8_t *b = t->dl.data;
  for (int64_t i = 0; i < t->numel; i++) b[i] = b[i] != 0;
}

static int read_preamble(const char *src, const unsigned char *p, uint64_t size, uint64_t *hlen,
                         struct pg_error *err) {
  if (size < 8)
    return pg_error_set(err, PG_EPARSE, "%s: not a safetensors file (shorter than 8 bytes)", src);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | p[i];
  if (n > ST_MAX_HEADER)
    return pg_error_set(err, PG_ELIMIT, "%s: safetensors header of %llu bytes is too big (limit "
                        "%llu)", src, (unsigned long long)n, ST_MAX_HEADER);
  if (n > size - 8)
    return pg_error_set(err, PG_EPARSE, "%s: safetensors header length %llu runs past the end of "
                        "the file (%llu bytes)", src, (unsigned long long)n, (unsigned long long)size);
  *hlen = n;
  return PG_OK;
}

int pg_safetensors_read_buffer(const void *data, size_t size, const char *src,
                               struct pg_tensor **tensors, int *count, struct pg_error *err) {
  const unsigned char *p = data;
  uint64_t hlen;
  *tensors = NULL;
  *count = 0;
  if (!src) src = "<buffer>";
  PG_RETURN_IF_ERROR(read_preamble(src, p, size, &hlen, err));
  struct pg_tensor *ts;
  struct st_entry *es;
  int n;
  uint64_t data_len = size - 8 - hlen;
  PG_RETURN_IF_ERROR(parse_header(src, (const char *)p + 8, (size_t)hlen, data_len, &ts, &es, &n, err));
  for (int i = 0; i < n; i++) {
    struct pg_tensor tmp;
    pg_tensor_init(&tmp);
    pg_tensor_set_name(&tmp, ts[i].name);
    int rc = pg_tensor_alloc(&tmp, ts[i].dtype, ts[i].dl.ndim, ts[i].shape, err);
    if (rc != PG_OK) {
      pg_tensor_list_free(ts, n);
      free(es);
      return rc;
    }
    if (tmp.nbytes) memcpy(tmp.dl.data, p + 8 + hlen + es[i].begin, tmp.nbytes);
    normalise_bool(&tmp);
    pg_tensor_move(&ts[i], &tmp);
  }
  free(es);
  *tensors = ts;
  *count = n;
  return PG_OK;
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* The reader proper: reads the open file fd (closed here), `path` names it in messages. */
static int read_open_fd(int fd, const char *path, struct pg_tensor **tensors, int *count,
                        struct pg_error *err);

int pg_safetensors_read(const char *path, struct pg_tensor **tensors, int *count,
                        struct pg_error *err) {
  *tensors = NULL;
  *count = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
  return read_open_fd(fd, path, tensors, count, err);
}

int pg_safetensors_read_fd(int fd, const char *what, struct pg_tensor **tensors, int *count,
                           struct pg_error *err) {
  *tensors = NULL;
  *count = 0;
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return pg_error_set(err, PG_EIO, "%s: %s", what, strerror(errno));
  return read_open_fd(own, what, tensors, count, err);
}

static int read_open_fd(int fd, const char *path, struct pg_tensor **tensors, int *count,
                        struct pg_error *err) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: not a regular file", path);
  }
  uint64_t size = (uint64_t)st.st_size, hlen;
  unsigned char pre[8] = {0};
  int rc;
  if (size >= 8 && pread_full(fd, pre, 8, 0) != 0) {
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: read error", path);
  }
  if ((rc = read_preamble(path, pre, size, &hlen, err)) != PG_OK) {
    close(fd);
    return rc;
  }
  char *json = malloc(hlen ? (size_t)hlen : 1);
  if (!json) {
    close(fd);
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory for the header", path);
  }
  if (hlen && pread_full(fd, json, (size_t)hlen, 8) != 0) {
    free(json);
    close(fd);
    return pg_error_set(err, PG_EIO, "%s: read error", path);
  }
  struct pg_tensor *ts;
  struct st_entry *es;
  int n;
  rc = parse_header(path, json, (size_t)hlen, size - 8 - hlen, &ts, &es, &n, err);
  free(json);
  if (rc != PG_OK) {
    close(fd);
    return rc;
  }
  for (int i = 0; i < n && rc == PG_OK; i++) {
    struct pg_tensor tmp;
    pg_tensor_init(&tmp);
    pg_tensor_set_name(&tmp, ts[i].name);
    rc = pg_tensor_alloc(&tmp, ts[i].dtype, ts[i].dl.ndim, ts[i].shape, err);
    if (rc != PG_OK) break;
    if (tmp.nbytes && pread_full(fd, tmp.dl.data, tmp.nbytes, 8 + hlen + es[i].begin) != 0) {
      pg_tensor_reset(&tmp);
      rc = pg_error_set(err, PG_EIO, "%s: read error in tensor '%s'", path, ts[i].name);
      break;
    }
    normalise_bool(&tmp);
    pg_tensor_move(&ts[i], &tmp);
  }
  close(fd);
  free(es);
  if (rc != PG_OK) {
    pg_tensor_list_free(ts, n);
    return rc;
  }
  *tensors = ts;
  *count = n;
  return PG_OK;
}

/* ------------------------------------------------------------------ writer */

struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->cap ? b->cap * 2 : 256) + n;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_json_string(struct sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      sb_put(b, esc, 2);
    } else if (*p < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", *p);
      sb_put(b, esc, 6);
    } else {
      sb_put(b, (const char *)p, 1);
    }
  }
  sb_put(b, "\"", 1);
}

int pg_safetensors_write(const char *path, const struct pg_tensor *tensors, int count,
                         struct pg_error *err) {
  if (count < 0 || (count > 0 && !tensors)) return pg_error_set(err, PG_EINVAL, "%s: no tensors", path);
  struct sbuf b = {0};
  const void **parts = calloc((size_t)(count ? count : 1), sizeof *parts);
  size_t *lens = calloc((size_t)(count ? count : 1), sizeof *lens);
  if (!parts || !lens) {
    free(parts);
    free(lens);
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  }
  int rc = PG_OK;
  uint64_t off = 0;
  sb_str(&b, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (int i = 0; i < count; i++) {
    const struct pg_tensor *t = &tensors[i];
    const char *code = st_code(t->dtype);
    int64_t numel = 0;
    if (!code) {
      rc = pg_error_set(err, PG_EDTYPE, "%s: tensor '%s' has no safetensors dtype", path, t->name);
      break;
    }
    if (!t->name[0] || strcmp(t->name, "__metadata__") == 0) {
      rc = pg_error_set(err, PG_EINVAL, "%s: tensor %d needs a name (not __metadata__)", path, i);
      break;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(tensors[j].name, t->name) == 0) {
        rc = pg_error_set(err, PG_EINVAL, "%s: two tensors named '%s'", path, t->name);
        break;
      }
    if (rc != PG_OK) break;
    if ((rc = pg_shape_numel(t->dl.ndim, t->shape, &numel, err)) != PG_OK) break;
    size_t nbytes = (size_t)numel * pg_dtype_size(t->dtype);
    char num[64];
    sb_str(&b, ",");
    sb_json_string(&b, t->name);
    sb_str(&b, ":{\"dtype\":\"");
    sb_str(&b, code);
    sb_str(&b, "\",\"shape\":[");
    for (int d = 0; d < t->dl.ndim; d++) {
      snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->shape[d]);
      sb_str(&b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
             (unsigned long long)(off + nbytes));
    sb_str(&b, num);
    parts[i] = (const unsigned char *)t->dl.data + t->dl.byte_offset;
    lens[i] = nbytes;
    off += nbytes;
  }
  sb_str(&b, "}");
  while (!b.oom && b.n % 8) sb_str(&b, " "); /* the data section starts 8-byte aligned */
  if (rc == PG_OK && b.oom) rc = pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  if (rc == PG_OK) {
    size_t total = 8 + b.n;
    unsigned char *head = malloc(total);
    if (!head) {
      rc = pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
    } else {
      uint64_t n = b.n;
      for (int i = 0; i < 8; i++) head[i] = (unsigned char)(n >> (8 * i));
      memcpy(head + 8, b.p, b.n);
      rc = pg__atomic_write(path, head, total, parts, lens, count, err);
      free(head);
    }
  }
  free(b.p);
  free(parts);
  free(lens);
  return rc;
}
