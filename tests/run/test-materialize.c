/* tests/tensors — case materialisation: seeds, dim binding (defaults <- case shape,
 * unbound dims named), shape expressions, the byte budget message, generation
 * (fills, dtype overrides, determinism) and cancellation_stress. Contracts and
 * suites are loaded from memory through the real loaders. */
#include <math.h>
#include <string.h>

#include "run/run.h"
#include "tensors/tensors.h"
#include "pg_test.h"
#include "tensors/rng.h"

static const char *CONTRACT =
    "schema_version: 1\n"
    "op: toy\n"
    "dims: {B: 2, S: 8, D: 4}\n"
    "primary_inputs:\n"
    "  - {name: q, shape: [B, S, D], dtype: float16, fill: \"normal(0, 1)\"}\n"
    "  - {name: k, shape: [B, S*2, D], dtype: float32}\n"
    "  - {name: idx, shape: [S // 2 + 1], dtype: int32, fill: \"int(0, 7)\"}\n"
    "  - {name: w, shape: [3, 5], dtype: bfloat16, fill: ones}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: diff\n"
    "    inputs: [{name: q, source: primary}, {name: k, source: primary}]\n"
    "    outputs: [{name: d, shape: [B, S, D], dtype: float32}]\n"
    "    golden:\n"
    "      - d = sub(q, k)\n"
    "final_outputs: [{name: d, source: module_1}]\n";

static const char *SUITE =
    "{\"op\": \"toy\", \"total_modules\": 1, \"cases\": [\n"
    " {\"id\": \"L1_default\", \"level\": 1},\n"
    " {\"id\": \"L2_seeded\", \"level\": 2, \"seed\": 7, \"shape\": {\"S\": 16},\n"
    "  \"dtype\": {\"q\": \"float32\"}, \"fill\": {\"k\": \"uniform(-1, 1) with nan:0.5\"}},\n"
    " {\"id\": \"L4_big\", \"level\": 4, \"shape\": {\"B\": 100000, \"S\": 1024, \"D\": 8}}\n"
    "]}\n";

struct fixture {
  struct pg_contract c;
  struct pg_suite s;
  struct pg_diags d;
};

static void load(struct fixture *f, const char *contract, const char *suite) {
  struct pg_error err;
  pg_diags_init(&f->d);
  pg_contract_init(&f->c);
  pg_suite_init(&f->s);
  int rc = pg_contract_load_buffer("toy.yaml", contract, strlen(contract), &f->c, &f->d, &err);
  for (int i = 0; i < f->d.count; i++) {
    char line[2048];
    pg_diag_format(&f->d.items[i], line, sizeof line);
    printf("# %s\n", line);
  }
  PG_CHECK_MSG(rc == PG_OK, "contract: %s", err.message);
  rc = pg_suite_load_buffer("toy.json", suite, strlen(suite), &f->c, &f->s, &f->d, &err);
  PG_CHECK_MSG(rc == PG_OK, "suite: %s", err.message);
}

static void unload(struct fixture *f) {
  pg_suite_reset(&f->s);
  pg_contract_reset(&f->c);
  pg_diags_reset(&f->d);
}

static const struct pg_case *find_case(struct fixture *f, const char *id) {
  for (int i = 0; i < f->s.n_cases; i++)
    if (strcmp(f->s.cases[i].id, id) == 0) return &f->s.cases[i];
  PG_CHECK_MSG(0, "no case %s", id);
  return NULL;
}

PG_TEST(case_seed) {
  struct fixture f;
  load(&f, CONTRACT, SUITE);
  PG_CHECK(pg_case_seed(find_case(&f, "L2_seeded")) == 7);
  PG_CHECK(pg_case_seed(find_case(&f, "L1_default")) == pg_fnv1a64("L1_default"));
  PG_CHECK(pg_case_seed(NULL) == 0);
  unload(&f);
}

PG_TEST(bind_dims_and_shapes) {
  struct fixture f;
  struct pg_error err;
  struct pg_bindings dims;
  load(&f, CONTRACT, SUITE);
  PG_CHECK_OK(pg_case_bind_dims(&f.c, find_case(&f, "L2_seeded"), &dims, &err));
  int64_t v;
  PG_CHECK(pg_bindings_get(&dims, "S", &v) && v == 16);
  PG_CHECK(pg_bindings_get(&dims, "B", &v) && v == 2);
  int ndim;
  int64_t shape[PG_MAX_NDIM];
  PG_CHECK_OK(pg_decl_shape(&f.c.primary_inputs[1], &dims, &ndim, shape, &err));
  PG_CHECK(ndim == 3 && shape[0] == 2 && shape[1] == 32 && shape[2] == 4);
  PG_CHECK_OK(pg_decl_shape(&f.c.primary_inputs[2], &dims, &ndim, shape, &err));
  PG_CHECK(ndim == 1 && shape[0] == 9);
  PG_CHECK_OK(pg_decl_shape(&f.c.primary_inputs[3], &dims, &ndim, shape, &err));
  PG_CHECK(ndim == 2 && shape[0] == 3 && shape[1] == 5);
  pg_bindings_reset(&dims);
  unload(&f);

  /* a dim no one binds */
  const char *c2 =
      "op: t2\n"
      "primary_inputs:\n"
      "  - {name: x, shape: [N, 4], dtype: float32}\n"
      "modules:\n"
      "  - id: 1\n"
      "    name: m\n"
      "    inputs: [{name: x, source: primary}]\n"
      "    outputs: [{name: y, shape: [N, M - 1], dtype: float32}]\n"
      "final_outputs: [{name: y, source: module_1}]\n";
  const char *s2 = "{\"op\": \"t2\", \"cases\": [{\"id\": \"a\", \"level\": 2, \"shape\": {\"N\": 3}}]}";
  load(&f, c2, s2);
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_case_bind_dims(&f.c, NULL, &dims, &err));
  PG_CHECK_MSG(strstr(err.message, "dim 'N'") && strstr(err.message, "'x'"), "%s", err.message);
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_case_bind_dims(&f.c, &f.s.cases[0], &dims, &err));
  PG_CHECK_MSG(strstr(err.message, "dim 'M'") && strstr(err.message, "'y'") &&
               strstr(err.message, "case a"), "%s", err.message);
  unload(&f);
}

PG_TEST(negative_shape_refused) {
  struct pg_tensor_decl d;
  memset(&d, 0, sizeof d);
  char *dims[2] = {"4", "S - 10"};
  d.name = "x";
  d.ndim = 2;
  d.dims[0] = dims[0];
  d.dims[1] = dims[1];
  struct pg_dim_value dv = {"S", 3, {0, 0}};
  struct pg_bindings b = {&dv, 1};
  int ndim;
  int64_t shape[PG_MAX_NDIM];
  struct pg_error err;
  int rc = pg_decl_shape(&d, &b, &ndim, shape, &err);
  if (rc == PG_ENOTSUP) PG_SKIP("shape expressions not built");
  PG_CHECK_EQ_INT(PG_EVALIDATE, rc);
  PG_CHECK_MSG(strstr(err.message, "evaluates to -7") && strstr(err.message, "'x'"), "%s", err.message);
}

PG_TEST(generate_inputs) {
  struct fixture f;
  struct pg_error err;
  struct pg_bindings dims;
  load(&f, CONTRACT, SUITE);
  const struct pg_case *cs = find_case(&f, "L2_seeded");
  PG_CHECK_OK(pg_case_bind_dims(&f.c, cs, &dims, &err));
  struct pg_tensor in[4], again[4];
  for (int i = 0; i < 4; i++) pg_tensor_init(&in[i]), pg_tensor_init(&again[i]);
  struct pg_materialize_opts o1 = {0, 1}, o3 = {0, 3};
  int rc = pg_case_generate_inputs(&f.c, cs, &dims, &o1, in, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_STR("q", in[0].name);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, in[0].dtype); /* case dtype override */
  PG_CHECK_EQ_INT(PG_DTYPE_F32, in[1].dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_I32, in[2].dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_BF16, in[3].dtype);
  PG_CHECK_EQ_INT(2 * 16 * 4, in[0].numel);
  int nans = 0;
  for (int64_t i = 0; i < in[1].numel; i++) nans += isnan(((float *)in[1].dl.data)[i]);
  PG_CHECK(nans > 10 && nans < in[1].numel - 10); /* case fill override with nan:0.5 */
  for (int64_t i = 0; i < in[2].numel; i++) {
    int32_t x = ((int32_t *)in[2].dl.data)[i];
    PG_CHECK(x >= 0 && x <= 7);
  }
  for (int64_t i = 0; i < in[3].numel; i++) PG_CHECK(pg_load_f64(in[3].dl.data, in[3].dtype, (size_t)i) == 1.0);
  /* element i of q is a function of (seed, "q", i) only: compare with a direct fill */
  struct pg_fill nf;
  struct pg_tensor q;
  pg_tensor_init(&q);
  PG_CHECK_OK(pg_fill_parse("normal(0, 1)", &nf, &err));
  PG_CHECK_OK(pg_tensor_alloc(&q, PG_DTYPE_F32, in[0].dl.ndim, in[0].shape, &err));
  PG_CHECK_OK(pg_fill_generate(&q, &nf, 7, "q", 1, &err));
  PG_CHECK(memcmp(q.dl.data, in[0].dl.data, q.nbytes) == 0);
  pg_tensor_reset(&q);
  PG_CHECK_OK(pg_case_generate_inputs(&f.c, cs, &dims, &o3, again, &err));
  for (int i = 0; i < 4; i++) {
    PG_CHECK(in[i].nbytes == again[i].nbytes && memcmp(in[i].dl.data, again[i].dl.data, in[i].nbytes) == 0);
    pg_tensor_reset(&in[i]);
    pg_tensor_reset(&again[i]);
  }
  pg_bindings_reset(&dims);
  unload(&f);
}

PG_TEST(byte_budget) {
  struct fixture f;
  struct pg_error err;
  struct pg_bindings dims;
  load(&f, CONTRACT, SUITE);
  const struct pg_case *cs = find_case(&f, "L4_big");
  PG_CHECK_OK(pg_case_bind_dims(&f.c, cs, &dims, &err));
  struct pg_tensor in[4];
  for (int i = 0; i < 4; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts o = {2ull << 30, 1};
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_case_generate_inputs(&f.c, cs, &dims, &o, in, &err));
  /* q: 100000*1024*8 f16 = 1.53 GiB, k: 100000*2048*8 f32 = 6.1 GiB, idx 2 KiB, w 30 B */
  PG_CHECK_MSG(strstr(err.message, "case L4_big needs 7.6 GiB for inputs, over --max-bytes 2 GiB"),
               "%s", err.message);
  for (int i = 0; i < 4; i++) PG_CHECK(in[i].dl.data == NULL);
  pg_bindings_reset(&dims);
  unload(&f);
}

static const char *CANCEL_CONTRACT =
    "op: c3\n"
    "dims: {N: 1000}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [N], dtype: float32, fill: \"normal(0, 10)\"}\n"
    "  - {name: y, shape: [N], dtype: float32}\n"
    "  - {name: z, shape: [N], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: m\n"
    "    inputs: [{name: x, source: primary}, {name: y, source: primary}, {name: z, source: primary}]\n"
    "    outputs: [{name: d, shape: [N], dtype: float32}, {name: e, shape: [N], dtype: float32}]\n"
    "    golden:\n"
    "      - d = x - y\n"
    "      - e = mul(x, z)\n"
    "final_outputs: [{name: d, source: module_1}]\n";

PG_TEST(cancellation_stress) {
  struct fixture f;
  struct pg_error err;
  struct pg_bindings dims;
  const char *suite =
      "{\"op\": \"c3\", \"cases\": [\n"
      " {\"id\": \"ok\", \"level\": 5, \"cancellation_stress\": {\"target\": \"d\", \"expression\": \"a - b\", "
      "\"relative_gap\": 1e-5, \"seed\": 42}},\n"
      " {\"id\": \"deep\", \"level\": 5, \"cancellation_stress\": {\"target\": \"e\", \"expression\": \"a - b\", "
      "\"relative_gap\": 1e-5, \"seed\": 42}}]}";
  load(&f, CANCEL_CONTRACT, suite);
  PG_CHECK_OK(pg_case_bind_dims(&f.c, &f.s.cases[0], &dims, &err));
  struct pg_tensor in[3];
  for (int i = 0; i < 3; i++) pg_tensor_init(&in[i]);
  struct pg_materialize_opts o = {0, 1};
  int rc = pg_case_generate_inputs(&f.c, &f.s.cases[0], &dims, &o, in, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  const float *x = in[0].dl.data, *y = in[1].dl.data;
  int distinct = 0;
  double max_rel = 0;
  for (int i = 0; i < 1000; i++) {
    double rel = fabs((double)x[i] - y[i]) / fabs((double)x[i]);
    PG_CHECK_MSG(rel <= 1e-5, "element %d: x=%.9g y=%.9g rel %.3g", i, x[i], y[i], rel);
    distinct += x[i] != y[i];
    if (rel > max_rel) max_rel = rel;
  }
  PG_CHECK(distinct > 900 && max_rel > 5e-6);
  for (int i = 0; i < 3; i++) pg_tensor_reset(&in[i]);
  /* a target computed by a kernel that is not a signed sum (mul) is refused, not ignored */
  PG_CHECK_EQ_INT(PG_ENOTSUP, pg_case_generate_inputs(&f.c, &f.s.cases[1], &dims, &o, in, &err));
  PG_CHECK_MSG(strstr(err.message, "'e'") && strstr(err.message, "'mul'"), "%s", err.message);
  for (int i = 0; i < 3; i++) PG_CHECK(in[i].dl.data == NULL);
  pg_bindings_reset(&dims);
  unload(&f);
}

/* Operands from an earlier module: a = x + y, b = x - y (module 1), d = a - b (module 2).
 * a and b are close when |y| << |x|: the search over scale/offset knobs must find that. */
static const char *SEARCH_CONTRACT =
    "op: c4\n"
    "dims: {N: 2000}\n"
    "primary_inputs:\n"
    "  - {name: x, shape: [N], dtype: float32}\n"
    "  - {name: y, shape: [N], dtype: float32}\n"
    "modules:\n"
    "  - id: 1\n"
    "    name: m1\n"
    "    inputs: [{name: x, source: primary}, {name: y, source: primary}]\n"
    "    outputs: [{name: a, shape: [N], dtype: float32}, {name: b, shape: [N], dtype: float32}]\n"
    "    golden:\n"
    "      - a = add(x, y)\n"
    "      - b = sub(x, y)\n"
    "  - id: 2\n"
    "    name: m2\n"
    "    inputs: [{name: a, source: module_1}, {name: b, source: module_1}]\n"
    "    outputs: [{name: d, shape: [N], dtype: float32}]\n"
    "    golden:\n"
    "      - d = sub(a, b)\n"
    "final_outputs: [{name: d, source: module_2}]\n";

static double share_close(const struct pg_tensor *in, double gap) {
  const float *x = in[0].dl.data, *y = in[1].dl.data;
  int64_t hits = 0;
  for (int64_t i = 0; i < in[0].numel; i++) {
    float a = x[i] + y[i], b = x[i] - y[i];
    double m = fmax(fabs((double)a), fabs((double)b));
    hits += m > 0 && fabs((double)a - b) <= gap * m;
  }
  return (double)hits / (double)in[0].numel;
}

PG_TEST(cancellation_stress_search) {
  struct fixture f;
  struct pg_error err;
  struct pg_bindings dims;
  const char *suite =
      "{\"op\": \"c4\", \"cases\": [\n"
      " {\"id\": \"plain\", \"level\": 5, \"seed\": 5},\n"
      " {\"id\": \"stressed\", \"level\": 5, \"seed\": 5, \"cancellation_stress\": {\"target\": \"d\", "
      "\"expression\": \"a - b\", \"relative_gap\": 0.05, \"seed\": 3}}]}";
  load(&f, SEARCH_CONTRACT, suite);
  struct pg_tensor plain[2], stressed[2], again[2];
  for (int i = 0; i < 2; i++) pg_tensor_init(&plain[i]), pg_tensor_init(&stressed[i]), pg_tensor_init(&again[i]);
  struct pg_materialize_opts o = {0, 1};
  PG_CHECK_OK(pg_case_bind_dims(&f.c, &f.s.cases[0], &dims, &err));
  PG_CHECK_OK(pg_case_generate_inputs(&f.c, &f.s.cases[0], &dims, &o, plain, &err));
  int rc = pg_case_generate_inputs(&f.c, &f.s.cases[1], &dims, &o, stressed, &err);
  if (rc == PG_ENOTSUP && strstr(err.message, "not built")) PG_SKIP("goldens not built");
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  double before = share_close(plain, 0.05), after = share_close(stressed, 0.05);
  printf("# share of |a-b| <= 5%% max(|a|,|b|): %.3f plain, %.3f stressed\n", before, after);
  PG_CHECK(after > before + 0.2 && after > 0.3);
  /* deterministic under its seed */
  PG_CHECK_OK(pg_case_generate_inputs(&f.c, &f.s.cases[1], &dims, &o, again, &err));
  for (int i = 0; i < 2; i++) {
    PG_CHECK(memcmp(again[i].dl.data, stressed[i].dl.data, stressed[i].nbytes) == 0);
    pg_tensor_reset(&plain[i]);
    pg_tensor_reset(&stressed[i]);
    pg_tensor_reset(&again[i]);
  }
  pg_bindings_reset(&dims);
  unload(&f);
}
