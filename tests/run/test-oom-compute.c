/* phasegate tests — out-of-memory sweeps of the compute paths: pg_tensor_compare (one
 * thread and several; pthread_create failures are part of the schedule and must
 * degrade to fewer threads with the same result), pg_case_bind_dims and
 * pg_case_generate_inputs (every fill kind, several dtypes, multithreaded fills);
 * pg_golden_cumulative (with its golden plan) for a small built-in contract (matmul / softmax / add /
 * layernorm / sub; a wide sigmoid * x module that runs on several threads) and for the bundled attention contract at tiny dims, and
 * pg_goldens_validate. OpenBLAS allocates inside its shared library: not counted.
 *
 *   test-oom-compute ATTENTION_CONTRACT.yaml [BAD_STEPS_CONTRACT.yaml] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"
#include "tensors/tensors.h"
#include "pg_oom.h"
#include "phasegate/compare.h"
#include "phasegate/goldens.h"
#include "opdir/opdir.h"
#include "phasegate/tensor.h"

static unsigned long long tensor_hash(unsigned long long h, const struct pg_tensor *t) {
  h = pg_oom_hash(h, t->name, strlen(t->name));
  h = pg_oom_hash(h, &t->dtype, sizeof t->dtype);
  h = pg_oom_hash(h, t->shape, sizeof(int64_t) * (size_t)t->dl.ndim);
  return pg_oom_hash(h, t->dl.data, t->nbytes);
}

/* ---------------------------------------------------------------- compare */

struct cmp_ctx {
  const DLTensor *a, *b;
  struct pg_cmp_rule rule;
  int n_threads;
  unsigned long long ref;
};

static int cmp_once(void *vctx, int reference, struct pg_error *err) {
  struct cmp_ctx *c = vctx;
  struct pg_cmp_result r;
  memset(&r, 0, sizeof r);
  int rc = pg_tensor_compare(c->a, c->b, &c->rule, c->n_threads, &r, err);
  if (rc != PG_OK) return rc;
  /* the verdict and metrics that must not depend on how many threads ran */
  unsigned long long h = pg_oom_hash(0, &r.mismatches, sizeof r.mismatches);
  h = pg_oom_hash(h, &r.max_abs_diff, sizeof r.max_abs_diff);
  h = pg_oom_hash(h, &r.max_rel_diff, sizeof r.max_rel_diff);
  h = pg_oom_hash(h, &r.max_abs_index, sizeof r.max_abs_index);
  h = pg_oom_hash(h, &r.rmse, sizeof r.rmse);
  h = pg_oom_hash(h, &r.n_first, sizeof r.n_first);
  return pg_oom_same(&c->ref, reference, h, "compare result", err);
}

/* ---------------------------------------------------------------- contracts */

static const char small_contract[] =
    "schema_version: 1\n"
    "op: small\n"
    "dims: {M: 3, K: 5, N: 4}\n"
    "primary_inputs:\n"
    "  - {name: a, shape: [M, K], dtype: float16, fill: normal(0, 1)}\n"
    "  - {name: b, shape: [K, N], dtype: float32, fill: \"uniform(-1, 1) with nan:0.0\"}\n"
    "  - {name: c, shape: [N], dtype: bfloat16, fill: arange}\n"
    "  - {name: big, shape: [2, 70000], dtype: float32, fill: normal(0, 2)}\n"
    "  - {name: ints, shape: [2, 70000], dtype: int32, fill: int(-5, 5)}\n"
    "  - {name: z, shape: [M], dtype: float64, fill: const(0.5)}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: mm\n"
    "    inputs: [{name: a, source: primary}, {name: b, source: primary}]\n"
    "    outputs: [{name: y, shape: [M, N], dtype: float32}]\n"
    "    golden:\n"
    "      - t = matmul(a, b, alpha=1/sqrt(K))\n"
    "      - y = add(t, c)\n"
    "  - id: 2\n"
    "    name: sm\n"
    "    inputs: [{name: y, source: module_1}]\n"
    "    outputs: [{name: p, shape: [M, N], dtype: float16}]\n"
    "    golden:\n"
    "      - p = softmax(y, axis=-1)\n"
    "  - id: 3\n"
    "    name: ln\n"
    "    inputs: [{name: p, source: module_2}, {name: y, source: module_1}]\n"
    "    outputs: [{name: o, shape: [M, N], dtype: float32}, {name: s, shape: [M, N], dtype: float32}]\n"
    "    golden:\n"
    "      - u = add(p, y)\n"
    "      - o = layernorm(u)\n"
    "      - s = sub(u, y)\n"
    "  - id: 4\n"
    "    name: wide\n"
    "    inputs: [{name: big, source: primary}, {name: o, source: module_3}]\n"
    "    outputs: [{name: w, shape: [2, 70000], dtype: float16}]\n"
    "    golden:\n"
    "      - e = sigmoid(big)\n"
    "      - w = mul(e, big)\n"
    "final_outputs: [{name: w, source: module_4}]\n";

static const char small_suite[] =
    "{\"op\": \"small\", \"cases\": [{\"id\": \"c1\", \"level\": 2, \"seed\": 3,"
    " \"shape\": {\"M\": 2}, \"dtype\": {\"a\": \"float32\"},"
    " \"fill\": {\"a\": \"int(-3, 3)\", \"c\": \"uniform(-1, 1) with inf:0.1,-0:0.2\"}}]}";

struct gen_ctx {
  const struct pg_contract *c;
  const struct pg_case *cs;
  int n_threads;
  unsigned long long ref;
};

static int bind_once(void *vctx, int reference, struct pg_error *err) {
  struct gen_ctx *g = vctx;
  struct pg_bindings dims = {0};
  int rc = pg_case_bind_dims(g->c, g->cs, &dims, err);
  if (rc == PG_OK) {
    unsigned long long h = 0;
    for (int i = 0; i < dims.count; i++) {
      h = pg_oom_hash(h, dims.items[i].name, strlen(dims.items[i].name));
      h = pg_oom_hash(h, &dims.items[i].value, sizeof dims.items[i].value);
    }
    rc = pg_oom_same(&g->ref, reference, h, "bound dims", err);
  }
  pg_bindings_reset(&dims);
  return rc;
}

static int generate_once(void *vctx, int reference, struct pg_error *err) {
  struct gen_ctx *g = vctx;
  struct pg_bindings dims = {0};
  int rc = pg_case_bind_dims(g->c, g->cs, &dims, err);
  if (rc != PG_OK) return rc;
  struct pg_tensor in[16];
  int n = g->c->n_primary;
  for (int i = 0; i < n; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts opts = {0, g->n_threads};
  rc = pg_case_generate_inputs(g->c, g->cs, &dims, &opts, in, err);
  if (rc == PG_OK) {
    unsigned long long h = 0;
    for (int i = 0; i < n; i++) h = tensor_hash(h, &in[i]);
    rc = pg_oom_same(&g->ref, reference, h, "generated inputs", err);
  }
  for (int i = 0; i < n; i++) pg_tensor_reset(&in[i]);
  pg_bindings_reset(&dims);
  return rc;
}

struct golden_ctx {
  const struct pg_contract *c;
  const struct pg_case *cs;
  const struct pg_bindings *dims;
  const struct pg_tensor *inputs;
  int k, precision_bits;
  unsigned long long ref;
};

static int golden_once(void *vctx, int reference, struct pg_error *err) {
  struct golden_ctx *g = vctx;
  struct pg_golden_plan *plan = NULL;
  int rc = pg_golden_plan_build(&g->c->graph, &plan, err);
  if (rc != PG_OK) return rc;
  struct pg_golden_env env = {plan, g->dims, g->cs ? g->cs->dtypes : NULL,
                              g->cs ? g->cs->n_dtypes : 0, g->precision_bits, NULL, 3};
  struct pg_tensor out[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&out[i]);
  int n = 0;
  rc = pg_golden_cumulative(&env, g->k, g->inputs, g->c->n_primary, out, &n, err);
  if (rc == PG_OK) {
    unsigned long long h = pg_oom_hash(0, &n, sizeof n);
    for (int i = 0; i < n; i++) h = tensor_hash(h, &out[i]);
    rc = pg_oom_same(&g->ref, reference, h, "golden outputs", err);
  }
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&out[i]);
  pg_golden_plan_free(plan);
  return rc;
}

static int cancel_once(void *vctx, int reference, struct pg_error *err) {
  struct gen_ctx *g = vctx;
  struct pg_bindings dims = {0};
  int rc = pg_case_bind_dims(g->c, g->cs, &dims, err);
  if (rc != PG_OK) return rc;
  struct pg_tensor in[16];
  int n = g->c->n_primary;
  for (int i = 0; i < n; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts opts = {0, g->n_threads};
  struct pg_cancel_result cr;
  rc = pg_case_generate_inputs_ex(g->c, g->cs, &dims, &opts, in, &cr, err);
  if (rc == PG_OK && !cr.present)
    rc = pg_error_set(err, PG_EINTERNAL, "cancellation_stress did not run");
  if (rc == PG_OK) {
    unsigned long long h = pg_oom_hash(0, cr.note, strlen(cr.note));
    for (int i = 0; i < n; i++) h = tensor_hash(h, &in[i]);
    rc = pg_oom_same(&g->ref, reference, h, "stressed inputs", err);
  }
  for (int i = 0; i < n; i++) pg_tensor_reset(&in[i]);
  pg_bindings_reset(&dims);
  return rc;
}

static int validate_once(void *vctx, int reference, struct pg_error *err) {
  struct gen_ctx *g = vctx;
  struct pg_diags d;
  pg_diags_init(&d);
  int rc = pg_goldens_validate(&g->c->graph, pg_diags_add_finding, &d);
  if (rc >= 0) { /* every finding must be there, as in the reference run */
    unsigned long long h = pg_oom_hash(0, &rc, sizeof rc);
    for (int i = 0; i < d.count; i++) {
      const struct pg_diag *x = &d.items[i];
      h = pg_oom_hash(h, x->message, strlen(x->message));
      h = pg_oom_hash(h, &x->line, sizeof x->line);
      h = pg_oom_hash(h, &x->column, sizeof x->column);
    }
    int same = pg_oom_same(&g->ref, reference, h, "findings", err);
    if (same != PG_OK) rc = same;
    else if (rc > 0) rc = PG_EVALIDATE; /* findings: a status the faulted runs must keep */
  }
  pg_diags_reset(&d);
  if (rc == PG_ENOMEM) pg_error_set(err, PG_ENOMEM, "pg_goldens_validate: out of memory");
  return rc;
}

/* Sweeps bind, generate and every phase's golden of one contract + case. */
static int sweep_contract(const char *label, const struct pg_contract *c, const struct pg_case *cs,
                          struct pg_bindings *dims) {
  int bad = 0;
  char name[160];
  struct gen_ctx g = {c, cs, 1, 0};
  snprintf(name, sizeof name, "%s bind_dims", label);
  bad |= pg_oom_sweep_ex(name, bind_once, &g, &(struct pg_oom_opts){.min_sites = 1});
  snprintf(name, sizeof name, "%s goldens_validate", label);
  bad |= pg_oom_sweep_ex(name, validate_once, &g, &(struct pg_oom_opts){.min_sites = -1});
  for (int nt = 1; nt <= 3; nt += 2) {
    struct gen_ctx gt = {c, cs, nt, 0};
    snprintf(name, sizeof name, "%s generate_inputs %d thread(s)", label, nt);
    bad |= pg_oom_sweep_ex(name, generate_once, &gt,
                           &(struct pg_oom_opts){.min_sites = 1, .count_threads = 1});
  }
  /* the goldens read the inputs of one unfaulted generation */
  struct pg_error err;
  struct pg_tensor in[16];
  for (int i = 0; i < c->n_primary; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts opts = {0, 1};
  if (pg_case_generate_inputs(c, cs, dims, &opts, in, &err) != PG_OK) {
    printf("not ok - %s: generate: %s\n", label, err.message);
    return 1;
  }
  for (int k = 1; k <= c->n_modules; k++) {
    for (int bits = 32; bits <= 64; bits += 32) {
      struct golden_ctx gc = {c, cs, dims, in, k, bits, 0};
      snprintf(name, sizeof name, "%s golden_cumulative M%d fp%d", label, k, bits);
      bad |= pg_oom_sweep_ex(name, golden_once, &gc,
                             &(struct pg_oom_opts){.min_sites = 1, .count_threads = 1});
    }
  }
  for (int i = 0; i < c->n_primary; i++) pg_tensor_reset(&in[i]);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test-oom-compute ATTENTION_CONTRACT.yaml [BAD_STEPS.yaml]\n");
    return 2;
  }
  int bad = 0;
  struct pg_error err;

  /* compare: 3 chunks of 65536 elements, so several threads have work */
  enum { N = 3 * 65536 + 100 };
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  int64_t shape[2] = {N / 4, 4};
  if ((N % 4) || pg_tensor_alloc(&a, PG_DTYPE_F32, 2, shape, &err) ||
      pg_tensor_alloc(&b, PG_DTYPE_F32, 2, shape, &err))
    return 1;
  for (int i = 0; i < N; i++) {
    ((float *)b.dl.data)[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    ((float *)a.dl.data)[i] = ((float *)b.dl.data)[i] + (i % 997 == 0 ? 0.01f : 0.0f);
  }
  for (int nt = 1; nt <= 4; nt += 3) {
    struct cmp_ctx c = {&a.dl, &b.dl, {0}, nt, 0};
    pg_cmp_rule_init(&c.rule, PG_DTYPE_F32);
    char name[64];
    snprintf(name, sizeof name, "compare %d thread(s)", nt);
    bad |= pg_oom_sweep_ex(name, cmp_once, &c,
                           &(struct pg_oom_opts){.min_sites = 1, .count_threads = 1});
  }
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);

  /* the small built-in contract with a suite case (shape, dtype and fill overrides) */
  struct pg_contract c;
  struct pg_suite s;
  struct pg_diags d;
  pg_diags_init(&d);
  if (pg_contract_load_buffer("small.yaml", small_contract, sizeof small_contract - 1, &c, &d,
                              &err) != PG_OK ||
      pg_suite_load_buffer("small.json", small_suite, sizeof small_suite - 1, &c, &s, &d,
                           &err) != PG_OK) {
    printf("not ok - small contract: %s\n", err.message);
    return 1;
  }
  struct pg_bindings dims = {0};
  if (pg_case_bind_dims(&c, &s.cases[0], &dims, &err) != PG_OK) return 1;
  bad |= sweep_contract("small", &c, &s.cases[0], &dims);
  pg_bindings_reset(&dims);
  pg_suite_reset(&s);
  pg_contract_reset(&c);
  pg_diags_reset(&d);

  /* the bundled attention contract at tiny dims (a suite case overrides them) */
  static const char tiny[] =
      "{\"op\": \"attention\", \"cases\": [{\"id\": \"tiny\", \"level\": 2,"
      " \"shape\": {\"B\": 1, \"H\": 2, \"S\": 5, \"D\": 4}},"
      " {\"id\": \"stress\", \"level\": 5, \"shape\": {\"B\": 1, \"H\": 1, \"S\": 4, \"D\": 8},"
      "  \"cancellation_stress\": {\"target\": \"scores\", \"relative_gap\": 1e-3, \"seed\": 4}}]}";
  pg_diags_init(&d);
  if (pg_contract_load(argv[1], &c, &d, &err) != PG_OK ||
      pg_suite_load_buffer("tiny.json", tiny, sizeof tiny - 1, &c, &s, &d, &err) != PG_OK) {
    printf("not ok - attention: %s\n", err.message);
    return 1;
  }
  if (pg_case_bind_dims(&c, &s.cases[0], &dims, &err) != PG_OK) return 1;
  bad |= sweep_contract("attention", &c, &s.cases[0], &dims);
  pg_bindings_reset(&dims);
  for (int nt = 1; nt <= 2; nt++) {
    struct gen_ctx g = {&c, &s.cases[1], nt, 0};
    char name[64];
    snprintf(name, sizeof name, "attention cancellation_stress %d thread(s)", nt);
    bad |= pg_oom_sweep_ex(name, cancel_once, &g,
                           &(struct pg_oom_opts){.min_sites = 1, .count_threads = 1});
  }
  pg_suite_reset(&s);
  pg_contract_reset(&c);
  pg_diags_reset(&d);

  /* golden steps with findings (unknown kernels, tensors, attributes) */
  if (argc > 2) {
    pg_diags_init(&d);
    if (pg_contract_load(argv[2], &c, &d, &err) != PG_OK) {
      printf("not ok - %s: %s\n", argv[2], err.message);
      return 1;
    }
    struct gen_ctx g = {&c, NULL, 1, 0};
    bad |= pg_oom_sweep("bad steps goldens_validate", validate_once, &g);
    pg_contract_reset(&c);
    pg_diags_reset(&d);
  }
  return bad;
}
