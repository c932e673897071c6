/* phasegate runner — counterfactual goldens (docs/design.md §8 "Hints", "Suite strength"):
 * the reference recomputed under each bug hypothesis that applies to boundary k.
 *
 * Two sources of mutants: the golden plan's (goldens/mutate.c: a step's attribute,
 * inputs or summation changed, run over the M1..M(k-1) prefix computed once), only for
 * built-in goldens; and output-level ones built here from the reference already
 * computed (transposed, scaled, sign, shifted, zeros, an input echoed), which apply to
 * Python goldens too; for a Python golden the worker reruns it in float64 and bfloat16
 * (its CPU reproducer). On a precision failure each mutant is compared with the impl
 * (pg__diagnose_mode), for a CPU-reproducer candidate the summation orders are too;
 * for suite strength each is compared with the reference (pg__suite_strength). What
 * the comparisons mean is classify.c's. Bounded per output by size and per case by
 * time (pg_run_opts.diagnose_*), the time spent goes to the case's diagnosis_ms.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "phasegate/goldens.h"
#include "run/run_internal.h"

#define MAX_PLAN_MUTANTS 96

/* The default budget (tools/bench/bench_diagnosis.sh): PG_DIAG_BUDGET_FACTOR x the
 * case's own time before its diagnosis (inputs, golden, impl, compare), at least
 * PG_DIAG_BUDGET_FLOOR_MS (small cases: suite strength of a few hundred mutants) and at
 * most PG_DIAG_BUDGET_CAP_MS. Checked between mutants, so one mutant may run over. */
#define PG_DIAG_BUDGET_FACTOR 4.0
#define PG_DIAG_BUDGET_FLOOR_MS 2000.0
#define PG_DIAG_BUDGET_CAP_MS 30000.0

static double budget_ms(const struct pg__diag_case *dc) {
  double s = dc->rc->o->diagnose_budget_s;
  if (s > 0) return s * 1000.0;
  /* a strength-only pass (selftest --suite-strength) is off every run's critical path:
   * the cap, so a loaded machine does not leave the lists uncached */
  if (dc->rc->o->strength_policy == PG_STRENGTH_ONLY) return PG_DIAG_BUDGET_CAP_MS;
  double own = dc->case_t0_ms > 0 ? dc->t0_ms - dc->case_t0_ms : 0;
  return fmin(PG_DIAG_BUDGET_CAP_MS, fmax(PG_DIAG_BUDGET_FLOOR_MS, PG_DIAG_BUDGET_FACTOR * own));
}

static int over_budget(const struct pg__diag_case *dc) {
  return pg_now_ms() - dc->t0_ms > budget_ms(dc);
}

static enum pg_hint_kind family_kind(enum pg_mutation_family f) {
  switch (f) {
    case PG_MUTF_TRANSPOSED: return PG_HINT_TRANSPOSED;
    case PG_MUTF_SCALED: return PG_HINT_SCALED;
    case PG_MUTF_WRONG_AXIS: return PG_HINT_WRONG_AXIS;
    case PG_MUTF_TAIL_DROPPED: return PG_HINT_REDUCTION_TAIL_DROPPED;
    case PG_MUTF_LOW_PRECISION_INPUTS: return PG_HINT_LOW_PRECISION_INPUTS;
    case PG_MUTF_LOW_PRECISION_ACCUMULATION: return PG_HINT_LOW_PRECISION_ACCUMULATION;
    case PG_MUTF_APPROXIMATION: return PG_HINT_APPROXIMATION;
    default: return PG_HINT_SUITE_CALIBRATION;
  }
}

/* What to do with each mutant of output i. */
struct judge {
  struct pg__diag_case *dc;
  struct pg_mode_result *m;          /* diagnosis: the mode; NULL: suite strength */
  const struct pg_tensor *impl_out;
  struct pg_tensor_check *acc;       /* suite strength: per output, mode-independent */
  const int *want;                   /* want[i]: output i is judged */
  struct pg_tensor scratch;          /* the output mutant being judged (one buffer) */
};

static void judge_one(struct judge *j, int i, enum pg_hint_kind kind, int axis, int64_t tile,
                      const char *detail, const struct pg_tensor *mutant) {
  struct pg__diag_case *dc = j->dc;
  struct pg_cmp_rule rule;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg__output_rule(dc->rc, dc->cs, dc->decls[i], dc->goldens[i].dtype, &rule, &e) != PG_OK)
    return;
  struct pg_cmp_result res;
  if (j->m) {
    struct pg_tensor_check *t = &j->m->tensors[i];
    if (pg_case_compare(&j->impl_out[i], mutant, &rule, dc->n_threads, &res, &e) != PG_OK ||
        res.structural)
      return;
    pg__classify_mutant_fit(t, kind, axis, tile, detail, &res);
    return;
  }
  if (pg_case_compare(mutant, &dc->goldens[i], &rule, dc->n_threads, &res, &e) != PG_OK ||
      res.structural)
    return;
  pg__classify_mutant_strength(&j->acc[i], kind, detail, &res);
}

/* ------------------------------------------------------------------ plan mutants */

static int plan_applies(const struct pg__diag_case *dc) {
  return dc->rc->plan &&
         pg_contract_phase_golden(&dc->rc->contract, dc->k) == PG_PHASE_GOLDEN_BUILTIN;
}

static int build_prefix(const struct pg__diag_case *dc, struct pg_golden_env *env,
                        struct pg_golden_prefix **pre) {
  struct pg_golden_opts g = {dc->rc->plan, dc->rc->o->reference_bits, dc->rc->golden_lib,
                             dc->n_threads, NULL, PG_PHASE_GOLDEN_NONE};
  pg__golden_env_init(env, &g, dc->cs, dc->d);
  struct pg_error e;
  pg_error_clear(&e);
  return pg_golden_prefix_build(env, dc->k, dc->d->inputs, dc->rc->contract.n_primary, pre, &e);
}

/* The geometry a plan mutant names (-1: none): the axis a wrong-axis mutant reduces
 * over, the tile whose partial last tile a tail-dropping one drops. */
static int mutation_axis(const struct pg_golden_mutation *m) {
  return m->family == PG_MUTF_WRONG_AXIS ? (int)m->iparam : -1;
}
static int64_t mutation_tile(const struct pg_golden_mutation *m) {
  return m->family == PG_MUTF_TAIL_DROPPED ? m->iparam : -1;
}

/* Each plan mutant of module k (families in `fams` mask), judged on the wanted outputs. */
static void plan_mutants(struct judge *j, unsigned fams) {
  struct pg__diag_case *dc = j->dc;
  if (!plan_applies(dc)) return;
  struct pg_golden_mutation *muts = calloc(MAX_PLAN_MUTANTS, sizeof *muts);
  if (!muts) return;
  int n = pg_golden_mutations(dc->rc->plan, dc->k, muts, MAX_PLAN_MUTANTS);
  struct pg_golden_env env;
  struct pg_golden_prefix *pre = NULL;
  if (n > 0 && build_prefix(dc, &env, &pre) != PG_OK) n = 0;
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int o = 0; o < PG_MAX_BOUNDARY_OUTPUTS; o++) pg_tensor_init(&outs[o]);
  /* the recomputed accumulations (a scalar loop per output element, one K at a time)
   * cost most: every other mutant first, so a budget cut drops those */
  for (int at = 0; at < 2 * n && !over_budget(dc); at++) {
    int q = at % n;
    if ((at < n) == (muts[q].kind == PG_MUT_ACCUMULATE)) continue;
    if (!(fams & (1u << muts[q].family))) continue;
    int no = 0;
    struct pg_error e;
    pg_error_clear(&e);
    if (pg_golden_prefix_run(pre, &muts[q], outs, &no, &e) != PG_OK) continue;
    for (int i = 0; i < no && i < dc->n_out; i++)
      if (j->want[i])
        judge_one(j, i, family_kind(muts[q].family), mutation_axis(&muts[q]),
                  mutation_tile(&muts[q]), muts[q].detail, &outs[i]);
    for (int o = 0; o < no; o++) pg_tensor_reset(&outs[o]);
  }
  pg_golden_prefix_free(pre);
  free(muts);
}

/* ------------------------------------------------------------------ output mutants */

enum omut { O_TRANSPOSE, O_SCALE, O_SIGN, O_SHIFT, O_ZEROS, O_ECHO };

/* dst (ref's dtype and shape, allocated once per output and reused: a fresh 256 MiB
 * buffer per mutant costs more in page faults than the mutant itself) = the mutant
 * of ref; fp32 without a per-element dtype switch. */
static int make_output_mutant(const struct pg_tensor *ref, enum omut kind, double factor, int axis,
                              int dir, const struct pg_tensor *echo, struct pg_tensor *dst) {
  struct pg_error e;
  if (!dst->dl.data && pg_tensor_alloc(dst, ref->dtype, ref->dl.ndim, ref->shape, &e) != PG_OK)
    return 0;
  int64_t n = ref->numel;
  int nd = ref->dl.ndim;
  const void *src = ref->dl.data;
  void *out = dst->dl.data;
  size_t es = ref->nbytes / (size_t)(n > 0 ? n : 1);
  if (kind == O_ZEROS) {
    memset(out, 0, ref->nbytes);
    return 1;
  }
  if (kind == O_ECHO && echo->dtype == ref->dtype) {
    memcpy(out, echo->dl.data, ref->nbytes);
    return 1;
  }
  if (kind == O_SHIFT) { /* whole rows of the inner axes move: memmove per outer block */
    int64_t inner = 1, size = ref->shape[axis];
    for (int a = axis + 1; a < nd; a++) inner *= ref->shape[a];
    int64_t outer = n / (inner * size);
    size_t row = (size_t)inner * es, blk = row * (size_t)size;
    for (int64_t o = 0; o < outer; o++) {
      const char *s = (const char *)src + (size_t)o * blk;
      char *d = (char *)out + (size_t)o * blk;
      /* out[c] = ref[c - dir], the edge row keeping its own value */
      if (dir > 0) {
        memcpy(d, s, row);
        memcpy(d + row, s, blk - row);
      } else {
        memcpy(d, s + row, blk - row);
        memcpy(d + blk - row, s + blk - row, row);
      }
    }
    return 1;
  }
  if (ref->dtype == PG_DTYPE_F32 && (kind == O_SIGN || kind == O_SCALE)) {
    const float *x = src;
    float *y = out;
    double f = kind == O_SIGN ? -1.0 : factor;
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * f);
    return 1;
  }
  if (kind == O_TRANSPOSE) { /* blocked, so both sides stay in cache */
    int64_t rows = ref->shape[nd - 2], cols = ref->shape[nd - 1], mats = n / (rows * cols);
    for (int64_t m = 0; m < mats; m++)
      for (int64_t r0 = 0; r0 < rows; r0 += 64)
        for (int64_t c0 = 0; c0 < cols; c0 += 64)
          for (int64_t r = r0; r < rows && r < r0 + 64; r++)
            for (int64_t c = c0; c < cols && c < c0 + 64; c++)
              memcpy((char *)out + (size_t)(m * rows * cols + r * cols + c) * es,
                     (const char *)src + (size_t)(m * rows * cols + c * cols + r) * es, es);
    return 1;
  }
  for (int64_t f = 0; f < n; f++) {
    double v = kind == O_ECHO ? pg_load_f64(echo->dl.data, echo->dtype, (size_t)f)
                              : pg_load_f64(src, ref->dtype, (size_t)f);
    if (kind == O_SIGN) v = -v;
    else if (kind == O_SCALE) v *= factor;
    pg_store_f64(out, ref->dtype, (size_t)f, v);
  }
  return 1;
}

static void output_one(struct judge *j, int i, enum pg_hint_kind kind, enum omut ok, double factor,
                       int axis, int dir, const struct pg_tensor *echo, const char *detail) {
  if (over_budget(j->dc)) return;
  if (make_output_mutant(&j->dc->goldens[i], ok, factor, axis, dir, echo, &j->scratch))
    judge_one(j, i, kind, ok == O_SHIFT ? axis : -1, -1, detail, &j->scratch);
}

/* The scale factors worth a hypothesis: 2, 1/2, and sqrt(d), 1/sqrt(d) for each bound
 * dim d > 1 (attention's 1/sqrt(D) missing or doubled). */
static void scale_mutants(struct judge *j, int i) {
  output_one(j, i, PG_HINT_SCALED, O_SCALE, 2.0, 0, 0, NULL, "output x 2");
  output_one(j, i, PG_HINT_SCALED, O_SCALE, 0.5, 0, 0, NULL, "output x 1/2");
  const struct pg_bindings *dims = &j->dc->d->dims;
  int64_t seen[8];
  int n_seen = 0;
  for (int q = 0; q < dims->count && n_seen < 8; q++) {
    int64_t d = dims->items[q].value;
    int dup = d <= 1 || d == 4;
    for (int s = 0; s < n_seen; s++) dup |= seen[s] == d;
    if (dup) continue;
    seen[n_seen++] = d;
    char det[128];
    snprintf(det, sizeof det, "output x 1/sqrt(%s=%lld)", dims->items[q].name, (long long)d);
    output_one(j, i, PG_HINT_SCALED, O_SCALE, 1.0 / sqrt((double)d), 0, 0, NULL, det);
    snprintf(det, sizeof det, "output x sqrt(%s=%lld)", dims->items[q].name, (long long)d);
    output_one(j, i, PG_HINT_SCALED, O_SCALE, sqrt((double)d), 0, 0, NULL, det);
  }
}

static void output_mutants(struct judge *j, int i) {
  const struct pg_tensor *g = &j->dc->goldens[i];
  if (!pg_dtype_is_float(g->dtype) || g->numel == 0) return;
  pg_tensor_reset(&j->scratch);
  pg_tensor_init(&j->scratch);
  int nd = g->dl.ndim;
  char det[160];
  if (nd >= 2 && g->shape[nd - 1] == g->shape[nd - 2] && g->shape[nd - 1] > 1)
    output_one(j, i, PG_HINT_TRANSPOSED, O_TRANSPOSE, 0, 0, 0, NULL, "output, last two axes");
  scale_mutants(j, i);
  output_one(j, i, PG_HINT_SIGN_FLIP, O_SIGN, 0, 0, 0, NULL, "output negated");
  for (int a = 0; a < nd; a++) {
    if (g->shape[a] < 2) continue;
    for (int dir = -1; dir <= 1; dir += 2) {
      snprintf(det, sizeof det, "by %+d along axis %d", dir, a);
      output_one(j, i, PG_HINT_SHIFTED, O_SHIFT, 0, a, dir, NULL, det);
    }
  }
  output_one(j, i, PG_HINT_ZEROS, O_ZEROS, 0, 0, 0, NULL, "all zeros");
  const struct pg_case_data *d = j->dc->d;
  for (int q = 0; q < d->n_inputs; q++) {
    const struct pg_tensor *in = &d->inputs[q];
    if (!pg_dtype_is_float(in->dtype) || in->numel < g->numel || in->numel % g->numel) continue;
    snprintf(det, sizeof det, in->numel == g->numel ? "input '%.60s'" : "input '%.60s', first slice",
             j->dc->rc->contract.primary_inputs[q].name);
    output_one(j, i, PG_HINT_INPUT_ECHO, O_ECHO, 0, 0, 0, in, det);
  }
}

/* ------------------------------------------------------------------ the CPU reproducer */

/* The largest difference from the reference that another summation order of module
 * k's matmuls (and the whole golden in fp64) makes on output i. */
static double order_spread(struct pg__diag_case *dc, int i, char *orders, size_t size) {
  static const struct {
    enum pg_golden_sum_order o;
    const char *name;
  } k_orders[] = {{PG_SUM_REVERSED, "reversed"}, {PG_SUM_BLOCKED, "blocked by 32"},
                  {PG_SUM_PAIRWISE, "pairwise"}, {PG_SUM_KAHAN, "Kahan"}, {PG_SUM_FP64, "fp64"}};
  double spread = 0.0;
  orders[0] = '\0';
  if (!plan_applies(dc)) return -1.0;
  struct pg_golden_env env;
  struct pg_golden_prefix *pre = NULL;
  if (build_prefix(dc, &env, &pre) != PG_OK) return -1.0;
  struct pg_cmp_rule rule;
  struct pg_error e;
  pg_error_clear(&e);
  pg_cmp_rule_init(&rule, dc->goldens[i].dtype);
  int n_steps = pg_golden_plan_n_steps(dc->rc->plan, dc->k);
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int o = 0; o < PG_MAX_BOUNDARY_OUTPUTS; o++) pg_tensor_init(&outs[o]);
  unsigned used = 0;
  for (int s = 0; s < n_steps; s++) {
    const struct pg_golden_plan_step *st = pg_golden_plan_step(dc->rc->plan, dc->k, s);
    if (!st || !st->kernel || strcmp(st->kernel->name, "matmul") != 0) continue;
    for (unsigned q = 0; q < sizeof k_orders / sizeof k_orders[0] && !over_budget(dc); q++) {
      struct pg_golden_mutation mu = {dc->k, s, PG_MUT_ACCUMULATE, -1, 32, k_orders[q].o,
                                      "", PG_MUTF_SUMMATION_ORDER, ""};
      int no = 0;
      if (pg_golden_prefix_run(pre, &mu, outs, &no, &e) == PG_OK && i < no) {
        struct pg_cmp_result res;
        if (pg_case_compare(&outs[i], &dc->goldens[i], &rule, dc->n_threads, &res, &e) ==
                PG_OK && !res.structural && res.max_abs_diff > spread)
          spread = res.max_abs_diff;
        if (!(used & (1u << q)) && strlen(orders) + 16 < size)
          snprintf(orders + strlen(orders), size - strlen(orders), "%s%s", used ? ", " : "",
                   k_orders[q].name);
        used |= 1u << q;
      }
      for (int o = 0; o < no; o++) pg_tensor_reset(&outs[o]);
    }
  }
  pg_golden_prefix_free(pre);
  return orders[0] ? spread : -1.0;
}

/* ------------------------------------------------------------------ Python goldens */

/* The CPU reproducer of a Python golden: the golden has no steps to reorder, so the
 * worker reruns it with its floating inputs in float64 (what other summation orders
 * and precisions can make of the same maths: the spread) and in bfloat16 (a kernel
 * reading its inputs narrow). Each variant is compared with the reference and with
 * the impl; what that means is classify.c's (pg__classify_py_reproducer). */
static void py_reproducer(struct pg__diag_case *dc, struct pg_mode_result *m,
                          const struct pg_tensor *impl_out, const int *want) {
  static const char *const precisions[PG_MAX_REPRO_VARIANTS] = {"float64", "bfloat16"};
  struct pg__run *rc = dc->rc;
  if (!rc->py || pg_contract_phase_golden(&rc->contract, dc->k) != PG_PHASE_GOLDEN_PYTHON)
    return;
  for (int v = 0; v < PG_MAX_REPRO_VARIANTS && !over_budget(dc); v++) {
    struct pg_tensor outs[PG_IMPL_MAX_OUTPUTS];
    for (int o = 0; o < PG_IMPL_MAX_OUTPUTS; o++) pg_tensor_init(&outs[o]);
    int no = 0;
    struct pg_error e;
    pg_error_clear(&e);
    if (pg_py_golden_call_precision(rc->py, &rc->contract, dc->k, dc->cs, dc->d, precisions[v],
                                    outs, &no, &e) == PG_OK)
      for (int i = 0; i < no && i < dc->n_out && i < m->n_tensors; i++) {
        struct pg_tensor_check *t = &m->tensors[i];
        struct pg_cmp_rule rule, plain;
        struct pg_cmp_result vs_ref, vs_impl;
        if (!want[i] || t->n_repro >= PG_MAX_REPRO_VARIANTS ||
            pg__output_rule(rc, dc->cs, dc->decls[i], dc->goldens[i].dtype, &rule, &e) != PG_OK)
          continue;
        pg_cmp_rule_init(&plain, dc->goldens[i].dtype);
        if (pg_case_compare(&outs[i], &dc->goldens[i], &plain, dc->n_threads, &vs_ref, &e) != PG_OK ||
            vs_ref.structural ||
            pg_case_compare(&impl_out[i], &outs[i], &rule, dc->n_threads, &vs_impl, &e) != PG_OK ||
            vs_impl.structural)
          continue;
        struct pg_repro_variant *rv = &t->repro[t->n_repro++];
        rv->precision = precisions[v];
        rv->vs_reference = vs_ref.max_abs_diff;
        rv->impl_max_abs_diff = vs_impl.max_abs_diff;
        rv->impl_rmse = vs_impl.rmse;
        rv->impl_mismatches = vs_impl.mismatches;
        pg__classify_py_reproducer(t, rv, &vs_impl);
      }
    for (int o = 0; o < PG_IMPL_MAX_OUTPUTS; o++) pg_tensor_reset(&outs[o]);
  }
}

/* ------------------------------------------------------------------ entry points */

static int64_t max_bytes(const struct pg__run *rc) {
  double mib = rc->o->diagnose_max_mib > 0 ? rc->o->diagnose_max_mib : 512.0;
  return (int64_t)(mib * 1024.0 * 1024.0);
}

void pg__diagnose_mode(struct pg__diag_case *dc, struct pg_mode_result *m,
                       const struct pg_tensor *impl_out) {
  if (dc->rc->o->diagnose_budget_s < 0 || !dc->cs->precision) return;
  double t0 = pg_now_ms();
  int want[PG_IMPL_MAX_OUTPUTS] = {0}, any = 0;
  for (int i = 0; i < m->n_tensors && i < dc->n_out; i++) {
    const struct pg_tensor_check *t = &m->tensors[i];
    want[i] = t->compared && !t->cmp.structural && !t->passed && t->values_checked &&
              pg_dtype_is_float(dc->goldens[i].dtype) &&
              (int64_t)dc->goldens[i].nbytes <= max_bytes(dc->rc);
    any |= want[i];
  }
  if (!any) return;
  if (dc->t0_ms == 0) dc->t0_ms = t0;
  struct judge j = {.dc = dc, .m = m, .impl_out = impl_out, .want = want};
  pg_tensor_init(&j.scratch);
  unsigned all = ~(1u << PG_MUTF_SUMMATION_ORDER);
  plan_mutants(&j, all);
  py_reproducer(dc, m, impl_out, want);
  for (int i = 0; i < dc->n_out; i++) {
    if (!want[i]) continue;
    output_mutants(&j, i);
    struct pg_tensor_check *t = &m->tensors[i];
    if (t->cmp.cpu_reproducer_candidate && !over_budget(dc)) {
      char orders[128];
      double spread = order_spread(dc, i, orders, sizeof orders);
      if (spread >= 0) pg__classify_reproducer(t, spread, orders);
    }
  }
  pg_tensor_reset(&j.scratch);
  dc->spent_ms += pg_now_ms() - t0;
}

void pg__suite_strength(struct pg__diag_case *dc, struct pg_case_result *r) {
  int64_t cap = dc->rc->o->strength_max_elems;
  if (cap < 0 || !dc->cs->precision || dc->rc->o->diagnose_budget_s < 0) return;
  if (cap == 0) cap = 65536;
  double t0 = pg_now_ms();
  int want[PG_IMPL_MAX_OUTPUTS] = {0}, any = 0;
  for (int i = 0; i < dc->n_out; i++) {
    want[i] = pg_dtype_is_float(dc->goldens[i].dtype) && dc->goldens[i].numel > 0 &&
              dc->goldens[i].numel <= cap && dc->goldens[i].dl.data;
    any |= want[i];
  }
  if (!any) return;
  struct pg_tensor_check *acc = calloc((size_t)dc->n_out, sizeof *acc);
  if (!acc) return;
  /* impl-independent: read from the golden's cache entry; computed only when the run
   * asks (docs/runner.md "Suite strength"), so a cold phase run never waits for it */
  r->strength = PG_STRENGTH_CACHED;
  if (!pg__strength_cached(dc->rc, dc->k, dc->cs, &dc->d->dims, want, dc->n_out, acc)) {
    if (dc->rc->o->strength_policy == PG_STRENGTH_FROM_CACHE) {
      r->strength = PG_STRENGTH_NOT_COMPUTED;
      free(acc);
      return;
    }
    r->strength = PG_STRENGTH_COMPUTED;
    if (dc->t0_ms == 0) dc->t0_ms = t0;
    struct judge j = {.dc = dc, .acc = acc, .want = want};
    pg_tensor_init(&j.scratch);
    plan_mutants(&j, ~(1u << PG_MUTF_SUMMATION_ORDER));
    for (int i = 0; i < dc->n_out; i++)
      if (want[i]) output_mutants(&j, i);
    pg_tensor_reset(&j.scratch);
    if (!over_budget(dc)) /* a list cut short by the budget is not kept */
      pg__strength_store(dc->rc, dc->k, dc->cs, &dc->d->dims, want, dc->n_out, acc);
  }
  for (int i = 0; i < dc->n_out; i++) r->strength_undetected += want[i] ? acc[i].n_undetected : 0;
  for (int mi = 0; mi < r->n_modes; mi++)
    for (int i = 0; i < dc->n_out && i < r->modes[mi].n_tensors; i++) {
      if (!want[i]) continue;
      struct pg_tensor_check *t = &r->modes[mi].tensors[i];
      t->strength_checked = 1;
      for (int u = 0; u < acc[i].n_undetected && t->n_undetected < PG_MAX_UNDETECTED; u++)
        memcpy(t->undetected[t->n_undetected++], acc[i].undetected[u], sizeof t->undetected[0]);
    }
  free(acc);
  dc->spent_ms += pg_now_ms() - t0;
}
