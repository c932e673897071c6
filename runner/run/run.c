/* phasegate runner — run orchestration (see run.h): contract + suite, case selection,
 * inputs, cumulative goldens (cached), impl calls per mode through the adapters,
 * comparison of every boundary output, verdict aggregation, divergence fingerprint,
 * earliest failing boundary, console lines, and the merged phase report.
 *
 * Information barrier: console lines carry metrics and indices only; captured impl
 * output is passed through pg_redact_text() against the case's inputs and goldens
 * before it is stored or shown; report.c sanitizes every write.
 */
#include "run/run.h"
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/golden_cache.h"
#include "tensors/tensors.h"
#include "phasegate/goldens.h"
#include "phasegate/spec.h"
#include "report/report.h"
#include "tensors/tensors.h"

#define PG_MAX_MODES 16
#define PG_CAPTURE_KEEP (16u * 1024u) /* captured impl output kept per mode */
#define PG_REDACT_MIN_SIG_DIGITS 4
#define PG_REDACT_MAX_VALUES (16u * 1024u * 1024u)

/* ------------------------------------------------------------------ small helpers */

const char *pg_verdict_name(enum pg_verdict v) {
  switch (v) {
    case PG_VERDICT_PASS: return "PASS";
    case PG_VERDICT_FAIL: return "FAIL";
    case PG_VERDICT_ERROR: return "ERROR";
    default: return "SKIPPED";
  }
}

enum pg_verdict pg_verdict_parse(const char *s) {
  if (!s) return PG_VERDICT_SKIPPED;
  if (strcmp(s, "PASS") == 0) return PG_VERDICT_PASS;
  if (strcmp(s, "FAIL") == 0) return PG_VERDICT_FAIL;
  if (strcmp(s, "ERROR") == 0) return PG_VERDICT_ERROR;
  return PG_VERDICT_SKIPPED;
}

const char *pg_divergence_fingerprint(const enum pg_verdict *modes, int n) {
  int first = -1, last = -1, any_fail = 0, all_fail = 1;
  for (int i = 0; i < n; i++) {
    if (modes[i] == PG_VERDICT_SKIPPED) continue;
    if (first < 0) first = i;
    last = i;
    int f = modes[i] == PG_VERDICT_FAIL || modes[i] == PG_VERDICT_ERROR;
    any_fail |= f;
    all_fail &= f;
  }
  if (first < 0 || !any_fail) return "";
  if (all_fail) return "all_fail";
  int ff = modes[first] == PG_VERDICT_FAIL || modes[first] == PG_VERDICT_ERROR;
  int lf = modes[last] == PG_VERDICT_FAIL || modes[last] == PG_VERDICT_ERROR;
  if (!ff && lf) return "kernel_ok_npu_only";
  if (ff && !lf) return "ir_divergence";
  return "mixed";
}

void pg_case_result_reset(struct pg_case_result *r) {
  if (!r) return;
  for (int i = 0; i < r->n_modes; i++) {
    free(r->modes[i].tensors);
    free(r->modes[i].captured);
  }
  free(r->modes);
  free(r->repro);
  free(r->knobs_json);
  memset(r, 0, sizeof *r);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void emit(const struct pg_run_opts *o, int to_stderr, const char *fmt, ...) {
  if (!o->on_line) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  o->on_line(o->user, to_stderr, line);
}

/* Comma-separated list membership. */
static int in_list(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, item, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* ------------------------------------------------------------------ device id */

int pg_run_device_from_env(void) {
  const char *types = getenv("CTEST_RESOURCE_GROUP_0");
  if (!types || !*types) return -1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", types);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char var[320] = "CTEST_RESOURCE_GROUP_0_";
    size_t n = strlen(var);
    for (const char *c = t; *c && n + 1 < sizeof var; c++)
      var[n++] = (char)toupper((unsigned char)*c);
    var[n] = '\0';
    const char *v = getenv(var);
    const char *id = v ? strstr(v, "id:") : NULL;
    if (!id) continue;
    id += 3;
    while (*id && !isdigit((unsigned char)*id) && *id != ',' && *id != ';') id++;
    if (isdigit((unsigned char)*id)) return (int)strtol(id, NULL, 10);
  }
  return -1;
}

/* ------------------------------------------------------------------ redaction */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct value_set {
  double *v;
  size_t n;
  int built, too_big;
};

static void value_set_build(struct value_set *s, const struct pg_tensor *const *t, int n) {
  s->built = 1;
  size_t total = 0;
  for (int i = 0; i < n; i++)
    if (t[i] && t[i]->dl.data) total += (size_t)t[i]->numel;
  if (total > PG_REDACT_MAX_VALUES) {
    s->too_big = 1;
    return;
  }
  s->v = malloc((total ? total : 1) * sizeof *s->v);
  if (!s->v) {
    s->too_big = 1;
    return;
  }
  for (int i = 0; i < n; i++) {
    if (!t[i] || !t[i]->dl.data) continue;
    for (int64_t j = 0; j < t[i]->numel; j++) {
      double x = pg_load_f64(t[i]->dl.data, t[i]->dtype, (size_t)j);
      if (isfinite(x) && x != 0.0) s->v[s->n++] = fabs(x);
    }
  }
  qsort(s->v, s->n, sizeof *s->v, cmp_double);
}

static int value_set_has(const struct value_set *s, double v, double tol) {
  if (s->too_big) return 1;
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->v[mid] < v - tol) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n && s->v[lo] <= v + tol;
}

char *pg_redact_text(const char *text, const struct pg_tensor *const *tensors, int n) {
  if (!text) return NULL;
  size_t len = strlen(text);
  char *out = malloc(len * 3 + 16); /* "<redacted>" is at most ~3x a 4-char token */
  if (!out) return NULL;
  struct value_set set = {0};
  size_t o = 0, i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)text[i];
    int starts = isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]));
    int prev_ok = i == 0 || !(isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_' ||
                              text[i - 1] == '.');
    if (!starts || !prev_ok) {
      out[o++] = (char)c;
      i++;
      continue;
    }
    size_t j = i;
    int sig = 0, seen_nonzero = 0;
    while (j < len && (isdigit((unsigned char)text[j]) || text[j] == '.')) {
      if (isdigit((unsigned char)text[j])) {
        if (text[j] != '0') seen_nonzero = 1;
        if (seen_nonzero) sig++;
      }
      j++;
    }
    if (j < len && (text[j] == 'e' || text[j] == 'E')) {
      size_t k = j + 1;
      if (k < len && (text[k] == '+' || text[k] == '-')) k++;
      if (k < len && isdigit((unsigned char)text[k])) {
        while (k < len && isdigit((unsigned char)text[k])) k++;
        j = k;
      }
    }
    int redact = 0;
    if (sig >= PG_REDACT_MIN_SIG_DIGITS) {
      char num[128];
      size_t tl = j - i < sizeof num - 1 ? j - i : sizeof num - 1;
      memcpy(num, text + i, tl);
      num[tl] = '\0';
      double v = strtod(num, NULL);
      if (!set.built) value_set_build(&set, tensors, n);
      double rel = 0.5 * pow(10.0, 1 - sig);
      if (rel < 1e-7) rel = 1e-7;
      if (v != 0.0 && value_set_has(&set, v, v * rel)) redact = 1;
    }
    if (redact) {
      memcpy(out + o, "<redacted>", 10);
      o += 10;
    } else {
      memcpy(out + o, text + i, j - i);
      o += j - i;
    }
    i = j;
  }
  out[o] = '\0';
  free(set.v);
  return out;
}

/* ------------------------------------------------------------------ repro line */

static void append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (!*buf || *len + n + 1 > *cap) {
    size_t nc = (*cap ? *cap * 2 : 256) + n;
    char *nb = realloc(*buf, nc);
    if (!nb) return;
    *buf = nb;
    *cap = nc;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
}

static void append_quoted(char **buf, size_t *len, size_t *cap, const char *s) {
  int plain = *s != '\0';
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("_-./:=,@%+", *p))) plain = 0;
  append(buf, len, cap, " ");
  if (plain) {
    append(buf, len, cap, s);
    return;
  }
  append(buf, len, cap, "'");
  for (const char *p = s; *p; p++) {
    char one[2] = {*p, 0};
    append(buf, len, cap, *p == '\'' ? "'\\''" : one);
  }
  append(buf, len, cap, "'");
}

static char *make_repro(const struct pg_run_opts *o, const char *contract, const char *suite,
                        const char *case_id, const char *modes) {
  char *b = NULL;
  size_t len = 0, cap = 0;
  append(&b, &len, &cap, "");
  append_quoted(&b, &len, &cap, o->self_exe ? o->self_exe : "phasegate");
  memmove(b, b + 1, len); /* drop the leading space */
  len--;
  append_quoted(&b, &len, &cap, "run");
  if (o->op_dir && !o->contract_path) {
    append_quoted(&b, &len, &cap, "--op-dir");
    append_quoted(&b, &len, &cap, o->op_dir);
    if (o->suite_path) {
      append_quoted(&b, &len, &cap, "--suite");
      append_quoted(&b, &len, &cap, o->suite_path);
    }
  } else {
    append_quoted(&b, &len, &cap, "--contract");
    append_quoted(&b, &len, &cap, contract);
    append_quoted(&b, &len, &cap, "--suite");
    append_quoted(&b, &len, &cap, suite);
  }
  append_quoted(&b, &len, &cap, "--impl");
  append_quoted(&b, &len, &cap, o->impl_spec);
  char k[32];
  snprintf(k, sizeof k, "%d", o->up_to_module);
  append_quoted(&b, &len, &cap, "--up-to-module");
  append_quoted(&b, &len, &cap, k);
  append_quoted(&b, &len, &cap, "--case");
  append_quoted(&b, &len, &cap, case_id);
  append_quoted(&b, &len, &cap, "--modes");
  append_quoted(&b, &len, &cap, modes);
  if (o->golden_lib) {
    append_quoted(&b, &len, &cap, "--golden-lib");
    append_quoted(&b, &len, &cap, o->golden_lib);
  }
  if (o->reference_bits == 64) {
    append_quoted(&b, &len, &cap, "--reference-precision");
    append_quoted(&b, &len, &cap, "fp64");
  }
  if (o->golden_data) {
    append_quoted(&b, &len, &cap, "--golden-data");
    append_quoted(&b, &len, &cap, o->golden_data);
  }
  if (o->timeout_s > 0 && o->timeout_s != 120) {
    char t[64];
    snprintf(t, sizeof t, "%g", o->timeout_s);
    append_quoted(&b, &len, &cap, "--timeout");
    append_quoted(&b, &len, &cap, t);
  }
  if (o->max_bytes) {
    char t[64];
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->max_bytes);
    append_quoted(&b, &len, &cap, "--max-bytes");
    append_quoted(&b, &len, &cap, t);
  }
  if (o->rlimit_as) {
    char t[64];
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->rlimit_as);
    append_quoted(&b, &len, &cap, "--memory-limit");
    append_quoted(&b, &len, &cap, t);
  }
  /* the same report, so a re-run after a fix updates this case's entry */
  if (o->report_path) {
    append_quoted(&b, &len, &cap, "--report");
    append_quoted(&b, &len, &cap, o->report_path);
  } else if (o->report_dir) {
    append_quoted(&b, &len, &cap, "--report-dir");
    append_quoted(&b, &len, &cap, o->report_dir);
  }
  return b;
}

/* ------------------------------------------------------------------ run state */

struct run_ctx {
  const struct pg_run_opts *o;
  struct pg_contract contract;
  struct pg_suite suite;
  char contract_path[4096], suite_path[4096];
  struct pg_impl impl;
  struct pg_impl_probe probe; /* the impl's one-time check, started early */
  void *golden_lib;
  char modes_buf[1024];
  const char *modes[PG_MAX_MODES];
  int n_modes;
  int device_id;
  char cache_dir[4096];
  int use_cache;
  double timeout_s;
  int n_threads;   /* for the current case: 1 for small cases, 0 (all cores) otherwise */
  pthread_t preload; /* loads OpenBLAS while inputs are generated (see run_case) */
  int preloading, blas_loaded;
};

static void *preload_main(void *arg) {
  (void)arg;
  struct pg_error e;
  pg_goldens_preload_blas(&e); /* a failure shows up again, with its message, in matmul */
  return NULL;
}

/* 1 when a golden step of M1..Mk calls matmul (the kernel that loads OpenBLAS). */
static int uses_matmul(const struct pg_contract *c, int k) {
  for (int m = 0; m < c->n_modules && m < k; m++) {
    const struct pg_golden_spec *g = &c->modules[m].golden;
    if (g->kind != PG_GOLDEN_STEPS) continue;
    for (int i = 0; i < g->n_steps; i++)
      if (g->steps[i].text && strstr(g->steps[i].text, "matmul")) return 1;
  }
  return 0;
}

/* Starts loading OpenBLAS on a helper thread (once per process) when the golden about
 * to be computed needs it: ~1.5 ms of dlopen and relocation that then overlaps input
 * generation instead of delaying the golden. */
static void blas_preload_start(struct run_ctx *rc, int k) {
  if (rc->preloading || rc->blas_loaded || !uses_matmul(&rc->contract, k)) return;
  rc->preloading = pthread_create(&rc->preload, NULL, preload_main, NULL) == 0;
  if (!rc->preloading) rc->blas_loaded = 1; /* no thread: matmul loads it when needed */
}

/* Joins the helper. Called before every fork: no thread may be inside dlopen (or
 * OpenBLAS's constructor) when the impl child is forked. */
static void blas_preload_join(struct run_ctx *rc) {
  if (!rc->preloading) return;
  pthread_join(rc->preload, NULL);
  rc->preloading = 0;
  rc->blas_loaded = 1;
}

/* Below this many elements per case, worker threads cost more than they save (and
 * on a loaded machine each parallel region waits for a core). */
#define PG_SMALL_CASE_ELEMENTS (1 << 20)

/* Boundary output specs of phase k for a case. */
static int phase_outputs(struct run_ctx *rc, int k, const struct pg_case *cs,
                         const struct pg_bindings *dims, const struct pg_tensor_decl **decls,
                         struct pg_impl_output_spec *specs, struct pg_error *err) {
  int n = pg_contract_boundary(&rc->contract, k, decls, PG_IMPL_MAX_OUTPUTS, err);
  if (n < 0) return n;
  for (int i = 0; i < n; i++) {
    specs[i].name = decls[i]->name;
    specs[i].dtype = pg_case_dtype(cs, decls[i]);
    int rcode = pg_decl_shape(decls[i], dims, &specs[i].ndim, specs[i].shape, err);
    if (rcode != PG_OK) {
      pg_error_prefix(err, "output '%s': ", decls[i]->name);
      return rcode;
    }
  }
  return n;
}

/* Cumulative golden k, through the cache when enabled. */
static int compute_golden(struct run_ctx *rc, int k, const struct pg_case *cs,
                          const struct pg_bindings *dims, const struct pg_tensor *inputs,
                          const struct pg_impl_output_spec *specs, int n_out,
                          struct pg_tensor *goldens, int *cached, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1] = "";
  const char *names[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < n_out; i++) names[i] = specs[i].name;
  *cached = 0;
  if (rc->use_cache) {
    struct pg_golden_cache_key key = {rc->contract_path, o->golden_lib, cs->json, dims, k,
                                      o->reference_bits == 64 ? 64 : 32,
                                      o->tool_version ? o->tool_version : "0"};
    struct pg_error e;
    pg_error_clear(&e);
    if (pg_golden_cache_key_hash(&key, hash, &e) != PG_OK) hash[0] = '\0';
    if (hash[0] &&
        pg_golden_cache_lookup(rc->cache_dir, hash, names, n_out, goldens, &e) == PG_OK) {
      *cached = 1;
      return PG_OK;
    }
  }
  struct pg_golden_env env;
  memset(&env, 0, sizeof env);
  env.contract = &rc->contract;
  env.dims = dims;
  env.dtype_overrides = cs->dtypes;
  env.n_dtype_overrides = cs->n_dtypes;
  env.precision_bits = o->reference_bits == 64 ? 64 : 32;
  env.golden_lib = rc->golden_lib;
  env.n_threads = rc->n_threads;
  int n = 0;
  struct pg_tensor tmp[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&tmp[i]);
  int r = pg_golden_cumulative(&env, k, inputs, rc->contract.n_primary, tmp, &n, err);
  if (r == PG_OK && n != n_out)
    r = pg_error_set(err, PG_EINTERNAL, "cumulative golden %d produced %d outputs, expected %d",
                     k, n, n_out);
  if (r == PG_OK) {
    for (int i = 0; i < n_out; i++) {
      pg_tensor_move(&goldens[i], &tmp[i]);
      pg_tensor_set_name(&goldens[i], specs[i].name);
    }
    if (hash[0]) {
      struct pg_error e;
      pg_error_clear(&e);
      pg_golden_cache_store(rc->cache_dir, hash, goldens, n_out, &e); /* best effort */
    }
  }
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&tmp[i]);
  return r;
}

/* The cached cumulative golden k, if the cache is on and has it: 1 (goldens filled). */
static int golden_cache_hit(struct run_ctx *rc, int k, const struct pg_case *cs,
                            const struct pg_bindings *dims,
                            const struct pg_impl_output_spec *specs, int n_out,
                            struct pg_tensor *goldens) {
  const struct pg_run_opts *o = rc->o;
  if (!rc->use_cache) return 0;
  char hash[PG_GOLDEN_CACHE_HASH_LEN + 1] = "";
  const char *names[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < n_out; i++) names[i] = specs[i].name;
  struct pg_golden_cache_key key = {rc->contract_path, o->golden_lib, cs->json, dims, k,
                                    o->reference_bits == 64 ? 64 : 32,
                                    o->tool_version ? o->tool_version : "0"};
  struct pg_error e;
  pg_error_clear(&e);
  return pg_golden_cache_key_hash(&key, hash, &e) == PG_OK && hash[0] &&
         pg_golden_cache_lookup(rc->cache_dir, hash, names, n_out, goldens, &e) == PG_OK;
}

static void fill_request(struct run_ctx *rc, int k, const struct pg_case *cs,
                         const struct pg_bindings *dims, const char **dim_names,
                         int64_t *dim_values, char *suffix, size_t suffix_size,
                         const struct pg_tensor *inputs, const struct pg_impl_output_spec *specs,
                         int n_out, const char *mode, struct pg_impl_request *req) {
  memset(req, 0, sizeof *req);
  pg_phase_suffix(k, suffix, suffix_size);
  for (int i = 0; i < dims->count; i++) {
    dim_names[i] = dims->items[i].name;
    dim_values[i] = dims->items[i].value;
  }
  req->op = rc->contract.op;
  req->suffix = suffix;
  req->up_to_module = k;
  req->total_modules = rc->contract.n_modules;
  req->mode = mode;
  req->device_id = rc->device_id;
  req->case_id = cs->id;
  req->n_dims = dims->count;
  req->dim_names = dim_names;
  req->dim_values = dim_values;
  req->knobs_json = cs->json ? cs->json : "{}";
  req->inputs = inputs;
  req->n_inputs = rc->contract.n_primary;
  req->outputs = specs;
  req->n_outputs = n_out;
  req->timeout_s = rc->timeout_s;
  req->rlimit_as = rc->o->rlimit_as;
  req->work_dir = rc->o->work_dir;
  req->keep_work = rc->o->keep_work;
}

/* Comparison rule for one output: case > output declaration > contract > dtype default. */
static int make_rule(struct run_ctx *rc, const struct pg_case *cs,
                     const struct pg_tensor_decl *decl, enum pg_dtype dtype,
                     struct pg_cmp_rule *rule, struct pg_error *err) {
  memset(rule, 0, sizeof *rule);
  rule->kind = PG_RULE_ALLCLOSE;
  pg_cmp_default_tolerance(dtype, &rule->atol, &rule->rtol);
  if (rc->contract.has_tolerance) {
    rule->atol = rc->contract.atol;
    rule->rtol = rc->contract.rtol;
  }
  if (decl->has_atol) rule->atol = decl->atol;
  if (decl->has_rtol) rule->rtol = decl->rtol;
  if (cs->has_atol) rule->atol = cs->atol;
  if (cs->has_rtol) rule->rtol = cs->rtol;
  rule->equal_nan = cs->equal_nan;
  if (cs->rule && *cs->rule) return pg_cmp_rule_parse(cs->rule, rule, err);
  return PG_OK;
}

static const char *rule_text(const struct pg_cmp_rule *r, char *buf, size_t size) {
  switch (r->kind) {
    case PG_RULE_EXACT: return "exact";
    case PG_RULE_ULP: snprintf(buf, size, "ulp:%lld", (long long)r->ulp); return buf;
    case PG_RULE_RATIO: snprintf(buf, size, "ratio:%g", r->ratio); return buf;
    default: return "allclose";
  }
}

/* Compares impl outputs with goldens; fills m->tensors and the verdict. */
static void compare_outputs(struct run_ctx *rc, int k, const struct pg_case *cs,
                            const struct pg_tensor_decl **decls,
                            const struct pg_impl_output_spec *specs, int n_out,
                            const struct pg_tensor *impl_out, const struct pg_tensor *goldens,
                            struct pg_mode_result *m) {
  m->tensors = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *m->tensors);
  if (!m->tensors) {
    m->status = PG_VERDICT_ERROR;
    m->category = PG_CAT_INFRA;
    snprintf(m->summary, sizeof m->summary, "out of memory comparing outputs");
    return;
  }
  m->n_tensors = n_out;
  m->status = PG_VERDICT_PASS;
  for (int i = 0; i < n_out; i++) {
    struct pg_tensor_check *t = &m->tensors[i];
    snprintf(t->name, sizeof t->name, "%s", specs[i].name);
    t->dtype = specs[i].dtype;
    t->ndim = specs[i].ndim;
    memcpy(t->shape, specs[i].shape, sizeof t->shape);
    t->values_checked = cs->precision;
    struct pg_cmp_rule rule;
    struct pg_error e;
    pg_error_clear(&e);
    if (make_rule(rc, cs, decls[i], specs[i].dtype, &rule, &e) != PG_OK) {
      if (m->status < PG_VERDICT_ERROR) {
        m->status = PG_VERDICT_ERROR;
        m->category = PG_CAT_INFRA;
        snprintf(m->summary, sizeof m->summary, "case '%s': bad compare rule: %.500s", cs->id,
                 e.message);
      }
      continue;
    }
    char rb[32];
    snprintf(t->rule, sizeof t->rule, "%s", rule_text(&rule, rb, sizeof rb));
    t->atol = rule.atol;
    t->rtol = rule.rtol;
    DLTensor a = pg_tensor_dl(&impl_out[i]), b = pg_tensor_dl(&goldens[i]);
    int r = pg_tensor_compare(&a, &b, &rule, rc->n_threads, &t->cmp, &e);
    if (r != PG_OK) {
      if (m->status < PG_VERDICT_ERROR) {
        m->status = PG_VERDICT_ERROR;
        m->category = PG_CAT_INFRA;
        snprintf(m->summary, sizeof m->summary, "cannot compare output '%s': %.400s",
                 t->name, e.message);
      }
      continue;
    }
    t->compared = 1;
    if (t->cmp.structural) {
      t->passed = 0;
      if (m->status < PG_VERDICT_FAIL || m->category != PG_CAT_STRUCTURAL) {
        m->status = PG_VERDICT_FAIL;
        m->category = PG_CAT_STRUCTURAL;
        snprintf(m->summary, sizeof m->summary, "output '%s' at the M%d boundary: %.400s",
                 t->name, k, t->cmp.structural_reason);
      }
      continue;
    }
    t->passed = cs->precision ? t->cmp.passed : 1;
    if (!t->passed && m->status < PG_VERDICT_FAIL) {
      char idx[160], nan_note[96] = "";
      pg_shape_format(t->cmp.ndim, t->cmp.max_abs_index, idx, sizeof idx);
      if (t->cmp.nan_impl > t->cmp.nan_ref)
        snprintf(nan_note, sizeof nan_note, "; %lld NaN in the impl vs %lld in the reference",
                 (long long)t->cmp.nan_impl, (long long)t->cmp.nan_ref);
      else if (t->cmp.inf_impl > t->cmp.inf_ref)
        snprintf(nan_note, sizeof nan_note, "; %lld Inf in the impl vs %lld in the reference",
                 (long long)t->cmp.inf_impl, (long long)t->cmp.inf_ref);
      m->status = PG_VERDICT_FAIL;
      m->category = PG_CAT_PRECISION;
      snprintf(m->summary, sizeof m->summary,
               "output '%s' at the M%d boundary: %lld of %lld elements outside %s atol %g "
               "rtol %g (max_abs_diff %.3g at %s, max_rel_diff %.3g%s)",
               t->name, k, (long long)t->cmp.mismatches, (long long)t->cmp.n, t->rule,
               t->atol, t->rtol, t->cmp.max_abs_diff, idx, t->cmp.max_rel_diff, nan_note);
    }
  }
}

/* Reads a case's inputs or goldens from --golden-data. */
static int load_named(const char *dir, const char *name, struct pg_tensor *t,
                      struct pg_error *err) {
  char p[4600];
  snprintf(p, sizeof p, "%s/%s.npy", dir, name);
  int r = pg_npy_read(p, t, err);
  if (r == PG_OK) pg_tensor_set_name(t, name);
  return r;
}

static int save_tensors(const char *dir, const struct pg_tensor *t, int n, struct pg_error *err) {
  if (pg_mkdir_p(dir) != 0)
    return pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO, "%s: %s", dir, strerror(errno));
  for (int i = 0; i < n; i++) {
    char p[4600];
    snprintf(p, sizeof p, "%s/%s.npy", dir, t[i].name);
    PG_RETURN_IF_ERROR(pg_npy_write(p, &t[i], err));
  }
  return PG_OK;
}

/* The earliest boundary j < k at which the impl (in `mode`) already diverges. */
static int find_failing_boundary(struct run_ctx *rc, int k, const struct pg_case *cs,
                                 const struct pg_bindings *dims, const struct pg_tensor *inputs,
                                 const char *mode) {
  for (int j = 1; j < k; j++) {
    const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
    struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
    struct pg_error e;
    pg_error_clear(&e);
    int n = phase_outputs(rc, j, cs, dims, decls, specs, &e);
    if (n < 0) return 0;
    struct pg_tensor gold[PG_IMPL_MAX_OUTPUTS];
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&gold[i]);
    int cached = 0, verdict = -1;
    const char *dim_names[64];
    int64_t dim_values[64];
    char suffix[64];
    struct pg_impl_request req;
    struct pg_impl_pending pend;
    struct pg_impl_outcome out;
    struct pg_error ie;
    if (dims->count > 64) return 0;
    /* the impl runs while the golden of phase j is computed, as in run_case */
    fill_request(rc, j, cs, dims, dim_names, dim_values, suffix, sizeof suffix, inputs, specs,
                 n, mode, &req);
    pg_error_clear(&ie);
    pg_impl_start(&rc->impl, &req, &pend, &out, &ie);
    int grc = compute_golden(rc, j, cs, dims, inputs, specs, n, gold, &cached, &e);
    int irc = pg_impl_finish(&pend, &out, &ie);
    if (grc == PG_OK && irc == PG_OK) {
      if (out.status == PG_IMPL_DONE) {
        struct pg_mode_result m;
        memset(&m, 0, sizeof m);
        compare_outputs(rc, j, cs, decls, specs, n, out.outputs, gold, &m);
        verdict = m.status == PG_VERDICT_FAIL ? 1 : m.status == PG_VERDICT_PASS ? 0 : -1;
        free(m.tensors);
      } else if (out.status == PG_IMPL_FAILED && out.category == PG_CAT_STRUCTURAL) {
        verdict = -1; /* e.g. no wrapper for phase j: cannot tell */
      } else if (out.status == PG_IMPL_FAILED) {
        verdict = 1;
      }
    }
    pg_impl_outcome_reset(&out);
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&gold[i]);
    if (verdict < 0) return 0;
    if (verdict == 1) return j;
  }
  return k;
}

static void set_case_error(struct pg_case_result *r, enum pg_category cat, const char *msg) {
  r->status = PG_VERDICT_ERROR;
  r->category = cat;
  snprintf(r->summary, sizeof r->summary, "%.600s", msg);
  for (int i = 0; i < r->n_modes; i++) {
    r->modes[i].status = PG_VERDICT_ERROR;
    r->modes[i].category = cat;
    snprintf(r->modes[i].summary, sizeof r->modes[i].summary, "%.600s", msg);
  }
}

static void mode_line(struct run_ctx *rc, const struct pg_case_result *r,
                      const struct pg_mode_result *m) {
  const struct pg_run_opts *o = rc->o;
  const char *tag = m->status == PG_VERDICT_PASS   ? "PASS"
                    : m->status == PG_VERDICT_FAIL ? "FAIL"
                    : m->status == PG_VERDICT_ERROR ? "ERROR"
                                                    : "SKIP";
  char detail[900] = "";
  if (m->status == PG_VERDICT_PASS) {
    /* The output with the largest error relative to its allowance. */
    const struct pg_tensor_check *w = NULL;
    double worst = -1;
    for (int i = 0; i < m->n_tensors; i++) {
      const struct pg_tensor_check *t = &m->tensors[i];
      if (!t->compared) continue;
      double s = t->cmp.max_abs_diff / (t->atol > 0 ? t->atol : 1e-30);
      if (!(s <= worst)) worst = s, w = t;
    }
    if (!r->precision_checked)
      snprintf(detail, sizeof detail, "structure ok (values not checked)");
    else if (w)
      snprintf(detail, sizeof detail, "%s%smax_abs %.2g (atol %.2g)  max_rel %.2g", 
               m->n_tensors > 1 ? w->name : "", m->n_tensors > 1 ? ": " : "",
               w->cmp.max_abs_diff, w->atol, w->cmp.max_rel_diff);
  } else {
    const char *cat = pg_category_name(m->category);
    snprintf(detail, sizeof detail, "%s%s%.700s", cat ? cat : "", cat ? ": " : "", m->summary);
  }
  emit(o, 0, "[%s] %s M%d %s %s  %s  %.1f ms", tag, rc->contract.op, o->up_to_module, r->id,
       m->mode, detail, m->impl_ms);
  for (int i = 0; o->inspect && i < m->n_tensors; i++) {
    const struct pg_tensor_check *t = &m->tensors[i];
    if (strcmp(t->name, o->inspect) != 0 || !t->compared || t->cmp.structural) continue;
    const struct pg_cmp_result *c = &t->cmp;
    char ai[160], ri[160];
    pg_shape_format(c->ndim, c->max_abs_index, ai, sizeof ai);
    pg_shape_format(c->ndim, c->max_rel_index, ri, sizeof ri);
    emit(o, 0, "    %s: n %lld  mismatches %lld (%.3g)  max_abs %.3g at %s  max_rel %.3g at %s  "
         "mean_abs %.3g  rmse %.3g  cosine %.6f  max_ulp %.3g  balance %+.3f  within 1e-3 "
         "%.4f  5e-3 %.4f  nan impl/ref %lld/%lld  inf impl/ref %lld/%lld  zero share %.3f",
         t->name, (long long)c->n, (long long)c->mismatches, c->mismatch_ratio, c->max_abs_diff,
         ai, c->max_rel_diff, ri, c->mean_abs_diff, c->rmse, c->cosine_similarity, c->max_ulp,
         c->error_balance, c->share_within_1e3, c->share_within_5e3, (long long)c->nan_impl,
         (long long)c->nan_ref, (long long)c->inf_impl, (long long)c->inf_ref,
         c->zero_share_ref);
    for (int j = 0; j < c->n_first; j++) {
      char ix[160];
      pg_shape_format(c->ndim, c->first[j].index, ix, sizeof ix);
      emit(o, 0, "      mismatch %s  impl %.6g  abs_diff %.3g  rel_diff %.3g", ix,
           c->first[j].impl_value, c->first[j].abs_diff, c->first[j].rel_diff);
    }
  }
}

/* Shows the tail of a failing mode's captured output (already redacted). */
static void show_captured(struct run_ctx *rc, const struct pg_mode_result *m) {
  if (!m->captured || !*m->captured) return;
  const char *s = m->captured;
  size_t len = strlen(s);
  /* last 20 lines */
  int lines = 0;
  size_t start = len;
  while (start > 0) {
    if (s[start - 1] == '\n' && start != len && ++lines >= 20) break;
    start--;
  }
  const char *p = s + start;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    emit(rc->o, 1, "    | %.*s", (int)(n > 1000 ? 1000 : n), p);
    p = e ? e + 1 : p + n;
  }
}

/* A next step for the common failure shapes (the summary says what, this says how). */
static void failure_hint(struct run_ctx *rc, struct pg_case_result *r) {
  const char *s = r->summary;
  const char *h = NULL;
  char buf[512];
  if (strstr(s, "missing wrapper symbol")) {
    char sym[160];
    char suffix[64];
    pg_phase_suffix(rc->o->up_to_module, suffix, sizeof suffix);
    pg_impl_symbol(rc->contract.op, suffix, sym, sizeof sym);
    snprintf(buf, sizeof buf, "export int %s(const DLTensor *, int32_t, DLTensor *, int32_t, "
             "const pg_call *) (extern \"C\", default visibility), or run an earlier phase", sym);
    h = buf;
  } else if (strstr(s, "timed out")) {
    snprintf(buf, sizeof buf, "raise --timeout (now %g s) if the kernel is only slow; otherwise "
             "look for a wait that never completes", rc->timeout_s);
    h = buf;
  } else if (strstr(s, "wrote past output buffer")) {
    h = "the impl writes beyond the declared output size: check the tail tile and the shape "
        "arithmetic of the last block";
  } else if (strstr(s, "never wrote output")) {
    h = "the wrapper returned 0 without writing the output: check it writes outputs[i].data";
  } else if (strstr(s, "allocation failure")) {
    h = "the impl ran out of memory: check its workspace size (or raise --memory-limit)";
  } else if (strstr(s, "crashed with")) {
    h = "rerun the repro line under a debugger (the impl runs in a child process: use "
        "'set follow-fork-mode child' in gdb) or with ASan";
  } else if (strstr(s, "NaN in the impl")) {
    h = "the impl produces NaN where the reference has none: look for exp overflow (missing "
        "max subtraction), 0/0, or uninitialised memory";
  } else if (r->category == PG_CAT_STRUCTURAL) {
    h = "the outputs must match the contract's boundary exactly (count, names, shapes, dtypes)";
  } else if (r->category == PG_CAT_PRECISION && r->precision_checked) {
    h = "use --inspect <output> for every metric and the first mismatching indices, "
        "--save-data DIR to get the case's tensors";
  }
  if (h) snprintf(r->hint, sizeof r->hint, "%s", h);
}

static void run_case(struct run_ctx *rc, const struct pg_case *cs, struct pg_case_result *r) {
  const struct pg_run_opts *o = rc->o;
  const int k = o->up_to_module;
  double t_case = pg_now_ms();
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "%s", cs->id);
  r->index = cs->index;
  r->level = cs->level;
  r->precision_checked = cs->precision;
  r->knobs_json = pg_strdup(cs->json ? cs->json : "{}");
  r->repro = make_repro(o, rc->contract_path, rc->suite_path, cs->id, rc->modes_buf);
  r->modes = calloc((size_t)rc->n_modes, sizeof *r->modes);
  if (!r->modes) {
    r->status = PG_VERDICT_ERROR;
    r->category = PG_CAT_INFRA;
    snprintf(r->summary, sizeof r->summary, "out of memory");
    return;
  }
  r->n_modes = rc->n_modes;
  for (int i = 0; i < rc->n_modes; i++)
    snprintf(r->modes[i].mode, sizeof r->modes[i].mode, "%s", rc->modes[i]);

  struct pg_bindings dims = {0};
  struct pg_tensor *inputs = calloc((size_t)(rc->contract.n_primary + 1), sizeof *inputs);
  struct pg_tensor goldens[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&goldens[i]);
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
  int n_out = 0;
  int pending = 0; /* the first mode's impl call was started (see below) */
  struct pg_error e;
  pg_error_clear(&e);
  char msg[900];
  if (!inputs) {
    set_case_error(r, PG_CAT_INFRA, "out of memory");
    goto finish;
  }
  for (int i = 0; i < rc->contract.n_primary; i++) pg_tensor_init(&inputs[i]);
  if (pg_case_bind_dims(&rc->contract, cs, &dims, &e) != PG_OK) {
    snprintf(msg, sizeof msg, "case '%s': cannot bind dims: %.700s", cs->id, e.message);
    set_case_error(r, PG_CAT_INFRA, msg);
    goto finish;
  }
  n_out = phase_outputs(rc, k, cs, &dims, decls, specs, &e);
  if (n_out < 0) {
    n_out = 0;
    snprintf(msg, sizeof msg, "case '%s': boundary of M%d: %.700s", cs->id, k, e.message);
    set_case_error(r, PG_CAT_INFRA, msg);
    goto finish;
  }

  {
    int64_t total = 0;
    for (int i = 0; i < n_out; i++) {
      int64_t n = 1;
      for (int a = 0; a < specs[i].ndim; a++) n *= specs[i].shape[a];
      total += n;
    }
    for (int i = 0; i < rc->contract.n_primary; i++) {
      int nd;
      int64_t sh[PG_MAX_NDIM], n = 1;
      struct pg_error ie;
      if (pg_decl_shape(&rc->contract.primary_inputs[i], &dims, &nd, sh, &ie) != PG_OK) continue;
      for (int a = 0; a < nd; a++) n *= sh[a];
      total += n;
    }
    rc->n_threads = total < PG_SMALL_CASE_ELEMENTS ? 1 : 0;
  }

  /* The first mode's call, started before the golden. */
  const char *dim_names[64];
  int64_t dim_values[64];
  char suffix[64];
  struct pg_impl_request req0;
  struct pg_impl_pending pend;
  struct pg_impl_outcome out0;
  struct pg_error pend_err;

  /* Inputs and goldens: from --golden-data, or generated + computed. A cached golden
   * is looked up first: on a miss OpenBLAS loads while the inputs are generated. */
  int golden_hit = 0;
  if (!o->golden_data) {
    golden_hit = golden_cache_hit(rc, k, cs, &dims, specs, n_out, goldens);
    if (!golden_hit) blas_preload_start(rc, k);
  }
  double t0 = pg_now_ms();
  char gd_case[4200] = "";
  if (o->golden_data) {
    char in1[4300];
    snprintf(in1, sizeof in1, "%s/%s/in", o->golden_data, cs->id);
    if (pg_is_dir(in1)) snprintf(gd_case, sizeof gd_case, "%s/%s", o->golden_data, cs->id);
    else snprintf(gd_case, sizeof gd_case, "%s", o->golden_data); /* pypto layout DIR/in */
    char d[4300];
    snprintf(d, sizeof d, "%s/in", gd_case);
    for (int i = 0; i < rc->contract.n_primary; i++)
      if (load_named(d, rc->contract.primary_inputs[i].name, &inputs[i], &e) != PG_OK) {
        snprintf(msg, sizeof msg, "--golden-data: input '%s': %.700s",
                 rc->contract.primary_inputs[i].name, e.message);
        set_case_error(r, PG_CAT_INFRA, msg);
        goto finish;
      } else {
        const struct pg_tensor_decl *pd = &rc->contract.primary_inputs[i];
        int nd;
        int64_t sh[PG_MAX_NDIM];
        struct pg_error se;
        if (pg_decl_shape(pd, &dims, &nd, sh, &se) == PG_OK) {
          int same = inputs[i].dl.ndim == nd;
          for (int a = 0; same && a < nd; a++) same = inputs[i].shape[a] == sh[a];
          if (!same) {
            char got[160], want[160];
            pg_shape_format(inputs[i].dl.ndim, inputs[i].shape, got, sizeof got);
            pg_shape_format(nd, sh, want, sizeof want);
            snprintf(msg, sizeof msg, "--golden-data: input '%s' has shape %s, case '%s' "
                     "declares %s", pd->name, got, cs->id, want);
            set_case_error(r, PG_CAT_INFRA, msg);
            goto finish;
          }
        }
        if (inputs[i].dtype != pg_case_dtype(cs, pd))
          emit(o, 1, "phasegate: warning: --golden-data: input '%s' is %s, case '%s' declares "
               "%s; the impl gets it as stored", pd->name, pg_dtype_name(inputs[i].dtype), cs->id,
               pg_dtype_name(pg_case_dtype(cs, pd)));
      }
  } else {
    struct pg_materialize_opts mo = {o->max_bytes, rc->n_threads};
    if (pg_case_generate_inputs_ex(&rc->contract, cs, &dims, &mo, inputs, &r->cancel, &e) !=
        PG_OK) {
      snprintf(msg, sizeof msg, "case '%s': cannot generate inputs: %.700s", cs->id, e.message);
      set_case_error(r, e.code == PG_ELIMIT ? PG_CAT_OTHER : PG_CAT_INFRA, msg);
      goto finish;
    }
    for (int i = 0; i < rc->contract.n_primary; i++)
      if (!inputs[i].name[0]) pg_tensor_set_name(&inputs[i], rc->contract.primary_inputs[i].name);
  }
  r->inputs_ms = pg_now_ms() - t0;
  /* The first mode's impl starts now and runs while this process computes the golden
   * (the impl only needs the inputs): on a small case the two take about as long. */
  blas_preload_join(rc);
  if (rc->n_modes > 0 && dims.count <= 64) {
    fill_request(rc, k, cs, &dims, dim_names, dim_values, suffix, sizeof suffix, inputs, specs,
                 n_out, r->modes[0].mode, &req0);
    pg_error_clear(&pend_err);
    pg_impl_start(&rc->impl, &req0, &pend, &out0, &pend_err);
    pending = 1;
  }
  t0 = pg_now_ms();
  if (o->golden_data) {
    char d[4300];
    snprintf(d, sizeof d, "%s/out", gd_case);
    for (int i = 0; i < n_out; i++)
      if (load_named(d, specs[i].name, &goldens[i], &e) != PG_OK) {
        snprintf(msg, sizeof msg, "--golden-data: reference '%s': %.700s", specs[i].name,
                 e.message);
        set_case_error(r, PG_CAT_INFRA, msg);
        goto finish;
      }
    /* A reference that does not match the boundary would be blamed on the impl. */
    for (int i = 0; i < n_out; i++) {
      int same = goldens[i].dl.ndim == specs[i].ndim && goldens[i].dtype == specs[i].dtype;
      for (int a = 0; same && a < specs[i].ndim; a++) same = goldens[i].shape[a] == specs[i].shape[a];
      if (!same) {
        char got[160], want[160];
        pg_shape_format(goldens[i].dl.ndim, goldens[i].shape, got, sizeof got);
        pg_shape_format(specs[i].ndim, specs[i].shape, want, sizeof want);
        snprintf(msg, sizeof msg, "--golden-data: reference '%s' is %s %s, the M%d boundary of "
                 "case '%s' is %s %s", specs[i].name, pg_dtype_name(goldens[i].dtype), got, k,
                 cs->id, pg_dtype_name(specs[i].dtype), want);
        set_case_error(r, PG_CAT_INFRA, msg);
        goto finish;
      }
    }
  } else if (golden_hit) {
    r->golden_cached = 1;
  } else if (compute_golden(rc, k, cs, &dims, inputs, specs, n_out, goldens, &r->golden_cached,
                            &e) != PG_OK) {
    snprintf(msg, sizeof msg, "case '%s': cumulative golden M1..M%d failed: %.700s", cs->id, k,
             e.message);
    set_case_error(r, PG_CAT_INFRA, msg);
    goto finish;
  }
  r->golden_ms = pg_now_ms() - t0;
  if (o->save_data) {
    char d[4300];
    snprintf(d, sizeof d, "%s/%s/in", o->save_data, cs->id);
    int s1 = save_tensors(d, inputs, rc->contract.n_primary, &e);
    snprintf(d, sizeof d, "%s/%s/out", o->save_data, cs->id);
    if (s1 == PG_OK) s1 = save_tensors(d, goldens, n_out, &e);
    if (s1 != PG_OK) emit(o, 1, "phasegate: warning: --save-data: %s", e.message);
  }

  /* Every requested mode, never short-circuited. */
  const struct pg_tensor *barrier[PG_IMPL_MAX_OUTPUTS + 64];
  int n_barrier = 0;
  for (int i = 0; i < rc->contract.n_primary && n_barrier < 64; i++) barrier[n_barrier++] = &inputs[i];
  for (int i = 0; i < n_out; i++) barrier[n_barrier++] = &goldens[i];
  enum pg_verdict verdicts[PG_MAX_MODES];
  for (int mi = 0; mi < rc->n_modes; mi++) {
    struct pg_mode_result *m = &r->modes[mi];
    struct pg_impl_request req;
    if (dims.count > 64) {
      set_case_error(r, PG_CAT_INFRA, "more than 64 dims");
      goto finish;
    }
    struct pg_impl_outcome out, *op = &out;
    int irc;
    if (mi == 0 && pending) { /* started before the golden */
      pending = 0;
      irc = pg_impl_finish(&pend, &out0, &pend_err);
      op = &out0;
      e = pend_err;
    } else {
      fill_request(rc, k, cs, &dims, dim_names, dim_values, suffix, sizeof suffix, inputs, specs,
                   n_out, m->mode, &req);
      irc = pg_impl_invoke(&rc->impl, &req, op, &e);
    }
    if (irc != PG_OK) {
      m->status = PG_VERDICT_ERROR;
      m->category = PG_CAT_INFRA;
      snprintf(m->summary, sizeof m->summary, "runner could not call the impl: %.500s",
               e.message);
    } else {
      m->impl_ms = op->wall_ms;
      m->exit_code = op->sandbox.exit_code;
      m->signo = op->sandbox.signo;
      m->timed_out = op->sandbox.timed_out;
      /* captured stdout then stderr, redacted against this case's tensors */
      size_t lo = op->sandbox.out ? strlen(op->sandbox.out) : 0;
      size_t le = op->sandbox.err ? strlen(op->sandbox.err) : 0;
      if (lo + le) {
        char *both = malloc(lo + le + 2);
        if (both) {
          memcpy(both, op->sandbox.out ? op->sandbox.out : "", lo);
          if (lo && le && both[lo - 1] != '\n') both[lo++] = '\n';
          memcpy(both + lo, op->sandbox.err ? op->sandbox.err : "", le);
          both[lo + le] = '\0';
          m->captured = pg_redact_text(both, barrier, n_barrier);
          free(both);
          /* keep the report small: the last PG_CAPTURE_KEEP bytes of each mode */
          size_t cl = m->captured ? strlen(m->captured) : 0;
          if (cl > PG_CAPTURE_KEEP) {
            size_t from = cl - PG_CAPTURE_KEEP;
            size_t nl = from;
            while (nl < cl && nl < from + 1024 && m->captured[nl - 1] != '\n') nl++;
            if (nl < cl && m->captured[nl - 1] == '\n') from = nl; /* start at a line */
            memmove(m->captured, m->captured + from, cl - from + 1);
          }
        }
      }
      if (op->status == PG_IMPL_UNAVAILABLE) {
        m->status = PG_VERDICT_SKIPPED;
        snprintf(m->summary, sizeof m->summary, "%s", op->summary);
      } else if (op->status == PG_IMPL_FAILED) {
        m->status = op->category == PG_CAT_INFRA ? PG_VERDICT_ERROR : PG_VERDICT_FAIL;
        m->category = op->category;
        snprintf(m->summary, sizeof m->summary, "%s", op->summary);
        if (op->category != PG_CAT_INFRA) m->failing_boundary = k;
      } else {
        compare_outputs(rc, k, cs, decls, specs, n_out, op->outputs, goldens, m);
        if (m->status == PG_VERDICT_FAIL) m->failing_boundary = k;
      }
    }
    /* Adapter summaries may quote the impl's stderr: same barrier as the captured
     * output. (Comparison summaries carry metrics only and stay as they are.) */
    if (op->status != PG_IMPL_DONE) {
      char *red = pg_redact_text(m->summary, barrier, n_barrier);
      if (red) {
        snprintf(m->summary, sizeof m->summary, "%s", red);
        free(red);
      }
    }
    pg_impl_outcome_reset(op);
    verdicts[mi] = m->status;
  }

  /* Earliest failing boundary for the first failing mode (phase k > 1 only). */
  for (int mi = 0; mi < rc->n_modes; mi++) {
    struct pg_mode_result *m = &r->modes[mi];
    if (m->status != PG_VERDICT_FAIL) continue;
    if (k > 1 && !o->no_bisect && m->category == PG_CAT_PRECISION) {
      int j = find_failing_boundary(rc, k, cs, &dims, inputs, m->mode);
      if (j > 0) m->failing_boundary = j;
    }
    break;
  }

  /* Case aggregation. */
  r->status = PG_VERDICT_SKIPPED;
  r->all_close = 1;
  for (int mi = 0; mi < rc->n_modes; mi++) {
    struct pg_mode_result *m = &r->modes[mi];
    if (m->status > r->status) r->status = m->status;
    if (m->status == PG_VERDICT_FAIL || m->status == PG_VERDICT_ERROR) r->all_close = 0;
    for (int i = 0; i < m->n_tensors; i++) {
      const struct pg_tensor_check *t = &m->tensors[i];
      if (!t->compared || t->cmp.structural) continue;
      if (!t->cmp.passed) r->all_close = 0;
      if (t->cmp.max_abs_diff > r->max_abs_diff || isnan(t->cmp.max_abs_diff))
        r->max_abs_diff = t->cmp.max_abs_diff;
      if (t->cmp.max_rel_diff > r->max_rel_diff || isnan(t->cmp.max_rel_diff))
        r->max_rel_diff = t->cmp.max_rel_diff;
      r->mistrusted |= t->cmp.mistrusted;
      r->cpu_reproducer_candidate |= t->cmp.cpu_reproducer_candidate && !t->cmp.passed;
    }
  }
  if (r->status == PG_VERDICT_SKIPPED) r->all_close = 0;
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s",
           pg_divergence_fingerprint(verdicts, rc->n_modes));
  for (int mi = 0; mi < rc->n_modes; mi++) {
    const struct pg_mode_result *m = &r->modes[mi];
    if (m->status == PG_VERDICT_FAIL || m->status == PG_VERDICT_ERROR) {
      r->category = m->category;
      r->failing_boundary = m->failing_boundary;
      if (m->failing_boundary && m->failing_boundary < k)
        snprintf(r->summary, sizeof r->summary, "[%.60s] %.480s; the impl already diverges at "
                 "the M%d boundary", m->mode, m->summary, m->failing_boundary);
      else
        snprintf(r->summary, sizeof r->summary, "[%.60s] %.560s", m->mode, m->summary);
      break;
    }
  }
  if (r->mistrusted)
    snprintf(r->hint, sizeof r->hint, "the golden is mostly exact zeros: this case is too weak "
             "to trust a PASS; change its fill or shape");
  else if (r->cpu_reproducer_candidate)
    snprintf(r->hint, sizeof r->hint, "max_rel_diff is far below rtol and only small-|golden| "
             "cells trip atol: likely accumulation-order noise; reproduce on CPU before blaming "
             "the kernel");
  else if (r->failing_boundary && r->failing_boundary < k)
    snprintf(r->hint, sizeof r->hint, "the impl already diverges at the M%d boundary: fix "
             "module %d first", r->failing_boundary, r->failing_boundary);
  else if (r->status == PG_VERDICT_FAIL)
    failure_hint(rc, r);

finish:
  blas_preload_join(rc);
  if (pending) { /* the case failed before the impl's result was needed */
    struct pg_error fe;
    pg_impl_finish(&pend, &out0, &fe);
    pg_impl_outcome_reset(&out0);
  }
  r->total_ms = pg_now_ms() - t_case;
  for (int mi = 0; mi < r->n_modes; mi++) {
    mode_line(rc, r, &r->modes[mi]);
    if (r->modes[mi].status == PG_VERDICT_FAIL || r->modes[mi].status == PG_VERDICT_ERROR)
      show_captured(rc, &r->modes[mi]);
  }
  if (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR)
    emit(o, 1, "    repro: %s", r->repro ? r->repro : "");
  if (r->hint[0]) emit(o, 1, "    hint: %s", r->hint);
  /* Whether the stress found cancelling inputs decides how much a PASS means. */
  if (r->cancel.present) emit(o, 0, "    %s", r->cancel.note);
  if (inputs)
    for (int i = 0; i < rc->contract.n_primary; i++) pg_tensor_reset(&inputs[i]);
  free(inputs);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&goldens[i]);
  pg_bindings_reset(&dims);
}

/* ------------------------------------------------------------------ --jobs */

/* What a worker sends back per case: enough for the summary (the full result went
 * into the report). Smaller than PIPE_BUF, so concurrent writes stay whole. */
struct case_record {
  int32_t slot, status, category, failing_boundary, report_ok;
  char id[PG_NAME_MAX];
  char fingerprint[32];
  char summary[640];
  char report_error[256];
};

/* Runs the selected cases in `jobs` forked workers, case i in worker i % jobs. Each
 * worker merges its cases into the report (locked) and sends one record per case. */
static int run_parallel(struct run_ctx *rc, const int *sel, int n_sel, int jobs,
                        const char *report_path, const struct pg_report_meta *meta,
                        struct pg_case_result *results, struct pg_error *re) {
  int p[2];
  if (pipe(p) != 0) return pg_error_set(re, PG_EIO, "pipe: %s", strerror(errno));
  pid_t pids[64];
  int n_pids = 0;
  fflush(NULL);
  for (int w = 0; w < jobs && w < n_sel; w++) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      close(p[0]);
      struct pg_case_result *loc = calloc((size_t)n_sel, sizeof *loc);
      int n = 0;
      if (!loc) _exit(3);
      for (int i = w; i < n_sel; i += jobs) run_case(rc, &rc->suite.cases[sel[i]], &loc[n++]);
      struct pg_error we;
      pg_error_clear(&we);
      int ok = pg_report_merge_write(report_path, meta, loc, n, &we) == PG_OK;
      for (int i = w, j = 0; i < n_sel; i += jobs, j++) {
        struct case_record cr;
        memset(&cr, 0, sizeof cr);
        cr.slot = i;
        cr.status = (int32_t)loc[j].status;
        cr.category = (int32_t)loc[j].category;
        cr.failing_boundary = loc[j].failing_boundary;
        cr.report_ok = ok;
        snprintf(cr.id, sizeof cr.id, "%s", loc[j].id);
        snprintf(cr.fingerprint, sizeof cr.fingerprint, "%s", loc[j].fingerprint);
        snprintf(cr.summary, sizeof cr.summary, "%s", loc[j].summary);
        snprintf(cr.report_error, sizeof cr.report_error, "%.250s", we.message);
        if (write(p[1], &cr, sizeof cr) != (ssize_t)sizeof cr) _exit(4);
      }
      pg_impl_close(&rc->impl); /* this worker's warm processes end with it */
      fflush(NULL);
      _exit(0);
    }
    pids[n_pids++] = pid;
  }
  close(p[1]);
  char *seen = calloc((size_t)n_sel, 1);
  int report_ok = 1;
  struct case_record cr;
  for (;;) {
    ssize_t got = read(p[0], &cr, sizeof cr);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)sizeof cr) break;
    if (cr.slot < 0 || cr.slot >= n_sel) continue;
    struct pg_case_result *r = &results[cr.slot];
    snprintf(r->id, sizeof r->id, "%s", cr.id);
    r->status = (enum pg_verdict)cr.status;
    r->category = (enum pg_category)cr.category;
    r->failing_boundary = cr.failing_boundary;
    snprintf(r->fingerprint, sizeof r->fingerprint, "%s", cr.fingerprint);
    snprintf(r->summary, sizeof r->summary, "%s", cr.summary);
    if (!cr.report_ok && report_ok) {
      report_ok = 0;
      pg_error_set(re, PG_EIO, "%s", cr.report_error);
    }
    if (seen) seen[cr.slot] = 1;
  }
  close(p[0]);
  for (int i = 0; i < n_pids; i++) waitpid(pids[i], NULL, 0);
  for (int i = 0; i < n_sel; i++)
    if (!seen || !seen[i]) {
      struct pg_case_result *r = &results[i];
      snprintf(r->id, sizeof r->id, "%s", rc->suite.cases[sel[i]].id);
      r->status = PG_VERDICT_ERROR;
      r->category = PG_CAT_INFRA;
      snprintf(r->summary, sizeof r->summary, "the worker process running this case died");
    }
  free(seen);
  return report_ok ? PG_OK : PG_EIO;
}

/* A directory we are about to write into: it exists (or, with create, is created with
 * its parents) and is writable. */
static int usable_dir(const char *opt, const char *dir, int create, struct pg_error *err) {
  if (create && pg_mkdir_p(dir) != 0)
    return pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO,
                        "%s: cannot create directory '%s': %s", opt, dir,
                        strerror(errno));
  struct stat st;
  if (stat(dir, &st) != 0)
    return pg_error_set(err, PG_ENOENT, "%s: directory '%s' does not exist", opt, dir);
  if (!S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "%s: '%s' is not a directory", opt, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return pg_error_set(err, PG_EIO, "%s: cannot write into '%s': %s", opt, dir,
                        strerror(errno));
  return PG_OK;
}

/* Everything that would otherwise fail once per case, or only after every case ran,
 * checked once before the first one. Directories are created last, so a refused
 * run leaves nothing behind. */
static int check_before_cases(struct run_ctx *rc, const int *sel, int n_sel,
                              const char *report_path, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  int ret;
  if (o->golden_data) {
    if (!pg_is_dir(o->golden_data))
      return pg_error_set(err, PG_ENOENT, "--golden-data: '%s' is not a directory",
                          o->golden_data);
    char p[4400];
    snprintf(p, sizeof p, "%s/in", o->golden_data);
    if (pg_is_dir(p)) {
      /* DIR/in + DIR/out hold one case: applying them to several would compare every
       * case against the same references. */
      int shared = 0;
      for (int i = 0; i < n_sel; i++) {
        snprintf(p, sizeof p, "%s/%s/in", o->golden_data, rc->suite.cases[sel[i]].id);
        shared += !pg_is_dir(p);
      }
      if (shared > 1)
        return pg_error_set(err, PG_EINVAL, "--golden-data: '%s' holds a single case (in/ and "
                            "out/); %d cases are selected: pick the one it belongs to with "
                            "--case ID", o->golden_data, n_sel);
    }
  }
  if ((ret = pg_impl_check_finish(&rc->probe, err)) != PG_OK) return ret;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", report_path);
  char *slash = strrchr(dir, '/');
  if (slash == dir) dir[1] = '\0';
  else if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  if (o->report_path) {
    /* A file the user named: its directory must exist (a typo must not grow a tree). */
    if (pg_is_dir(o->report_path))
      return pg_error_set(err, PG_EINVAL, "--report: '%s' is a directory; name the report "
                          "file (or use --report-dir)", o->report_path);
    if ((ret = usable_dir("--report", dir, 0, err)) != PG_OK) return ret;
  } else if ((ret = usable_dir("--report-dir", dir, 1, err)) != PG_OK) {
    return ret;
  }
  if (o->save_data && (ret = usable_dir("--save-data", o->save_data, 1, err)) != PG_OK)
    return ret;
  return PG_OK;
}

/* ------------------------------------------------------------------ pg_run */

/* Sends the findings from *printed on (each one once, however often it is called). */
static void print_diags(const struct pg_run_opts *o, const struct pg_diags *d, int *printed) {
  for (; *printed < d->count; (*printed)++) {
    char buf[2048];
    pg_diag_format(&d->items[*printed], buf, sizeof buf);
    emit(o, 1, "%s", buf);
  }
}

/* --modes: comma-separated names, in order, duplicates dropped; NULL means "sim". An
 * empty list or item is refused: `--modes ""` from an unset variable must not quietly
 * run sim. */
static int parse_modes(struct run_ctx *rc, const char *modes, struct pg_error *err) {
  if (!modes) modes = "sim";
  if (!*modes)
    return pg_error_set(err, PG_EINVAL, "--modes: empty list (give e.g. --modes sim,npu)");
  if (strlen(modes) >= sizeof rc->modes_buf)
    return pg_error_set(err, PG_ELIMIT, "--modes: list too long");
  rc->modes_buf[0] = '\0';
  for (const char *p = modes;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0)
      return pg_error_set(err, PG_EINVAL, "--modes '%s': empty mode name in the list", modes);
    char t[1024];
    snprintf(t, sizeof t, "%.*s", (int)len, p);
    /* modes become directory names (exec, replay): same alphabet as case ids */
    int ok = len <= 63 && strcmp(t, ".") != 0 && strcmp(t, "..") != 0;
    for (const char *c = t; ok && *c; c++)
      ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.';
    if (!ok)
      return pg_error_set(err, PG_EINVAL, "--modes: '%s' is not a valid mode name "
                          "([A-Za-z0-9_.-]+, at most 63 characters)", t);
    if (!in_list(rc->modes_buf, t)) {
      if (++rc->n_modes > PG_MAX_MODES)
        return pg_error_set(err, PG_ELIMIT, "--modes: more than %d modes", PG_MAX_MODES);
      size_t l = strlen(rc->modes_buf);
      snprintf(rc->modes_buf + l, sizeof rc->modes_buf - l, "%s%s", l ? "," : "", t);
    }
    if (!e) break;
    p = e + 1;
  }
  rc->n_modes = 0; /* counted again when the names are split into rc->modes */
  return PG_OK;
}

/* --inspect NAME must name an output compared at this boundary. A tensor of the
 * contract that is not at this boundary gets a note (nothing to show for it here);
 * any other name is an error listing the valid names. */
static int check_inspect(struct run_ctx *rc, int k, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  const char *name = rc->o->inspect;
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  int n = pg_contract_boundary(c, k, decls, PG_IMPL_MAX_OUTPUTS, err);
  if (n < 0) return n;
  char names[1024] = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(decls[i]->name, name) == 0) return PG_OK;
    size_t l = strlen(names);
    snprintf(names + l, sizeof names - l, "%s'%s'", i ? ", " : "", decls[i]->name);
  }
  int known = 0;
  for (int i = 0; i < c->n_primary; i++) known |= strcmp(c->primary_inputs[i].name, name) == 0;
  for (int m = 0; m < c->n_modules; m++)
    for (int i = 0; i < c->modules[m].n_outputs; i++)
      known |= strcmp(c->modules[m].outputs[i].name, name) == 0;
  if (known) {
    emit(rc->o, 1, "phasegate run: note: --inspect '%s' is not an output of the M%d boundary "
         "(%s); nothing to inspect in this phase", name, k, names);
    return PG_OK;
  }
  return pg_error_set(err, PG_ENOTFOUND, "--inspect '%s': no such tensor in op '%s'; the M%d "
                      "boundary outputs are %s", name, c->op, k, names);
}

int pg_run(const struct pg_run_opts *o, struct pg_run_summary *s, struct pg_error *err) {
  memset(s, 0, sizeof *s);
  s->exit_code = 2;
  s->status = PG_VERDICT_ERROR;
  struct run_ctx *rc = calloc(1, sizeof *rc);
  if (!rc) return pg_error_set(err, PG_ENOMEM, "out of memory");
  rc->o = o;
  pg_contract_init(&rc->contract);
  pg_suite_init(&rc->suite);
  struct pg_case_result *results = NULL;
  int n_results = 0, ret = PG_OK;
  struct pg_diags diags;
  pg_diags_init(&diags);
  int n_printed = 0;

  if (!o->impl_spec) {
    ret = pg_error_set(err, PG_EINVAL, "--impl is required");
    goto out;
  }
  if ((ret = pg_impl_parse(o->impl_spec, &rc->impl, err)) != PG_OK) goto out;
  rc->impl.fresh_process = o->fresh_process;
  rc->impl.max_calls = o->worker_max_calls;
  rc->impl.serve_control = o->serve_control;
  rc->impl.log_dir = o->work_dir;
  /* The plugin's load probe (a fork + dlopen) runs while the contract and suite load;
   * its verdict is collected in check_before_cases. Forked before any thread exists. */
  if ((ret = pg_impl_check_start(&rc->impl, o->timeout_s > 0 ? o->timeout_s : 120,
                                 o->rlimit_as, &rc->probe, err)) != PG_OK)
    goto out;
  if (o->contract_path) {
    snprintf(rc->contract_path, sizeof rc->contract_path, "%s", o->contract_path);
    if (o->suite_path) snprintf(rc->suite_path, sizeof rc->suite_path, "%s", o->suite_path);
    else {
      /* next to the contract */
      snprintf(rc->suite_path, sizeof rc->suite_path, "%s", o->contract_path);
      char *sl = strrchr(rc->suite_path, '/');
      size_t off = sl ? (size_t)(sl - rc->suite_path + 1) : 0;
      snprintf(rc->suite_path + off, sizeof rc->suite_path - off, "adversarial_suite.json");
    }
  } else if (o->op_dir) {
    if ((ret = pg_op_dir_resolve(o->op_dir, rc->contract_path, sizeof rc->contract_path,
                                 rc->suite_path, sizeof rc->suite_path, err)) != PG_OK)
      goto out;
    if (o->suite_path) snprintf(rc->suite_path, sizeof rc->suite_path, "%s", o->suite_path);
  } else {
    ret = pg_error_set(err, PG_EINVAL, "--op-dir or --contract is required");
    goto out;
  }
  ret = pg_contract_load(rc->contract_path, &rc->contract, &diags, err);
  print_diags(o, &diags, &n_printed); /* warnings of a valid contract, or every finding */
  if (ret != PG_OK) {
    s->diagnosed = diags.n_errors > 0;
    if (!err || !err->message[0]) pg_error_set(err, ret, "%s: invalid contract", rc->contract_path);
    goto out;
  }
  int k = o->up_to_module;
  if (k < 1 || k > rc->contract.n_modules) {
    if (k < 0)
      ret = pg_error_set(err, PG_EINVAL, "--up-to-module: expected a module number in 1..%d "
                         "for op '%s', got '%s'", rc->contract.n_modules, rc->contract.op,
                         o->up_to_module_arg ? o->up_to_module_arg : "");
    else if (k == 0 && !o->up_to_module_arg)
      ret = pg_error_set(err, PG_EINVAL, "--up-to-module K is required (K in 1..%d for op '%s')",
                         rc->contract.n_modules, rc->contract.op);
    else
      ret = pg_error_set(err, PG_EINVAL, "--up-to-module %d outside 1..%d for op '%s'", k,
                         rc->contract.n_modules, rc->contract.op);
    goto out;
  }
  if (o->inspect && (ret = check_inspect(rc, k, err)) != PG_OK) goto out;
  /* Without a golden cache every case computes its golden: load OpenBLAS (if a golden
   * step needs it) while the suite is read and the inputs are generated. */
  if (o->no_golden_cache && !o->golden_data) blas_preload_start(rc, o->up_to_module);
  if (!pg_is_file(rc->suite_path)) {
    ret = pg_error_set(err, PG_ENOENT, "%s: no suite file", rc->suite_path);
    goto out;
  }
  ret = pg_suite_load(rc->suite_path, &rc->contract, &rc->suite, &diags, err);
  print_diags(o, &diags, &n_printed);
  if (ret != PG_OK) {
    s->diagnosed = diags.n_errors > 0;
    if (!err || !err->message[0]) pg_error_set(err, ret, "%s: invalid suite", rc->suite_path);
    goto out;
  }
  if ((ret = parse_modes(rc, o->modes, err)) != PG_OK) goto out;
  rc->timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
  rc->device_id = o->device_id >= 0 ? o->device_id : pg_run_device_from_env();
  if (rc->device_id < 0) rc->device_id = 0;
  if (o->golden_lib && (ret = pg_golden_lib_open(o->golden_lib, &rc->golden_lib, err)) != PG_OK)
    goto out;
  if (!o->no_golden_cache && !o->golden_data) {
    struct pg_error ce;
    pg_error_clear(&ce);
    rc->use_cache = pg_golden_cache_dir_default(rc->cache_dir, sizeof rc->cache_dir, &ce) == PG_OK;
    uint64_t cap; /* a bad PHASEGATE_CACHE_MAX_BYTES is refused, not silently ignored */
    if (rc->use_cache && (ret = pg_golden_cache_max_default(&cap, err)) != PG_OK) goto out;
  }

  /* Case selection. */
  if (o->case_ids) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", o->case_ids);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      int found = 0;
      for (int i = 0; i < rc->suite.n_cases; i++) found |= strcmp(rc->suite.cases[i].id, t) == 0;
      if (!found) {
        ret = pg_error_set(err, PG_ENOTFOUND, "%s: no case '%s' in the suite", rc->suite_path, t);
        goto out;
      }
    }
  }
  results = calloc((size_t)(rc->suite.n_cases + 1), sizeof *results);
  if (!results) {
    ret = pg_error_set(err, PG_ENOMEM, "out of memory");
    goto out;
  }
  /* modes[] as separate strings */
  char mode_store[PG_MAX_MODES][64];
  {
    int n = 0;
    const char *p = rc->modes_buf;
    while (*p && n < PG_MAX_MODES) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      snprintf(mode_store[n], sizeof mode_store[n], "%.*s", (int)(len < 63 ? len : 63), p);
      rc->modes[n] = mode_store[n];
      n++;
      p = e ? e + 1 : p + len;
    }
    rc->n_modes = n;
  }
  int *sel = calloc((size_t)(rc->suite.n_cases + 1), sizeof *sel);
  if (!sel) {
    ret = pg_error_set(err, PG_ENOMEM, "out of memory");
    goto out;
  }
  int n_sel = 0;
  for (int i = 0; i < rc->suite.n_cases; i++) {
    const struct pg_case *cs = &rc->suite.cases[i];
    if (o->case_ids && !in_list(o->case_ids, cs->id)) continue;
    if (o->levels_mask && !(o->levels_mask & (1u << cs->level))) continue;
    sel[n_sel++] = i;
  }
  if (n_sel == 0) {
    free(sel);
    ret = pg_error_set(err, PG_ENOTFOUND, "no case of %s matches the selection", rc->suite_path);
    goto out;
  }
  if (o->report_path) snprintf(s->report_path, sizeof s->report_path, "%s", o->report_path);
  else
    snprintf(s->report_path, sizeof s->report_path, "%s/%s/M%d/evaluation_report.json",
             o->report_dir && *o->report_dir ? o->report_dir : "phasegate-reports",
             rc->contract.op, k);
  if ((ret = check_before_cases(rc, sel, n_sel, s->report_path, err)) != PG_OK) {
    free(sel);
    goto out;
  }
  struct pg_report_meta meta = {rc->contract.op, o->impl_spec, k, rc->contract.n_modules,
                                o->tool_version, rc->contract_path, rc->suite_path,
                                rc->modes_buf};
  struct pg_error re;
  pg_error_clear(&re);
  int wrote = PG_OK;
  if (o->jobs > 1 && n_sel > 1) {
    blas_preload_join(rc); /* before forking the workers */
    wrote = run_parallel(rc, sel, n_sel, o->jobs > 64 ? 64 : o->jobs, s->report_path, &meta,
                         results, &re);
    n_results = n_sel;
  } else {
    for (int i = 0; i < n_sel; i++) run_case(rc, &rc->suite.cases[sel[i]], &results[n_results++]);
    /* Report. */
    wrote = pg_report_merge_write(s->report_path, &meta, results, n_results, &re);
  }
  free(sel);

  /* Summary. */
  s->cases_total = n_results;
  enum pg_verdict worst = PG_VERDICT_SKIPPED;
  for (int i = 0; i < n_results; i++) {
    enum pg_verdict v = results[i].status;
    if (v > worst) worst = v;
    s->passed += v == PG_VERDICT_PASS;
    s->failed += v == PG_VERDICT_FAIL;
    s->errors += v == PG_VERDICT_ERROR;
    s->skipped += v == PG_VERDICT_SKIPPED;
  }
  s->status = worst;
  s->exit_code = worst == PG_VERDICT_ERROR ? 2 : worst == PG_VERDICT_FAIL ? 1
                 : worst == PG_VERDICT_PASS ? 0 : 77;
  if (wrote != PG_OK) {
    emit(o, 1, "phasegate: error: %s", re.message);
    s->exit_code = 2;
    s->status = PG_VERDICT_ERROR;
  }
  if (worst == PG_VERDICT_SKIPPED)
    emit(o, 0, "[phasegate] SKIPPED %s M%d: every requested mode (%s) is unavailable for %d "
         "case(s)", rc->contract.op, k, rc->modes_buf, n_results);
  emit(o, 0, "[phasegate] %s M%d: %s  %d passed, %d failed, %d errors, %d skipped of %d "
       "case(s); report: %s", rc->contract.op, k, pg_verdict_name(s->status), s->passed,
       s->failed, s->errors, s->skipped, n_results, s->report_path);
  if (s->failed + s->errors > 0) {
    for (int i = 0; i < n_results; i++)
      if (results[i].status == PG_VERDICT_FAIL || results[i].status == PG_VERDICT_ERROR) {
        char b[16] = "n/a";
        if (results[i].failing_boundary) snprintf(b, sizeof b, "M%d", results[i].failing_boundary);
        const char *cat = pg_category_name(results[i].category);
        emit(o, 0, "[phasegate] first failure: %s (%s, boundary %s%s%s): %.600s", results[i].id,
             cat ? cat : "other", b, results[i].fingerprint[0] ? ", " : "",
             results[i].fingerprint, results[i].summary);
        break;
      }
  }
out:
  pg_impl_check_cancel(&rc->probe); /* a refused run does not wait for the probe */
  blas_preload_join(rc);
  pg_impl_close(&rc->impl);
  if (ret != PG_OK) {
    s->exit_code = 2;
    s->status = PG_VERDICT_ERROR;
  }
  for (int i = 0; i < n_results; i++) pg_case_result_reset(&results[i]);
  free(results);
  pg_diags_reset(&diags);
  if (rc->golden_lib) pg_golden_lib_close(rc->golden_lib);
  pg_suite_reset(&rc->suite);
  pg_contract_reset(&rc->contract);
  free(rc);
  return ret;
}
