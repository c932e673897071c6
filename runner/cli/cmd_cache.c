/* phasegate cache — inspects and trims the on-disk golden cache (docs/goldens.md,
 * "The golden cache"; runner/run/golden_cache.h).
 *
 *   phasegate cache info  [--dir DIR]
 *   phasegate cache prune [--dir DIR] [--max-bytes N]
 *   phasegate cache clear [--dir DIR]
 *
 * Exit 0 on success, 2 on a usage error, a bad size or an unusable cache directory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "run/run.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate cache info|prune|clear [options]\n"
          "\n"
          "The golden cache keeps cumulative-golden outputs between runs (docs/goldens.md).\n"
          "  info    where it is, how many entries and bytes it holds, the size cap\n"
          "  prune   delete stale temporary directories and evict least-recently-used\n"
          "          entries until the cache holds at most the cap (or --max-bytes)\n"
          "  clear   evict every entry\n"
          "\n"
          "options:\n"
          "  --dir DIR        the cache directory (default: $PHASEGATE_CACHE_DIR, else\n"
          "                   $XDG_CACHE_HOME/phasegate, else ~/.cache/phasegate)\n"
          "  --max-bytes N    prune: the size to trim to (default: the cap); a byte count\n"
          "                   with an optional K, M, G or T suffix (powers of 1024)\n"
          "\n"
          "The cap is PHASEGATE_CACHE_MAX_BYTES (default 2G, 0 = unlimited); every run that\n"
          "stores a golden keeps the cache under it by evicting least-recently-used entries.\n"
          "Exit codes: 0 done, 2 error (usage, bad size, unusable cache directory).\n");
}

static void human(uint64_t b, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%" PRIu64 " B", b);
  else
    snprintf(buf, size, "%.1f %s", v, units[u]);
}

int pg_cmd_cache(int argc, char **argv) {
  const char *action = NULL, *dir_opt = NULL, *max_opt = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return PG_EXIT_PASS;
    }
    if (strcmp(a, "--dir") == 0 || strcmp(a, "--max-bytes") == 0) {
      if (i + 1 >= argc) return pg_cli_usage_error("cache", "%s needs a value", a);
      *(strcmp(a, "--dir") == 0 ? &dir_opt : &max_opt) = argv[++i];
      continue;
    }
    if (a[0] == '-') return pg_cli_usage_error("cache", "unknown option '%s' (see --help)", a);
    if (action)
      return pg_cli_usage_error("cache", "one action only, got '%s' after '%s'", a, action);
    action = a;
  }
  if (!action) return pg_cli_usage_error("cache", "missing action: info, prune or clear (see --help)");
  int is_info = strcmp(action, "info") == 0, is_prune = strcmp(action, "prune") == 0,
      is_clear = strcmp(action, "clear") == 0;
  if (!is_info && !is_prune && !is_clear)
    return pg_cli_usage_error("cache", "unknown action '%s': expected info, prune or clear",
                              action);
  if (max_opt && !is_prune)
    return pg_cli_usage_error("cache", "--max-bytes applies to 'prune' only");

  struct pg_error err;
  pg_error_clear(&err);
  uint64_t cap, max_bytes = 0;
  if (pg_golden_cache_max_default(&cap, &err) != PG_OK)
    return pg_cli_usage_error("cache", "%s", err.message);
  if (max_opt && pg_golden_cache_parse_size("--max-bytes", max_opt, &max_bytes, &err) != PG_OK)
    return pg_cli_usage_error("cache", "%s", err.message);
  char dir[4096];
  if (dir_opt) {
    if (!*dir_opt) return pg_cli_usage_error("cache", "--dir needs a non-empty directory");
    snprintf(dir, sizeof dir, "%s", dir_opt);
  } else if (pg_golden_cache_dir_default(dir, sizeof dir, &err) != PG_OK) {
    return pg_cli_usage_error("cache", "%s", err.message);
  }

  struct pg_golden_cache_stats st;
  char hb[64], hc[64];
  int rc;
  if (is_info) {
    rc = pg_golden_cache_info(dir, &st, &err);
  } else if (is_clear) {
    rc = pg_golden_cache_clear(dir, &st, &err);
  } else {
    /* --max-bytes 0 means "trim to nothing", as asked; the cap 0 means unlimited */
    uint64_t target = max_opt ? max_bytes : cap ? cap : UINT64_MAX;
    rc = pg_golden_cache_prune(dir, target, &st, &err);
  }
  if (rc != PG_OK) return pg_cli_usage_error("cache", "%s", err.message);
  human(st.bytes, hb, sizeof hb);
  if (is_info) {
    human(cap, hc, sizeof hc);
    printf("cache dir: %s\n", dir);
    printf("entries:   %" PRIu64 "\n", st.entries);
    printf("bytes:     %" PRIu64 " (%s)\n", st.bytes, hb);
    if (cap)
      printf("cap:       %" PRIu64 " (%s)\n", cap, hc);
    else
      printf("cap:       unlimited\n");
    printf("in flight: %" PRIu64 " .tmp-*, %" PRIu64 " .trash-*\n", st.tmp_dirs, st.trash_dirs);
    return PG_EXIT_PASS;
  }
  char he[64];
  human(st.evicted_bytes, he, sizeof he);
  printf("%s: evicted %" PRIu64 " entries (%s), removed %" PRIu64
         " stale temporary directories; %" PRIu64 " entries (%s) remain in %s\n",
         action, st.evicted, he, st.stale_removed, st.entries, hb, dir);
  return PG_EXIT_PASS;
}
