/* phasegate selftest — composition verification (docs/design.md §5): for every (seed,
 * shape) of the contract's `composition_verification`, generate the primary inputs,
 * compute cumulative golden N and the op-level golden, and compare every final output
 * with allclose(atol, rtol). One line per (seed, shape, tensor), then a summary.
 * With --suite-strength it then fills the golden cache's suite strength of every phase and
 * case (pg_run's strength-only pass), so phase runs show it without computing it.
 * Only metrics and indices are printed, never tensor values. Exit: 0 all pass,
 * 1 a mismatch, 2 usage/contract/golden error, 77 when the op has no op-level golden.
 * The steps are the run room's (pg_case_data_*, pg_case_golden, pg_case_compare), the
 * same ones `phasegate run` takes for each case; this file only loads and prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/base.h"
#include "phasegate/goldens.h"
#include "report/report.h"
#include "run/run.h"
#include "opdir/opdir.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate selftest (--op-dir DIR | --contract FILE) [--golden-lib SO]\n"
          "                          [--reference-precision fp32|fp64] [--threads N]\n"
          "       phasegate --self-test --op-dir DIR [...]   (the seed runner's spelling)\n"
          "\n"
          "Composition verification: cumulative golden N (module goldens M1..MN composed,\n"
          "or the Python cumulative golden of phase N) must match the op-level golden\n"
          "(`golden:` at top level, or <op>_golden.py / <op>_golden_cpu.py), and where a\n"
          "phase has both, phasegate's built-in cumulative golden must match the Python\n"
          "one, for every seed and shape listed under the contract's\n"
          "composition_verification (default: seed 0, the contract's dims).\n"
          "\n"
          "  --op-dir DIR               module_interfaces.yaml in DIR or DIR/eval\n"
          "  --contract FILE            the contract, explicitly (wins over --op-dir)\n"
          "  --suite FILE               accepted for symmetry with run; not used\n"
          "  --golden-lib SO            golden plugin library (needed when a golden is a plugin)\n"
          "  --reference-precision P    fp32 (default) or fp64\n"
          "  --threads N                worker threads (default 0: all cores)\n"
          "  --python PATH              interpreter of the Python goldens (default:\n"
          "                             $PHASEGATE_PYTHON, else python3)\n"
          "  --suite-strength           also compute the suite strength of every phase and case\n"
          "                             of the suite into the golden cache (computed once here,\n"
          "                             shown by every `phasegate run` from the cache)\n"
          "\n"
          "Exit: 0 pass, 1 mismatch, 2 error, 77 no op-level golden (skipped).\n");
}

static void format_bindings(const struct pg_bindings *b, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "{");
  for (int i = 0; b && i < b->count && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s=%lld", i ? "," : "",
                             b->items[i].name, (long long)b->items[i].value);
  if (used < size) snprintf(buf + used, size - used, "}");
}

static void format_index(const int64_t *idx, int ndim, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)idx[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* One comparison, repeated for every (seed, shape): golden `a` checked against golden
 * `b` (the reference). label "" is composition verification (cumulative N against the
 * op level); "M<k> built-in vs Python" is phasegate's C cumulative golden k against
 * the user's Python one. */
struct pairing {
  int ka, kb;
  enum pg_phase_golden sa, sb;
  char label[64];
};

#define PG_SELFTEST_MAX_PAIRS 64

/* One selftest in progress: the contract, the goldens' options, the rule, the
 * comparisons and the tally printed at the end. */
struct selftest {
  const struct pg_contract *c;
  struct pg_golden_opts g;
  struct pg_cmp_rule rule;
  struct pairing pairs[PG_SELFTEST_MAX_PAIRS];
  int n_pairs;
  int checks, passed, errors;
  char first_fail[1024];
};

static void reset_all(struct pg_tensor *t, int n) {
  for (int i = 0; i < n; i++) pg_tensor_reset(&t[i]);
}

/* Prints one line per output of golden a against golden b. */
static void compare_all(struct selftest *st, const char *label, uint64_t seed,
                        const char *shape_text, const struct pg_tensor *cum,
                        const struct pg_tensor *ref, int n) {
  const char *sep = label[0] ? ": " : "";
  for (int o = 0; o < n; o++) {
    struct pg_cmp_result res;
    struct pg_error err;
    memset(&res, 0, sizeof res);
    pg_error_clear(&err);
    st->checks++;
    if (pg_case_compare(&cum[o], &ref[o], &st->rule, st->g.n_threads, &res, &err) != PG_OK) {
      printf("%s%sseed=%llu shape=%s %s: ERROR %s\n", label, sep, (unsigned long long)seed,
             shape_text, ref[o].name, err.message);
      st->errors++;
      continue;
    }
    if (res.passed && !res.structural) {
      st->passed++;
      printf("%s%sseed=%llu shape=%s %s: PASS max_abs_diff=%.3g max_rel_diff=%.3g n=%lld\n",
             label, sep, (unsigned long long)seed, shape_text, ref[o].name, res.max_abs_diff,
             res.max_rel_diff, (long long)res.n);
      continue;
    }
    char idx[128];
    format_index(res.max_abs_index, res.ndim, idx, sizeof idx);
    if (res.structural)
      printf("%s%sseed=%llu shape=%s %s: FAIL structural: %s\n", label, sep,
             (unsigned long long)seed, shape_text, ref[o].name, res.structural_reason);
    else
      printf("%s%sseed=%llu shape=%s %s: FAIL mismatches=%lld/%lld max_abs_diff=%.3g at %s "
             "max_rel_diff=%.3g (atol=%g rtol=%g)\n", label, sep,
             (unsigned long long)seed, shape_text, ref[o].name, (long long)res.mismatches,
             (long long)res.n, res.max_abs_diff, idx, res.max_rel_diff, st->rule.atol,
             st->rule.rtol);
    if (!st->first_fail[0])
      snprintf(st->first_fail, sizeof st->first_fail, "%s%sseed=%llu shape=%s tensor=%s", label,
               sep, (unsigned long long)seed, shape_text, ref[o].name);
  }
}

/* Golden k from `src` (NONE: the contract's choice), its failure prefixed with what it was. */
static int golden(struct selftest *st, const struct pg_case_data *d, const struct pg_case *cs,
                  int k, enum pg_phase_golden src, struct pg_tensor *out, int *n,
                  struct pg_error *err) {
  struct pg_golden_opts g = st->g;
  g.source = src;
  int rc = pg_case_golden(d, st->c, cs, &g, k, out, n, err);
  if (rc == PG_OK) return rc;
  const char *kind = src == PG_PHASE_GOLDEN_PYTHON ? "Python " : src ? "built-in " : "";
  if (k == 0) pg_error_prefix(err, "op-level golden: ");
  else pg_error_prefix(err, "%scumulative golden %d: ", kind, k);
  return rc;
}

/* One pairing on one case's inputs: both goldens, compared. */
static void check_pair(struct selftest *st, const struct pairing *p, const struct pg_case_data *d,
                       const struct pg_case *cs, const char *shape_text) {
  struct pg_tensor a[PG_MAX_BOUNDARY_OUTPUTS], b[PG_MAX_BOUNDARY_OUTPUTS];
  int na = 0, nb = 0;
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) {
    pg_tensor_init(&a[i]);
    pg_tensor_init(&b[i]);
  }
  struct pg_error err;
  pg_error_clear(&err);
  int rc = golden(st, d, cs, p->ka, p->sa, a, &na, &err);
  if (rc == PG_OK) rc = golden(st, d, cs, p->kb, p->sb, b, &nb, &err);
  if (rc == PG_OK && na != nb)
    rc = pg_error_set(&err, PG_EINTERNAL, "%d outputs vs %d reference outputs", na, nb);
  const char *sep = p->label[0] ? ": " : "";
  if (rc != PG_OK) {
    printf("%s%sseed=%llu shape=%s: ERROR\n", p->label, sep, (unsigned long long)cs->seed,
           shape_text);
    fprintf(stderr, "phasegate selftest: error: %s%sseed=%llu shape=%s: %s\n", p->label, sep,
            (unsigned long long)cs->seed, shape_text, err.message);
    st->errors++;
  } else {
    compare_all(st, p->label, cs->seed, shape_text, a, b, nb);
  }
  reset_all(a, PG_MAX_BOUNDARY_OUTPUTS);
  reset_all(b, PG_MAX_BOUNDARY_OUTPUTS);
}

/* The case make_inputs gets for one (seed, shape) of composition_verification:
 * {"id": "selftest", "level": 2, "seed": S, "shape": {every bound dim}}. */
static void case_json(uint64_t seed, const struct pg_bindings *dims, char *buf, size_t size) {
  int n = snprintf(buf, size, "{\"id\":\"selftest\",\"level\":2,\"seed\":%llu,\"shape\":{",
                   (unsigned long long)seed);
  for (int i = 0; i < dims->count && n > 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s\"%s\":%lld", i ? "," : "",
                  dims->items[i].name, (long long)dims->items[i].value);
  if (n > 0 && (size_t)n + 3 < size) snprintf(buf + n, size - (size_t)n, "}}");
}

/* The pipeline of pg_run for one (seed, shape): bind dims, generate the inputs (or make
 * them with the op's make_inputs, docs/pypto.md "Inputs from make_inputs"), then every
 * pairing on them. -1 when out of memory. */
static int check_one(struct selftest *st, uint64_t seed, const struct pg_bindings *shape) {
  const struct pg_contract *c = st->c;
  char shape_text[512];
  format_bindings(shape, shape_text, sizeof shape_text);
  struct pg_case cs;
  memset(&cs, 0, sizeof cs);
  cs.id = "selftest";
  cs.level = 2;
  cs.precision = 1;
  cs.has_seed = 1;
  cs.seed = seed;
  cs.shape = *shape; /* borrowed: never reset through cs */
  struct pg_case_data d;
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_case_data_init(&d, c, &err) != PG_OK) {
    fprintf(stderr, "phasegate selftest: error: out of memory\n");
    st->errors++;
    pg_case_data_reset(&d);
    return -1;
  }
  struct pg_materialize_opts mo = {0, st->g.n_threads};
  int rc = pg_case_data_bind(&d, c, &cs, &err);
  char json[2048];
  if (rc == PG_OK && c->test_inputs && st->g.py) { /* the op's own input code wins */
    case_json(seed, &d.dims, json, sizeof json);
    cs.json = json;
    rc = pg_py_make_inputs(st->g.py, c, &cs, &d, NULL, 0, &err);
  } else if (rc == PG_OK) {
    rc = pg_case_data_generate(&d, c, st->g.plan, &cs, &mo, &err);
  }
  if (rc != PG_OK) {
    printf("seed=%llu shape=%s: ERROR\n", (unsigned long long)seed, shape_text);
    fprintf(stderr, "phasegate selftest: error: seed=%llu shape=%s: %s\n",
            (unsigned long long)seed, shape_text, err.message);
    st->errors++;
  }
  for (int i = 0; rc == PG_OK && i < st->n_pairs; i++)
    check_pair(st, &st->pairs[i], &d, &cs, shape_text);
  pg_case_data_reset(&d);
  return 0;
}

/* What selftest compares: cumulative N against the op-level golden when the op has
 * one (built-in or Python), and built-in cumulative k against Python cumulative k for
 * every k that has both. */
static void plan_pairs(struct selftest *st) {
  const struct pg_contract *c = st->c;
  int n = c->n_modules;
  if (pg_contract_phase_golden(c, 0) != PG_PHASE_GOLDEN_NONE)
    st->pairs[st->n_pairs++] = (struct pairing){n, 0, PG_PHASE_GOLDEN_NONE, PG_PHASE_GOLDEN_NONE, ""};
  for (int k = 1; k <= n && st->n_pairs < PG_SELFTEST_MAX_PAIRS; k++) {
    if (!pg_contract_has_builtin_golden(c, k) || !pg_contract_py_golden(c, k)) continue;
    struct pairing *p = &st->pairs[st->n_pairs++];
    *p = (struct pairing){k, k, PG_PHASE_GOLDEN_BUILTIN, PG_PHASE_GOLDEN_PYTHON, ""};
    snprintf(p->label, sizeof p->label, "M%d built-in vs Python", k);
  }
}

/* Every (shape, seed) of composition_verification (default: seed 0, the contract's
 * dims) for every pairing, then the verdict line. Returns the exit code. */
static int check_all(struct selftest *st) {
  const struct pg_contract *c = st->c;
  const char *op = c->op ? c->op : "?";
  uint64_t default_seed = 0;
  struct pg_bindings no_shape = {NULL, 0};
  const uint64_t *seeds = c->has_composition && c->n_comp_seeds ? c->comp_seeds : &default_seed;
  int n_seeds = c->has_composition && c->n_comp_seeds ? c->n_comp_seeds : 1;
  const struct pg_bindings *shapes =
      c->has_composition && c->n_comp_shapes ? c->comp_shapes : &no_shape;
  int n_shapes = c->has_composition && c->n_comp_shapes ? c->n_comp_shapes : 1;
  st->rule.kind = PG_RULE_ALLCLOSE;
  st->rule.atol = c->has_composition ? c->comp_atol : (c->has_tolerance ? c->atol : 1e-3);
  st->rule.rtol = c->has_composition ? c->comp_rtol : (c->has_tolerance ? c->rtol : 1e-3);
  if (!c->has_composition)
    printf("[phasegate] selftest %s: no composition_verification in the contract: "
           "seed 0, default dims, atol=%g rtol=%g\n", op, st->rule.atol, st->rule.rtol);
  for (int i = 0; i < st->n_pairs; i++)
    printf("[phasegate] selftest %s: %s\n", op,
           st->pairs[i].label[0] ? st->pairs[i].label : "composition: cumulative golden N vs "
                                                        "the op-level golden");
  for (int si = 0; si < n_shapes; si++)
    for (int ki = 0; ki < n_seeds; ki++)
      if (check_one(st, seeds[ki], &shapes[si]) < 0) break;
  if (st->errors) {
    printf("[phasegate] selftest %s: ERROR (%d error%s, %d/%d comparisons passed)\n", op,
           st->errors, st->errors == 1 ? "" : "s", st->passed, st->checks);
    return PG_EXIT_ERROR;
  }
  if (st->passed == st->checks) {
    if (st->n_pairs == 1 && !st->pairs[0].label[0])
      printf("[phasegate] selftest %s: PASS (%d/%d comparisons: cumulative golden %d == "
             "op-level golden)\n", op, st->passed, st->checks, c->n_modules);
    else
      printf("[phasegate] selftest %s: PASS (%d/%d comparisons: every golden matches its "
             "reference)\n", op, st->passed, st->checks);
    return PG_EXIT_PASS;
  }
  printf("[phasegate] selftest %s: FAIL (%d/%d comparisons passed; first failure: %s)\n", op,
         st->passed, st->checks, st->first_fail);
  return PG_EXIT_FAIL;
}

/* One clear error instead of the same one for every (seed, shape): a plugin golden
 * needs --golden-lib. 1 when it printed that error. */
static int needs_golden_lib(const struct pg_contract *c, const char *contract_path) {
  const struct pg_golden_spec *need = c->op_golden.kind == PG_GOLDEN_PLUGIN ? &c->op_golden : NULL;
  const char *where = "op level";
  char where_buf[64];
  for (int m = 0; !need && m < c->n_modules; m++)
    if (c->modules[m].golden.kind == PG_GOLDEN_PLUGIN) {
      need = &c->modules[m].golden;
      snprintf(where_buf, sizeof where_buf, "module %d", c->modules[m].id);
      where = where_buf;
    }
  if (!need) return 0;
  fprintf(stderr,
          "%s:%d:%d: error: golden of %s is plugin '%s', but no golden library was given "
          "(pass --golden-lib)\n",
          contract_path, need->mark.line, need->mark.column, where,
          need->plugin ? need->plugin : "?");
  return 1;
}

/* The Python goldens' worker, when the contract has any (its process starts with the
 * first one computed). Its messages pass the report room's number barrier. */
static int open_python(const struct pg_contract *c, const char *python,
                       struct pg_py_golden_worker **py, struct pg_error *err) {
  int any = c->test_inputs != NULL; /* make_inputs runs in the same worker */
  for (int k = 0; k <= c->n_modules; k++) any |= pg_contract_py_golden(c, k) != NULL;
  if (!any) return PG_OK;
  struct pg_py_golden_worker_opts o = {python, NULL, NULL, 300, "", pg_redact_numbers};
  return pg_py_golden_worker_open(&o, py, err);
}

static void print_line(void *user, int to_stderr, const char *line) {
  (void)user;
  fprintf(to_stderr ? stderr : stdout, "%s\n", line);
}

/* --suite-strength (docs/runner.md "Suite strength"): pg_run's strength-only pass over
 * every case of every phase that has a golden; what it computes lands in the golden
 * cache, keyed as a phase run keys it. PG_EXIT_PASS, or PG_EXIT_ERROR when a phase
 * could not be loaded or a case not prepared. */
static int strength_all(const struct pg_contract *c, const char *op_dir, const char *contract_arg,
                        const char *golden_lib, const char *python, int precision_bits) {
  int exit_code = PG_EXIT_PASS;
  for (int k = 1; k <= c->n_modules; k++) {
    if (pg_contract_phase_golden(c, k) == PG_PHASE_GOLDEN_NONE) continue;
    struct pg_run_opts o;
    memset(&o, 0, sizeof o);
    o.op_dir = op_dir;
    o.contract_path = contract_arg;
    o.up_to_module = k;
    o.golden_lib = golden_lib;
    o.python = python;
    o.reference_bits = precision_bits;
    o.tool_version = pg_cli_version;
    o.device_id = -1;
    o.timeout_s = 300; /* a Python golden's call */
    o.hooks = pg_report_hooks();
    o.on_line = print_line;
    o.strength_policy = PG_STRENGTH_ONLY;
    struct pg_run_summary s;
    struct pg_error err;
    pg_error_clear(&err);
    double t0 = pg_now_ms();
    int rc = pg_run(&o, &s, &err);
    if (rc != PG_OK) {
      if (!s.diagnosed)
        fprintf(stderr, "phasegate selftest: error: suite strength of M%d: %s\n", k, err.message);
      exit_code = PG_EXIT_ERROR;
    } else {
      printf("[phasegate] selftest %s: suite strength M%d: %d cases: %d computed, %d from the "
             "cache, %d not applicable; %d list undetected mutants (%.2f s)\n", c->op, k,
             s.cases_total, s.strength[PG_STRENGTH_COMPUTED], s.strength[PG_STRENGTH_CACHED],
             s.strength[PG_STRENGTH_NA], s.strength_weak, (pg_now_ms() - t0) / 1000.0);
      if (s.exit_code != PG_EXIT_PASS) exit_code = PG_EXIT_ERROR;
    }
    pg_run_summary_reset(&s);
  }
  return exit_code;
}

int pg_cmd_selftest(int argc, char **argv) {
  const char *op_dir = NULL, *contract_arg = NULL, *golden_lib = NULL, *python = NULL;
  int precision_bits = 32, n_threads = 0;
  const char *suite_ignored = NULL, *precision = NULL, *threads = NULL;
  const struct pg_cli_opt opts[] = {{"--op-dir", &op_dir},
                                    {"--contract", &contract_arg},
                                    {"--suite", &suite_ignored}, /* symmetry with run */
                                    {"--golden-lib", &golden_lib},
                                    {"--reference-precision", &precision},
                                    {"--threads", &threads},
                                    {"--python", &python},
                                    {NULL, NULL}};
  /* the one flag among options that take a value: taken out before they are parsed */
  int with_strength = 0, n_args = 0;
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return pg_cli_usage_error("selftest", "out of memory");
  for (int i = 0; i < argc; i++) {
    if (i > 0 && strcmp(argv[i], "--suite-strength") == 0) with_strength = 1;
    else args[n_args++] = argv[i];
  }
  int parsed = pg_cli_parse_opts("selftest", n_args, args, opts, usage);
  free(args);
  if (parsed) return parsed < 0 ? PG_EXIT_PASS : parsed;
  if (precision) {
    if (strcmp(precision, "fp32") == 0) precision_bits = 32;
    else if (strcmp(precision, "fp64") == 0) precision_bits = 64;
    else return pg_cli_usage_error("selftest", "--reference-precision must be fp32 or fp64, not '%s'", precision);
  }
  if (threads) {
    char *end = NULL;
    long t = strtol(threads, &end, 10);
    if (!end || *end || end == threads || t < 0 || t > 1024)
      return pg_cli_usage_error("selftest", "--threads: '%s' is not a count in 0..1024", threads);
    n_threads = (int)t;
  }
  char implied[4096];
  int bad = pg_cli_op_dir("selftest", &op_dir, contract_arg, suite_ignored, implied,
                          sizeof implied);
  if (bad) return bad;
  struct pg_error err;
  pg_error_clear(&err);
  char contract_path[4096], suite_path[4096];
  if (pg_op_paths_resolve(op_dir, contract_arg, NULL, contract_path, sizeof contract_path,
                          suite_path, sizeof suite_path, &err) != PG_OK)
    return pg_cli_usage_error("selftest", "%s", err.message);

  struct pg_contract c;
  struct pg_diags diags;
  pg_contract_init(&c);
  pg_diags_init(&diags);
  void *lib = NULL;
  int exit_code = PG_EXIT_ERROR;
  struct pg_golden_plan *plan = NULL;
  int rc = pg_contract_load(contract_path, &c, &diags, &err);
  if (rc == PG_OK) rc = pg_golden_plan_build(&c.graph, &plan, &err);
  if (rc == PG_OK) {
    int ge = pg_golden_plan_validate(plan, pg_diags_add_finding, &diags);
    if (ge != 0) rc = ge < 0 ? ge : PG_EVALIDATE;
  }
  pg_cli_print_diags(&diags, PG_SEV_WARNING);
  struct selftest *st = rc == PG_OK ? calloc(1, sizeof *st) : NULL;
  struct pg_py_golden_worker *py = NULL;
  if (st) {
    st->c = &c;
    plan_pairs(st);
  }
  if (rc != PG_OK) {
    if (diags.n_errors == 0) fprintf(stderr, "phasegate selftest: error: %s\n", err.message);
  } else if (!st) {
    fprintf(stderr, "phasegate selftest: error: out of memory\n");
  } else if (st->n_pairs == 0) {
    printf("[phasegate] SKIPPED selftest %s: the contract has no op-level golden "
           "(`golden:` at top level, %s_golden.py or %s_golden_cpu.py) to compare the "
           "composition with, and no phase has both a built-in and a Python golden\n",
           c.op ? c.op : "?", c.op ? c.op : "<op>", c.op ? c.op : "<op>");
    exit_code = PG_EXIT_SKIPPED;
    if (with_strength &&
        strength_all(&c, op_dir, contract_arg, golden_lib, python, precision_bits) != PG_EXIT_PASS)
      exit_code = PG_EXIT_ERROR;
  } else if (!golden_lib && needs_golden_lib(&c, contract_path)) {
    /* printed */
  } else if (golden_lib && pg_golden_lib_open(golden_lib, &lib, &err) != PG_OK) {
    fprintf(stderr, "phasegate selftest: error: %s\n", err.message);
  } else if (open_python(&c, python, &py, &err) != PG_OK) {
    fprintf(stderr, "phasegate selftest: error: %s\n", err.message);
  } else {
    st->g = (struct pg_golden_opts){plan, precision_bits, lib, n_threads, py,
                                    PG_PHASE_GOLDEN_NONE};
    exit_code = check_all(st);
    if (with_strength &&
        strength_all(&c, op_dir, contract_arg, golden_lib, python, precision_bits) != PG_EXIT_PASS)
      exit_code = PG_EXIT_ERROR;
  }
  pg_py_golden_worker_close(py);
  free(st);
  pg_golden_lib_close(lib);
  pg_golden_plan_free(plan);
  pg_contract_reset(&c);
  pg_diags_reset(&diags);
  return exit_code;
}
