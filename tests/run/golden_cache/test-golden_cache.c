/* phasegate tests — the on-disk golden cache (runner/run/golden_cache.c): SHA-256 known
 * answers, hit, miss on every key change, damaged entries, and two processes filling
 * the same entry at once. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/golden_cache.h"
#include "pg_test.h"

static void hex32(const unsigned char d[32], char *out) {
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

PG_TEST(sha256_known_answers) {
  struct pg_sha256 s;
  unsigned char d[32];
  char hex[65];
  pg_sha256_init(&s);
  pg_sha256_final(&s, d);
  hex32(d, hex);
  PG_CHECK_EQ_STR("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex);
  pg_sha256_init(&s);
  pg_sha256_update(&s, "abc", 3);
  pg_sha256_final(&s, d);
  hex32(d, hex);
  PG_CHECK_EQ_STR("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex);
  /* 56 bytes: padding spills into a second block; fed in odd pieces */
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  pg_sha256_init(&s);
  for (size_t i = 0; i < strlen(m); i += 5) pg_sha256_update(&s, m + i, strlen(m) - i < 5 ? strlen(m) - i : 5);
  pg_sha256_final(&s, d);
  hex32(d, hex);
  PG_CHECK_EQ_STR("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", hex);
  /* one million 'a' */
  char block[1000];
  memset(block, 'a', sizeof block);
  pg_sha256_init(&s);
  for (int i = 0; i < 1000; i++) pg_sha256_update(&s, block, sizeof block);
  pg_sha256_final(&s, d);
  hex32(d, hex);
  PG_CHECK_EQ_STR("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", hex);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  PG_CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

struct keyfix {
  char contract[4096], lib[4096];
  struct pg_dim_value dv[2];
  struct pg_bindings dims;
  struct pg_golden_cache_key key;
};

static void keyfix_init(struct keyfix *k) {
  memset(k, 0, sizeof *k);
  snprintf(k->contract, sizeof k->contract, "%s/module_interfaces.yaml", pg_test_tmpdir());
  snprintf(k->lib, sizeof k->lib, "%s/libgolden.so", pg_test_tmpdir());
  write_file(k->contract, "op: toy\n");
  write_file(k->lib, "\177ELF pretend\n");
  k->dv[0] = (struct pg_dim_value){"B", 2, {0, 0}};
  k->dv[1] = (struct pg_dim_value){"S", 64, {0, 0}};
  k->dims.items = k->dv;
  k->dims.count = 2;
  k->key = (struct pg_golden_cache_key){k->contract, k->lib, "{\"id\":\"L1\"}", &k->dims, 2, 32, "0.1.0", NULL, NULL, NULL, NULL};
}

static void hash_of(const struct pg_golden_cache_key *key, char *hex) {
  struct pg_error err;
  int rc = pg_golden_cache_key_hash(key, hex, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(64, strlen(hex));
}

PG_TEST(cache_key_changes) {
  struct keyfix k;
  keyfix_init(&k);
  char base[65], h[65], again[65];
  hash_of(&k.key, base);
  hash_of(&k.key, again);
  PG_CHECK_EQ_STR(base, again);
  /* dim order does not matter */
  struct pg_dim_value swapped[2] = {k.dv[1], k.dv[0]};
  struct pg_bindings sd = {swapped, 2};
  struct pg_golden_cache_key kk = k.key;
  kk.dims = &sd;
  hash_of(&kk, h);
  PG_CHECK_EQ_STR(base, h);
  /* every field changes the hash */
  kk = k.key; kk.phase = 3; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  kk = k.key; kk.precision_bits = 64; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  kk = k.key; kk.version = "0.1.1"; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  kk = k.key; kk.case_json = "{\"id\":\"L2\"}"; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  kk = k.key; kk.case_json = NULL; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  kk = k.key; kk.golden_lib_path = NULL; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  struct pg_dim_value other[2] = {k.dv[0], {"S", 65, {0, 0}}};
  struct pg_bindings od = {other, 2};
  kk = k.key; kk.dims = &od; hash_of(&kk, h); PG_CHECK(strcmp(base, h) != 0);
  /* file contents, not names, count */
  write_file(k.contract, "op: toy2\n");
  hash_of(&k.key, h);
  PG_CHECK(strcmp(base, h) != 0);
  write_file(k.contract, "op: toy\n");
  hash_of(&k.key, h);
  PG_CHECK_EQ_STR(base, h);
  write_file(k.lib, "\177ELF rebuilt\n");
  hash_of(&k.key, h);
  PG_CHECK(strcmp(base, h) != 0);
  /* make_inputs's code is part of the key, by content (docs/pypto.md) */
  char ti[600], h2[65];
  snprintf(ti, sizeof ti, "%s/test_inputs.py", pg_test_tmpdir());
  write_file(ti, "def make_inputs(case):\n    return {}\n");
  kk = k.key; kk.test_inputs_path = ti; hash_of(&kk, h2);
  PG_CHECK(strcmp(h, h2) != 0);
  write_file(ti, "def make_inputs(case):\n    return {'x': 1}\n");
  hash_of(&kk, base);
  PG_CHECK(strcmp(base, h2) != 0);
  /* unreadable inputs are errors */
  struct pg_error err;
  kk = k.key;
  kk.contract_path = "/nonexistent/c.yaml";
  PG_CHECK_EQ_INT(PG_ENOENT, pg_golden_cache_key_hash(&kk, h, &err));
  PG_CHECK(strstr(err.message, "cannot read contract '/nonexistent/c.yaml'"));
}

static void make_tensor(struct pg_tensor *t, const char *name, float base) {
  int64_t shape[2] = {3, 4};
  pg_tensor_init(t);
  pg_tensor_set_name(t, name);
  PG_CHECK_OK(pg_tensor_alloc(t, PG_DTYPE_F32, 2, shape, NULL));
  for (int i = 0; i < 12; i++) ((float *)t->dl.data)[i] = base + (float)i;
}

PG_TEST(cache_store_lookup) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/cache/nested", pg_test_tmpdir());
  struct keyfix k;
  keyfix_init(&k);
  char hash[65];
  hash_of(&k.key, hash);
  const char *names[2] = {"out", "lse"};
  struct pg_tensor got[2], put[2];
  pg_tensor_init(&got[0]);
  pg_tensor_init(&got[1]);
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_lookup(dir, hash, names, 2, got, &err));
  make_tensor(&put[0], "out", 1.0f);
  make_tensor(&put[1], "lse", -5.0f);
  int rc = pg_golden_cache_store(dir, hash, put, 2, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_OK(pg_golden_cache_lookup(dir, hash, names, 2, got, &err));
  for (int t = 0; t < 2; t++) {
    PG_CHECK_EQ_INT(PG_DTYPE_F32, got[t].dtype);
    PG_CHECK_EQ_INT(2, got[t].dl.ndim);
    PG_CHECK_EQ_INT(4, got[t].shape[1]);
    PG_CHECK(memcmp(got[t].dl.data, put[t].dl.data, 48) == 0);
    PG_CHECK_EQ_STR(names[t], got[t].name);
    pg_tensor_reset(&got[t]);
  }
  /* a lookup asking for other names (or another count) misses */
  const char *other[2] = {"out", "probs"};
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_lookup(dir, hash, other, 2, got, &err));
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_lookup(dir, hash, names, 1, got, &err));
  /* a changed key misses */
  char h2[65];
  struct pg_golden_cache_key kk = k.key;
  kk.phase = 1;
  hash_of(&kk, h2);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_lookup(dir, h2, names, 2, got, &err));
  /* storing again is fine (first writer wins) */
  PG_CHECK_OK(pg_golden_cache_store(dir, hash, put, 2, &err));
  /* a damaged tensor file reads as a miss, with outputs left reset */
  char path[4400];
  snprintf(path, sizeof path, "%s/%s/lse.npy", dir, hash);
  write_file(path, "garbage");
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_lookup(dir, hash, names, 2, got, &err));
  PG_CHECK(strstr(err.message, "damaged entry"));
  PG_CHECK(got[0].dl.data == NULL && got[1].dl.data == NULL);
  /* bad arguments */
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_lookup(dir, "../etc", names, 2, got, &err));
  pg_tensor_set_name(&put[1], "../x");
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_store(dir, h2, put, 2, &err));
  pg_tensor_reset(&put[0]);
  pg_tensor_reset(&put[1]);
}

PG_TEST(cache_concurrent_fill) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/cache", pg_test_tmpdir());
  struct keyfix k;
  keyfix_init(&k);
  char hash[65];
  hash_of(&k.key, hash);
  /* two processes store the same entry 20 times each, racing on the rename, while
   * the parent keeps reading: every read is a miss or a complete, correct hit */
  pid_t kids[2];
  for (int p = 0; p < 2; p++) {
    kids[p] = fork();
    PG_CHECK(kids[p] >= 0);
    if (kids[p] == 0) {
      struct pg_tensor put;
      make_tensor(&put, "out", 7.0f);
      char sub[4200];
      int bad = 0;
      for (int r = 0; r < 20; r++) {
        /* fresh entry names each round, so both writers really race */
        snprintf(sub, sizeof sub, "%s/r%d", dir, r);
        struct pg_error err;
        if (pg_golden_cache_store(sub, hash, &put, 1, &err) != PG_OK) bad = 1;
      }
      pg_tensor_reset(&put);
      _exit(bad);
    }
  }
  const char *names[1] = {"out"};
  int hits = 0;
  for (int spin = 0; spin < 2000 && hits < 20; spin++) {
    for (int r = 0; r < 20; r++) {
      char sub[4200];
      snprintf(sub, sizeof sub, "%s/r%d", dir, r);
      struct pg_tensor got;
      pg_tensor_init(&got);
      struct pg_error err;
      int rc = pg_golden_cache_lookup(sub, hash, names, 1, &got, &err);
      PG_CHECK_MSG(rc == PG_OK || rc == PG_ENOTFOUND, "rc %d", rc);
      if (rc == PG_OK) {
        PG_CHECK(got.numel == 12);
        PG_CHECK(((float *)got.dl.data)[11] == 18.0f);
        pg_tensor_reset(&got);
      }
    }
    hits = 0;
    for (int r = 0; r < 20; r++) {
      char m[4400];
      struct stat st;
      snprintf(m, sizeof m, "%s/r%d/%s/MANIFEST", dir, r, hash);
      hits += stat(m, &st) == 0;
    }
  }
  for (int p = 0; p < 2; p++) {
    int status = 0;
    PG_CHECK(waitpid(kids[p], &status, 0) == kids[p]);
    PG_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", p);
  }
  /* no temporary directories left behind */
  for (int r = 0; r < 20; r++) {
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/r%d", dir, r);
    struct pg_tensor got;
    pg_tensor_init(&got);
    struct pg_error err;
    PG_CHECK_OK(pg_golden_cache_lookup(sub, hash, names, 1, &got, &err));
    pg_tensor_reset(&got);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | grep -vx .index | wc -l) -eq 1", sub);
    PG_CHECK_MSG(system(cmd) == 0, "leftover temporary entries in %s", sub);
  }
}

PG_TEST(cache_default_dir) {
  char buf[4096];
  struct pg_error err;
  setenv("PHASEGATE_CACHE_DIR", "/tmp/pgc", 1);
  PG_CHECK_OK(pg_golden_cache_dir_default(buf, sizeof buf, &err));
  PG_CHECK_EQ_STR("/tmp/pgc", buf);
  unsetenv("PHASEGATE_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  PG_CHECK_OK(pg_golden_cache_dir_default(buf, sizeof buf, &err));
  PG_CHECK_EQ_STR("/tmp/xdg/phasegate", buf);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  PG_CHECK_OK(pg_golden_cache_dir_default(buf, sizeof buf, &err));
  PG_CHECK_EQ_STR("/home/u/.cache/phasegate", buf);
  unsetenv("HOME");
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_dir_default(buf, sizeof buf, &err));
}

PG_TEST(cache_metadata) {
  /* a metadata file beside an entry's tensors (suite strength): written only into an
   * existing entry, read back whole, never mistaken for a tensor */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/cache/meta", pg_test_tmpdir());
  struct keyfix k;
  keyfix_init(&k);
  char hash[65];
  hash_of(&k.key, hash);
  struct pg_error err;
  char *text = NULL;
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_meta_write(dir, hash, "STRENGTH", "x\n", &err));
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_meta_read(dir, hash, "STRENGTH", &text, &err));
  PG_CHECK(text == NULL);
  struct pg_tensor put;
  make_tensor(&put, "out", 1.0f);
  PG_CHECK_OK(pg_golden_cache_store(dir, hash, &put, 1, &err));
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_golden_cache_meta_read(dir, hash, "STRENGTH", &text, &err));
  PG_CHECK_OK(pg_golden_cache_meta_write(dir, hash, "STRENGTH", "phasegate-strength 1\n", &err));
  PG_CHECK_OK(pg_golden_cache_meta_write(dir, hash, "STRENGTH", "second\n", &err));
  PG_CHECK_OK(pg_golden_cache_meta_read(dir, hash, "STRENGTH", &text, &err));
  PG_CHECK_EQ_STR("second\n", text);
  free(text);
  const char *names[1] = {"out"};
  struct pg_tensor got;
  pg_tensor_init(&got);
  PG_CHECK_OK(pg_golden_cache_lookup(dir, hash, names, 1, &got, &err)); /* entry intact */
  pg_tensor_reset(&got);
  /* names that could be a tensor, the manifest or a path are refused */
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_meta_write(dir, hash, "out.npy", "x", &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_meta_write(dir, hash, "MANIFEST", "x", &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_meta_read(dir, hash, "../X", &text, &err));
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s/%s' | grep -c '^.tmp-') -eq 0", dir, hash);
  PG_CHECK_MSG(system(cmd) == 0, "a temporary metadata file left in the entry");
  pg_tensor_reset(&put);
}
