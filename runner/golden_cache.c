/* phasegate runner — the on-disk golden cache (see golden_cache.h for layout and
 * guarantees) and a small SHA-256 (FIPS 180-4) to key it, so no new dependency.
 *
 * The key is hashed as a sequence of tagged, length-prefixed fields, so no two
 * different keys can produce the same byte stream. Not here: deciding when to use the
 * cache (the runner), computing goldens (goldens/).
 */
#include "golden_cache.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tensor_io.h"

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
  const char *v = getenv("PHASEGATE_CACHE_DIR");
  if (v && *v) {
    snprintf(buf, size, "%s", v);
    return PG_OK;
  }
  v = getenv("XDG_CACHE_HOME");
  if (v && *v) {
    snprintf(buf, size, "%s/phasegate", v);
    return PG_OK;
  }
  v = getenv("HOME");
  if (v && *v) {
    snprintf(buf, size, "%s/.cache/phasegate", v);
    return PG_OK;
  }
  return pg_error_set(err, PG_ENOTFOUND,
                      "golden cache: none of PHASEGATE_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
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

/* mkdir -p */
static int make_dirs(const char *path, struct pg_error *err) {
  char tmp[4096];
  int w = snprintf(tmp, sizeof tmp, "%s", path);
  if (w < 0 || (size_t)w >= sizeof tmp)
    return pg_error_set(err, PG_EINVAL, "golden cache: path too long");
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
      return pg_error_set(err, PG_EIO, "golden cache: cannot create '%s': %s", tmp,
                          strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
    return pg_error_set(err, PG_EIO, "golden cache: cannot create '%s': %s", tmp,
                        strerror(errno));
  return PG_OK;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char p[4400];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

int pg_golden_cache_lookup(const char *dir, const char *hash, const char *const *names, int n,
                           struct pg_tensor *outputs, struct pg_error *err) {
  if (!dir || !valid_hash(hash) || n < 0 || (n && (!names || !outputs)))
    return pg_error_set(err, PG_EINVAL, "golden cache: bad lookup arguments");
  char entry[4200], path[4608];
  snprintf(entry, sizeof entry, "%s/%s", dir, hash);
  snprintf(path, sizeof path, "%s/MANIFEST", entry);
  FILE *f = fopen(path, "r");
  if (!f) return pg_error_set(err, PG_ENOTFOUND, "golden cache: miss");
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
  if (!ok) return pg_error_set(err, PG_ENOTFOUND, "golden cache: entry %s does not match", hash);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s.npy", entry, names[i]);
    struct pg_error e2;
    pg_error_clear(&e2);
    if (pg_npy_read(path, &outputs[i], &e2) != PG_OK) {
      for (int j = 0; j <= i; j++) pg_tensor_reset(&outputs[j]);
      return pg_error_set(err, PG_ENOTFOUND, "golden cache: damaged entry %s: %s", hash,
                          e2.message);
    }
    pg_tensor_set_name(&outputs[i], names[i]);
  }
  return PG_OK;
}

int pg_golden_cache_store(const char *dir, const char *hash, const struct pg_tensor *outputs,
                          int n, struct pg_error *err) {
  if (!dir || !valid_hash(hash) || n < 0 || (n && !outputs))
    return pg_error_set(err, PG_EINVAL, "golden cache: bad store arguments");
  for (int i = 0; i < n; i++)
    if (!valid_name(outputs[i].name))
      return pg_error_set(err, PG_EINVAL, "golden cache: output name '%s' is not a file name",
                          outputs[i].name);
  char entry[4200], tmp[4300], path[4608];
  snprintf(entry, sizeof entry, "%s/%s", dir, hash);
  struct stat st;
  if (stat(entry, &st) == 0) return PG_OK; /* someone stored it already */
  PG_RETURN_IF_ERROR(make_dirs(dir, err));
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%ld-%ld", dir, hash, (long)getpid(), (long)ts.tv_nsec);
  if (mkdir(tmp, 0777) != 0)
    return pg_error_set(err, PG_EIO, "golden cache: cannot create '%s': %s", tmp, strerror(errno));
  int rc = PG_OK;
  for (int i = 0; i < n && rc == PG_OK; i++) {
    snprintf(path, sizeof path, "%s/%s.npy", tmp, outputs[i].name);
    rc = pg_npy_write(path, &outputs[i], err);
  }
  if (rc == PG_OK) {
    /* the manifest is written last: an entry without it is never read */
    snprintf(path, sizeof path, "%s/MANIFEST", tmp);
    FILE *f = fopen(path, "w");
    if (!f) {
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s': %s", path, strerror(errno));
    } else {
      fprintf(f, "%d\n", n);
      for (int i = 0; i < n; i++) fprintf(f, "%s\n", outputs[i].name);
      if (fflush(f) != 0 || fsync(fileno(f)) != 0) rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s'", path);
      if (fclose(f) != 0 && rc == PG_OK)
        rc = pg_error_set(err, PG_EIO, "golden cache: cannot write '%s'", path);
    }
  }
  if (rc == PG_OK && rename(tmp, entry) != 0) {
    /* another process renamed its copy first (ENOTEMPTY/EEXIST): theirs is as good */
    if (errno != ENOTEMPTY && errno != EEXIST)
      rc = pg_error_set(err, PG_EIO, "golden cache: cannot publish '%s': %s", entry,
                        strerror(errno));
    remove_tree(tmp);
    return rc;
  }
  if (rc != PG_OK) remove_tree(tmp);
  return rc;
}
