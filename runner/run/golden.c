/* phasegate runner — the cumulative golden of a case (docs/design.md §5): computed by the
 * goldens library, through the on-disk cache (run/golden_cache.h) keyed once here by
 * (contract, golden library, case, phase, reference precision, version), and the
 * OpenBLAS preload that takes the library's load off the golden's critical path.
 * pg_case_golden is the step `phasegate selftest` shares. No files of its own, no
 * verdicts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/golden_cache.h"
#include "run/run_internal.h"
#include "phasegate/goldens.h"

void pg__golden_env_init(struct pg_golden_env *env, const struct pg_golden_opts *g,
                         const struct pg_case *cs, const struct pg_case_data *d) {
  memset(env, 0, sizeof *env);
  env->plan = g->plan;
  env->dims = &d->dims;
  env->dtype_overrides = cs->dtypes;
  env->n_dtype_overrides = cs->n_dtypes;
  env->precision_bits = g->precision_bits == 64 ? 64 : 32;
  env->golden_lib = g->golden_lib;
  env->n_threads = g->n_threads;
}

int pg_case_golden(const struct pg_case_data *d, const struct pg_contract *c,
                   const struct pg_case *cs, const struct pg_golden_opts *g, int k,
                   struct pg_tensor *out, int *n_out, struct pg_error *err) {
  struct pg_golden_env env;
  pg__golden_env_init(&env, g, cs, d);
  *n_out = 0;
  enum pg_phase_golden src = g->source ? g->source : pg_contract_phase_golden(c, k);
  if (src == PG_PHASE_GOLDEN_PYTHON) {
    if (!g->py) return pg_error_set(err, PG_EINVAL, "golden %d is a Python golden, but no Python "
                                    "worker was given", k);
    return pg_py_golden_call(g->py, c, k, cs, d, out, n_out, err);
  }
  if (src == PG_PHASE_GOLDEN_NONE) {
    char why[768];
    pg_contract_no_golden_reason(c, k, why, sizeof why);
    return pg_error_set(err, PG_ENOTFOUND, "%s", why);
  }
  if (k == 0) return pg_golden_op_level(&env, d->inputs, c->n_primary, out, n_out, err);
  return pg_golden_cumulative(&env, k, d->inputs, c->n_primary, out, n_out, err);
}

/* ------------------------------------------------------------------ the cache */

/* The golden that judges phase k: cumulative golden k, or under --e2e the op-level
 * golden (0) for the run's phase N (docs/pypto.md "The end-to-end check"). */
static int golden_phase(const struct pg__run *rc, int k) {
  return rc->o->e2e && k == rc->k ? 0 : k;
}

/* The cache key of cumulative golden k of a case: 1 with hash filled, 0 when the cache
 * is off or the key cannot be computed (then the golden is computed, not cached). */
static int cache_key(const struct pg__run *rc, int k, const struct pg_case *cs,
                     const struct pg_bindings *dims, char hash[PG_GOLDEN_CACHE_HASH_LEN + 1]) {
  const struct pg_run_opts *o = rc->o;
  hash[0] = '\0';
  if (!rc->cache_dir) return 0;
  k = golden_phase(rc, k);
  const struct pg_py_golden *py =
      pg_contract_phase_golden(&rc->contract, k) == PG_PHASE_GOLDEN_PYTHON
          ? pg_contract_py_golden(&rc->contract, k) : NULL;
  const char *python = pg_python_interpreter(o->python);
  struct pg_golden_cache_key key = {rc->contract_path, o->golden_lib, cs->json, dims, k,
                                    o->reference_bits == 64 ? 64 : 32,
                                    o->tool_version ? o->tool_version : "0",
                                    py ? py->file : NULL, py ? py->function : NULL,
                                    python, rc->contract.test_inputs};
  struct pg_error e;
  pg_error_clear(&e);
  return pg_golden_cache_key_hash(&key, hash, &e) == PG_OK && hash[0];
}

static int cache_lookup(const struct pg__run *rc, const char *hash,
                        const struct pg_impl_output_spec *specs, int n_out,
                        struct pg_tensor *goldens) {
  const char *names[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < n_out; i++) names[i] = specs[i].name;
  struct pg_error e;
  pg_error_clear(&e);
  return pg_golden_cache_lookup(rc->cache_dir, hash, names, n_out, goldens, &e) == PG_OK;
}

int pg__golden_cached(struct pg__run *rc, int k, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_impl_output_spec *specs,
                      int n_out, struct pg_tensor *goldens) {
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1];
  return cache_key(rc, k, cs, dims, hash) && cache_lookup(rc, hash, specs, n_out, goldens);
}

int pg__golden(struct pg__run *rc, int k, const struct pg_case *cs, const struct pg_case_data *d,
               const struct pg_impl_output_spec *specs, int n_out, int n_threads,
               struct pg_tensor *goldens, int *cached, struct pg_error *err) {
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1];
  int keyed = cache_key(rc, k, cs, &d->dims, hash);
  *cached = keyed && cache_lookup(rc, hash, specs, n_out, goldens);
  if (*cached) return PG_OK;
  struct pg_golden_opts g = {rc->plan, rc->o->reference_bits, rc->golden_lib, n_threads,
                             rc->py, PG_PHASE_GOLDEN_NONE};
  struct pg_tensor tmp[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&tmp[i]);
  int n = 0;
  int r = pg_case_golden(d, &rc->contract, cs, &g, golden_phase(rc, k), tmp, &n, err);
  if (r == PG_OK && n != n_out)
    r = pg_error_set(err, PG_EINTERNAL, "cumulative golden %d produced %d outputs, expected %d",
                     k, n, n_out);
  if (r == PG_OK) {
    for (int i = 0; i < n_out; i++) {
      pg_tensor_move(&goldens[i], &tmp[i]);
      pg_tensor_set_name(&goldens[i], specs[i].name);
    }
    if (keyed) {
      struct pg_error e;
      pg_error_clear(&e);
      pg_golden_cache_store(rc->cache_dir, hash, goldens, n_out, &e); /* best effort */
    }
  }
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&tmp[i]);
  return r;
}

/* ------------------------------------------------------------------ suite strength */

/* Suite strength depends on exactly what the golden does (contract, with its
 * tolerances; case, with its own; phase; precision; phasegate itself), never on the
 * impl: it is kept as STRENGTH in the golden's entry. Text: "phasegate-strength 1",
 * then per output judged "output <i> <n>" and its n undetected-mutant lines. */
int pg__strength_cached(const struct pg__run *rc, int k, const struct pg_case *cs,
                        const struct pg_bindings *dims, const int *want, int n_out,
                        struct pg_tensor_check *acc) {
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1], *text = NULL;
  struct pg_error e;
  pg_error_clear(&e);
  if (!cache_key(rc, k, cs, dims, hash) ||
      pg_golden_cache_meta_read(rc->cache_dir, hash, "STRENGTH", &text, &e) != PG_OK)
    return 0;
  int have[PG_IMPL_MAX_OUTPUTS] = {0}, ok = strncmp(text, "phasegate-strength 1\n", 21) == 0;
  char *p = text + (ok ? 21 : 0);
  while (ok && *p) {
    int i = -1, n = -1, used = 0;
    ok = sscanf(p, "output %d %d\n%n", &i, &n, &used) == 2 && used > 0 && i >= 0 &&
         i < n_out && n >= 0 && n <= PG_MAX_UNDETECTED && !have[i];
    if (!ok) break;
    p += used;
    have[i] = 1;
    acc[i].n_undetected = 0;
    for (int u = 0; ok && u < n; u++) {
      char *nl = strchr(p, '\n');
      ok = nl && nl - p < (long)sizeof acc[i].undetected[0];
      if (!ok) break;
      snprintf(acc[i].undetected[acc[i].n_undetected++], sizeof acc[i].undetected[0], "%.*s",
               (int)(nl - p), p);
      p = nl + 1;
    }
  }
  free(text);
  for (int i = 0; ok && i < n_out; i++) ok = !want[i] || have[i];
  if (!ok)
    for (int i = 0; i < n_out; i++) acc[i].n_undetected = 0;
  return ok;
}

void pg__strength_store(const struct pg__run *rc, int k, const struct pg_case *cs,
                        const struct pg_bindings *dims, const int *want, int n_out,
                        const struct pg_tensor_check *acc) {
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1];
  if (!cache_key(rc, k, cs, dims, hash)) return;
  size_t size = 64 + (size_t)n_out * (32 + PG_MAX_UNDETECTED * (sizeof acc[0].undetected[0] + 1));
  char *text = malloc(size);
  if (!text) return;
  size_t at = (size_t)snprintf(text, size, "phasegate-strength 1\n");
  for (int i = 0; i < n_out; i++) {
    if (!want[i]) continue;
    at += (size_t)snprintf(text + at, size - at, "output %d %d\n", i, acc[i].n_undetected);
    for (int u = 0; u < acc[i].n_undetected; u++)
      at += (size_t)snprintf(text + at, size - at, "%s\n", acc[i].undetected[u]);
  }
  struct pg_error e;
  pg_error_clear(&e);
  pg_golden_cache_meta_write(rc->cache_dir, hash, "STRENGTH", text, &e); /* best effort */
  free(text);
}

/* ------------------------------------------------------------------ OpenBLAS preload */

static void *preload_main(void *arg) {
  (void)arg;
  struct pg_error e;
  pg_goldens_preload_blas(&e); /* a failure shows up again, with its message, in matmul */
  return NULL;
}


/* Starts loading OpenBLAS on a helper thread (once per process) when the golden about
 * to be computed needs it: ~1.5 ms of dlopen and relocation that then overlaps input
 * generation instead of delaying the golden. */
void pg__blas_preload_start(struct pg__run *rc, int k) {
  if (rc->preloading || rc->blas_loaded || !pg_golden_plan_uses_kernel(rc->plan, k, "matmul")) return;
  rc->preloading = pthread_create(&rc->preload, NULL, preload_main, NULL) == 0;
  if (!rc->preloading) rc->blas_loaded = 1; /* no thread: matmul loads it when needed */
}

/* No thread may be inside dlopen (or OpenBLAS's constructor) when an impl child or a
 * --jobs worker is forked. */
void pg__blas_preload_join(struct pg__run *rc) {
  if (!rc->preloading) return;
  pthread_join(rc->preload, NULL);
  rc->preloading = 0;
  rc->blas_loaded = 1;
}
