/* phasegate runner — the on-disk golden cache (see golden_cache.h for layout and
 * guarantees) and a small SHA-256 (FIPS 180-4) to key it, so no new dependency.
 *
 * The key is hashed as a sequence of tagged, length-prefixed fields, so no two
 * different keys can produce the same byte stream. The size cap (LRU eviction) is at
 * the end: an approximate byte total in <dir>/.index, read and rewritten under an
 * flock on that same file, so a store rescans the directory only when the estimate
 * crosses the cap (or when no estimate exists yet). Not here: deciding when to use the
 * cache (the runner), computing goldens (goldens/). Paths are built on the heap
 * (base/), so a deep cache directory is never truncated.
 */
#include "run/golden_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "tensors/tensors.h"

/* ---------------------------------------------------------------- SHA-256 */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(struct pg_sha256 *s, const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5],
           g = s->h[6], h = s->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  s->h[0] += a;
  s->h[1] += b;
  s->h[2] += c;
  s->h[3] += d;
  s->h[4] += e;
  s->h[5] += f;
  s->h[6] += g;
  s->h[7] += h;
}

void pg_sha256_init(struct pg_sha256 *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->len = 0;
  s->used = 0;
}

void pg_sha256_update(struct pg_sha256 *s, const void *data, size_t n) {
  const unsigned char *p = data;
  s->len += n;
  while (n > 0) {
    size_t take = 64 - s->used < n ? 64 - s->used : n;
    memcpy(s->buf + s->used, p, take);
    s->used += take;
    p += take;
    n -= take;
    if (s->used == 64) {
      sha256_block(s, s->buf);
      s->used = 0;
    }
  }
}

void pg_sha256_final(struct pg_sha256 *s, unsigned char out[32]) {
  uint64_t bits = s->len * 8;
  unsigned char pad = 0x80;
  pg_sha256_update(s, &pad, 1);
  unsigned char zero = 0;
  while (s->used != 56) pg_sha256_update(s, &zero, 1);
  unsigned char lenb[8];
  for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
  pg_sha256_update(s, lenb, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (unsigned char)(s->h[i] >> 24);
    out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
    out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
    out[4 * i + 3] = (unsigned char)s->h[i];
  }
}

/* ---------------------------------------------------------------- key */

static void put_field(struct pg_sha256 *s, char tag, const void *data, size_t n) {
  unsigned char hdr[9];
  hdr[0] = (unsigned char)tag;
  for (int i = 0; i < 8; i++) hdr[1 + i] = (unsigned char)((uint64_t)n >> (8 * i));
  pg_sha256_update(s, hdr, sizeof hdr);
  pg_sha256_update(s, data, n);
}

static void put_str(struct pg_sha256 *s, char tag, const char *str) {
  if (!str) {
    put_field(s, (char)(tag | 0x40), "", 0); /* absent differs from empty */
    return;
  }
  put_field(s, tag, str, strlen(str));
}

/* Hashes a file's bytes as one field (length = file size). */
static int put_file(struct pg_sha256 *s, char tag, const char *path, const char *what,
                    struct pg_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "golden cache: cannot read %s '%s': %s",
                        what, path, strerror(errno));
  struct pg_sha256 inner;
  pg_sha256_init(&inner);
  unsigned char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) pg_sha256_update(&inner, buf, n);
  int bad = ferror(f);
  fclose(f);
  if (bad) return pg_error_set(err, PG_EIO, "golden cache: error reading %s '%s'", what, path);
  unsigned char digest[32];
  pg_sha256_final(&inner, digest);
  put_field(s, tag, digest, sizeof digest);
  return PG_OK;
}

static int cmp_dim(const void *a, const void *b) {
  const struct pg_dim_value *x = *(const struct pg_dim_value *const *)a;
  const struct pg_dim_value *y = *(const struct pg_dim_value *const *)b;
  return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

int pg_golden_cache_key_hash(const struct pg_golden_cache_key *key,
                             char hex[PG_GOLDEN_CACHE_HASH_LEN + 1], struct pg_error *err) {
  if (!key || !key->contract_path || !hex)
    return pg_error_set(err, PG_EINVAL, "golden cache: key needs a contract path");
  struct pg_sha256 s;
  pg_sha256_init(&s);
  put_str(&s, 'V', "phasegate-golden-cache-1");
  put_str(&s, 'v', key->version);
  /* The goldens and the input generator are code: a rebuilt phasegate may compute other
   * bits without a version bump, so the executable's identity is part of the key
   * (stat only: cheap; an installed binary keeps its cache across runs). */
  struct stat exe;
  if (stat("/proc/self/exe", &exe) == 0) {
    char id[128];
    snprintf(id, sizeof id, "%llu:%llu:%lld:%lld.%09ld", (unsigned long long)exe.st_dev,
             (unsigned long long)exe.st_ino, (long long)exe.st_size,
             (long long)exe.st_mtim.tv_sec, (long)exe.st_mtim.tv_nsec);
    put_str(&s, 'X', id);
  }
  PG_RETURN_IF_ERROR(put_file(&s, 'C', key->contract_path, "contract", err));
  if (key->golden_lib_path)
    PG_RETURN_IF_ERROR(put_file(&s, 'L', key->golden_lib_path, "golden library", err));
  else
    put_str(&s, 'L', NULL);
  if (key->py_golden_path) { /* absent for built-in goldens: their keys stay as they were */
    PG_RETURN_IF_ERROR(put_file(&s, 'G', key->py_golden_path, "Python golden", err));
    put_str(&s, 'F', key->py_function);
    put_str(&s, 'I', key->python);
  }
  if (key->test_inputs_path) { /* absent for generated inputs: their keys stay as they were */
    PG_RETURN_IF_ERROR(put_file(&s, 'T', key->test_inputs_path, "test_inputs.py", err));
    put_str(&s, 'P', key->python);
  }
  put_str(&s, 'J', key->case_json);
  /* dims sorted by name: binding order must not matter */
  int nd = key->dims ? key->dims->count : 0;
  const struct pg_dim_value **sorted = calloc((size_t)(nd ? nd : 1), sizeof *sorted);
  if (!sorted) return pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  for (int i = 0; i < nd; i++) sorted[i] = &key->dims->items[i];
  qsort(sorted, (size_t)nd, sizeof *sorted, cmp_dim);
  for (int i = 0; i < nd; i++) {
    char buf[PG_NAME_MAX + 32];
    int w = snprintf(buf, sizeof buf, "%s=%lld", sorted[i]->name ? sorted[i]->name : "",
                     (long long)sorted[i]->value);
    put_field(&s, 'D', buf, (size_t)(w > 0 ? w : 0));
  }
  free(sorted);
  char num[64];
  snprintf(num, sizeof num, "phase=%d precision=%d", key->phase, key->precision_bits);
  put_str(&s, 'P', num);
  unsigned char digest[32];
  pg_sha256_final(&s, digest);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  return PG_OK;
}

int pg_golden_cache_dir_default(char *buf, size_t size, struct pg_error *err) {
  const char *v, *sub;
  if ((v = getenv("PHASEGATE_CACHE_DIR")) && *v) sub = "";
  else if ((v = getenv("XDG_CACHE_HOME")) && *v) sub = "/phasegate";
  else if ((v = getenv("HOME")) && *v) sub = "/.cache/phasegate";
  else
    return pg_error_set(err, PG_ENOTFOUND,
                        "golden cache: none of PHASEGATE_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
  int n = snprintf(buf, size, "%s%s", v, sub);
  if (n < 0 || (size_t)n >= size)
    return pg_error_set(err, PG_ELIMIT, "golden cache: directory '%s%s' is longer than %zu bytes",
                        v, sub, size ? size - 1 : 0);
  return PG_OK;
}

/* ---------------------------------------------------------------- entries */

static int valid_hash(const char *h) {
  if (!h || strlen(h) != PG_GOLDEN_CACHE_HASH_LEN) return 0;
  for (const char *p = h; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
  return 1;
}

static int valid_name(const char *n) {
  if (!n || !*n || strcmp(n, ".") == 0 || strcmp(n, "..") == 0) return 0;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '.' || *p == '-'))
      return 0;
  return strcmp(n, "MANIFEST") != 0;
}

static int make_dirs(const char *path, struct pg_error *err) {
  if (pg_mkdir_p(path) != 0)
    return pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO,
                        "golden cache: cannot create '%s': %s", path, strerror(errno));
  return PG_OK;
}

int pg_golden_cache_lookup(const char *dir, const char *hash, const char *const *names, int n,
                           struct pg_tensor *outputs, struct pg_error *err) {
  if (!dir || !valid_hash(hash) || n < 0 || (n && (!names || !outputs)))
    return pg_error_set(err, PG_EINVAL, "golden cache: bad lookup arguments");
  char *entry = pg_path_join(dir, hash);
  char *manifest = entry ? pg_path_join(entry, "MANIFEST") : NULL;
  FILE *f = manifest ? fopen(manifest, "r") : NULL;
  free(manifest);
  if (!f) {
    free(entry);
    return entry ? pg_error_set(err, PG_ENOTFOUND, "golden cache: miss")
                 : pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  }
  /* MANIFEST: "<count>\n" then one name per line, in order */
  char line[PG_NAME_MAX + 8];
  int count = -1, ok = fgets(line, sizeof line, f) != NULL && sscanf(line, "%d", &count) == 1 &&
                       count == n;
  for (int i = 0; ok && i < n; i++) {
    ok = fgets(line, sizeof line, f) != NULL;
    if (ok) {
      line[strcspn(line, "\n")] = '\0';
      ok = names[i] && strcmp(line, names[i]) == 0 && valid_name(line);
    }
  }
  fclose(f);
  int rc = ok ? PG_OK : pg_error_set(err, PG_ENOTFOUND, "golden cache: entry %s does not match",
                                     hash);
  for (int i = 0; rc == PG_OK && i < n; i++) {
    char *path = pg_path_fmt("%s/%s.npy", entry, names[i]);
    struct pg_error e2;
    pg_error_clear(&e2);
    if (!path || pg_npy_read(path, &outputs[i], &e2) != PG_OK) {
      for (int j = 0; j <= i; j++) pg_tensor_reset(&outputs[j]);
      rc = path ? pg_error_set(err, PG_ENOTFOUND, "golden cache: damaged entry %s: %s", hash,
                               e2.message)
                : pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
    } else {
      pg_tensor_set_name(&outputs[i], names[i]);
    }
    free(path);
  }
  /* mtime = last use, for LRU eviction (atime is unreliable under noatime/relatime);
   * a read-only cache simply keeps its old times */
  if (rc == PG_OK) (void)utimensat(AT_FDCWD, entry, NULL, 0);
  free(entry);
  return rc;
}

static int account_store(const char *dir, const char *entry, uint64_t max_bytes,
                         struct pg_error *err);

int pg_golden_cache_store(const char *dir, const char *hash, const struct pg_tensor *outputs,
                          int n, struct pg_error *err) {
  uint64_t cap;
  struct pg_error cap_err;
  pg_error_clear(&cap_err);
  int cap_rc = pg_golden_cache_max_default(&cap, &cap_err);
  int rc = pg_golden_cache_store_capped(dir, hash, outputs, n, cap, err);
  if (rc == PG_OK && cap_rc != PG_OK) {
    if (err) *err = cap_err;
    return cap_rc;
  }
  return rc;
}

/* Writes outputs[0..n) and then MANIFEST into the private directory tmp (an entry
 * without its manifest is never read). */
static int write_entry(const char *tmp, const struct pg_tensor *outputs, int n,
                       struct pg_error *err) {
  for (int i = 0; i < n; i++) {
    char *path = pg_path_fmt("%s/%s.npy", tmp, outputs[i].name);
    int rc = path ? pg_npy_write(path, &outputs[i], err)
                  : pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
    free(path);
    PG_RETURN_IF_ERROR(rc);
  }
  char *path = pg_path_join(tmp, "MANIFEST");
  if (!path) return pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  int rc = PG_OK;
  FILE *f = fopen(path, "w");
  if (!f) {
    rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s': %s", path, strerror(errno));
  } else {
    fprintf(f, "%d\n", n);
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", outputs[i].name);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s'", path);
    if (fclose(f) != 0 && rc == PG_OK)
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s'", path);
  }
  free(path);
  return rc;
}

/* Writes the entry into a private .tmp-* directory and renames it into place as
 * `entry`; *published is 1 when this process's copy became the entry. */
static int publish(const char *dir, const char *hash, const char *entry,
                   const struct pg_tensor *outputs, int n, int *published,
                   struct pg_error *err) {
  *published = 0;
  PG_RETURN_IF_ERROR(make_dirs(dir, err));
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *tmp = pg_path_fmt("%s/.tmp-%s-%ld-%ld", dir, hash, (long)getpid(), (long)ts.tv_nsec);
  if (!tmp) return pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  if (mkdir(tmp, 0777) != 0) {
    int rc = pg_error_set(err, PG_EIO, "golden cache: cannot create '%s': %s", tmp,
                          strerror(errno));
    free(tmp);
    return rc;
  }
  int rc = write_entry(tmp, outputs, n, err);
  if (rc == PG_OK && rename(tmp, entry) != 0) {
    /* another process renamed its copy first (ENOTEMPTY/EEXIST): theirs is as good */
    if (errno != ENOTEMPTY && errno != EEXIST)
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot publish '%s': %s", entry,
                        strerror(errno));
  } else if (rc == PG_OK) {
    *published = 1;
  }
  if (!*published) pg_remove_tree(tmp);
  free(tmp);
  return rc;
}

int pg_golden_cache_store_capped(const char *dir, const char *hash,
                                 const struct pg_tensor *outputs, int n, uint64_t max_bytes,
                                 struct pg_error *err) {
  if (!dir || !valid_hash(hash) || n < 0 || (n && !outputs))
    return pg_error_set(err, PG_EINVAL, "golden cache: bad store arguments");
  for (int i = 0; i < n; i++)
    if (!valid_name(outputs[i].name))
      return pg_error_set(err, PG_EINVAL, "golden cache: output name '%s' is not a file name",
                          outputs[i].name);
  char *entry = pg_path_join(dir, hash);
  if (!entry) return pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  struct stat st;
  int published = 0, rc = PG_OK;
  if (stat(entry, &st) == 0)
    (void)utimensat(AT_FDCWD, entry, NULL, 0); /* someone stored it already: a use */
  else
    rc = publish(dir, hash, entry, outputs, n, &published, err);
  if (published) {
    (void)utimensat(AT_FDCWD, entry, NULL, 0); /* rename does not update the dir's mtime */
    rc = account_store(dir, entry, max_bytes, err);
  }
  free(entry);
  return rc;
}

/* ---------------------------------------------------------------- metadata */

static int valid_meta_name(const char *n) {
  if (!n || !*n || strcmp(n, "MANIFEST") == 0) return 0;
  for (const char *p = n; *p; p++)
    if (*p < 'A' || *p > 'Z') return 0;
  return 1;
}

int pg_golden_cache_meta_read(const char *dir, const char *hash, const char *name, char **text,
                              struct pg_error *err) {
  *text = NULL;
  if (!dir || !valid_hash(hash) || !valid_meta_name(name))
    return pg_error_set(err, PG_EINVAL, "golden cache: bad metadata arguments");
  char *path = pg_path_fmt("%s/%s/%s", dir, hash, name), *buf = NULL;
  size_t n;
  struct pg_error e; /* the entry is the cache's: a bad one is a miss, not an error */
  pg_error_clear(&e);
  int rc = path ? pg_read_file(path, ((size_t)1 << 20) - 1, &buf, &n, &e) : PG_ENOENT;
  free(path);
  if (rc == PG_ENOENT)
    return pg_error_set(err, PG_ENOTFOUND, "golden cache: no %s in entry %s", name, hash);
  if (rc != PG_OK)
    return pg_error_set(err, PG_ENOTFOUND, "golden cache: %s of entry %s unreadable", name, hash);
  *text = buf;
  return PG_OK;
}

int pg_golden_cache_meta_write(const char *dir, const char *hash, const char *name,
                               const char *text, struct pg_error *err) {
  if (!dir || !valid_hash(hash) || !valid_meta_name(name) || !text)
    return pg_error_set(err, PG_EINVAL, "golden cache: bad metadata arguments");
  char *entry = pg_path_join(dir, hash);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *tmp = entry ? pg_path_fmt("%s/.tmp-%s-%ld-%ld", entry, name, (long)getpid(),
                                  (long)ts.tv_nsec) : NULL;
  char *path = entry ? pg_path_join(entry, name) : NULL;
  struct stat st;
  int rc = PG_OK;
  if (!tmp || !path) rc = pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  else if (stat(entry, &st) != 0) rc = pg_error_set(err, PG_ENOTFOUND, "golden cache: no entry %s", hash);
  FILE *f = rc == PG_OK ? fopen(tmp, "w") : NULL;
  if (rc == PG_OK && !f)
    rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s': %s", tmp, strerror(errno));
  if (f) {
    int bad = fputs(text, f) < 0 || fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s'", path);
      unlink(tmp);
    }
  }
  free(tmp);
  free(path);
  free(entry);
  return rc;
}

/* ---------------------------------------------------------------- size cap */

int pg_golden_cache_parse_size(const char *what, const char *text, uint64_t *bytes,
                               struct pg_error *err) {
  const char *p = text ? text : "";
  uint64_t v = 0;
  int digits = 0, overflow = 0;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    if (v > (UINT64_MAX - 9) / 10) overflow = 1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  int shift = 0;
  switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
  }
  if (shift && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B')) p += 2;
  else if (*p == 'b' || *p == 'B') p++;
  if (!digits || *p)
    return pg_error_set(err, PG_EINVAL,
                        "%s: '%s' is not a size (expected bytes such as 500M, 2G, 1048576; "
                        "suffixes K, M, G, T are powers of 1024; 0 = unlimited)",
                        what, text ? text : "");
  if (overflow || (shift && v > (UINT64_MAX >> shift)))
    return pg_error_set(err, PG_EINVAL, "%s: '%s' is too large", what, text);
  *bytes = v << shift;
  return PG_OK;
}

int pg_golden_cache_max_default(uint64_t *bytes, struct pg_error *err) {
  *bytes = PG_GOLDEN_CACHE_MAX_DEFAULT;
  const char *v = getenv("PHASEGATE_CACHE_MAX_BYTES");
  if (!v || !*v) return PG_OK;
  uint64_t b;
  PG_RETURN_IF_ERROR(pg_golden_cache_parse_size("PHASEGATE_CACHE_MAX_BYTES", v, &b, err));
  *bytes = b;
  return PG_OK;
}

static int is_prefixed(const char *name, const char *prefix) {
  return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* Sum of the sizes of the files in an entry directory (entries are flat), the
 * directory `name` relative to the directory descriptor at (AT_FDCWD: a path). */
static uint64_t entry_bytes(int at, const char *name) {
  uint64_t total = 0;
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return 0;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
      continue;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      total += (uint64_t)st.st_size;
  }
  closedir(d);
  return total;
}

/* The lock + index file, locked exclusively: a descriptor, or a negative PG_E* code
 * with err set. */
static int index_lock(const char *dir, struct pg_error *err) {
  char *path = pg_path_join(dir, ".index");
  if (!path) return pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    fd = pg_error_set(err, PG_EIO, "golden cache: cannot open '%s': %s", path, strerror(errno));
  while (fd >= 0 && flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int rc = pg_error_set(err, PG_EIO, "golden cache: cannot lock '%s': %s", path, strerror(errno));
    close(fd);
    fd = rc;
  }
  free(path);
  return fd;
}

/* The index: the byte estimate and when the directory was last scanned (Unix time).
 * 1 when it holds both, 0 when it is empty or damaged. */
static int index_read(int fd, uint64_t *bytes, int64_t *scanned) {
  char buf[128];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long b;
  long long t;
  char nl;
  if (sscanf(buf, "phasegate-golden-cache-index 2\nbytes %llu\nscanned %lld%c", &b, &t, &nl) != 3 ||
      nl != '\n')
    return 0;
  *bytes = (uint64_t)b;
  *scanned = (int64_t)t;
  return 1;
}

static void index_write(int fd, uint64_t bytes, int64_t scanned) {
  char buf[128];
  /* fixed width, so rewriting in place never needs a truncate; a torn write reads as
   * "no estimate", which only costs a rescan */
  int n = snprintf(buf, sizeof buf,
                   "phasegate-golden-cache-index 2\nbytes %020" PRIu64 "\nscanned %020" PRId64 "\n",
                   bytes, scanned);
  if (pwrite(fd, buf, (size_t)n, 0) != n) (void)ftruncate(fd, 0);
}

/* Moves a directory out of the way under a .trash-* name, then deletes it: a reader
 * that already opened the entry's files keeps reading them, one that looks it up
 * afterwards misses. */
static int discard_dir(const char *dir, const char *name) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *from = pg_path_join(dir, name), *to = NULL;
  int done = 0;
  if (from && is_prefixed(name, ".trash-")) {
    pg_remove_tree(from);
    done = 1;
  } else if (from && (to = pg_path_fmt("%s/.trash-%.80s-%ld-%ld", dir, name, (long)getpid(),
                                        (long)ts.tv_nsec)) != NULL &&
             rename(from, to) == 0) { /* else gone already (another evictor, a clear) */
    pg_remove_tree(to);
    done = 1;
  }
  free(from);
  free(to);
  return done;
}

struct entry_info {
  char name[PG_GOLDEN_CACHE_HASH_LEN + 1];
  struct timespec used;
  uint64_t bytes;
};

static int cmp_used(const void *a, const void *b) {
  const struct entry_info *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

enum { SCAN_COUNT = 0, SCAN_CLEAN = 1 };

/* Reads the cache directory: with SCAN_CLEAN deletes .trash-* and stale .tmp-*, then,
 * when the entries hold more than `trigger` bytes, evicts least-recently-used ones
 * until at most `target` bytes remain. Caller holds the lock when cleaning. A missing
 * directory is empty. */
static int scan(const char *dir, int mode, uint64_t trigger, uint64_t target,
                struct pg_golden_cache_stats *st, struct pg_error *err) {
  memset(st, 0, sizeof *st);
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return PG_OK;
    return pg_error_set(err, PG_EIO, "golden cache: cannot read '%s': %s", dir, strerror(errno));
  }
  struct entry_info *ents = NULL;
  size_t n = 0, cap = 0;
  char (*doomed)[256] = NULL; /* stale dirs, deleted after the listing is done */
  size_t n_doomed = 0, cap_doomed = 0;
  int rc = PG_OK;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct dirent *e;
  while (rc == PG_OK && (e = readdir(d)) != NULL) {
    struct stat sb;
    int is_tmp = is_prefixed(e->d_name, ".tmp-"), is_trash = is_prefixed(e->d_name, ".trash-");
    if (!is_tmp && !is_trash && !valid_hash(e->d_name)) continue; /* .index, strangers */
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
      continue;
    if (is_tmp || is_trash) {
      int stale = is_trash || now.tv_sec - sb.st_mtim.tv_sec > PG_GOLDEN_CACHE_TMP_MAX_AGE_S;
      if (mode == SCAN_CLEAN && stale && strlen(e->d_name) < 256) {
        if (n_doomed == cap_doomed) {
          size_t nc = cap_doomed ? 2 * cap_doomed : 8;
          void *g = realloc(doomed, nc * sizeof *doomed);
          if (!g) {
            rc = pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
            break;
          }
          doomed = g;
          cap_doomed = nc;
        }
        snprintf(doomed[n_doomed++], 256, "%s", e->d_name);
      } else if (is_tmp) {
        st->tmp_dirs++;
      } else {
        st->trash_dirs++;
      }
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 64;
      void *g = realloc(ents, nc * sizeof *ents);
      if (!g) {
        rc = pg_error_set(err, PG_ENOMEM, "golden cache: out of memory");
        break;
      }
      ents = g;
      cap = nc;
    }
    memcpy(ents[n].name, e->d_name, PG_GOLDEN_CACHE_HASH_LEN); /* valid_hash: 64 chars */
    ents[n].name[PG_GOLDEN_CACHE_HASH_LEN] = '\0';
    ents[n].used = sb.st_mtim;
    ents[n].bytes = entry_bytes(dirfd(d), e->d_name);
    st->entries++;
    st->bytes += ents[n].bytes;
    n++;
  }
  closedir(d);
  for (size_t i = 0; rc == PG_OK && i < n_doomed; i++)
    if (discard_dir(dir, doomed[i])) st->stale_removed++;
  if (rc == PG_OK && mode == SCAN_CLEAN && st->bytes > trigger) {
    qsort(ents, n, sizeof *ents, cmp_used);
    for (size_t i = 0; i < n && st->bytes > target; i++) {
      if (!discard_dir(dir, ents[i].name)) continue;
      st->entries--;
      st->bytes -= ents[i].bytes;
      st->evicted++;
      st->evicted_bytes += ents[i].bytes;
    }
  }
  free(ents);
  free(doomed);
  return rc;
}

int pg_golden_cache_info(const char *dir, struct pg_golden_cache_stats *st, struct pg_error *err) {
  if (!dir || !st) return pg_error_set(err, PG_EINVAL, "golden cache: bad info arguments");
  return scan(dir, SCAN_COUNT, 0, 0, st, err);
}

int pg_golden_cache_prune(const char *dir, uint64_t target_bytes,
                          struct pg_golden_cache_stats *st, struct pg_error *err) {
  struct pg_golden_cache_stats local;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (!dir) return pg_error_set(err, PG_EINVAL, "golden cache: bad prune arguments");
  struct stat sb;
  if (stat(dir, &sb) != 0 && errno == ENOENT) return PG_OK; /* nothing cached yet */
  int fd = index_lock(dir, err);
  if (fd < 0) return fd;
  int rc = scan(dir, SCAN_CLEAN, target_bytes, target_bytes, st, err);
  if (rc == PG_OK) index_write(fd, st->bytes, (int64_t)time(NULL));
  close(fd); /* releases the lock */
  return rc;
}

int pg_golden_cache_clear(const char *dir, struct pg_golden_cache_stats *st, struct pg_error *err) {
  return pg_golden_cache_prune(dir, 0, st, err);
}

/* After a store published `entry`: adds its bytes to the estimate, and when the
 * estimate is missing or over the cap, rescans and evicts down to 90 % of the cap. */
static int account_store(const char *dir, const char *entry, uint64_t max_bytes,
                         struct pg_error *err) {
  if (max_bytes == 0) return PG_OK; /* unlimited: no bookkeeping at all */
  uint64_t added = entry_bytes(AT_FDCWD, entry);
  int fd = index_lock(dir, err);
  if (fd < 0) return fd;
  uint64_t est = 0;
  int64_t scanned = 0, now = (int64_t)time(NULL);
  int rc = PG_OK;
  int known = index_read(fd, &est, &scanned);
  est = known && est <= UINT64_MAX - added ? est + added : UINT64_MAX;
  /* also once a day, so killed writers' .tmp-* go and the estimate cannot drift far */
  if (est > max_bytes || now - scanned >= PG_GOLDEN_CACHE_RESCAN_S || now < scanned) {
    struct pg_golden_cache_stats st;
    rc = scan(dir, SCAN_CLEAN, max_bytes, max_bytes / 10 * 9 + max_bytes % 10 * 9 / 10, &st, err);
    est = st.bytes;
    scanned = now;
  }
  if (rc == PG_OK) index_write(fd, est, scanned);
  close(fd);
  return rc;
}
