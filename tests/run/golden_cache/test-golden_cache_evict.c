/* phasegate tests — the golden cache's size cap (runner/run/golden_cache.c): size parsing
 * and PHASEGATE_CACHE_MAX_BYTES, LRU eviction order, hits refreshing an entry, the cap
 * held across stores, the size estimate sparing rescans (and the daily rescan), stale
 * .tmp-* and .trash-* cleanup, clear, and several processes storing, evicting and
 * reading at once without ever seeing a partial or wrong entry. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/golden_cache.h"
#include "pg_test.h"

#define NUMEL 256 /* float32: 1 KiB of data per entry */

static void key_hex(int i, char hex[65]) { snprintf(hex, 65, "%064x", (unsigned)i); }

/* An entry whose every value encodes its key, so a mixed-up read is detectable. */
static void make_tensor(struct pg_tensor *t, int key) {
  int64_t shape[1] = {NUMEL};
  pg_tensor_init(t);
  pg_tensor_set_name(t, "out");
  PG_CHECK_OK(pg_tensor_alloc(t, PG_DTYPE_F32, 1, shape, NULL));
  for (int j = 0; j < NUMEL; j++) ((float *)t->dl.data)[j] = (float)(key * 1000 + j);
}

/* 0 on a correct hit, 1 on a miss, -1 on a wrong or partial entry. */
static int read_back(const char *dir, int key) {
  char hex[65];
  key_hex(key, hex);
  const char *names[1] = {"out"};
  struct pg_tensor got;
  pg_tensor_init(&got);
  struct pg_error err;
  int rc = pg_golden_cache_lookup(dir, hex, names, 1, &got, &err);
  if (rc == PG_ENOTFOUND) return 1;
  if (rc != PG_OK) return -1;
  int bad = got.numel != NUMEL || got.dtype != PG_DTYPE_F32;
  for (int j = 0; !bad && j < NUMEL; j++) bad = ((float *)got.dl.data)[j] != (float)(key * 1000 + j);
  pg_tensor_reset(&got);
  return bad ? -1 : 0;
}

static void store(const char *dir, int key, uint64_t cap) {
  char hex[65];
  key_hex(key, hex);
  struct pg_tensor t;
  make_tensor(&t, key);
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_golden_cache_store_capped(dir, hex, &t, 1, cap, &err);
  PG_CHECK_MSG(rc == PG_OK, "store %d: %s", key, err.message);
  pg_tensor_reset(&t);
}

static void set_mtime(const char *path, time_t when) {
  struct timespec ts[2] = {{when, 0}, {when, 0}};
  PG_CHECK_MSG(utimensat(AT_FDCWD, path, ts, 0) == 0, "utimensat %s", path);
}

static void set_entry_mtime(const char *dir, int key, time_t when) {
  char hex[65], path[4200];
  key_hex(key, hex);
  snprintf(path, sizeof path, "%s/%s", dir, hex);
  set_mtime(path, when);
}

static int exists(const char *dir, const char *name) {
  char path[4400];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return stat(path, &st) == 0;
}

static int entry_exists(const char *dir, int key) {
  char hex[65];
  key_hex(key, hex);
  return exists(dir, hex);
}

static struct pg_golden_cache_stats info(const char *dir) {
  struct pg_golden_cache_stats st;
  struct pg_error err;
  int rc = pg_golden_cache_info(dir, &st, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  return st;
}

static void cache_dir(char *dir, size_t size, const char *name) {
  snprintf(dir, size, "%s/%s", pg_test_tmpdir(), name);
}

/* One entry's size on disk, as the cache counts it. */
static uint64_t entry_size(void) {
  char dir[4096];
  cache_dir(dir, sizeof dir, "probe");
  store(dir, 999, 0);
  return info(dir).bytes;
}

PG_TEST(parse_size) {
  struct pg_error err;
  uint64_t b = 1;
  const struct {
    const char *text;
    uint64_t want;
  } good[] = {{"0", 0},           {"1024", 1024},       {"10K", 10240},   {"3m", 3u << 20},
              {"2G", 2ull << 30}, {"1MiB", 1u << 20},   {"5MB", 5u << 20}, {"7B", 7},
              {"1t", 1ull << 40}, {"2GIB", 2ull << 30}};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    PG_CHECK_MSG(pg_golden_cache_parse_size("X", good[i].text, &b, &err) == PG_OK, "%s: %s",
                 good[i].text, err.message);
    PG_CHECK_MSG(b == good[i].want, "%s -> %llu", good[i].text, (unsigned long long)b);
  }
  const char *bad[] = {"", "abc", "-1", "1.5G", "1 G", "2Q", "G", "10KK", "5iB", " 5",
                       "99999999999999999999", "17179869184G"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    pg_error_clear(&err);
    b = 42;
    PG_CHECK_MSG(pg_golden_cache_parse_size("--max-bytes", bad[i], &b, &err) == PG_EINVAL,
                 "'%s' accepted", bad[i]);
    PG_CHECK_MSG(strncmp(err.message, "--max-bytes: '", 14) == 0 && strstr(err.message, bad[i]),
                 "'%s': %s", bad[i], err.message);
    PG_CHECK(b == 42); /* untouched on error */
  }
}

PG_TEST(max_from_environment) {
  struct pg_error err;
  uint64_t b;
  unsetenv("PHASEGATE_CACHE_MAX_BYTES");
  PG_CHECK_OK(pg_golden_cache_max_default(&b, &err));
  PG_CHECK(b == PG_GOLDEN_CACHE_MAX_DEFAULT && b == (2ull << 30));
  setenv("PHASEGATE_CACHE_MAX_BYTES", "", 1);
  PG_CHECK_OK(pg_golden_cache_max_default(&b, &err));
  PG_CHECK(b == PG_GOLDEN_CACHE_MAX_DEFAULT);
  setenv("PHASEGATE_CACHE_MAX_BYTES", "512M", 1);
  PG_CHECK_OK(pg_golden_cache_max_default(&b, &err));
  PG_CHECK(b == 512ull << 20);
  setenv("PHASEGATE_CACHE_MAX_BYTES", "0", 1);
  PG_CHECK_OK(pg_golden_cache_max_default(&b, &err));
  PG_CHECK(b == 0);
  setenv("PHASEGATE_CACHE_MAX_BYTES", "lots", 1);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_max_default(&b, &err));
  PG_CHECK(strstr(err.message, "PHASEGATE_CACHE_MAX_BYTES: 'lots' is not a size"));
  /* a store with a bad setting still stores (default cap) but reports the setting */
  char dir[4096], hex[65];
  cache_dir(dir, sizeof dir, "badenv");
  key_hex(1, hex);
  struct pg_tensor t;
  make_tensor(&t, 1);
  pg_error_clear(&err);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_golden_cache_store(dir, hex, &t, 1, &err));
  PG_CHECK(strstr(err.message, "PHASEGATE_CACHE_MAX_BYTES"));
  PG_CHECK_EQ_INT(0, read_back(dir, 1));
  /* 0 = unlimited: no bookkeeping file at all */
  setenv("PHASEGATE_CACHE_MAX_BYTES", "0", 1);
  cache_dir(dir, sizeof dir, "unlimited");
  PG_CHECK_OK(pg_golden_cache_store(dir, hex, &t, 1, &err));
  PG_CHECK(!exists(dir, ".index"));
  unsetenv("PHASEGATE_CACHE_MAX_BYTES");
  pg_tensor_reset(&t);
}

PG_TEST(lru_order_and_hits_touch) {
  char dir[4096];
  cache_dir(dir, sizeof dir, "lru");
  uint64_t one = entry_size();
  PG_CHECK(one > NUMEL * 4 && one < NUMEL * 4 + 512);
  time_t base = time(NULL) - 1000;
  for (int i = 0; i < 5; i++) {
    store(dir, i, 0);
    set_entry_mtime(dir, i, base + 10 * i); /* 0 oldest .. 4 newest */
  }
  struct pg_golden_cache_stats st = info(dir);
  PG_CHECK(st.entries == 5 && st.bytes == 5 * one);
  /* a hit makes entry 0 the most recently used */
  PG_CHECK_EQ_INT(0, read_back(dir, 0));
  char hex[65], path[4200];
  struct stat sb;
  key_hex(0, hex);
  snprintf(path, sizeof path, "%s/%s", dir, hex);
  PG_CHECK(stat(path, &sb) == 0 && sb.st_mtim.tv_sec >= base + 990);
  /* prune to three entries: 1 and 2, the least recently used, go */
  struct pg_error err;
  PG_CHECK_OK(pg_golden_cache_prune(dir, 3 * one, &st, &err));
  PG_CHECK(st.evicted == 2 && st.evicted_bytes == 2 * one && st.entries == 3 && st.bytes == 3 * one);
  PG_CHECK(entry_exists(dir, 0) && !entry_exists(dir, 1) && !entry_exists(dir, 2));
  PG_CHECK(entry_exists(dir, 3) && entry_exists(dir, 4));
  PG_CHECK_EQ_INT(1, read_back(dir, 1)); /* evicted: a miss */
  PG_CHECK_EQ_INT(0, read_back(dir, 4));
  /* nothing is left half-deleted */
  st = info(dir);
  PG_CHECK(st.trash_dirs == 0 && st.tmp_dirs == 0);
  /* no eviction needed: prune changes nothing */
  PG_CHECK_OK(pg_golden_cache_prune(dir, 3 * one, &st, &err));
  PG_CHECK(st.evicted == 0 && st.entries == 3);
  PG_CHECK_OK(pg_golden_cache_prune(dir, UINT64_MAX, &st, &err));
  PG_CHECK(st.evicted == 0 && st.entries == 3);
}

PG_TEST(cap_respected_on_store) {
  char dir[4096];
  cache_dir(dir, sizeof dir, "cap");
  uint64_t one = entry_size();
  uint64_t cap = 4 * one + one / 2; /* 4 entries fit, 90 % of it holds 4 (4.05 > 4) */
  time_t base = time(NULL) - 1000;
  for (int i = 0; i < 12; i++) {
    store(dir, i, cap);
    set_entry_mtime(dir, i, base + i);
    struct pg_golden_cache_stats st = info(dir);
    PG_CHECK_MSG(st.bytes <= cap, "after store %d: %llu bytes > cap %llu", i,
                 (unsigned long long)st.bytes, (unsigned long long)cap);
    PG_CHECK_MSG(st.entries == (uint64_t)(i < 4 ? i + 1 : 4), "after store %d: %llu entries", i,
                 (unsigned long long)st.entries);
    /* the survivors are the most recent stores */
    for (int j = 0; j <= i; j++)
      PG_CHECK_MSG(entry_exists(dir, j) == (j > i - 4), "after store %d: entry %d", i, j);
  }
  /* touching the oldest survivor (8) protects it from the next eviction; 9 goes */
  PG_CHECK_EQ_INT(0, read_back(dir, 8));
  store(dir, 12, cap);
  PG_CHECK(entry_exists(dir, 8) && !entry_exists(dir, 9) && entry_exists(dir, 12));
  /* a cap smaller than one entry: the cache empties itself rather than exceed it */
  store(dir, 13, one / 2);
  PG_CHECK(info(dir).bytes == 0);
}

PG_TEST(estimate_spares_rescans) {
  char dir[4096], old_tmp[4400];
  cache_dir(dir, sizeof dir, "estimate");
  uint64_t one = entry_size();
  uint64_t cap = 3 * one;
  store(dir, 0, cap); /* no estimate yet: this store scans once and writes it */
  PG_CHECK(exists(dir, ".index"));
  /* a killed writer's temporary dir, two hours old: only a scan removes it */
  snprintf(old_tmp, sizeof old_tmp, "%s/.tmp-killed-writer", dir);
  PG_CHECK(mkdir(old_tmp, 0777) == 0);
  set_mtime(old_tmp, time(NULL) - 7200);
  store(dir, 1, cap);
  store(dir, 2, cap);
  PG_CHECK_MSG(exists(dir, ".tmp-killed-writer"), "a store under the cap rescanned the cache");
  store(dir, 3, cap); /* the estimate crosses the cap: rescan, evict, clean */
  PG_CHECK(!exists(dir, ".tmp-killed-writer"));
  struct pg_golden_cache_stats st = info(dir);
  PG_CHECK(st.bytes <= cap * 9 / 10 && st.entries == 2);
  /* a damaged index only costs a rescan */
  char idx[4400];
  snprintf(idx, sizeof idx, "%s/.index", dir);
  FILE *f = fopen(idx, "w");
  PG_CHECK(f != NULL);
  fputs("garbage", f);
  fclose(f);
  store(dir, 4, cap);
  st = info(dir);
  PG_CHECK(st.bytes <= cap && st.entries == 3);
}

/* Under the cap a store still rescans once a day: a killed writer's .tmp-* goes and an
 * estimate that drifted (entries deleted by hand) is corrected. */
PG_TEST(daily_rescan) {
  char dir[4096], p[4400];
  cache_dir(dir, sizeof dir, "daily");
  uint64_t one = entry_size();
  uint64_t cap = 100 * one;
  store(dir, 0, cap);
  snprintf(p, sizeof p, "%s/.tmp-killed-writer", dir);
  PG_CHECK(mkdir(p, 0777) == 0);
  set_mtime(p, time(NULL) - 7200);
  store(dir, 1, cap); /* scanned a moment ago: no rescan */
  PG_CHECK(exists(dir, ".tmp-killed-writer"));
  /* the same estimate, last scanned two days ago (and 50 entries too high) */
  snprintf(p, sizeof p, "%s/.index", dir);
  FILE *f = fopen(p, "w");
  PG_CHECK(f != NULL);
  fprintf(f, "phasegate-golden-cache-index 2\nbytes %020llu\nscanned %020lld\n",
          (unsigned long long)(52 * one), (long long)time(NULL) - 2 * PG_GOLDEN_CACHE_RESCAN_S);
  fclose(f);
  store(dir, 2, cap);
  PG_CHECK(!exists(dir, ".tmp-killed-writer"));
  f = fopen(p, "r");
  PG_CHECK(f != NULL);
  unsigned long long b = 0;
  long long t = 0;
  PG_CHECK(fscanf(f, "phasegate-golden-cache-index 2 bytes %llu scanned %lld", &b, &t) == 2);
  fclose(f);
  PG_CHECK_MSG(b == 3 * one, "estimate %llu, want %llu", b, (unsigned long long)(3 * one));
  PG_CHECK(t >= (long long)time(NULL) - 60);
  PG_CHECK(entry_exists(dir, 0) && entry_exists(dir, 1) && entry_exists(dir, 2));
}

PG_TEST(stale_tmp_and_clear) {
  char dir[4096], p[4400];
  cache_dir(dir, sizeof dir, "stale");
  for (int i = 0; i < 3; i++) store(dir, i, 0);
  const char *dirs[] = {".tmp-young", ".tmp-old", ".trash-interrupted"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
    PG_CHECK(mkdir(p, 0777) == 0);
  }
  snprintf(p, sizeof p, "%s/.trash-interrupted/x.npy", dir);
  FILE *f = fopen(p, "w");
  PG_CHECK(f != NULL);
  fputs("half deleted", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/.tmp-old", dir);
  set_mtime(p, time(NULL) - PG_GOLDEN_CACHE_TMP_MAX_AGE_S - 60);
  snprintf(p, sizeof p, "%s/.tmp-young", dir);
  set_mtime(p, time(NULL) - PG_GOLDEN_CACHE_TMP_MAX_AGE_S + 300);
  struct pg_golden_cache_stats st = info(dir);
  PG_CHECK(st.entries == 3 && st.tmp_dirs == 2 && st.trash_dirs == 1);
  struct pg_error err;
  PG_CHECK_OK(pg_golden_cache_prune(dir, UINT64_MAX, &st, &err));
  PG_CHECK(st.stale_removed == 2 && st.evicted == 0 && st.entries == 3 && st.tmp_dirs == 1);
  PG_CHECK(exists(dir, ".tmp-young") && !exists(dir, ".tmp-old") && !exists(dir, ".trash-interrupted"));
  PG_CHECK_OK(pg_golden_cache_clear(dir, &st, &err));
  PG_CHECK(st.evicted == 3 && st.entries == 0 && st.bytes == 0);
  PG_CHECK(exists(dir, ".tmp-young")); /* a writer may still be filling it */
  st = info(dir);
  PG_CHECK(st.entries == 0 && st.tmp_dirs == 1 && st.trash_dirs == 0);
  PG_CHECK_EQ_INT(1, read_back(dir, 0));
  /* a missing cache is an empty one */
  snprintf(p, sizeof p, "%s/never-created", pg_test_tmpdir());
  st = info(p);
  PG_CHECK(st.entries == 0 && st.bytes == 0);
  PG_CHECK_OK(pg_golden_cache_prune(p, 0, &st, &err));
  PG_CHECK_OK(pg_golden_cache_clear(p, &st, &err));
  PG_CHECK(!exists(pg_test_tmpdir(), "never-created"));
}

/* Four processes for ~1 s over 10 keys with room for 3 entries: each stores, reads
 * and (one of them) prunes to almost nothing. A read is a miss or exactly the right
 * tensor; afterwards nothing is left in flight. */
PG_TEST(concurrent_store_evict_lookup) {
  char dir[4096];
  cache_dir(dir, sizeof dir, "race");
  uint64_t one = entry_size();
  uint64_t cap = 3 * one;
  enum { PROCS = 4, KEYS = 10 };
  pid_t kids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    kids[p] = fork();
    PG_CHECK(kids[p] >= 0);
    if (kids[p] == 0) {
      unsigned seed = 0x9e3779b9u * (unsigned)(p + 1);
      struct timespec t0, t;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      int bad = 0, hits = 0;
      struct pg_tensor put[KEYS];
      for (int k = 0; k < KEYS; k++) make_tensor(&put[k], k);
      for (int it = 0;; it++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 1000) break;
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 16) % KEYS);
        char hex[65];
        key_hex(k, hex);
        struct pg_error err;
        int rc = pg_golden_cache_store_capped(dir, hex, &put[k], 1, cap, &err);
        if (rc != PG_OK) bad |= 1;
        for (int r = 0; r < 3; r++) {
          seed = seed * 1103515245u + 12345u;
          int got = read_back(dir, (int)((seed >> 16) % KEYS));
          if (got < 0) bad |= 2;
          hits += got == 0;
        }
        if (p == 0 && it % 4 == 0 && pg_golden_cache_prune(dir, one, NULL, &err) != PG_OK)
          bad |= 4;
      }
      for (int k = 0; k < KEYS; k++) pg_tensor_reset(&put[k]);
      _exit(bad ? bad : hits > 0 ? 0 : 8);
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int status = 0;
    PG_CHECK(waitpid(kids[p], &status, 0) == kids[p]);
    PG_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "process %d: status %d (1 store failed, 2 wrong/partial read, 4 prune failed, "
                 "8 never hit)", p, WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
  }
  struct pg_golden_cache_stats st = info(dir);
  PG_CHECK_MSG(st.tmp_dirs == 0 && st.trash_dirs == 0, "%llu .tmp, %llu .trash left",
               (unsigned long long)st.tmp_dirs, (unsigned long long)st.trash_dirs);
  PG_CHECK(st.bytes <= cap);
  for (int k = 0; k < KEYS; k++) PG_CHECK(read_back(dir, k) >= 0);
}
