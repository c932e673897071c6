/* phasegate tests — golden steps, validation, composition and golden plugins
 * (goldens/plan.c, steps.c, compose.c, plugin.c). Contracts are built by hand and kernels are
 * this file's own mini-kernels, so the tests pin the composition machinery itself:
 * wiring, rounding of module outputs to their declared dtype, k < N with later goldens
 * missing, error positions, plugin ABI checks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "golden_private.h"
#include "pg_test.h"
#include "opdir/opdir.h"

/* ---------------------------------------------------------------- mini kernels */

static double ld(const struct pg_tensor *t, int64_t i) { return pg_load_f64(t->dl.data, t->dtype, (size_t)i); }
static void st(struct pg_tensor *t, int64_t i, double v) { pg_store_f64(t->dl.data, t->dtype, (size_t)i, v); }

static int mm_infer(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                    struct pg_tensor_meta *out, struct pg_error *err) {
  (void)n;
  if (in[0].ndim != 2 || in[1].ndim != 2) return pg_error_set(err, PG_ESHAPE, "operands must be 2-D");
  int tb = attrs[0].b;
  int64_t k2 = tb ? in[1].shape[1] : in[1].shape[0];
  if (in[0].shape[1] != k2)
    return pg_error_set(err, PG_ESHAPE, "inner dimensions differ: %lld vs %lld",
                        (long long)in[0].shape[1], (long long)k2);
  out[0].dtype = in[0].dtype;
  out[0].ndim = 2;
  out[0].shape[0] = in[0].shape[0];
  out[0].shape[1] = tb ? in[1].shape[0] : in[1].shape[1];
  return PG_OK;
}

/* Accumulates in the tensor's own precision, sequentially, like a naive sgemm. */
static int mm_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  (void)err;
  const struct pg_tensor *x = a->inputs[0], *w = a->inputs[1];
  int tb = a->attrs[0].b;
  int64_t M = x->shape[0], K = x->shape[1], N = out[0]->shape[1];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      if (out[0]->dtype == PG_DTYPE_F32) {
        float acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += (float)ld(x, i * K + k) * (float)ld(w, tb ? j * K + k : k * N + j);
        st(out[0], i * N + j, acc);
      } else {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) acc += ld(x, i * K + k) * ld(w, tb ? j * K + k : k * N + j);
        st(out[0], i * N + j, acc);
      }
    }
  return PG_OK;
}

static int same_infer(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                      struct pg_tensor_meta *out, struct pg_error *err) {
  (void)attrs;
  for (int i = 1; i < n; i++) {
    int same = in[i].ndim == in[0].ndim;
    for (int a = 0; same && a < in[0].ndim; a++) same = in[i].shape[a] == in[0].shape[a];
    if (!same) return pg_error_set(err, PG_ESHAPE, "operand %d has a different shape", i + 1);
  }
  out[0] = in[0];
  return PG_OK;
}

static int scale_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  (void)err;
  for (int64_t i = 0; i < out[0]->numel; i++) {
    if (out[0]->dtype == PG_DTYPE_F32) st(out[0], i, (float)a->attrs[0].f * (float)ld(a->inputs[0], i));
    else st(out[0], i, a->attrs[0].f * ld(a->inputs[0], i));
  }
  return PG_OK;
}

static int add_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  (void)err;
  for (int64_t i = 0; i < out[0]->numel; i++) st(out[0], i, ld(a->inputs[0], i) + ld(a->inputs[1], i));
  return PG_OK;
}

static int split2_infer(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                        struct pg_tensor_meta *out, struct pg_error *err) {
  (void)n, (void)attrs;
  int last = in[0].ndim - 1;
  if (last < 0 || in[0].shape[last] % 2)
    return pg_error_set(err, PG_ESHAPE, "last axis must have even length");
  out[0] = out[1] = in[0];
  out[0].shape[last] /= 2;
  out[1].shape[last] /= 2;
  return PG_OK;
}

static int split2_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  (void)err;
  const struct pg_tensor *x = a->inputs[0];
  int64_t L = x->shape[x->dl.ndim - 1], h = L / 2, rows = x->numel / L;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < h; j++) {
      st(out[0], r * h + j, ld(x, r * L + j));
      st(out[1], r * h + j, ld(x, r * L + h + j));
    }
  return PG_OK;
}

static int reshape_infer(const struct pg_tensor_meta *in, int n, const struct pg_attr_value *attrs,
                         struct pg_tensor_meta *out, struct pg_error *err) {
  (void)n;
  int64_t a = 1, b = 1;
  for (int i = 0; i < in[0].ndim; i++) a *= in[0].shape[i];
  for (int i = 0; i < attrs[0].n_ints; i++) b *= attrs[0].ints[i];
  if (a != b) return pg_error_set(err, PG_ESHAPE, "cannot reshape %lld elements into %lld", (long long)a, (long long)b);
  out[0].dtype = in[0].dtype;
  out[0].ndim = attrs[0].n_ints;
  for (int i = 0; i < attrs[0].n_ints; i++) out[0].shape[i] = attrs[0].ints[i];
  return PG_OK;
}

static int copy_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  (void)err;
  for (int64_t i = 0; i < out[0]->numel; i++) st(out[0], i, ld(a->inputs[0], i));
  return PG_OK;
}

static int act_run(const struct pg_kernel_args *a, struct pg_tensor *const *out, struct pg_error *err) {
  int neg = strcmp(a->attrs[0].s, "neg") == 0;
  if (!neg && strcmp(a->attrs[0].s, "relu") != 0)
    return pg_error_set(err, PG_EINVAL, "mode must be relu or neg, not '%s'", a->attrs[0].s);
  for (int64_t i = 0; i < out[0]->numel; i++) {
    double v = ld(a->inputs[0], i);
    st(out[0], i, neg ? -v : (v > 0 ? v : 0));
  }
  return PG_OK;
}

static const struct pg_attr_decl mm_attrs[] = {{"trans_b", PG_ATTR_BOOL, 0, {.type = PG_ATTR_BOOL}},
                                               {NULL, 0, 0, {0}}};
static const struct pg_attr_decl scale_attrs[] = {{"alpha", PG_ATTR_FLOAT, 1, {0}}, {NULL, 0, 0, {0}}};
static const struct pg_attr_decl reshape_attrs[] = {{"shape", PG_ATTR_INTS, 1, {0}}, {NULL, 0, 0, {0}}};
static const struct pg_attr_decl act_attrs[] = {
    {"mode", PG_ATTR_STRING, 0, {.type = PG_ATTR_STRING, .s = "relu"}}, {NULL, 0, 0, {0}}};
static const struct pg_attr_decl no_attrs[] = {{NULL, 0, 0, {0}}};

static const struct pg_kernel_def mini_defs[] = {
    {"mm", 2, 2, 1, mm_attrs, "2-D matmul", mm_infer, mm_run},
    {"scale", 1, 1, 1, scale_attrs, "alpha * x", same_infer, scale_run},
    {"add", 2, 2, 1, no_attrs, "x + y", same_infer, add_run},
    {"split2", 1, 1, 2, no_attrs, "halves of the last axis", split2_infer, split2_run},
    {"reshape", 1, 1, 1, reshape_attrs, "reshape", reshape_infer, copy_run},
    {"act", 1, 1, 1, act_attrs, "relu or neg", same_infer, act_run},
};
#define N_MINI ((int)(sizeof mini_defs / sizeof *mini_defs))

static const struct pg_kernel_def *mini_find(const char *name) {
  for (int i = 0; i < N_MINI; i++)
    if (strcmp(mini_defs[i].name, name) == 0) return &mini_defs[i];
  return NULL;
}
static int mini_list(const struct pg_kernel_def *const **defs) {
  static const struct pg_kernel_def *const ptrs[] = {&mini_defs[0], &mini_defs[1], &mini_defs[2],
                                                     &mini_defs[3], &mini_defs[4], &mini_defs[5]};
  *defs = ptrs;
  return N_MINI;
}
static const struct pg__kernel_source mini_ks = {mini_find, mini_list};

/* ---------------------------------------------------------------- hand-built contracts */

static struct pg_tensor_decl mk_decl(const char *name, const char *d0, const char *d1,
                                     enum pg_dtype dt, int source, int line) {
  struct pg_tensor_decl d;
  memset(&d, 0, sizeof d);
  d.name = (char *)name;
  d.ndim = d0 ? (d1 ? 2 : 1) : -1;
  d.dims[0] = (char *)d0;
  d.dims[1] = (char *)d1;
  d.dtype = dt;
  d.source_module = source;
  d.mark.line = line;
  d.mark.column = 7;
  return d;
}

static void set_steps(struct pg_golden_spec *g, struct pg_golden_step *steps, const char *const *texts,
                      int n, int first_line) {
  memset(g, 0, sizeof *g);
  g->kind = PG_GOLDEN_STEPS;
  g->steps = steps;
  g->n_steps = n;
  g->mark.line = first_line - 1;
  g->mark.column = 5;
  for (int i = 0; i < n; i++) {
    steps[i].text = (char *)texts[i];
    steps[i].mark.line = first_line + i;
    steps[i].mark.column = 9;
  }
}

/* x [N, K] float16, w [K, N] float32;
 * M1 (proj): y [N, N] float16 = 0.5 * mm(x, w)
 * M2 (split): a, b [N, N/2] float32 = split2(y)
 * M3 (post): z [N, N/2] float32, golden given by the test (default: none)
 * final_outputs: z */
struct fixture {
  struct pg_contract c;
  struct pg_dim_value dimv[2];
  struct pg_tensor_decl prim[2];
  struct pg_module mods[3];
  struct pg_tensor_decl m1_in[2], m1_out[1], m2_in[1], m2_out[2], m3_in[1], m3_out[1], fin[1];
  struct pg_golden_step s1[2], s2[1], s3[4], sop[4];
};

static const char *const m1_steps[] = {"t = mm(x, w)", "y = scale(t, alpha=1/2)"};
static const char *const m2_steps[] = {"a, b = split2(y)"};

static void fixture_init(struct fixture *f) {
  memset(f, 0, sizeof *f);
  struct pg_contract *c = &f->c;
  c->path = "fixture.yaml";
  c->op = "toy";
  f->dimv[0] = (struct pg_dim_value){"N", 2, {2, 8}};
  f->dimv[1] = (struct pg_dim_value){"K", 3, {2, 14}};
  c->dims.items = f->dimv;
  c->dims.count = 2;
  f->prim[0] = mk_decl("x", "N", "K", PG_DTYPE_F16, 0, 4);
  f->prim[1] = mk_decl("w", "K", "N", PG_DTYPE_F32, 0, 5);
  c->primary_inputs = f->prim;
  c->n_primary = 2;
  f->m1_in[0] = mk_decl("x", NULL, NULL, PG_DTYPE_INVALID, 0, 9);
  f->m1_in[1] = mk_decl("w", NULL, NULL, PG_DTYPE_INVALID, 0, 9);
  f->m1_out[0] = mk_decl("y", "N", "N", PG_DTYPE_F16, 0, 10);
  f->m2_in[0] = mk_decl("y", NULL, NULL, PG_DTYPE_INVALID, 1, 19);
  f->m2_out[0] = mk_decl("a", "N", "N//2", PG_DTYPE_F32, 0, 20);
  f->m2_out[1] = mk_decl("b", "N", "N//2", PG_DTYPE_F32, 0, 21);
  f->m3_in[0] = mk_decl("a", NULL, NULL, PG_DTYPE_INVALID, 2, 29);
  f->m3_out[0] = mk_decl("z", "N", "N//2", PG_DTYPE_F32, 0, 30);
  struct pg_module *m = f->mods;
  m[0] = (struct pg_module){1, "proj", NULL, {8, 5}, f->m1_in, 2, f->m1_out, 1, {0}, NULL, 0};
  m[1] = (struct pg_module){2, "split", NULL, {18, 5}, f->m2_in, 1, f->m2_out, 2, {0}, NULL, 0};
  m[2] = (struct pg_module){3, "post", NULL, {28, 5}, f->m3_in, 1, f->m3_out, 1, {0}, NULL, 0};
  set_steps(&m[0].golden, f->s1, m1_steps, 2, 12);
  set_steps(&m[1].golden, f->s2, m2_steps, 1, 23);
  c->modules = m;
  c->n_modules = 3;
  f->fin[0] = mk_decl("z", NULL, NULL, PG_DTYPE_INVALID, 3, 40);
  c->final_outputs = f->fin;
  c->n_final = 1;
}

/* Composition with the mini kernels through a plan built from the fixture as it is at
 * the call (tests change goldens between calls). */
static int cumulative(struct fixture *f, struct pg_golden_env *env, int k,
                      const struct pg_tensor *in, int n_in, struct pg_tensor *out, int *n,
                      struct pg_error *err) {
  struct pg_golden_plan *plan = NULL;
  int rc = pg__golden_plan_build_ks(&f->c.graph, &mini_ks, &plan, err);
  env->plan = plan;
  if (rc == PG_OK) rc = pg_golden_cumulative(env, k, in, n_in, out, n, err);
  env->plan = NULL;
  pg_golden_plan_free(plan);
  return rc;
}

static int op_level(struct fixture *f, struct pg_golden_env *env, const struct pg_tensor *in,
                    int n_in, struct pg_tensor *out, int *n, struct pg_error *err) {
  struct pg_golden_plan *plan = NULL;
  int rc = pg__golden_plan_build_ks(&f->c.graph, &mini_ks, &plan, err);
  env->plan = plan;
  if (rc == PG_OK) rc = pg_golden_op_level(env, in, n_in, out, n, err);
  env->plan = NULL;
  pg_golden_plan_free(plan);
  return rc;
}

/* x = [[1, 2, 3], [4, 5, 6]] (float16), w = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]] (float32) */
static void make_inputs(struct pg_tensor in[2]) {
  int64_t xs[2] = {2, 3}, ws[2] = {3, 2};
  pg_tensor_init(&in[0]);
  pg_tensor_init(&in[1]);
  PG_CHECK_OK(pg_tensor_alloc(&in[0], PG_DTYPE_F16, 2, xs, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&in[1], PG_DTYPE_F32, 2, ws, NULL));
  for (int i = 0; i < 6; i++) {
    ((uint16_t *)in[0].dl.data)[i] = pg_f32_to_f16((float)(i + 1));
    ((float *)in[1].dl.data)[i] = 0.1f * (float)(i + 1);
  }
}

/* y = f16(0.5f * sum_k x[i,k] w[k,j]) with float accumulation in k order. */
static float expected_y(int i, int j) {
  float acc = 0;
  for (int k = 0; k < 3; k++) acc += (float)(i * 3 + k + 1) * (0.1f * (float)(k * 2 + j + 1));
  return pg_f16_to_f32(pg_f32_to_f16(0.5f * acc));
}

static void reset_outs(struct pg_tensor *o) {
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&o[i]);
}

static void init_outs(struct pg_tensor *o) {
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&o[i]);
}

/* ---------------------------------------------------------------- parser */

PG_TEST(step_parse_good) {
  struct pg__step s;
  struct pg_error err;
  PG_CHECK_OK(pg__step_parse("scores = matmul(q, k, trans_b=true, alpha=1/sqrt(D))", &s, &err));
  PG_CHECK_EQ_INT(1, s.n_outs);
  PG_CHECK_EQ_STR("scores", s.outs[0]);
  PG_CHECK_EQ_STR("matmul", s.op);
  PG_CHECK_EQ_INT(9, s.op_offset);
  PG_CHECK_EQ_INT(2, s.n_inputs);
  PG_CHECK_EQ_STR("k", s.inputs[1]);
  PG_CHECK_EQ_INT(19, s.input_offsets[1]);
  PG_CHECK_EQ_INT(2, s.n_attrs);
  PG_CHECK_EQ_STR("trans_b", s.attrs[0].key);
  PG_CHECK_EQ_STR("true", s.attrs[0].value);
  PG_CHECK_EQ_STR("1/sqrt(D)", s.attrs[1].value);
  PG_CHECK_EQ_INT(PG__VAL_EXPR, s.attrs[1].kind);

  PG_CHECK_OK(pg__step_parse("  lo , hi=split2( x )", &s, &err));
  PG_CHECK_EQ_INT(2, s.n_outs);
  PG_CHECK_EQ_STR("hi", s.outs[1]);
  PG_CHECK_EQ_INT(7, s.out_offsets[1]);
  PG_CHECK_EQ_STR("x", s.inputs[0]);

  PG_CHECK_OK(pg__step_parse("y = permute(x, perm=[0, 2, 1, B*2 - 1], mode=\"tanh\", m2='a b')", &s, &err));
  PG_CHECK_EQ_INT(PG__VAL_LIST, s.attrs[0].kind);
  PG_CHECK_EQ_INT(4, s.attrs[0].n_items);
  PG_CHECK_EQ_STR("B*2 - 1", s.attrs[0].items[3]);
  PG_CHECK_EQ_INT(30, s.attrs[0].item_offsets[3]);
  PG_CHECK_EQ_INT(PG__VAL_STRING, s.attrs[1].kind);
  PG_CHECK_EQ_STR("tanh", s.attrs[1].value);
  PG_CHECK_EQ_STR("a b", s.attrs[2].value);

  PG_CHECK_OK(pg__step_parse("y=relu(x)", &s, &err));
  PG_CHECK_OK(pg__step_parse("y = zeros_like()", &s, &err));
  PG_CHECK_EQ_INT(0, s.n_inputs);
  PG_CHECK_OK(pg__step_parse("y = scale(x, alpha=(1 + 2) * 3, empty=[])", &s, &err));
  PG_CHECK_EQ_STR("(1 + 2) * 3", s.attrs[0].value);
  PG_CHECK_EQ_INT(0, s.attrs[1].n_items);
}

static void bad(const char *text, int column, const char *needle) {
  struct pg__step s;
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg__step_parse(text, &s, &err);
  PG_CHECK_MSG(rc == PG_EPARSE, "'%s' parsed (rc %d)", text, rc);
  PG_CHECK_MSG(err.column == column, "'%s': column %d, expected %d (%s)", text, err.column,
               column, err.message);
  PG_CHECK_MSG(strstr(err.message, needle) != NULL, "'%s': message '%s' lacks '%s'", text,
               err.message, needle);
}

PG_TEST(step_parse_bad_columns) {
  bad("", 1, "expected an output tensor name");
  bad("= matmul(a)", 1, "expected an output tensor name");
  bad("y matmul(a)", 3, "expected '='");
  bad("y == f(a)", 3, "expected '='");
  bad("y = (a)", 5, "expected an op name");
  bad("y = matmul a", 12, "expected '(' after 'matmul'");
  bad("y = matmul(a, 1.5)", 15, "expected a tensor name");
  bad("y = matmul(a, b=)", 17, "expected a value after 'b='");
  bad("y = matmul(a, alpha=2, b)", 24, "positional argument after");
  bad("y = f(a) extra", 10, "unexpected text after ')'");
  bad("y = f(a, k=1, k=2)", 15, "given twice");
  bad("y = f(a, p=[1, 2)", 16, "unbalanced");
  bad("y = f(a, s=\"tanh)", 12, "unterminated string");
  bad("y = f(a, alpha=0.5", 19, "expected ',' or ')'");
  bad("y = f(a b)", 7, "expected a tensor name");
  bad("a, = f(x)", 4, "expected an output tensor name");
  bad("y = f(a, p=[1, 2, 3, 4, 5, 6, 7, 8, 9])", 37, "too many list elements");
}

/* ---------------------------------------------------------------- validation */

static int has_diag(const struct pg_diags *d, int line, int col, const char *needle) {
  for (int i = 0; i < d->count; i++)
    if (d->items[i].line == line && d->items[i].column == col &&
        strstr(d->items[i].message, needle) && d->items[i].rule &&
        strcmp(d->items[i].rule, "golden") == 0)
      return 1;
  return 0;
}

static void dump_diags(const struct pg_diags *d) {
  char buf[2048];
  for (int i = 0; i < d->count; i++) {
    pg_diag_format(&d->items[i], buf, sizeof buf);
    fprintf(stderr, "# %s\n", buf);
  }
}

PG_TEST(validate_good_contract) {
  struct fixture f;
  fixture_init(&f);
  static const char *const m3[] = {"z = act(a, mode=neg)"};
  set_steps(&f.mods[2].golden, f.s3, m3, 1, 32);
  struct pg_diags d;
  pg_diags_init(&d);
  int n = pg__goldens_validate_ks(&f.c.graph, &mini_ks, pg_diags_add_finding, &d);
  if (n != 0) dump_diags(&d);
  PG_CHECK_EQ_INT(0, n);
  pg_diags_reset(&d);
}

PG_TEST(validate_findings) {
  struct fixture f;
  fixture_init(&f);
  static const char *const m1[] = {
      "t = mm(x, w)",                 /* line 12: fine */
      "u = scal(t, alpha=2)",         /* 13: unknown op, suggestion */
      "v = mm(x, x)",                 /* 14: inner dims 3 vs 2 */
      "y = add(q, t)",                /* 15: unknown tensor q */
      "z = scale(t, beta=2)",         /* 16: unknown attribute */
      "y2 = scale(t, alpha=0.5",      /* 17: syntax */
      "r = reshape(t, shape=[N, K])", /* 18: 4 elements into 6 */
      "p, q = scale(t, alpha=1)",     /* 19: output count */
  };
  static const char *const m2[] = {"a = scale(y, alpha=1)"};
  struct pg_golden_step s1[8];
  set_steps(&f.mods[0].golden, s1, m1, 8, 12);
  set_steps(&f.mods[1].golden, f.s2, m2, 1, 23);
  struct pg_diags d;
  pg_diags_init(&d);
  int n = pg__goldens_validate_ks(&f.c.graph, &mini_ks, pg_diags_add_finding, &d);
  dump_diags(&d);
  PG_CHECK(has_diag(&d, 13, 13, "unknown op 'scal'; did you mean 'scale'?"));
  PG_CHECK(has_diag(&d, 14, 13, "mm: inner dimensions differ: 3 vs 2"));
  PG_CHECK(has_diag(&d, 15, 17, "unknown tensor 'q'"));
  PG_CHECK(has_diag(&d, 16, 22, "scale: unknown attribute 'beta'; 'scale' takes alpha"));
  PG_CHECK(has_diag(&d, 17, 9 + 23, "expected ',' or ')'"));
  PG_CHECK(has_diag(&d, 18, 13, "reshape: cannot reshape 4 elements into 6"));
  PG_CHECK(has_diag(&d, 19, 9, "scale: produces 1 output, the step names 2"));
  /* module 2: y arrives with its declared shape [N, N]; a is declared [N, N//2] */
  PG_CHECK(has_diag(&d, 20, 7, "golden steps compute 'a' with shape [2, 2], the contract declares [2, 1]"));
  PG_CHECK(has_diag(&d, 21, 7, "no golden step produces declared output 'b'"));
  PG_CHECK_EQ_INT(9, n);
  PG_CHECK_EQ_INT(9, d.n_errors);
  char buf[1024];
  pg_diag_format(&d.items[1], buf, sizeof buf);
  PG_CHECK_EQ_STR("fixture.yaml:14:13: error: mm: inner dimensions differ: 3 vs 2 (golden)", buf);
  pg_diags_reset(&d);
}

PG_TEST(validate_unbound_dims_checks_names_only) {
  struct fixture f;
  fixture_init(&f);
  f.c.dims.count = 0; /* no defaults: shapes cannot be checked */
  static const char *const m1[] = {"t = mm(x, x)", "y = scale(t, alpha=1/K)", "y = add(nope, t)"};
  set_steps(&f.mods[0].golden, f.s1, m1, 2, 12);
  struct pg_golden_step s1[3];
  set_steps(&f.mods[0].golden, s1, m1, 3, 12);
  struct pg_diags d;
  pg_diags_init(&d);
  int n = pg__goldens_validate_ks(&f.c.graph, &mini_ks, pg_diags_add_finding, &d);
  dump_diags(&d);
  PG_CHECK_EQ_INT(1, n);
  PG_CHECK(has_diag(&d, 14, 17, "unknown tensor 'nope'"));
  pg_diags_reset(&d);
}

/* ---------------------------------------------------------------- composition */

PG_TEST(cumulative_rounds_module_outputs) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int n = 0;
  /* phase 1: y in float16 */
  int rc = cumulative(&f, &env, 1, in, 2, out, &n, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(1, n);
  PG_CHECK_EQ_STR("y", out[0].name);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, out[0].dtype);
  PG_CHECK_EQ_INT(2, out[0].shape[0]);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      PG_CHECK_EQ_INT(pg_f32_to_f16(expected_y(i, j)), ((uint16_t *)out[0].dl.data)[i * 2 + j]);
  reset_outs(out);
  /* phase 2: a and b in float32, carrying y's float16 rounding exactly */
  rc = cumulative(&f, &env, 2, in, 2, out, &n, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(2, n);
  PG_CHECK_EQ_STR("a", out[0].name);
  PG_CHECK_EQ_STR("b", out[1].name);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, out[1].dtype);
  for (int i = 0; i < 2; i++) {
    PG_CHECK(((float *)out[0].dl.data)[i] == expected_y(i, 0));
    PG_CHECK(((float *)out[1].dl.data)[i] == expected_y(i, 1));
  }
  /* 0.5 * (1*.1 + 2*.3 + 3*.5) = 1.1 is not a float16: rounding really happened */
  PG_CHECK(((float *)out[0].dl.data)[0] != 1.1f);
  PG_CHECK_NEAR(1.1, ((float *)out[0].dl.data)[0], 1e-3);
  reset_outs(out);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(cumulative_dtype_override_and_fp64) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  /* the case stores y as float32: no float16 rounding, and fp64 reference */
  struct pg_name_value ov = {"y", "float32", {0, 0}};
  struct pg_golden_env env = {NULL, &f.c.dims, &ov, 1, 64, NULL, 1};
  struct pg_error err;
  int n = 0;
  int rc = cumulative(&f, &env, 1, in, 2, out, &n, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, out[0].dtype);
  double want = 0.5 * (1.0 * (double)(0.1f * 1.0f) + 2.0 * (double)(0.1f * 3.0f) +
                       3.0 * (double)(0.1f * 5.0f));
  PG_CHECK(((float *)out[0].dl.data)[0] == (float)want);
  reset_outs(out);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(cumulative_k_below_n_with_missing_golden) {
  struct fixture f;
  fixture_init(&f); /* module 3 has no golden */
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int n = 0;
  PG_CHECK_OK(cumulative(&f, &env, 2, in, 2, out, &n, &err));
  reset_outs(out);
  int rc = cumulative(&f, &env, 3, in, 2, out, &n, &err);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, rc);
  PG_CHECK_EQ_STR("fixture.yaml:28:5: error: module 3 (post) has no golden: a cumulative golden "
                  "through it needs one (steps or {plugin: NAME})", err.message);
  PG_CHECK_EQ_INT(0, n);
  /* with a golden for M3, phase 3 works and returns the final output */
  static const char *const m3[] = {"m = act(a, mode=neg)", "z = act(m, mode=relu)"};
  set_steps(&f.mods[2].golden, f.s3, m3, 2, 32);
  PG_CHECK_OK(cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK_EQ_INT(1, n);
  PG_CHECK_EQ_STR("z", out[0].name);
  PG_CHECK(((float *)out[0].dl.data)[0] == 0.0f); /* relu(-positive) */
  reset_outs(out);
  /* a runtime kernel error carries the step position */
  static const char *const m3bad[] = {"z = act(a, mode=tanh)"};
  set_steps(&f.mods[2].golden, f.s3, m3bad, 1, 32);
  rc = cumulative(&f, &env, 3, in, 2, out, &n, &err);
  PG_CHECK_EQ_INT(PG_EINVAL, rc);
  PG_CHECK_EQ_STR("fixture.yaml:32:13: error: act: mode must be relu or neg, not 'tanh' (golden)",
                  err.message);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(cumulative_argument_errors) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int n = 0;
  PG_CHECK_EQ_INT(PG_EINVAL, cumulative(&f, &env, 0, in, 2, out, &n, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, cumulative(&f, &env, 4, in, 2, out, &n, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, cumulative(&f, &env, 1, in, 1, out, &n, &err));
  env.precision_bits = 16;
  PG_CHECK_EQ_INT(PG_EINVAL, cumulative(&f, &env, 1, in, 2, out, &n, &err));
  /* an output the steps never produce */
  env.precision_bits = 32;
  static const char *const m1[] = {"t = mm(x, w)"};
  set_steps(&f.mods[0].golden, f.s1, m1, 1, 12);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, cumulative(&f, &env, 1, in, 2, out, &n, &err));
  PG_CHECK(strstr(err.message, "fixture.yaml:10:7: error: module 1 (proj): the golden does not produce declared output 'y'"));
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(op_level_steps) {
  struct fixture f;
  fixture_init(&f);
  static const char *const m3[] = {"z = act(a, mode=relu)"};
  set_steps(&f.mods[2].golden, f.s3, m3, 1, 32);
  /* op level: same math without the float16 rounding of y */
  static const char *const op[] = {"t = mm(x, w)", "y = scale(t, alpha=0.5)", "z, unused = split2(y)"};
  set_steps(&f.c.op_golden, f.sop, op, 3, 50);
  struct pg_tensor in[2], cum[PG_MAX_BOUNDARY_OUTPUTS], ref[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(cum);
  init_outs(ref);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int nc = 0, nr = 0;
  PG_CHECK_OK(cumulative(&f, &env, 3, in, 2, cum, &nc, &err));
  int rc = op_level(&f, &env, in, 2, ref, &nr, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(1, nr);
  PG_CHECK_EQ_STR("z", ref[0].name);
  float a = ((float *)cum[0].dl.data)[0], b = ((float *)ref[0].dl.data)[0];
  PG_CHECK(a != b);                  /* float16 rounding only in the composition */
  PG_CHECK_NEAR(b, a, 1e-3);
  reset_outs(cum);
  reset_outs(ref);
  f.c.op_golden.kind = PG_GOLDEN_NONE;
  PG_CHECK_EQ_INT(PG_ENOTFOUND, op_level(&f, &env, in, 2, ref, &nr, &err));
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

/* ---------------------------------------------------------------- plugins */

PG_TEST(plugin_library_errors) {
  void *lib = (void *)1;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ENOENT, pg_golden_lib_open("/nonexistent/libnothing.so", &lib, &err));
  PG_CHECK(lib == NULL);
  PG_CHECK_EQ_STR("golden library '/nonexistent/libnothing.so': cannot open: no such file", err.message);
  /* a file that is not a shared library */
  PG_CHECK_EQ_INT(PG_EIO, pg_golden_lib_open(__FILE__, &lib, &err));
  PG_CHECK(strstr(err.message, "cannot load"));
  pg_golden_lib_close(NULL);
}

static void plugin_module3(struct fixture *f, const char *symbol) {
  memset(&f->mods[2].golden, 0, sizeof f->mods[2].golden);
  f->mods[2].golden.kind = PG_GOLDEN_PLUGIN;
  f->mods[2].golden.plugin = (char *)symbol;
  f->mods[2].golden.mark = (struct pg_mark){31, 13};
}

PG_TEST(plugin_goldens) {
  void *lib = NULL;
  struct pg_error err;
  PG_CHECK_OK(pg_golden_lib_open(TEST_GOLDEN_LIB, &lib, &err));
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, lib, 1};
  int n = 0;
  for (int bits = 32; bits <= 64; bits += 32) {
    env.precision_bits = bits;
    plugin_module3(&f, "good_golden");
    int rc = cumulative(&f, &env, 3, in, 2, out, &n, &err);
    PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
    PG_CHECK_EQ_INT(1, n);
    for (int i = 0; i < 2; i++) /* z = 2 * a + N */
      PG_CHECK(((float *)out[0].dl.data)[i] == 2.0f * expected_y(i, 0) + 2.0f);
    reset_outs(out);
  }
  env.precision_bits = 32;
  plugin_module3(&f, "nan_golden"); /* NaN results are allowed */
  PG_CHECK_OK(cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK(isnan(((float *)out[0].dl.data)[0]));
  reset_outs(out);

  plugin_module3(&f, "no_such_golden");
  PG_CHECK_EQ_INT(PG_ENOSYM, cumulative(&f, &env, 3, in, 2, out, &n, &err));
  char want[4096];
  snprintf(want, sizeof want, "golden plugin symbol 'no_such_golden' not found in golden library '%s'",
           TEST_GOLDEN_LIB);
  PG_CHECK_MSG(strstr(err.message, want), "%s", err.message);

  plugin_module3(&f, "lazy_golden");
  PG_CHECK_EQ_INT(PG_EIMPL, cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK_EQ_STR("golden plugin 'lazy_golden' left 1 of 2 elements of output 'z' unwritten "
                  "(first at flat index 1)", err.message);

  plugin_module3(&f, "failing_golden");
  PG_CHECK_EQ_INT(PG_EIMPL, cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK(strstr(err.message, "returned 3: weights are not positive definite"));

  plugin_module3(&f, "reshaping_golden");
  PG_CHECK_EQ_INT(PG_ESHAPE, cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK(strstr(err.message, "changed the shape"));

  /* no library given */
  plugin_module3(&f, "good_golden");
  env.golden_lib = NULL;
  PG_CHECK_EQ_INT(PG_EINVAL, cumulative(&f, &env, 3, in, 2, out, &n, &err));
  PG_CHECK_EQ_STR("fixture.yaml:31:13: error: golden of module post is plugin 'good_golden', but "
                  "no golden library was given (pass --golden-lib)", err.message);
  /* op-level plugin: inputs are the primaries, outputs the final outputs */
  env.golden_lib = lib;
  f.c.op_golden.kind = PG_GOLDEN_PLUGIN;
  f.c.op_golden.plugin = "lazy_golden";
  PG_CHECK_EQ_INT(PG_EIMPL, op_level(&f, &env, in, 2, out, &n, &err));
  pg_golden_lib_close(lib);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(step_parse_random_input) {
  /* random texts from the step alphabet: the parser never crashes or over-reads (ASan
   * checks the reads) and every failure has a column inside the text (or just past
   * its end) */
  static const char alphabet[] = "ab_x1=(),[]\"' .+-*/";
  uint64_t state = 0x9e3779b97f4a7c15ull;
  char text[48];
  int parsed = 0;
  for (int round = 0; round < 20000; round++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    int len = (int)((state >> 33) % (sizeof text - 1));
    for (int i = 0; i < len; i++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      text[i] = alphabet[(state >> 33) % (sizeof alphabet - 1)];
    }
    text[len] = '\0';
    if (round % 2) { /* half the rounds: a valid step with one character replaced */
      static const char base[] = "y, z = op(a, b_1, k=[1, 2*x], s=\"t\", f=(1+2)/3)";
      memcpy(text, base, sizeof base);
      len = (int)sizeof base - 1;
      if (round % 4 == 1) text[(state >> 40) % (uint64_t)len] = alphabet[(state >> 20) % (sizeof alphabet - 1)];
    }
    char *copy = malloc((size_t)len + 1); /* exact-size heap copy: over-reads trip ASan */
    PG_CHECK(copy != NULL);
    memcpy(copy, text, (size_t)len + 1);
    struct pg__step s;
    struct pg_error err;
    pg_error_clear(&err);
    int rc = pg__step_parse(copy, &s, &err);
    PG_CHECK_MSG(rc == PG_OK || rc == PG_EPARSE, "'%s': rc %d", copy, rc);
    if (rc == PG_EPARSE)
      PG_CHECK_MSG(err.column >= 1 && err.column <= len + 1, "'%s': column %d", copy, err.column);
    else
      parsed++;
    free(copy);
  }
  PG_CHECK(parsed > 0); /* the alphabet can spell valid steps, and some do */
}

PG_TEST(cumulative_rejects_wrong_input_shape) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  in[1].shape[0] = 2; /* w declared [K, N] = [3, 2]; pretend it is [2, 2] */
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int n = 0;
  PG_CHECK_EQ_INT(PG_ESHAPE, cumulative(&f, &env, 1, in, 2, out, &n, &err));
  PG_CHECK_EQ_STR("primary input 'w' does not have the shape the contract declares under the "
                  "bound dims", err.message);
  in[1].shape[0] = 3;
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

PG_TEST(validate_plugin_names) {
  struct fixture f;
  fixture_init(&f);
  plugin_module3(&f, "not a symbol");
  f.c.op_golden.kind = PG_GOLDEN_PLUGIN;
  f.c.op_golden.plugin = "ok_symbol_1";
  struct pg_diags d;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(1, pg__goldens_validate_ks(&f.c.graph, &mini_ks, pg_diags_add_finding, &d));
  PG_CHECK(has_diag(&d, 31, 13, "golden plugin 'not a symbol' is not a C identifier"));
  pg_diags_reset(&d);
}

PG_TEST(cumulative_bf16_and_int_outputs) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
  make_inputs(in);
  init_outs(out);
  struct pg_error err;
  int n = 0;
  /* y stored as bfloat16: phase 2 sees bf16-rounded values */
  struct pg_name_value bf = {"y", "bfloat16", {0, 0}};
  struct pg_golden_env env = {NULL, &f.c.dims, &bf, 1, 32, NULL, 1};
  PG_CHECK_OK(cumulative(&f, &env, 2, in, 2, out, &n, &err));
  float acc = 0;
  for (int k = 0; k < 3; k++) acc += (float)(k + 1) * (0.1f * (float)(k * 2 + 1));
  float want = pg_bf16_to_f32(pg_f32_to_bf16(0.5f * acc));
  PG_CHECK(((float *)out[0].dl.data)[0] == want);
  PG_CHECK(want != pg_f16_to_f32(pg_f32_to_f16(0.5f * acc))); /* bf16 really differs */
  reset_outs(out);
  /* y as int32: truncated toward zero, and phase 1 returns it as int32 */
  struct pg_name_value iv = {"y", "int32", {0, 0}};
  env.dtype_overrides = &iv;
  PG_CHECK_OK(cumulative(&f, &env, 1, in, 2, out, &n, &err));
  PG_CHECK_EQ_INT(PG_DTYPE_I32, out[0].dtype);
  PG_CHECK_EQ_INT(1, ((int32_t *)out[0].dl.data)[0]); /* 0.5 * 2.2 = 1.1 -> 1 */
  reset_outs(out);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

/* Boundary outputs of 64 KiB and more: the buffers come from the populated-mapping
 * path of pg__golden_alloc and the float16/bfloat16 boundary output is narrowed in
 * place from the float32 reference (N*N = 202*202 elements, not a multiple of 8, so
 * the SIMD blocks and the scalar tail both run). Every element is checked. */
PG_TEST(cumulative_large_outputs_narrowed_in_place) {
  const int64_t N = 202;
  for (int bf = 0; bf < 2; bf++) {
    struct fixture f;
    fixture_init(&f);
    f.dimv[0].value = N;
    struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS];
    int64_t xs[2] = {N, 3}, ws[2] = {3, N};
    pg_tensor_init(&in[0]);
    pg_tensor_init(&in[1]);
    PG_CHECK_OK(pg_tensor_alloc(&in[0], PG_DTYPE_F16, 2, xs, NULL));
    PG_CHECK_OK(pg_tensor_alloc(&in[1], PG_DTYPE_F32, 2, ws, NULL));
    for (int64_t i = 0; i < 3 * N; i++) {
      ((uint16_t *)in[0].dl.data)[i] = pg_f32_to_f16((float)(i % 7 + 1));
      ((float *)in[1].dl.data)[i] = 0.1f * (float)(i % 11 + 1) - 0.5f;
    }
    init_outs(out);
    struct pg_name_value ov = {"y", "bfloat16", {0, 0}};
    struct pg_golden_env env = {NULL, &f.c.dims, bf ? &ov : NULL, bf, 32, NULL, 1};
    struct pg_error err;
    int n = 0;
    int rc = cumulative(&f, &env, 1, in, 2, out, &n, &err);
    PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
    PG_CHECK_EQ_INT(1, n);
    PG_CHECK_EQ_INT(bf ? PG_DTYPE_BF16 : PG_DTYPE_F16, out[0].dtype);
    PG_CHECK_EQ_INT(N * N, out[0].numel);
    PG_CHECK_EQ_INT(N * N * 2, (int64_t)out[0].nbytes);
    int64_t bad = 0, nonzero = 0;
    for (int64_t i = 0; i < N; i++)
      for (int64_t j = 0; j < N; j++) {
        float acc = 0;
        for (int64_t k = 0; k < 3; k++)
          acc += (float)((i * 3 + k) % 7 + 1) * (0.1f * (float)((k * N + j) % 11 + 1) - 0.5f);
        float y = 0.5f * acc;
        uint16_t want = bf ? pg_f32_to_bf16(y) : pg_f32_to_f16(y);
        bad += ((uint16_t *)out[0].dl.data)[i * N + j] != want;
        nonzero += want != 0;
      }
    PG_CHECK_EQ_INT(0, bad);
    PG_CHECK(nonzero > N * N / 2);
    /* phase 2 reads the rounded y and returns float32 halves (populated buffers) */
    reset_outs(out);
    rc = cumulative(&f, &env, 2, in, 2, out, &n, &err);
    PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
    PG_CHECK_EQ_INT(2, n);
    float y00 = 0.0f;
    for (int64_t k = 0; k < 3; k++) y00 += (float)(k % 7 + 1) * (0.1f * (float)(k * N % 11 + 1) - 0.5f);
    y00 *= 0.5f;
    float want00 = bf ? pg_bf16_to_f32(pg_f32_to_bf16(y00)) : pg_f16_to_f32(pg_f32_to_f16(y00));
    PG_CHECK(((float *)out[0].dl.data)[0] == want00);
    reset_outs(out);
    pg_tensor_reset(&in[0]);
    pg_tensor_reset(&in[1]);
  }
}

/* The buffer pool of one composition call: a released buffer is handed to the next
 * allocation of between its size and half of it, keeps its own release function
 * (populated mapping or malloc), and drain frees the rest (ASan checks the frees). */
PG_TEST(pool_reuses_similar_sizes_only) {
  struct pg__pool pool = {0};
  struct pg_tensor a, b, c, d;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  pg_tensor_init(&c);
  pg_tensor_init(&d);
  int64_t big[1] = {75000}, mid[1] = {50000}, small[1] = {1000};
  PG_CHECK_OK(pg__golden_alloc_from(&pool, &a, PG_DTYPE_F32, 1, big, NULL)); /* 300 kB: mmap */
  PG_CHECK_OK(pg__golden_alloc_from(&pool, &b, PG_DTYPE_F32, 1, small, NULL)); /* malloc */
  void *pa = a.dl.data, *pb = b.dl.data;
  pg__pool_put(&pool, &a);
  pg__pool_put(&pool, &b);
  PG_CHECK(a.dl.data == NULL && a.owned == NULL);
  PG_CHECK_EQ_INT(2, pool.n);
  /* 50000 floats = 200 kB: the 300 kB buffer fits (<= 2x + a page) */
  PG_CHECK_OK(pg__golden_alloc_from(&pool, &c, PG_DTYPE_F32, 1, mid, NULL));
  PG_CHECK(c.dl.data == pa);
  PG_CHECK_EQ_INT(1, pool.n);
  /* 1000 doubles = 8 kB: the 4 kB buffer is too small, a fresh one */
  PG_CHECK_OK(pg__golden_alloc_from(&pool, &d, PG_DTYPE_F64, 1, small, NULL));
  PG_CHECK(d.dl.data != pb);
  ((double *)d.dl.data)[999] = 1.0;
  ((float *)c.dl.data)[49999] = 2.0f;
  pg__pool_put(&pool, &c);
  pg__pool_put(NULL, &d); /* no pool: freed at once */
  /* 1000 floats: only the 4 kB one qualifies, not the 300 kB one */
  PG_CHECK_OK(pg__golden_alloc_from(&pool, &d, PG_DTYPE_F32, 1, small, NULL));
  PG_CHECK(d.dl.data == pb);
  pg_tensor_reset(&d);
  pg__pool_drain(&pool);
  PG_CHECK_EQ_INT(0, pool.n);
}

/* Tensors no later module reads go back to the pool between modules and are reused;
 * a tensor a later module still reads must never be handed out. Phase 3 with
 * M3: t2 = a + a; z = t2 + a (= 3a): were `a` recycled into t2, z would be 4a. */
PG_TEST(cumulative_recycles_only_dead_tensors) {
  const int64_t N = 202;
  static const char *const m3[] = {"t2 = add(a, a)", "z = add(t2, a)"};
  struct fixture f;
  fixture_init(&f);
  f.dimv[0].value = N;
  set_steps(&f.mods[2].golden, f.s3, m3, 2, 32);
  struct pg_tensor in[2], out[PG_MAX_BOUNDARY_OUTPUTS], out2[PG_MAX_BOUNDARY_OUTPUTS];
  int64_t xs[2] = {N, 3}, ws[2] = {3, N};
  pg_tensor_init(&in[0]);
  pg_tensor_init(&in[1]);
  PG_CHECK_OK(pg_tensor_alloc(&in[0], PG_DTYPE_F16, 2, xs, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&in[1], PG_DTYPE_F32, 2, ws, NULL));
  for (int64_t i = 0; i < 3 * N; i++) {
    ((uint16_t *)in[0].dl.data)[i] = pg_f32_to_f16((float)(i % 5 + 1));
    ((float *)in[1].dl.data)[i] = 0.25f * (float)(i % 9) - 1.0f;
  }
  init_outs(out);
  init_outs(out2);
  struct pg_golden_env env = {NULL, &f.c.dims, NULL, 0, 32, NULL, 1};
  struct pg_error err;
  int n = 0;
  int rc = cumulative(&f, &env, 3, in, 2, out, &n, &err);
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(1, n);
  rc = cumulative(&f, &env, 2, in, 2, out2, &n, &err); /* a, b */
  PG_CHECK_MSG(rc == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(N * N / 2, out[0].numel);
  int64_t bad = 0;
  for (int64_t i = 0; i < out[0].numel; i++) {
    float a = ((float *)out2[0].dl.data)[i];
    bad += ((float *)out[0].dl.data)[i] != (a + a) + a;
  }
  PG_CHECK_EQ_INT(0, bad);
  reset_outs(out);
  reset_outs(out2);
  pg_tensor_reset(&in[0]);
  pg_tensor_reset(&in[1]);
}

static int live_never(const void *live, const struct pg__gtensor *g, int module) {
  (void)live, (void)g, (void)module;
  return 0;
}
static int live_always(const void *live, const struct pg__gtensor *g, int module) {
  (void)live, (void)g, (void)module;
  return 1;
}

/* A module-1 tensor s [4, 8] float32 in a fresh table; returns its entry. */
static struct pg__gtensor *table_with_s(struct pg__gtable *tab) {
  struct pg__gtensor *s;
  pg__gtable_init(tab);
  PG_CHECK_OK(pg__gtable_add(tab, "s", 1, &s, NULL));
  int64_t sh[2] = {4, 8};
  PG_CHECK_OK(pg__golden_alloc(&s->t, PG_DTYPE_F32, 2, sh, NULL));
  for (int i = 0; i < 32; i++) ((float *)s->t.dl.data)[i] = 0.37f * (float)(i % 11) - 1.5f;
  return s;
}

/* Built-in single-input kernels write over their input only when nothing reads it
 * afterwards: no later step of the module, no later module (read_later), and not a
 * step-local that is one of the module's outputs. Values never change. */
PG_TEST(steps_write_in_place_only_over_dead_tensors) {
  struct fixture f;
  fixture_init(&f);
  struct pg_tensor_decl outs[2] = {mk_decl("p", "N", "N", PG_DTYPE_F32, 0, 10),
                                   mk_decl("t", "N", "N", PG_DTYPE_F32, 0, 11)};
  struct pg_module m = {2, "mod", NULL, {8, 5}, NULL, 0, outs, 1, {0}, NULL, 0};
  struct pg_tensor_decl s_out = mk_decl("s", "N", "N", PG_DTYPE_F32, 0, 10);
  f.mods[0].outputs = &s_out; /* s is module 1's output, as in table_with_s */
  struct pg_golden_step gs[2];
  struct pg__run_ctx rc = {&f.c.graph, &f.c.dims, 32, 1, NULL, live_never, NULL, NULL, NULL, 0};
  struct pg_error err;
  /* reference values from the kernels directly */
  struct pg__gtable ref;
  struct pg__gtensor *rs = table_with_s(&ref);
  const struct pg_tensor *rin[1] = {&rs->t};
  struct pg_tensor want_sm, want_exp;
  pg_tensor_init(&want_sm);
  pg_tensor_init(&want_exp);
  PG_CHECK_OK(pg_kernel_invoke(pg_kernel_find("softmax"), rin, 1, NULL, 0, 1, &want_sm, NULL));
  PG_CHECK_OK(pg_kernel_invoke(pg_kernel_find("exp"), rin, 1, NULL, 0, 1, &want_exp, NULL));

  for (int v = 0; v < 4; v++) {
    static const char *const one[] = {"p = softmax(s)"};
    static const char *const two[] = {"p = softmax(s)", "q = exp(s)"};
    static const char *const chain[] = {"t = exp(s)", "p = softmax(t)"};
    const char *const *steps = v < 2 ? one : v == 2 ? two : chain;
    int n_steps = v < 2 ? 1 : 2;
    rc.read_later = v == 1 ? live_always : live_never;
    m.n_outputs = v == 3 ? 2 : 1;
    struct pg_golden_spec g;
    set_steps(&g, gs, steps, n_steps, 12);
    struct pg__gtable tab;
    struct pg__gtensor *s = table_with_s(&tab);
    void *sbuf = s->t.dl.data;
    struct pg__pspec ps;
    PG_CHECK_OK(pg__pspec_build(&f.c.graph, NULL, &m, &g, &ps, &err));
    int rcode = pg__steps_run(&rc, &ps, &tab, &err);
    pg__pspec_reset(&ps);
    PG_CHECK_MSG(rcode == PG_OK, "%s", err.message);
    struct pg__gtensor *p = pg__gtable_find(&tab, -1, "p");
    PG_CHECK(p && p->t.dl.data);
    if (v == 3) {
      struct pg__gtensor *t = pg__gtable_find(&tab, -1, "t");
      PG_CHECK(t->t.dl.data == sbuf);        /* t took s's buffer (s is dead) */
      PG_CHECK(p->t.dl.data != t->t.dl.data); /* but t is an output: p is fresh */
      PG_CHECK(memcmp(t->t.dl.data, want_exp.dl.data, 128) == 0);
    } else if (v == 2) {
      struct pg__gtensor *q = pg__gtable_find(&tab, -1, "q");
      PG_CHECK(p->t.dl.data != sbuf);  /* s is read by the next step */
      PG_CHECK(q->t.dl.data == sbuf);  /* the last reader may take it */
      PG_CHECK(memcmp(p->t.dl.data, want_sm.dl.data, 128) == 0);
      PG_CHECK(memcmp(q->t.dl.data, want_exp.dl.data, 128) == 0);
    } else {
      PG_CHECK((p->t.dl.data == sbuf) == (v == 0)); /* read later: a fresh buffer */
      PG_CHECK(memcmp(p->t.dl.data, want_sm.dl.data, 128) == 0);
      if (v == 1) PG_CHECK(s->t.dl.data == sbuf && ((float *)sbuf)[0] == -1.5f);
      else PG_CHECK(s->t.dl.data == NULL && s->t.owned == NULL); /* not readable any more */
    }
    pg__gtable_reset(&tab);
  }
  pg_tensor_reset(&want_sm);
  pg_tensor_reset(&want_exp);
  pg__gtable_reset(&ref);
}
