/* Unit tests for "real files load unchanged" (docs/design.md §3): YAML merge keys and
 * comment keys (runner/opdir/contract_merge.c), dtype aliases (the one table in
 * phasegate/tensor.h), composition shapes in every real form (contract_comp.c), op from
 * the custom/<op>/ directory, modules without names, and unfilled placeholders
 * (contract_placeholder.c), each finding reported. */
#include <stdint.h>

#include "pg_test.h"
#include "opdir/opdir.h"

static int load(const char *path, const char *text, struct pg_contract *c, struct pg_diags *d) {
  struct pg_error e;
  pg_diags_init(d);
  pg_error_clear(&e);
  return pg_contract_load_buffer(path, text, strlen(text), c, d, &e);
}

/* The message of the n-th error finding ("" when there is none). */
static const char *nth_error(const struct pg_diags *d, int n) {
  for (int i = 0; i < d->count; i++)
    if (d->items[i].severity == PG_SEV_ERROR && n-- == 0) return d->items[i].message;
  return "";
}

static int64_t dim(const struct pg_bindings *b, const char *name) {
  int64_t v = -1;
  return pg_bindings_get(b, name, &v) ? v : -1;
}

PG_TEST(dtype_aliases_are_one_table) {
  PG_CHECK_EQ_INT(PG_DTYPE_F16, pg_dtype_parse("fp16"));
  PG_CHECK_EQ_INT(PG_DTYPE_F16, pg_dtype_parse("half"));
  PG_CHECK_EQ_INT(PG_DTYPE_BF16, pg_dtype_parse("bf16"));
  PG_CHECK_EQ_INT(PG_DTYPE_F32, pg_dtype_parse("fp32"));
  PG_CHECK_EQ_INT(PG_DTYPE_F32, pg_dtype_parse("float"));
  PG_CHECK_EQ_INT(PG_DTYPE_F64, pg_dtype_parse("fp64"));
  PG_CHECK_EQ_INT(PG_DTYPE_F64, pg_dtype_parse("double"));
  PG_CHECK_EQ_INT(PG_DTYPE_I32, pg_dtype_parse("i32"));
  PG_CHECK_EQ_INT(PG_DTYPE_I64, pg_dtype_parse("i64"));
  PG_CHECK_EQ_INT(PG_DTYPE_I64, pg_dtype_parse("int"));
  PG_CHECK_EQ_INT(PG_DTYPE_INVALID, pg_dtype_parse("Float16"));
  PG_CHECK_EQ_INT(PG_DTYPE_INVALID, pg_dtype_parse("fp8"));
}

PG_TEST(merge_keys_as_pyyaml_constructs_them) {
  struct pg_contract c;
  struct pg_diags d;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_OK, pg_contract_load(pg_test_data("good/contract/merge_keys.yaml"), &c, &d,
                                          NULL));
  PG_CHECK_EQ_INT(0, d.n_errors);
  PG_CHECK_EQ_STR("merged", c.op);
  PG_CHECK_EQ_INT(2, c.n_primary);
  PG_CHECK_EQ_STR("x", c.primary_inputs[0].name);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, c.primary_inputs[0].dtype); /* merged fp16 */
  PG_CHECK_EQ_INT(2, c.primary_inputs[0].ndim);             /* merged "[T, H]" */
  PG_CHECK_EQ_STR("H", c.primary_inputs[0].dims[1]);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, c.primary_inputs[1].dtype); /* explicit wins */
  /* <<: [{name: y, dtype: half}, *out]: the first mapping wins over the second */
  const struct pg_tensor_decl *y = &c.modules[1].outputs[0];
  PG_CHECK_EQ_STR("y", y->name);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, y->dtype);
  PG_CHECK_EQ_INT(2, y->ndim);
  PG_CHECK_EQ_STR("module2", c.modules[1].name);
  PG_CHECK_EQ_INT(1, c.modules[1].inputs[0].source_module); /* phase_1 */
  PG_CHECK_EQ_INT(2, c.final_outputs[0].source_module);     /* phase_2 */
  /* no warning about _comment / _note; one about the unnamed module, one about x_common */
  for (int i = 0; i < d.count; i++)
    PG_CHECK_MSG(!strstr(d.items[i].message, "_comment") && !strstr(d.items[i].message, "_note"),
                 "%s", d.items[i].message);
  PG_CHECK_EQ_INT(2, d.n_warnings);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(merged_keys_overridden_are_not_duplicates) {
  const char *text =
      "op: m\n"
      "_a: &a {name: x, shape: [2], dtype: float32}\n"
      "_b: &b {name: z, shape: [3], dtype: bf16, fill: zeros}\n"
      "primary_inputs:\n"
      "  - {<<: [*a, *b], dtype: fp64}\n"
      "  - {<<: *b, name: w, name: v}\n"
      "modules:\n"
      "  - {id: 1, name: m, outputs: [{name: o, shape: [2], dtype: float32}]}\n";
  struct pg_contract c;
  struct pg_diags d;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load("mem.yaml", text, &c, &d));
  PG_CHECK_EQ_INT(1, d.n_errors); /* only the explicit name: v */
  PG_CHECK_EQ_STR("duplicate key 'name' (first at line 6)", d.items[0].message);
  PG_CHECK_EQ_INT(6, d.items[0].line);
  PG_CHECK_EQ_INT(PG_DTYPE_F64, c.primary_inputs[0].dtype);
  PG_CHECK_EQ_STR("x", c.primary_inputs[0].name);        /* *a before *b */
  PG_CHECK_EQ_STR("2", c.primary_inputs[0].dims[0]);
  PG_CHECK_EQ_STR("zeros", c.primary_inputs[0].fill);    /* only in *b */
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(composition_shapes_in_every_real_form) {
  struct pg_contract c;
  struct pg_diags d;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_OK, pg_contract_load(pg_test_data("good/contract/real_forms.yaml"), &c, &d,
                                          NULL));
  PG_CHECK_EQ_STR("real_forms", c.op);
  PG_CHECK_EQ_INT(4, c.n_comp_shapes);
  PG_CHECK_EQ_INT(1, dim(&c.comp_shapes[0], "B")); /* {B: 1, S: 64} */
  PG_CHECK_EQ_INT(64, dim(&c.comp_shapes[0], "S"));
  PG_CHECK_EQ_INT(1, dim(&c.comp_shapes[1], "B")); /* {x: "[1, 128]"} */
  PG_CHECK_EQ_INT(128, dim(&c.comp_shapes[1], "S"));
  PG_CHECK_EQ_INT(2, c.comp_shapes[1].count);
  PG_CHECK_EQ_INT(2, dim(&c.comp_shapes[2], "B")); /* {x: [2, 64], scale: [64], y2: …} */
  PG_CHECK_EQ_INT(64, dim(&c.comp_shapes[2], "S"));
  PG_CHECK_EQ_INT(4, dim(&c.comp_shapes[3], "B")); /* [4, 32]: B, S in order */
  PG_CHECK_EQ_INT(32, dim(&c.comp_shapes[3], "S"));
  PG_CHECK_EQ_INT(PG_DTYPE_F64, c.primary_inputs[2].dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_I64, c.primary_inputs[3].dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_I32, c.primary_inputs[4].dtype);
  PG_CHECK_EQ_INT(PG_DTYPE_BF16, c.primary_inputs[7].dtype);
  PG_CHECK_EQ_STR("module1", c.modules[0].name);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  /* one shape written alone, not in a list */
  const char *one = "op: o\nprimary_inputs: [{name: x, shape: [B, S], dtype: fp32}]\n"
                    "modules: [{id: 1, name: m, outputs: [{name: y, shape: [B], dtype: fp32}]}]\n"
                    "composition_verification: {shapes: [3, 5]}\n";
  PG_CHECK_EQ_INT(PG_OK, load("mem.yaml", one, &c, &d));
  PG_CHECK_EQ_INT(1, c.n_comp_shapes);
  PG_CHECK_EQ_INT(3, dim(&c.comp_shapes[0], "B"));
  PG_CHECK_EQ_INT(5, dim(&c.comp_shapes[0], "S"));
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(composition_shape_errors_are_all_reported) {
  const char *text =
      "op: o\n"
      "primary_inputs:\n"
      "  - {name: x, shape: [B, S], dtype: fp32}\n"
      "  - {name: s, shape: [S], dtype: fp32}\n"
      "  - {name: t, shape: [S * 2], dtype: fp32}\n"
      "modules: [{id: 1, name: m, outputs: [{name: y, shape: [B], dtype: fp32}]}]\n"
      "composition_verification:\n"
      "  shapes:\n"
      "    - {x: [1, 64], s: [32]}\n"
      "    - {x: [1, 64], t: [64]}\n"
      "    - {x: [1, 64, 2]}\n"
      "    - [1, 2, 3]\n";
  struct pg_contract c;
  struct pg_diags d;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load("mem.yaml", text, &c, &d));
  PG_CHECK_EQ_INT(4, d.n_errors);
  PG_CHECK_EQ_STR("composition shape: dim 'S' is 32 in 's' but 64 in 'x' (line 9)",
                  nth_error(&d, 0));
  PG_CHECK_EQ_STR("composition shape of 't', axis 0 is 64, but its shape 'S * 2' evaluates to "
                  "128 here", nth_error(&d, 1));
  PG_CHECK_EQ_STR("the composition shape of 'x' has 3 axes, but 'x' is declared with 2",
                  nth_error(&d, 2));
  PG_CHECK(strstr(nth_error(&d, 3), "(B, S): 2 values expected, found 3") != NULL);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(op_from_the_custom_directory) {
  const char *text = "modules: [{id: 1, outputs: [{name: y, shape: [2], dtype: fp32}]}]\n";
  struct pg_contract c;
  struct pg_diags d;
  PG_CHECK_EQ_INT(PG_OK, load("w/custom/rms_gate/eval/module_interfaces.yaml", text, &c, &d));
  PG_CHECK_EQ_STR("rms_gate", c.op);
  PG_CHECK_EQ_INT(2, d.n_warnings);
  PG_CHECK_EQ_STR("the contract has no 'op' (or 'op_name'); using 'rms_gate' from its directory "
                  "custom/rms_gate/", d.items[0].message);
  PG_CHECK_EQ_STR("module 1 has no 'name'; it is named 'module1'", d.items[1].message);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  PG_CHECK_EQ_INT(PG_OK, load("custom/swiglu/module_interfaces.yaml", text, &c, &d));
  PG_CHECK_EQ_STR("swiglu", c.op);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  PG_CHECK_EQ_INT(PG_EVALIDATE, load("ops/swiglu/module_interfaces.yaml", text, &c, &d));
  PG_CHECK_EQ_STR("the contract is missing required key 'op' (or 'op_name')", d.items[0].message);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

PG_TEST(every_placeholder_is_reported) {
  struct pg_contract c;
  struct pg_diags d;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_contract_load(pg_test_data("bad/contract/placeholder_values.yaml"),
                                                 &c, &d, NULL));
  PG_CHECK_EQ_INT(6, d.n_errors); /* one each, nothing else about them */
  PG_CHECK_EQ_INT(6, d.count);
  PG_CHECK_EQ_STR("'module_count' is still the placeholder TODO", d.items[0].message);
  PG_CHECK_EQ_STR("placeholder", d.items[0].rule);
  PG_CHECK_EQ_STR("'shape' is still the placeholder TODO", d.items[1].message);
  PG_CHECK_EQ_STR("'dtype' is still the placeholder TODO", d.items[2].message);
  PG_CHECK_EQ_INT(5, d.items[2].line);
  PG_CHECK_EQ_INT(35, d.items[2].column);
  PG_CHECK_EQ_STR("'name' is still the placeholder TODO", d.items[3].message);
  PG_CHECK_EQ_STR("'dtype' is still the placeholder TODO: pick one", d.items[4].message);
  PG_CHECK_EQ_STR("an entry of 'modules' is still the placeholder TODO", d.items[5].message);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  PG_CHECK(pg_spec_placeholder(" todo ", 6));
  PG_CHECK(pg_spec_placeholder("<TODO>", 6));
  PG_CHECK(!pg_spec_placeholder("todo_list", 9));
  PG_CHECK(!pg_spec_placeholder("TOD", 3));
}
