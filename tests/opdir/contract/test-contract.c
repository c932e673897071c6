/* Unit tests for the contract loader (runner/opdir/contract_yaml.c, contract_schema.c):
 * every field of struct pg_contract, numeric line:column of findings, that every
 * finding is reported (not only the first), the real pypto schema, and the limits
 * that keep hostile files (100 MB, deep nesting, alias bombs, garbage) from hanging
 * or crashing the loader. The per-file catalogue is driven by contract_check.c. */
#include <fcntl.h>
#include <sys/wait.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"
#include "opdir/opdir.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Loads a buffer; returns rc and leaves findings in *d (caller resets). */
static int load_text(const char *text, size_t size, struct pg_contract *c, struct pg_diags *d,
                     struct pg_error *e) {
  pg_diags_init(d);
  pg_error_clear(e);
  return pg_contract_load_buffer("mem.yaml", text, size, c, d, e);
}

static const struct pg_diag *nth_error(const struct pg_diags *d, int n) {
  for (int i = 0; i < d->count; i++)
    if (d->items[i].severity == PG_SEV_ERROR && n-- == 0) return &d->items[i];
  return NULL;
}

PG_TEST(attention_example_fills_every_field) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  const char *path = PG_TEST_DATA_DIR "/../../suites/attention/module_interfaces.yaml";
  int rc = pg_contract_load(path, &c, &d, &e);
  PG_CHECK_MSG(rc == PG_OK, "%s", e.message);
  PG_CHECK_EQ_INT(0, d.n_errors);
  PG_CHECK_EQ_INT(0, d.n_warnings);
  PG_CHECK_EQ_STR(path, c.path);
  PG_CHECK_EQ_INT(1, c.schema_version);
  PG_CHECK_EQ_STR("attention", c.op);
  PG_CHECK_EQ_INT(4, c.op_mark.line);
  PG_CHECK_EQ_INT(5, c.op_mark.column);
  int64_t v;
  PG_CHECK_EQ_INT(4, c.dims.count);
  PG_CHECK(pg_bindings_get(&c.dims, "S", &v) && v == 128);
  PG_CHECK(pg_bindings_get(&c.dims, "D", &v) && v == 64);
  PG_CHECK_EQ_INT(3, c.n_primary);
  const struct pg_tensor_decl *q = &c.primary_inputs[0];
  PG_CHECK_EQ_STR("q", q->name);
  PG_CHECK_EQ_INT(4, q->ndim);
  PG_CHECK_EQ_STR("B", q->dims[0]);
  PG_CHECK_EQ_STR("D", q->dims[3]);
  PG_CHECK_EQ_INT(11, q->dim_marks[0].line);
  PG_CHECK_EQ_INT(23, q->dim_marks[0].column);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, q->dtype);
  PG_CHECK_EQ_STR("normal(0, 1)", q->fill);
  PG_CHECK_EQ_STR("uniform(-1, 1)", c.primary_inputs[2].fill);
  PG_CHECK_EQ_INT(3, c.n_modules);
  const struct pg_module *m1 = pg_contract_module(&c, 1), *m3 = pg_contract_module(&c, 3);
  PG_CHECK(m1 && m3);
  PG_CHECK_EQ_STR("qk_scores", m1->name);
  PG_CHECK_EQ_STR("scaled attention scores q k^T / sqrt(D)", m1->description);
  PG_CHECK_EQ_INT(2, m1->n_inputs);
  PG_CHECK_EQ_INT(0, m1->inputs[1].source_module);
  PG_CHECK_EQ_STR("primary", m1->inputs[1].source);
  PG_CHECK_EQ_INT(-1, m1->inputs[1].ndim);
  PG_CHECK_EQ_INT(PG_GOLDEN_STEPS, m1->golden.kind);
  PG_CHECK_EQ_INT(1, m1->golden.n_steps);
  PG_CHECK_EQ_STR("scores = matmul(q, k, trans_b=true, alpha=1/sqrt(D))", m1->golden.steps[0].text);
  PG_CHECK_EQ_INT(23, m1->golden.steps[0].mark.line);
  PG_CHECK_EQ_INT(9, m1->golden.steps[0].mark.column);
  PG_CHECK_EQ_INT(1, c.modules[1].inputs[0].source_module);
  PG_CHECK_EQ_INT(2, m3->inputs[0].source_module);
  PG_CHECK_EQ_STR("out", m3->outputs[0].name);
  PG_CHECK(m3->outputs[0].has_atol && m3->outputs[0].has_rtol);
  PG_CHECK_NEAR(2e-3, m3->outputs[0].atol, 1e-18);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, m1->outputs[0].dtype);
  PG_CHECK_EQ_STR("S", m1->outputs[0].dims[3]);
  PG_CHECK_EQ_INT(1, c.n_final);
  PG_CHECK_EQ_INT(3, c.final_outputs[0].source_module);
  PG_CHECK_EQ_INT(PG_GOLDEN_PLUGIN, c.op_golden.kind);
  PG_CHECK_EQ_STR("attention_fused_golden", c.op_golden.plugin);
  PG_CHECK(c.has_tolerance);
  PG_CHECK_NEAR(1e-3, c.atol, 1e-18);
  PG_CHECK(c.has_composition);
  PG_CHECK_EQ_INT(2, c.n_comp_seeds);
  PG_CHECK_EQ_INT(1, (int)c.comp_seeds[1]);
  PG_CHECK_EQ_INT(2, c.n_comp_shapes);
  PG_CHECK(pg_bindings_get(&c.comp_shapes[0], "S", &v) && v == 64);
  PG_CHECK(!pg_bindings_get(&c.comp_shapes[0], "D", &v));
  PG_CHECK_EQ_INT(4, c.comp_shapes[1].count);
  /* the boundary helper works on what the loader produced */
  const struct pg_tensor_decl *b[4];
  PG_CHECK_EQ_INT(1, pg_contract_boundary(&c, 3, b, 4, &e));
  PG_CHECK_EQ_STR("out", b[0]->name);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, b[0]->dtype);
  pg_contract_reset(&c);
  pg_contract_reset(&c); /* twice is harmless */
  PG_CHECK_EQ_INT(0, c.n_modules);
  pg_diags_reset(&d);
}

PG_TEST(pypto_schema_loads_unchanged) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  int rc = pg_contract_load(pg_test_data("good/contract/pypto_demo.yaml"), &c, &d, &e);
  PG_CHECK_MSG(rc == PG_OK, "%s", e.message);
  PG_CHECK_EQ_INT(0, d.n_errors);
  /* the golden_stage_fn files are not next to it, and it has no phasegate golden: two
   * warnings naming the missing files, one per module that has no golden at all
   * (tests/run/python_golden/ has the directories where they are) */
  PG_CHECK_EQ_INT(4, d.n_warnings);
  PG_CHECK_EQ_INT(7, d.count); /* plus one note per dim without a default: T, H, N */
  PG_CHECK_EQ_INT(PG_SEV_NOTE, d.items[0].severity);
  PG_CHECK(strstr(d.items[3].message, "golden_stage_fn 'rmsnorm_matmul_golden_stage1' of module 1: "
                  "no file ") != NULL);
  PG_CHECK(strstr(d.items[3].message, "/modules/rmsnorm_matmul_golden_stage1.py") != NULL);
  PG_CHECK_EQ_INT(27, d.items[3].line);
  PG_CHECK(strstr(d.items[5].message, "module 1 'rmsnorm' has no golden: no `golden:` steps or "
                  "plugin, no modules/rmsnorm_matmul_golden_stage1.py; run --up-to-module 1, 2 "
                  "will fail") != NULL);
  PG_CHECK(c.py_goldens && c.n_py_goldens == 3);
  PG_CHECK(c.py_goldens[1].file == NULL);
  PG_CHECK_EQ_STR("rmsnorm_matmul_golden_stage12", c.py_goldens[2].stage_fn);
  PG_CHECK_EQ_INT(12, d.items[0].line);
  PG_CHECK_EQ_INT(24, d.items[0].column);
  PG_CHECK_EQ_STR("rmsnorm_matmul", c.op);
  const struct pg_tensor_decl *x = &c.primary_inputs[0];
  PG_CHECK_EQ_INT(2, x->ndim);
  PG_CHECK_EQ_STR("T", x->dims[0]);
  PG_CHECK_EQ_STR("H", x->dims[1]);
  PG_CHECK_EQ_INT(12, x->dim_marks[1].line);
  PG_CHECK_EQ_INT(27, x->dim_marks[1].column);
  PG_CHECK_EQ_INT(1, c.primary_inputs[1].ndim);
  PG_CHECK_EQ_INT(PG_GOLDEN_NONE, c.modules[0].golden.kind);
  PG_CHECK_EQ_INT(3, c.n_comp_seeds);
  PG_CHECK_EQ_INT(456, (int)c.comp_seeds[2]);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(every_finding_is_reported_with_its_position) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  int rc = pg_contract_load(pg_test_data("bad/contract/multiple_errors.yaml"), &c, &d, &e);
  PG_CHECK_EQ_INT(PG_EVALIDATE, rc);
  /* one error of every rule, sorted by position */
  static const struct {
    const char *rule;
    int line, column;
  } want[] = {{"rule 5", 5, 27}, {"rule 7", 8, 11},  {"rule 1", 11, 9},
              {"rule 6", 13, 41}, {"rule 4", 14, 9}, {"rule 8", 17, 5},
              {"rule 2", 19, 27}, {"rule 5", 21, 32}, {"rule 3", 23, 25}};
  PG_CHECK_EQ_INT(9, d.n_errors);
  PG_CHECK_EQ_INT(9, d.count);
  for (int i = 0; i < 9; i++) {
    const struct pg_diag *g = nth_error(&d, i);
    PG_CHECK_MSG(g && strcmp(g->rule, want[i].rule) == 0 && g->line == want[i].line &&
                     g->column == want[i].column,
                 "finding %d: %s at %d:%d", i, g ? g->rule : "none", g ? g->line : 0,
                 g ? g->column : 0);
  }
  PG_CHECK_EQ_STR("unknown dtype 'float128' for output 'h' of module 1 (expected float32, "
                  "float16, bfloat16, float64, int8, uint8, int32, int64, bool or int)",
                  nth_error(&d, 3)->message);
  /* err holds the first error, its position as numbers */
  PG_CHECK_EQ_INT(5, e.line);
  PG_CHECK_EQ_INT(27, e.column);
  PG_CHECK(strstr(e.message, "multiple_errors.yaml:5:27: error: shape of primary input 'w', axis "
                             "1: '/' is not allowed in shapes; use '//' (rule 5)") != NULL);
  /* the contract still holds what could be read */
  PG_CHECK_EQ_INT(2, c.n_modules);
  PG_CHECK_EQ_STR("add inputs", c.modules[0].name);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(unknown_key_suggests_the_key_a_typo_meant) {
  const char *text =
      "op: w\n"
      "primary_input: [{name: a, shape: [4], dtype: int}]\n"
      "modules:\n"
      "  - id: 1\n"
      "    name: m\n"
      "    input: [{name: a, source: primary}]\n"
      "    outputs: [{name: y, shape: [4], dtype: int}]\n"
      "    zzz: 1\n";
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  load_text(text, strlen(text), &c, &d, &e);
  int seen = 0;
  for (int i = 0; i < d.count; i++) {
    const char *m = d.items[i].message;
    if (strstr(m, "'primary_input'")) {
      PG_CHECK_EQ_STR("unknown key 'primary_input' in the contract is ignored; did you mean "
                      "'primary_inputs'?", m);
      seen |= 1;
    } else if (strstr(m, "'input'")) {
      PG_CHECK(strstr(m, "did you mean 'inputs'?") != NULL);
      seen |= 2;
    } else if (strstr(m, "'zzz'")) {
      PG_CHECK(strstr(m, "did you mean") == NULL); /* too short to guess */
      seen |= 4;
    }
  }
  PG_CHECK_EQ_INT(7, seen);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(warnings_do_not_fail_a_contract) {
  const char *text =
      "op: w\n"
      "frobnicate: 3\n"
      "schema_version: 2\n"
      "modules:\n"
      "  - id: 1\n"
      "    name: m\n"
      "    colour: blue\n"
      "    outputs: [{name: y, shape: [4], dtype: int}]\n"
      "    golden: [y = add(a, b)]\n";
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_OK(load_text(text, strlen(text), &c, &d, &e));
  PG_CHECK_EQ_INT(4, d.n_warnings);
  PG_CHECK_EQ_STR("unknown key 'frobnicate' in the contract is ignored", d.items[0].message);
  PG_CHECK_EQ_INT(2, d.items[0].line);
  PG_CHECK_EQ_INT(1, d.items[0].column);
  PG_CHECK_EQ_INT(7, d.items[2].line);
  PG_CHECK_EQ_INT(PG_DTYPE_I64, c.modules[0].outputs[0].dtype);
  /* a flow list of steps is split at the comma: rejoined, and warned about */
  PG_CHECK(strstr(d.items[3].message, "flow list") != NULL);
  PG_CHECK_EQ_INT(1, c.modules[0].golden.n_steps);
  PG_CHECK_EQ_STR("y = add(a, b)", c.modules[0].golden.steps[0].text);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(empty_null_and_garbage_buffers) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load_text(NULL, 0, &c, &d, &e));
  PG_CHECK_EQ_STR("mem.yaml:1:1: error: the contract is empty, an unfilled placeholder; expected "
                  "a mapping with 'op' and 'modules' (placeholder)", e.message);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  PG_CHECK_EQ_INT(PG_EVALIDATE, load_text("~\n", 2, &c, &d, &e));
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  unsigned char junk[512];
  uint32_t s = 12345;
  for (int round = 0; round < 200; round++) {
    for (size_t i = 0; i < sizeof junk; i++) {
      s = s * 1103515245u + 12345u;
      junk[i] = (unsigned char)(s >> 16);
    }
    int rc = load_text((const char *)junk, sizeof junk, &c, &d, &e);
    PG_CHECK(rc == PG_EPARSE || rc == PG_EVALIDATE);
    PG_CHECK(d.n_errors >= 1);
    PG_CHECK(e.line >= 1 && e.column >= 1);
    pg_contract_reset(&c);
    pg_diags_reset(&d);
  }
  /* a NUL byte in the middle of text */
  const char nul[] = "op: a\0b\nmodules: []\n";
  PG_CHECK_EQ_INT(PG_EPARSE, load_text(nul, sizeof nul - 1, &c, &d, &e));
  PG_CHECK_EQ_INT(1, e.line);
  PG_CHECK_EQ_INT(6, e.column);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(missing_file_and_directory) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_ENOENT, pg_contract_load("/nonexistent/module_interfaces.yaml", &c, &d, &e));
  PG_CHECK(strstr(e.message, "No such file") != NULL);
  PG_CHECK_EQ_INT(PG_EIO, pg_contract_load(pg_test_tmpdir(), &c, &d, &e));
  PG_CHECK_EQ_INT(0, d.count);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(hundred_megabyte_file_fails_fast) {
  char path[4096];
  snprintf(path, sizeof path, "%s/huge.yaml", pg_test_tmpdir());
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  PG_CHECK(fd >= 0);
  PG_CHECK(write(fd, "op: x\n", 6) == 6);
  PG_CHECK_OK(ftruncate(fd, (off_t)100 << 20)); /* sparse: no 100 MB of disk writes */
  close(fd);
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  double t0 = now();
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_contract_load(path, &c, &d, &e));
  PG_CHECK(now() - t0 < 5.0);
  PG_CHECK(strstr(e.message, ":1:1: error: the file is 104857600 bytes; contracts are limited to "
                             "64 MiB (rule 8)") != NULL);
  PG_CHECK_EQ_INT(1, d.n_errors);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(deep_nesting_and_node_limits) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  /* 200k nested flow sequences: stops at depth 65 */
  size_t n = 200000;
  char *deep = malloc(2 * n + 16);
  PG_CHECK(deep);
  memcpy(deep, "a: ", 3);
  memset(deep + 3, '[', n);
  memset(deep + 3 + n, ']', n);
  double t0 = now();
  PG_CHECK_EQ_INT(PG_EPARSE, load_text(deep, 2 * n + 3, &c, &d, &e));
  PG_CHECK(now() - t0 < 10.0); /* linear: ~1 ms; a hang or quadratic blow-up would not finish */
  PG_CHECK(strstr(e.message, "nested more than 64 levels deep (rule 8)") != NULL);
  PG_CHECK_EQ_INT(1, e.line);
  PG_CHECK_EQ_INT(4 + 63, e.column); /* the root mapping is level 1 */
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  /* block-style nesting too */
  char block[64 * 80];
  size_t len = 0;
  for (int i = 0; i < 70; i++) len += (size_t)snprintf(block + len, sizeof block - len, "%*sk:\n", i, "");
  PG_CHECK_EQ_INT(PG_EPARSE, load_text(block, len, &c, &d, &e));
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  free(deep);

  /* more than a million nodes in a flat list */
  size_t items = 1100000;
  char *flat = malloc(2 * items + 16);
  PG_CHECK(flat);
  size_t k = 0;
  flat[k++] = '[';
  for (size_t i = 0; i < items; i++) {
    flat[k++] = '1';
    flat[k++] = ',';
  }
  flat[k - 1] = ']';
  t0 = now();
  PG_CHECK_EQ_INT(PG_EPARSE, load_text(flat, k, &c, &d, &e));
  PG_CHECK(now() - t0 < 30.0); /* ~0.5 s (Debug), ~2 s (ASan) */
  PG_CHECK(strstr(e.message, "more than 1000000 nodes") != NULL);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  free(flat);
}

PG_TEST(alias_bomb_is_refused) {
  const char *text =
      "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
      "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
      "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
      "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_EQ_INT(PG_EPARSE, load_text(text, strlen(text), &c, &d, &e));
  PG_CHECK(strstr(e.message, "mem.yaml:7:4: error: aliases expand the document to more than") != NULL);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(aliases_share_nodes) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  int rc = pg_contract_load(pg_test_data("good/contract/anchors_and_legacy.yaml"), &c, &d, &e);
  PG_CHECK_MSG(rc == PG_OK, "%s", e.message);
  PG_CHECK_EQ_INT(0, d.count);
  PG_CHECK_EQ_STR("F", c.primary_inputs[2].dims[1]); /* w_up: *id002 */
  PG_CHECK_EQ_STR("T", c.modules[1].outputs[0].dims[0]);
  PG_CHECK_EQ_INT(1, c.modules[1].inputs[0].source_module); /* phase_1 */
  PG_CHECK_EQ_INT(2, c.final_outputs[0].source_module);
  PG_CHECK_EQ_INT(PG_GOLDEN_STEPS, c.modules[0].golden.kind);
  PG_CHECK_EQ_INT(4, c.modules[0].golden.n_steps);
  PG_CHECK_EQ_STR("swiglu_down_golden", c.modules[1].golden.plugin);
  PG_CHECK_EQ_STR("F // 2 * 2", c.modules[0].outputs[0].dims[1]);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(shape_values_are_checked_with_default_dims) {
  const char *text =
      "op: s\n"
      "dims: {N: 4, BIG: 4611686018427387904}\n"
      "primary_inputs:\n"
      "  - {name: x, shape: [N - 5], dtype: float32}\n"
      "  - {name: y, shape: [BIG, BIG], dtype: float32}\n"
      "  - {name: z, shape: \"[N, BIG * 2]\", dtype: float32}\n"
      "modules:\n"
      "  - {id: 1, name: m, outputs: [{name: o, shape: [N // 0], dtype: float32}]}\n";
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load_text(text, strlen(text), &c, &d, &e));
  PG_CHECK_EQ_INT(4, d.n_errors);
  PG_CHECK_EQ_STR("shape of primary input 'x', axis 0 evaluates to -1 with the default dims; "
                  "sizes must be >= 0", d.items[0].message);
  PG_CHECK_EQ_INT(4, d.items[0].line);
  PG_CHECK_EQ_INT(23, d.items[0].column);
  PG_CHECK_EQ_STR("the shape of primary input 'y' has more than 2^63 elements with the default "
                  "dims", d.items[1].message);
  PG_CHECK_EQ_STR("shape of primary input 'z', axis 1: integer overflow in '*' with the default "
                  "dims", d.items[2].message);
  PG_CHECK_EQ_INT(6, d.items[2].line);
  PG_CHECK_EQ_INT(31, d.items[2].column);
  PG_CHECK_EQ_STR("rule 5", d.items[3].rule);
  PG_CHECK(strstr(d.items[3].message, "division by zero") != NULL);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(findings_are_capped) {
  /* 3000 unknown keys: 1000 findings are kept, the rest counted in one note */
  size_t cap = 3000 * 16 + 64, len = 0;
  char *text = malloc(cap);
  PG_CHECK(text);
  len += (size_t)snprintf(text, cap, "op: x\nmodules: []\n");
  for (int i = 0; i < 3000; i++) len += (size_t)snprintf(text + len, cap - len, "k%d: 1\n", i);
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load_text(text, len, &c, &d, &e));
  PG_CHECK_EQ_INT(1001, d.count);
  PG_CHECK(strstr(d.items[1000].message, "more findings were not reported") != NULL);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  free(text);
}

PG_TEST(cli_reports_findings_and_summary) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s validate --contract %s 2>&1", PG_PHASEGATE_EXE,
           pg_test_data("bad/contract/multiple_errors.yaml"));
  FILE *p = popen(cmd, "r");
  PG_CHECK(p);
  char line[2048];
  int n = 0, rules[9] = {0};
  while (fgets(line, sizeof line, p)) {
    n++;
    for (int r = 1; r <= 8; r++) {
      char tag[16];
      snprintf(tag, sizeof tag, "(rule %d)\n", r);
      if (strstr(line, tag) && strstr(line, ": error: ")) rules[r]++;
    }
    if (strcmp(line, "phasegate validate: 9 errors, 0 warnings\n") == 0) rules[0]++;
  }
  int status = pclose(p);
  PG_CHECK_EQ_INT(2, WEXITSTATUS(status));
  PG_CHECK_EQ_INT(10, n);
  PG_CHECK_EQ_INT(1, rules[0]);
  for (int r = 1; r <= 8; r++) PG_CHECK_EQ_INT(r == 5 ? 2 : 1, rules[r]);
}

PG_TEST(consumer_dtype_disagreement_is_a_warning) {
  const char *text =
      "op: x\n"
      "dims: {N: 2}\n"
      "primary_inputs: [{name: a, shape: [N], dtype: float16}]\n"
      "modules:\n"
      "  - id: 1\n"
      "    name: m\n"
      "    inputs: [{name: a, source: primary, dtype: float32}]\n"
      "    outputs: [{name: y, shape: [N], dtype: float32}]\n"
      "final_outputs: [{name: y, source: module_1, dtype: float32}]\n";
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  PG_CHECK_OK(load_text(text, strlen(text), &c, &d, &e));
  PG_CHECK_EQ_INT(1, d.count);
  PG_CHECK_EQ_INT(PG_SEV_WARNING, d.items[0].severity);
  PG_CHECK_EQ_INT(7, d.items[0].line);
  PG_CHECK_EQ_INT(48, d.items[0].column);
  PG_CHECK_EQ_STR("'a' is declared float32 here but float16 in the primary input (line 3); float16 "
                  "is used", d.items[0].message);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

/* A module output's own compare rule (`rule: "ulp:4"`), next to its atol. */
PG_TEST(output_rule_is_kept) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error e;
  pg_diags_init(&d);
  int rc = pg_contract_load(PG_TEST_DATA_DIR "/good/contract/output_rule.yaml", &c, &d, &e);
  PG_CHECK_MSG(rc == PG_OK, "%s", e.message);
  PG_CHECK_EQ_INT(0, d.n_errors);
  const struct pg_module *m1 = pg_contract_module(&c, 1), *m2 = pg_contract_module(&c, 2);
  PG_CHECK(m1 && m2);
  PG_CHECK_EQ_STR("exact", m1->outputs[0].rule);
  PG_CHECK_EQ_STR("ulp:4", m2->outputs[0].rule);
  PG_CHECK_EQ_INT(19, m2->outputs[0].rule_mark.line);
  PG_CHECK(m2->outputs[0].has_atol && m2->outputs[0].atol == 0.5);
  PG_CHECK(!c.final_outputs[0].rule);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}
