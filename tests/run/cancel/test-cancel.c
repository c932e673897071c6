/* tests/run/cancel — cancellation_stress for any target a golden step computes with sub,
 * add, matmul, sum or mean (runner/run/cancel.c). Every share is recomputed here with
 * a naive double loop, independent of the kernels the generator scores with: the
 * stressed inputs must raise the share of elements with r <= relative_gap far above the
 * plain inputs', the result struct must agree, generation must be bit-identical for any
 * thread count, and unsupported targets must be refused before any tensor is made. */
#include <math.h>
#include <string.h>

#include "run/run.h"
#include "tensors/tensors.h"
#include "pg_test.h"

struct fixture {
  struct pg_contract c;
  struct pg_suite s;
  struct pg_diags d;
  struct pg_bindings dims;
};

static void load(struct fixture *f, const char *contract, const char *suite) {
  struct pg_error err;
  pg_diags_init(&f->d);
  pg_contract_init(&f->c);
  pg_suite_init(&f->s);
  f->dims.items = NULL;
  f->dims.count = 0;
  int rc = pg_contract_load_buffer("c.yaml", contract, strlen(contract), &f->c, &f->d, &err);
  PG_CHECK_MSG(rc == PG_OK, "contract: %s", err.message);
  rc = pg_suite_load_buffer("s.json", suite, strlen(suite), &f->c, &f->s, &f->d, &err);
  PG_CHECK_MSG(rc == PG_OK, "suite: %s", err.message);
}

static void unload(struct fixture *f) {
  pg_bindings_reset(&f->dims);
  pg_suite_reset(&f->s);
  pg_contract_reset(&f->c);
  pg_diags_reset(&f->d);
}

static const struct pg_case *get_case(struct fixture *f, const char *id) {
  for (int i = 0; i < f->s.n_cases; i++)
    if (strcmp(f->s.cases[i].id, id) == 0) return &f->s.cases[i];
  PG_CHECK_MSG(0, "no case %s", id);
  return NULL;
}

/* Generates case `id` into in[] (n_primary tensors) with n_threads. */
static void gen(struct fixture *f, const char *id, int n_threads, struct pg_tensor *in,
                struct pg_cancel_result *res) {
  struct pg_error err;
  const struct pg_case *cs = get_case(f, id);
  pg_bindings_reset(&f->dims);
  PG_CHECK_OK(pg_case_bind_dims(&f->c, cs, &f->dims, &err));
  for (int i = 0; i < f->c.n_primary; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts o = {0, n_threads};
  int rc = pg_case_generate_inputs_ex(&f->c, cs, &f->dims, &o, in, res, &err);
  PG_CHECK_MSG(rc == PG_OK, "case %s: %s", id, err.message);
  if (res && res->present) printf("# %s: %s\n", id, res->note);
}

static void drop(struct fixture *f, struct pg_tensor *in) {
  for (int i = 0; i < f->c.n_primary; i++) pg_tensor_reset(&in[i]);
}

static double at(const struct pg_tensor *t, int64_t i) {
  return pg_load_f64(t->dl.data, t->dtype, (size_t)i);
}

static int64_t dim(struct fixture *f, const char *name) {
  int64_t v = 0;
  PG_CHECK(pg_bindings_get(&f->dims, name, &v));
  return v;
}

/* share of r = |sum_d a[i,d] b[j,d]| / sum_d |a b| <= gap over all (batch, i, j):
 * a is [Bt, S, D], b is [Bt, S, D] (trans_b). */
static double share_matmul_nt(const struct pg_tensor *a, const struct pg_tensor *b, int64_t bt,
                              int64_t s, int64_t d, double gap) {
  int64_t hits = 0;
  for (int64_t n = 0; n < bt; n++)
    for (int64_t i = 0; i < s; i++)
      for (int64_t j = 0; j < s; j++) {
        double t = 0, m = 0;
        for (int64_t k = 0; k < d; k++) {
          double p = at(a, (n * s + i) * d + k) * at(b, (n * s + j) * d + k);
          t += p;
          m += fabs(p);
        }
        hits += m > 0 && fabs(t) <= gap * m;
      }
  return (double)hits / (double)(bt * s * s);
}

/* ---------------------------------------------------------------- matmul */

static const char *ATTN =
    "op: attn\n"
    "dims: {B: 2, H: 2, S: 24, D: 16}\n"
    "primary_inputs:\n"
    "  - {name: q, shape: [B, H, S, D], dtype: float16}\n"
    "  - {name: k, shape: [B, H, S, D], dtype: float16}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: qk\n"
    "    inputs: [{name: q, source: primary}, {name: k, source: primary}]\n"
    "    outputs: [{name: scores, shape: [B, H, S, S], dtype: float32}]\n"
    "    golden:\n"
    "      - scores = matmul(q, k, trans_b=true, alpha=1/sqrt(D))\n"
    "  - id: 2\n"
    "    name: sm\n"
    "    inputs: [{name: scores, source: module_1}]\n"
    "    outputs: [{name: probs, shape: [B, H, S, S], dtype: float32}]\n"
    "    golden:\n"
    "      - probs = softmax(scores, axis=-1)\n"
    "final_outputs: [{name: probs, source: module_2}]\n";

static const char *ATTN_SUITE =
    "{\"op\": \"attn\", \"cases\": [\n"
    " {\"id\": \"plain\", \"level\": 5, \"seed\": 3},\n"
    " {\"id\": \"f16\", \"level\": 5, \"seed\": 3, \"cancellation_stress\": {\"target\": \"scores\","
    " \"expression\": \"a - b\", \"relative_gap\": 1e-3, \"seed\": 42}},\n"
    " {\"id\": \"f32\", \"level\": 5, \"seed\": 3, \"dtype\": {\"q\": \"float32\", \"k\": \"float32\"},"
    " \"shape\": {\"D\": 15}, \"cancellation_stress\": {\"target\": \"scores\", \"relative_gap\": 1e-5}},\n"
    " {\"id\": \"d1\", \"level\": 5, \"shape\": {\"D\": 1}, \"cancellation_stress\": {\"target\": \"scores\"}},\n"
    " {\"id\": \"f16_other_seed\", \"level\": 5, \"seed\": 3, \"cancellation_stress\": {\"target\": \"scores\","
    " \"relative_gap\": 1e-3, \"seed\": 43}}\n"
    "]}";

PG_TEST(matmul_construct_raises_share) {
  struct fixture f;
  load(&f, ATTN, ATTN_SUITE);
  struct pg_tensor plain[2], st[2];
  struct pg_cancel_result res;
  gen(&f, "plain", 1, plain, &res);
  PG_CHECK_EQ_INT(0, res.present);
  int64_t bt = dim(&f, "B") * dim(&f, "H"), s = dim(&f, "S"), d = dim(&f, "D");
  double before = share_matmul_nt(&plain[0], &plain[1], bt, s, d, 1e-3);
  gen(&f, "f16", 1, st, &res);
  double after = share_matmul_nt(&st[0], &st[1], bt, s, d, 1e-3);
  printf("# fp16 scores, r <= 1e-3: %.4f plain, %.4f stressed\n", before, after);
  PG_CHECK(before < 0.02);
  PG_CHECK(after > 0.9);
  PG_CHECK_EQ_INT(1, res.present);
  PG_CHECK_EQ_STR("matmul", res.kernel);
  PG_CHECK_EQ_STR("construct", res.method);
  PG_CHECK_EQ_STR("scores", res.target);
  PG_CHECK(res.n == bt * s * s);
  /* the struct reports what the independent check sees (alpha > 0 does not change r) */
  PG_CHECK_NEAR(after, res.share, 1.0 / (double)res.n + 1e-12);
  PG_CHECK_NEAR(before, res.share_plain, 1.0 / (double)res.n + 1e-12);
  PG_CHECK(res.median_r < 1e-3 && res.median_r_plain > 0.01);
  PG_CHECK(strstr(res.note, "scores") && strstr(res.note, "matmul") && strstr(res.note, "%"));
  /* not a degenerate all-zero golden: the products still differ from exact cancellation */
  PG_CHECK(!strstr(res.note, "exactly 0"));
  /* the values keep the fill's scale (no input collapses to zeros or blows up) */
  double amax = 0;
  for (int64_t i = 0; i < st[1].numel; i++) amax = fmax(amax, fabs(at(&st[1], i)));
  PG_CHECK(amax > 1.0 && amax < 10.0);
  drop(&f, plain);
  drop(&f, st);
  /* fp32 inputs, odd D (last contraction slice of k zeroed), gap 1e-5 */
  gen(&f, "f32", 1, st, &res);
  d = dim(&f, "D");
  PG_CHECK_EQ_INT(15, d);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, st[0].dtype);
  after = share_matmul_nt(&st[0], &st[1], bt, s, d, 1e-5);
  printf("# fp32 scores, D = 15, r <= 1e-5: %.4f stressed\n", after);
  PG_CHECK(after > 0.99);
  PG_CHECK_NEAR(after, res.share, 1.0 / (double)res.n + 1e-12);
  drop(&f, st);
  unload(&f);
}

PG_TEST(matmul_determinism) {
  struct fixture f;
  load(&f, ATTN, ATTN_SUITE);
  struct pg_tensor a[2], b[2], c[2];
  gen(&f, "f16", 1, a, NULL);
  gen(&f, "f16", 2, b, NULL);
  gen(&f, "f16", 5, c, NULL);
  for (int i = 0; i < 2; i++) {
    PG_CHECK(memcmp(a[i].dl.data, b[i].dl.data, a[i].nbytes) == 0);
    PG_CHECK(memcmp(a[i].dl.data, c[i].dl.data, a[i].nbytes) == 0);
  }
  drop(&f, b);
  /* another stress seed perturbs k differently; q (the copied operand) is the same */
  gen(&f, "f16_other_seed", 1, b, NULL);
  PG_CHECK(memcmp(a[0].dl.data, b[0].dl.data, a[0].nbytes) == 0);
  PG_CHECK(memcmp(a[1].dl.data, b[1].dl.data, a[1].nbytes) != 0);
  drop(&f, a);
  drop(&f, b);
  drop(&f, c);
  unload(&f);
}

PG_TEST(matmul_single_product_refused) {
  struct fixture f;
  struct pg_error err;
  load(&f, ATTN, ATTN_SUITE);
  const struct pg_case *cs = get_case(&f, "d1");
  PG_CHECK_OK(pg_cancellation_check(&f.c, cs, &err)); /* statically fine ... */
  PG_CHECK_OK(pg_case_bind_dims(&f.c, cs, &f.dims, &err));
  struct pg_tensor in[2];
  for (int i = 0; i < 2; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts o = {0, 1};
  /* ... but D = 1 leaves nothing to cancel: refused, inputs released */
  PG_CHECK_EQ_INT(PG_ENOTSUP, pg_case_generate_inputs(&f.c, cs, &f.dims, &o, in, &err));
  PG_CHECK_MSG(strstr(err.message, "case d1") && strstr(err.message, "'scores'") &&
               strstr(err.message, "single product"), "%s", err.message);
  for (int i = 0; i < 2; i++) PG_CHECK(in[i].dl.data == NULL);
  unload(&f);
}

/* matmul whose left operand comes from an earlier module: the knob search. */
static const char *MM_SEARCH =
    "op: mms\n"
    "dims: {N: 16, K: 32, M: 12}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [N, K], dtype: float32}\n"
    "  - {name: y, shape: [N, K], dtype: float32, fill: \"normal(0, 0.1)\"}\n"
    "  - {name: w, shape: [K, M], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: m1\n"
    "    inputs: [{name: x, source: primary}, {name: y, source: primary}]\n"
    "    outputs: [{name: a, shape: [N, K], dtype: float32}]\n"
    "    golden:\n"
    "      - a = add(x, y)\n"
    "  - id: 2\n"
    "    name: m2\n"
    "    inputs: [{name: a, source: module_1}, {name: w, source: primary}]\n"
    "    outputs: [{name: t, shape: [N, M], dtype: float32}]\n"
    "    golden:\n"
    "      - t = matmul(a, w)\n"
    "final_outputs: [{name: t, source: module_2}]\n";

static double share_mm(const struct pg_tensor *in, int64_t n, int64_t k, int64_t m, double gap) {
  int64_t hits = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double t = 0, s = 0;
      for (int64_t l = 0; l < k; l++) {
        double a = (double)(float)(at(&in[0], i * k + l) + at(&in[1], i * k + l));
        double p = a * at(&in[2], l * m + j);
        t += p;
        s += fabs(p);
      }
      hits += s > 0 && fabs(t) <= gap * s;
    }
  return (double)hits / (double)(n * m);
}

PG_TEST(matmul_search_from_module_output) {
  struct fixture f;
  load(&f, MM_SEARCH,
       "{\"op\": \"mms\", \"cases\": [{\"id\": \"plain\", \"level\": 5, \"seed\": 9},"
       " {\"id\": \"st\", \"level\": 5, \"seed\": 9, \"cancellation_stress\": {\"target\": \"t\","
       " \"relative_gap\": 0.02, \"seed\": 1}}]}");
  struct pg_tensor p[3], s[3], s2[3];
  struct pg_cancel_result res;
  gen(&f, "plain", 1, p, NULL);
  gen(&f, "st", 1, s, &res);
  double before = share_mm(p, 16, 32, 12, 0.02), after = share_mm(s, 16, 32, 12, 0.02);
  printf("# t = matmul(a, w), a from module 1, r <= 0.02: %.3f plain, %.3f searched\n", before,
         after);
  PG_CHECK_EQ_STR("search", res.method);
  PG_CHECK_EQ_INT(32, res.restarts);
  PG_CHECK(after >= before + 0.15);
  PG_CHECK_NEAR(after, res.share, 1.0 / (double)res.n + 1e-12);
  PG_CHECK_NEAR(before, res.share_plain, 1.0 / (double)res.n + 1e-12);
  gen(&f, "st", 2, s2, NULL);
  for (int i = 0; i < 3; i++) PG_CHECK(memcmp(s[i].dl.data, s2[i].dl.data, s[i].nbytes) == 0);
  drop(&f, p);
  drop(&f, s);
  drop(&f, s2);
  unload(&f);
}

/* ---------------------------------------------------------------- sum / mean, sub / add */

static const char *RED =
    "op: red\n"
    "dims: {R: 40, C: 48}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [R, C], dtype: float32, fill: \"normal(1, 1)\"}\n"
    "  - {name: z, shape: [R, C], dtype: float16, fill: \"uniform(0.5, 2)\"}\n"
    "  - {name: u, shape: [R, C], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: m1\n"
    "    inputs: [{name: x, source: primary}, {name: z, source: primary}, {name: u, source: primary}]\n"
    "    outputs:\n"
    "      - {name: rs, shape: [R], dtype: float32}\n"
    "      - {name: cm, shape: [C], dtype: float16}\n"
    "      - {name: e, shape: [R, C], dtype: float32}\n"
    "      - {name: g, shape: [R, C], dtype: float32}\n"
    "    golden:\n"
    "      - rs = sum(x, axis=1)\n"
    "      - cm = mean(z, axis=0)\n"
    "      - e = add(x, u)\n"
    "      - g = mul(x, u)\n"
    "  - id: 2\n"
    "    name: m2\n"
    "    inputs: [{name: g, source: module_1}]\n"
    "    outputs: [{name: gs, shape: [R], dtype: float32}]\n"
    "    golden:\n"
    "      - gs = sum(g, axis=-1)\n"
    "final_outputs: [{name: gs, source: module_2}]\n";

static const char *RED_SUITE =
    "{\"op\": \"red\", \"cases\": [\n"
    " {\"id\": \"plain\", \"level\": 5, \"seed\": 4},\n"
    " {\"id\": \"rs\", \"level\": 5, \"seed\": 4, \"cancellation_stress\": {\"target\": \"rs\", \"relative_gap\": 1e-4}},\n"
    " {\"id\": \"cm\", \"level\": 5, \"seed\": 4, \"cancellation_stress\": {\"target\": \"cm\", \"relative_gap\": 2e-3}},\n"
    " {\"id\": \"e\", \"level\": 5, \"seed\": 4, \"cancellation_stress\": {\"target\": \"e\", \"expression\": \"a + b\", \"relative_gap\": 1e-3}},\n"
    " {\"id\": \"gs\", \"level\": 5, \"seed\": 4, \"cancellation_stress\": {\"target\": \"gs\", \"relative_gap\": 0.05}}\n"
    "]}";

/* share over the slices of axis `axis` of a [R, C] tensor: |sum| <= gap sum|.| */
static double share_sum(const struct pg_tensor *t, int axis, double gap) {
  int64_t r = t->shape[0], c = t->shape[1], n = axis == 1 ? r : c, len = axis == 1 ? c : r;
  int64_t hits = 0;
  for (int64_t i = 0; i < n; i++) {
    double s = 0, m = 0;
    for (int64_t k = 0; k < len; k++) {
      double v = at(t, axis == 1 ? i * c + k : k * c + i);
      s += v;
      m += fabs(v);
    }
    hits += m > 0 && fabs(s) <= gap * m;
  }
  return (double)hits / (double)n;
}

PG_TEST(sum_mean_construct_raise_share) {
  struct fixture f;
  load(&f, RED, RED_SUITE);
  struct pg_tensor p[3], s[3];
  struct pg_cancel_result res;
  gen(&f, "plain", 1, p, NULL);
  gen(&f, "rs", 1, s, &res);
  double before = share_sum(&p[0], 1, 1e-4), after = share_sum(&s[0], 1, 1e-4);
  printf("# rs = sum(x, axis=1), r <= 1e-4: %.3f plain, %.3f stressed\n", before, after);
  PG_CHECK(before < 0.05 && after > 0.9);
  PG_CHECK_EQ_STR("sum", res.kernel);
  PG_CHECK_EQ_STR("construct", res.method);
  PG_CHECK_NEAR(after, res.share, 1e-12);
  /* only the reduced input changed */
  PG_CHECK(memcmp(p[1].dl.data, s[1].dl.data, p[1].nbytes) == 0);
  PG_CHECK(memcmp(p[2].dl.data, s[2].dl.data, p[2].nbytes) == 0);
  drop(&f, s);
  gen(&f, "cm", 1, s, &res); /* fp16 input, mean over axis 0 */
  before = share_sum(&p[1], 0, 2e-3);
  after = share_sum(&s[1], 0, 2e-3);
  printf("# cm = mean(z, axis=0) fp16, r <= 2e-3: %.3f plain, %.3f stressed\n", before, after);
  PG_CHECK(before == 0 && after > 0.8);
  PG_CHECK_EQ_STR("mean", res.kernel);
  PG_CHECK_NEAR(after, res.share, 1e-12);
  drop(&f, s);
  drop(&f, p);
  unload(&f);
}

PG_TEST(add_construct_and_sum_search) {
  struct fixture f;
  load(&f, RED, RED_SUITE);
  struct pg_tensor p[3], s[3], s2[3];
  struct pg_cancel_result res;
  gen(&f, "plain", 1, p, NULL);
  gen(&f, "e", 1, s, &res); /* e = add(x, u): u becomes -x (1 + 0.9 g v) */
  int64_t hits = 0;
  for (int64_t i = 0; i < s[0].numel; i++) {
    double a = at(&s[0], i), b = at(&s[2], i);
    hits += fabs(a + b) <= 1e-3 * fmax(fabs(a), fabs(b));
  }
  PG_CHECK_EQ_STR("add", res.kernel);
  PG_CHECK(hits == s[0].numel && res.share == 1.0 && res.share_plain < 0.01);
  drop(&f, s);
  /* gs = sum(g) with g = mul(x, u) from module 1: searched */
  gen(&f, "gs", 1, s, &res);
  gen(&f, "gs", 3, s2, NULL);
  struct pg_tensor gp, gq;
  pg_tensor_init(&gp);
  pg_tensor_init(&gq);
  struct pg_error err;
  PG_CHECK_OK(pg_tensor_alloc(&gp, PG_DTYPE_F64, 2, p[0].shape, &err));
  PG_CHECK_OK(pg_tensor_alloc(&gq, PG_DTYPE_F64, 2, p[0].shape, &err));
  for (int64_t i = 0; i < p[0].numel; i++) {
    ((double *)gp.dl.data)[i] = (float)(at(&p[0], i) * at(&p[2], i));
    ((double *)gq.dl.data)[i] = (float)(at(&s[0], i) * at(&s[2], i));
  }
  double before = share_sum(&gp, 1, 0.05), after = share_sum(&gq, 1, 0.05);
  printf("# gs = sum(mul(x, u)), searched, r <= 0.05: %.3f plain, %.3f stressed\n", before, after);
  PG_CHECK_EQ_STR("search", res.method);
  PG_CHECK(after >= before + 0.2);
  PG_CHECK_NEAR(after, res.share, 1e-12);
  for (int i = 0; i < 3; i++) PG_CHECK(memcmp(s[i].dl.data, s2[i].dl.data, s[i].nbytes) == 0);
  pg_tensor_reset(&gp);
  pg_tensor_reset(&gq);
  drop(&f, s);
  drop(&f, s2);
  drop(&f, p);
  unload(&f);
}

/* An operand computed by an earlier step of the same module (xc = x - mean(x)), the
 * classic layernorm cancellation: the module's steps are replayed for every candidate. */
static const char *LN =
    "op: ln\n"
    "dims: {R: 32, C: 64}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [R, C], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: center\n"
    "    inputs: [{name: x, source: primary}]\n"
    "    outputs: [{name: xc, shape: [R, C], dtype: float32}]\n"
    "    golden:\n"
    "      - mu = mean(x, axis=-1, keepdims=true)\n"
    "      - xc = sub(x, mu)\n"
    "final_outputs: [{name: xc, source: module_1}]\n";

static double share_centered(const struct pg_tensor *x, double gap) {
  int64_t r = x->shape[0], c = x->shape[1], hits = 0;
  for (int64_t i = 0; i < r; i++) {
    double mu = 0;
    for (int64_t k = 0; k < c; k++) mu += at(x, i * c + k);
    mu /= (double)c;
    for (int64_t k = 0; k < c; k++) {
      double v = at(x, i * c + k);
      hits += fabs(v - mu) <= gap * fmax(fabs(v), fabs(mu));
    }
  }
  return (double)hits / (double)(r * c);
}

PG_TEST(step_local_operand_search) {
  struct fixture f;
  load(&f, LN,
       "{\"op\": \"ln\", \"cases\": [{\"id\": \"plain\", \"level\": 5, \"seed\": 2},"
       " {\"id\": \"st\", \"level\": 5, \"seed\": 2, \"cancellation_stress\": {\"target\": \"xc\","
       " \"expression\": \"a - b\", \"relative_gap\": 0.01}}]}");
  struct pg_tensor p[1], s[1], s2[1];
  struct pg_cancel_result res;
  gen(&f, "plain", 1, p, NULL);
  gen(&f, "st", 1, s, &res);
  double before = share_centered(&p[0], 0.01), after = share_centered(&s[0], 0.01);
  printf("# xc = sub(x, mean(x)), r <= 0.01: %.3f plain, %.3f searched\n", before, after);
  PG_CHECK_EQ_STR("search", res.method);
  PG_CHECK_EQ_STR("sub", res.kernel);
  PG_CHECK(before < 0.05 && after > 0.5);
  PG_CHECK_NEAR(after, res.share, 1.0 / (double)res.n + 1e-12);
  gen(&f, "st", 2, s2, NULL);
  PG_CHECK(memcmp(s[0].dl.data, s2[0].dl.data, s[0].nbytes) == 0);
  drop(&f, p);
  drop(&f, s);
  drop(&f, s2);
  unload(&f);
}

/* ---------------------------------------------------------------- refusals */

static const char *BAD =
    "op: bad\n"
    "dims: {N: 8}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [N, N], dtype: float32}\n"
    "  - {name: y, shape: [N, N], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: m1\n"
    "    inputs: [{name: x, source: primary}, {name: y, source: primary}]\n"
    "    outputs: [{name: h, shape: [N, 1], dtype: float32}, {name: sm, shape: [N, N], dtype: float32},\n"
    "              {name: z, shape: [N, N], dtype: float32}]\n"
    "    golden:\n"
    "      - t = mul(x, y)\n"
    "      - h = sum(t, axis=1, keepdims=true)\n"
    "      - sm = softmax(x)\n"
    "      - u = frobnicate(x)\n"
    "      - z = sub(u, y)\n"
    "  - id: 2\n"
    "    name: m2\n"
    "    inputs: [{name: h, source: module_1}]\n"
    "    outputs: [{name: o, shape: [N, N], dtype: float32}]\n"
    "    golden: {plugin: my_plugin}\n"
    "final_outputs: [{name: o, source: module_2}]\n";

PG_TEST(unsupported_targets_refused_before_generation) {
  struct fixture f;
  load(&f, BAD,
       "{\"op\": \"bad\", \"cases\": [\n"
       " {\"id\": \"ok\", \"level\": 1},\n"
       " {\"id\": \"local\", \"level\": 5, \"cancellation_stress\": {\"target\": \"h\"}},\n"
       " {\"id\": \"softmax\", \"level\": 5, \"cancellation_stress\": {\"target\": \"sm\"}},\n"
       " {\"id\": \"plugin\", \"level\": 5, \"cancellation_stress\": {\"target\": \"o\"}},\n"
       " {\"id\": \"primary\", \"level\": 5, \"cancellation_stress\": {\"target\": \"x\"}},\n"
       " {\"id\": \"unreplayable\", \"level\": 5, \"cancellation_stress\": {\"target\": \"z\"}}\n"
       "]}");
  struct pg_error err;
  struct {
    const char *id;
    int code;
    const char *a, *b;
  } want[] = {
      {"softmax", PG_ENOTSUP, "'sm'", "computed by 'softmax'"},
      {"plugin", PG_ENOTSUP, "golden plugin 'my_plugin'", "module 2"},
      {"primary", PG_EVALIDATE, "'x' is a primary input", "case primary"},
      {"unreplayable", PG_ENOTSUP, "cannot be replayed", "'frobnicate', which is no built-in kernel"},
  };
  PG_CHECK_OK(pg_cancellation_check(&f.c, get_case(&f, "ok"), &err));
  /* h = sum(t) with t = mul(x, y) computed by the step before: replayed, so accepted */
  PG_CHECK_MSG(pg_cancellation_check(&f.c, get_case(&f, "local"), &err) == PG_OK, "%s", err.message);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const struct pg_case *cs = get_case(&f, want[i].id);
    PG_CHECK_EQ_INT(want[i].code, pg_cancellation_check(&f.c, cs, &err));
    PG_CHECK_MSG(strstr(err.message, want[i].a) && strstr(err.message, want[i].b) &&
                 strstr(err.message, "cancellation_stress"), "%s: %s", want[i].id, err.message);
    /* generation refuses the same way and leaves nothing allocated */
    struct pg_tensor in[2];
    for (int k = 0; k < 2; k++) pg_tensor_init(&in[k]);
    pg_bindings_reset(&f.dims);
    PG_CHECK_OK(pg_case_bind_dims(&f.c, cs, &f.dims, &err));
    struct pg_materialize_opts o = {0, 1};
    PG_CHECK_EQ_INT(want[i].code, pg_case_generate_inputs(&f.c, cs, &f.dims, &o, in, &err));
    for (int k = 0; k < 2; k++) PG_CHECK(in[k].dl.data == NULL);
  }
  /* the suite-wide check: one finding per bad case, at the case's position */
  struct pg_diags d;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(4, pg_suite_check_cancellation(&f.c, &f.s, &d));
  PG_CHECK_EQ_INT(4, d.n_errors);
  char line[2048];
  pg_diag_format(&d.items[0], line, sizeof line);
  printf("# %s\n", line);
  PG_CHECK_MSG(strstr(line, "s.json:4:2: error: case softmax: cancellation_stress:") &&
               strstr(line, "(cancellation)"), "%s", line);
  pg_diags_reset(&d);
  unload(&f);
}

/* ---------------------------------------------------------------- bundled suites */

#include <time.h>

/* The bundled L5 cancellation cases really stress their targets. */
PG_TEST(bundled_suite_cases) {
  static const char *ops[][3] = {{"attention", "L5_cancel_scores", "scores"},
                                 {"swiglu_ffn", "L5_cancel_gate", "gate"}};
  for (int o = 0; o < 2; o++) {
    char rel[128], cpath[4096], spath[4096];
    snprintf(rel, sizeof rel, "../../suites/%s/module_interfaces.yaml", ops[o][0]);
    snprintf(cpath, sizeof cpath, "%s", pg_test_data(rel));
    snprintf(rel, sizeof rel, "../../suites/%s/adversarial_suite.json", ops[o][0]);
    snprintf(spath, sizeof spath, "%s", pg_test_data(rel));
    struct fixture f;
    struct pg_error err;
    pg_diags_init(&f.d);
    pg_contract_init(&f.c);
    pg_suite_init(&f.s);
    f.dims.items = NULL;
    f.dims.count = 0;
    PG_CHECK_MSG(pg_contract_load(cpath, &f.c, &f.d, &err) == PG_OK, "%s", err.message);
    PG_CHECK_MSG(pg_suite_load(spath, &f.c, &f.s, &f.d, &err) == PG_OK, "%s", err.message);
    PG_CHECK_EQ_INT(0, pg_suite_check_cancellation(&f.c, &f.s, &f.d));
    struct pg_tensor in[8];
    struct pg_cancel_result res;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gen(&f, ops[o][1], 0, in, &res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %s: generated in %.1f ms\n", ops[o][1],
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    PG_CHECK_EQ_STR(ops[o][2], res.target);
    PG_CHECK_EQ_STR("construct", res.method);
    PG_CHECK(res.share > 0.99 && res.share_plain < 0.05);
    PG_CHECK(!strstr(res.note, "exactly 0"));
    drop(&f, in);
    unload(&f);
  }
}
