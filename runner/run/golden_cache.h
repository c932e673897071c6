/* phasegate runner — the on-disk golden cache (docs/design.md §5): cumulative-golden
 * boundary outputs stored as .npy under a directory named by a SHA-256 of everything
 * they depend on, so re-running a case after an impl fix only re-runs the impl.
 *
 * Layout: <cache dir>/<64 hex digits>/{MANIFEST, <output name>.npy…}. An entry is
 * written into a private temporary directory and renamed into place, so readers see
 * either nothing or a complete entry, and any number of processes may fill the cache
 * at once (the first rename wins; later writers discard their copy). A damaged entry
 * reads as a miss.
 *
 * Size cap: every hit touches its entry directory (mtime = last use), and every store
 * adds the entry's bytes to an approximate total kept in <cache dir>/.index (updated
 * under flock). When that estimate crosses the cap (PHASEGATE_CACHE_MAX_BYTES, default
 * 2 GiB, 0 = unlimited), or a day after the last scan, the store rescans the cache and
 * evicts least-recently-used entries until it is under 90 % of the cap. Eviction renames an entry to .trash-* and
 * then deletes it, so a reader sees a complete entry or a miss, never a mix; .tmp-*
 * directories of killed writers are deleted once they are an hour old.
 *
 * Typical use (the runner):
 *
 *   struct pg_golden_cache_key key = {contract_path, golden_lib_path, cs->json, &dims,
 *                                     k, precision_bits, PG_VERSION_STRING};
 *   char dir[4096], hash[PG_GOLDEN_CACHE_HASH_LEN + 1];
 *   pg_golden_cache_dir_default(dir, sizeof dir, err);
 *   pg_golden_cache_key_hash(&key, hash, err);
 *   if (pg_golden_cache_lookup(dir, hash, names, n, outputs, err) == PG_ENOTFOUND) {
 *     pg_golden_cumulative(...);
 *     pg_golden_cache_store(dir, hash, outputs, n, err);   (a failure here is not fatal)
 *   }
 */
#ifndef PHASEGATE_GOLDEN_CACHE_H
#define PHASEGATE_GOLDEN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/error.h"
#include "opdir/opdir.h"
#include "phasegate/tensor.h"

#define PG_GOLDEN_CACHE_HASH_LEN 64

/* What a cached golden depends on. Files are hashed by content: the contract's bytes,
 * and the golden library's bytes (so a rebuild that changes nothing still hits). */
struct pg_golden_cache_key {
  const char *contract_path;          /* required */
  const char *golden_lib_path;        /* NULL: no golden library */
  const char *case_json;              /* the case as written (carries seed, fills, dtypes);
                                         NULL for none */
  const struct pg_bindings *dims;     /* bound dims (order does not matter) */
  int phase;                          /* k */
  int precision_bits;                 /* 32 or 64 */
  const char *version;                /* phasegate version string */
  /* A phase computed by a Python golden (docs/design.md §5): the file (hashed by content,
   * so an edited golden is computed again), its function and the interpreter. NULL
   * file: a built-in golden. */
  const char *py_golden_path;
  const char *py_function;
  const char *python;
  /* The op's eval/test_inputs.py when make_inputs makes the inputs (hashed by content:
   * other input code, other inputs, another golden); NULL: phasegate's generator. */
  const char *test_inputs_path;
};

/* The key's SHA-256 as 64 lowercase hex digits + NUL into hex. PG_ENOENT / PG_EIO when
 * the contract or golden library cannot be read. */
int pg_golden_cache_key_hash(const struct pg_golden_cache_key *key,
                             char hex[PG_GOLDEN_CACHE_HASH_LEN + 1], struct pg_error *err);

/* The default cache directory: $PHASEGATE_CACHE_DIR, else $XDG_CACHE_HOME/phasegate,
 * else $HOME/.cache/phasegate. PG_ENOTFOUND when none of them is set. The directory
 * is not created here. */
int pg_golden_cache_dir_default(char *buf, size_t size, struct pg_error *err);

/* Looks up entry `hash`: on a hit touches the entry (LRU) and returns PG_OK with outputs[0..n) (initialised
 * tensors, reset by the caller) read from <dir>/<hash>/<names[i]>.npy; the entry must
 * hold exactly these n names. A miss or a damaged entry returns PG_ENOTFOUND with
 * the outputs reset. */
int pg_golden_cache_lookup(const char *dir, const char *hash, const char *const *names, int n,
                           struct pg_tensor *outputs, struct pg_error *err);

/* Stores outputs[0..n) (named by their .name, which must be [A-Za-z0-9_.-]+) as entry
 * `hash`, creating dir if needed. Atomic; PG_OK also when another process stored the
 * same entry first. Then enforces the cap of pg_golden_cache_max_default() (see
 * above); a bad PHASEGATE_CACHE_MAX_BYTES returns PG_EINVAL after storing with the
 * default cap. */
int pg_golden_cache_store(const char *dir, const char *hash, const struct pg_tensor *outputs,
                          int n, struct pg_error *err);

/* A small text file `name` (upper-case letters; never a tensor's "<name>.npy") beside
 * the tensors of entry `hash`, for what depends on exactly the entry's key (suite
 * strength). Read: *text malloc'd, NUL-terminated, at most 1 MiB; PG_ENOTFOUND when
 * the entry or the file is absent. Write: atomic (a private temporary file renamed
 * into the entry); PG_ENOTFOUND when the entry is absent (then nothing is written). */
int pg_golden_cache_meta_read(const char *dir, const char *hash, const char *name, char **text,
                              struct pg_error *err);
int pg_golden_cache_meta_write(const char *dir, const char *hash, const char *name,
                               const char *text, struct pg_error *err);

/* The default cap when PHASEGATE_CACHE_MAX_BYTES is unset: 2 GiB. */
#define PG_GOLDEN_CACHE_MAX_DEFAULT (UINT64_C(2) << 30)
/* .tmp-* directories younger than this belong to a writer that may still be running. */
#define PG_GOLDEN_CACHE_TMP_MAX_AGE_S 3600
/* A store rescans the cache when the estimate crosses the cap, and at least this often
 * (so stale .tmp-* go and the estimate is corrected even when the cap is never hit). */
#define PG_GOLDEN_CACHE_RESCAN_S 86400

/* Parses a size: decimal digits, optionally followed by K, M, G or T (powers of 1024,
 * case-insensitive, optionally with "B" or "iB" after them) or B. "0" means unlimited.
 * `what` names the setting in the error ("PHASEGATE_CACHE_MAX_BYTES", "--max-bytes").
 * PG_EINVAL with "<what>: '<text>' is not a size (...)" otherwise. */
int pg_golden_cache_parse_size(const char *what, const char *text, uint64_t *bytes,
                               struct pg_error *err);

/* The cap in force: PHASEGATE_CACHE_MAX_BYTES parsed, or PG_GOLDEN_CACHE_MAX_DEFAULT
 * when it is unset or empty. PG_EINVAL (with the default in *bytes) when it is bad. */
int pg_golden_cache_max_default(uint64_t *bytes, struct pg_error *err);

/* What is in a cache directory. */
struct pg_golden_cache_stats {
  uint64_t entries;     /* complete entries (<64 hex>/) */
  uint64_t bytes;       /* their file sizes, summed */
  uint64_t tmp_dirs;    /* .tmp-* (writers in flight, or left by killed ones) */
  uint64_t trash_dirs;  /* .trash-* (evictions in flight, or interrupted) */
  uint64_t evicted;     /* prune/clear: entries removed */
  uint64_t evicted_bytes;
  uint64_t stale_removed; /* prune/clear: old .tmp-* and .trash-* directories removed */
};

/* Counts entries and bytes under dir (no changes). A missing dir is an empty cache. */
int pg_golden_cache_info(const char *dir, struct pg_golden_cache_stats *st, struct pg_error *err);

/* Under the cache lock: deletes .trash-* and .tmp-* older than an hour, then evicts
 * least-recently-used entries until at most target_bytes remain (UINT64_MAX: no
 * eviction), and resets the size estimate. st (may be NULL) receives what remains
 * and what was removed. A missing dir is an empty cache. */
int pg_golden_cache_prune(const char *dir, uint64_t target_bytes,
                          struct pg_golden_cache_stats *st, struct pg_error *err);

/* Evicts every entry and deletes stale .tmp-* and every .trash-* directory; the
 * .tmp-* directories of writers that may still run stay. */
int pg_golden_cache_clear(const char *dir, struct pg_golden_cache_stats *st, struct pg_error *err);

/* pg_golden_cache_store with an explicit cap (0 = unlimited) instead of the
 * environment's. */
int pg_golden_cache_store_capped(const char *dir, const char *hash,
                                 const struct pg_tensor *outputs, int n, uint64_t max_bytes,
                                 struct pg_error *err);

/* SHA-256, exposed for tests and other content hashes. */
struct pg_sha256 {
  uint32_t h[8];
  uint64_t len;
  unsigned char buf[64];
  size_t used;
};
void pg_sha256_init(struct pg_sha256 *s);
void pg_sha256_update(struct pg_sha256 *s, const void *data, size_t n);
void pg_sha256_final(struct pg_sha256 *s, unsigned char out[32]);

#endif
