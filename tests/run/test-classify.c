/* Unit tests for the seams issue 10 introduced in the runner: the category each impl
 * fact is classified as (run/classify.c's table), the ops table behind --impl (one row
 * per adapter), and the hooks pg_run needs from the report room (the information
 * barrier cannot be left out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "report/report.h"
#include "run/run.h"

static enum pg_category category_of(enum pg_impl_fact f) {
  struct pg_impl_outcome o;
  pg_impl_outcome_init(&o);
  o.fact = f;
  return pg_classify_category(&o);
}

PG_TEST(impl_fact_categories) {
  static const struct {
    enum pg_impl_fact fact;
    enum pg_category category;
  } want[] = {
      {PG_IMPL_FACT_OK, PG_CAT_NONE},
      {PG_IMPL_FACT_UNAVAILABLE, PG_CAT_NONE},
      {PG_IMPL_FACT_NOT_FOUND, PG_CAT_INFRA},
      {PG_IMPL_FACT_LOAD_FAILED, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_MISSING_SYMBOL, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_TIMEOUT, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_SIGNAL, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_SANITIZER_REPORT, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_OOM, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_EXIT_NONZERO, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_RETURNED_ERROR, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_CANARY_HIT, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_UNWRITTEN_OUTPUT, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_WRONG_OUTPUT_COUNT, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_WRONG_OUTPUT_NAME, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_WRONG_OUTPUT_SHAPE, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_WRONG_OUTPUT_DTYPE, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_PROTOCOL_ERROR, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_RUNNER_FAILURE, PG_CAT_INFRA},
      {PG_IMPL_FACT_WORKER_PROTOCOL, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_WORKER_ERROR, PG_CAT_RUNTIME},
      {PG_IMPL_FACT_WORKER_STRUCTURAL, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_UNSAFE_OUTPUT, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_IMPORT_FAILED, PG_CAT_STRUCTURAL},
      {PG_IMPL_FACT_MISSING_FUNCTION, PG_CAT_STRUCTURAL},
  };
  PG_CHECK_EQ_INT(PG_IMPL_FACT_COUNT, (int)(sizeof want / sizeof *want));
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    PG_CHECK_MSG(category_of(want[i].fact) == want[i].category, "fact %d: category %d, want %d",
                 (int)want[i].fact, (int)category_of(want[i].fact), (int)want[i].category);
  PG_CHECK_EQ_STR("runtime", pg_category_name(PG_CAT_RUNTIME));
  PG_CHECK(pg_category_name(PG_CAT_NONE) == NULL);
}

PG_TEST(impl_ops_table) {
  struct pg_impl impl;
  PG_CHECK_EQ_STR("", pg_impl_kind(NULL));
  pg_impl_close(NULL); /* safe on nothing */
  memset(&impl, 0, sizeof impl);
  pg_impl_close(&impl); /* safe on an impl never parsed */
  PG_CHECK_OK(pg_impl_parse("replay:/tmp", &impl, NULL));
  PG_CHECK_EQ_STR("replay", pg_impl_kind(&impl));
  PG_CHECK_EQ_STR("/tmp", impl.target);
  pg_impl_close(&impl); /* safe when nothing was started */
  pg_impl_close(&impl);
  struct pg_error err;
  PG_CHECK_OK(pg_impl_parse("worker:x", &impl, &err));
  PG_CHECK_EQ_STR("worker", pg_impl_kind(&impl));
  PG_CHECK(pg_impl_parse("serve:x", &impl, &err) == PG_EINVAL);
  PG_CHECK_EQ_STR("--impl 'serve:x': unknown scheme 'serve:'; expected plugin:PATH.so, "
                  "exec:COMMAND, worker:COMMAND, python:FILE.py[::FUNCTION] or replay:DIR; a bare "
                  "PATH.so is plugin:, PATH.py is python:",
                  err.message);
  PG_CHECK_OK(pg_impl_parse("python:/x/impl.py::f", &impl, &err));
  PG_CHECK_EQ_STR("python", pg_impl_kind(&impl));
  PG_CHECK_EQ_STR("/x/impl.py::f", impl.target);
  impl.python = "/opt/py bin/python3";
  struct pg_proc_program prog;
  PG_CHECK_OK(pg_impl_process(&impl, &prog, &err));
  PG_CHECK_EQ_INT(PG_PROC_COMMAND, (int)prog.kind);
  PG_CHECK_MSG(strstr(prog.target, "exec '/opt/py bin/python3' -m phasegate.worker") != NULL,
               "%s", prog.target);
  pg_proc_program_reset(&prog);
  /* the adapter's row says what its persistent process is: the target as given */
  PG_CHECK_OK(pg_impl_parse("lib/attn.so", &impl, &err));
  PG_CHECK_OK(pg_impl_process(&impl, &prog, &err));
  PG_CHECK_EQ_INT(PG_PROC_PLUGIN, (int)prog.kind);
  PG_CHECK_EQ_STR("lib/attn.so", prog.target);
  pg_proc_program_reset(&prog);
  PG_CHECK_OK(pg_impl_parse("worker:python3 w.py", &impl, &err));
  PG_CHECK_OK(pg_impl_process(&impl, &prog, &err));
  PG_CHECK_EQ_INT(PG_PROC_COMMAND, (int)prog.kind);
  PG_CHECK_EQ_STR("python3 w.py", prog.target);
  pg_proc_program_reset(&prog);
  PG_CHECK_OK(pg_impl_parse("exec:true", &impl, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_impl_process(&impl, &prog, &err));
  PG_CHECK(prog.target == NULL);
}

PG_TEST(report_hooks) {
  struct pg_run_hooks h = pg_report_hooks();
  PG_CHECK(h.persist == pg_report_persist);
  PG_CHECK(h.case_lines == pg_report_case_lines);
  PG_CHECK(h.summary_lines == pg_report_summary_lines);
  PG_CHECK(h.redact == pg_redact_text);
  PG_CHECK(h.redact_numbers == pg_redact_numbers);
}

/* pg_run refuses to run without the barrier, before touching anything. */
PG_TEST(run_needs_redact_hook) {
  struct pg_run_opts o;
  memset(&o, 0, sizeof o);
  o.op_dir = "/nonexistent";
  o.impl_spec = "exec:true";
  o.up_to_module = 1;
  struct pg_run_summary s;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK(pg_run(&o, &s, &err) == PG_EINVAL);
  PG_CHECK_MSG(strstr(err.message, "redact") != NULL, "%s", err.message);
  PG_CHECK_EQ_INT(2, s.exit_code);
  pg_run_summary_reset(&s);
}

/* Hints stay strongest first, one per kind (the stronger kept), at most PG_MAX_HINTS. */
PG_TEST(hint_list_order) {
  struct pg_tensor_check t;
  memset(&t, 0, sizeof t);
  pg_tensor_check_add_hint(&t, PG_HINT_TILE_EDGE, 0.5, "axis %d", 1);
  pg_tensor_check_add_hint(&t, PG_HINT_TRANSPOSED, 0.9, "output");
  pg_tensor_check_add_hint(&t, PG_HINT_TILE_EDGE, 0.4, "weaker, dropped");
  pg_tensor_check_add_hint(&t, PG_HINT_SCALED, 0.7, "x%g", 0.125);
  PG_CHECK_EQ_INT(3, t.n_hints);
  PG_CHECK_EQ_INT(PG_HINT_TRANSPOSED, t.hints[0].kind);
  PG_CHECK_EQ_INT(PG_HINT_SCALED, t.hints[1].kind);
  PG_CHECK_EQ_STR("x0.125", t.hints[1].detail);
  PG_CHECK_EQ_STR("axis 1", t.hints[2].detail);
  pg_tensor_check_add_hint(&t, PG_HINT_TILE_EDGE, 0.95, "stronger, replaces");
  PG_CHECK_EQ_INT(3, t.n_hints);
  PG_CHECK_EQ_INT(PG_HINT_TILE_EDGE, t.hints[0].kind);
  for (int i = 0; i < PG_HINT_KIND_COUNT; i++)
    pg_tensor_check_add_hint(&t, (enum pg_hint_kind)i, 0.01 * i, "k%d", i);
  PG_CHECK_EQ_INT(PG_MAX_HINTS, t.n_hints);
  for (int i = 1; i < t.n_hints; i++) PG_CHECK(t.hints[i - 1].confidence >= t.hints[i].confidence);
  PG_CHECK_EQ_STR("reduction_tail_dropped", pg_hint_kind_name(PG_HINT_REDUCTION_TAIL_DROPPED));
  PG_CHECK_EQ_STR("approximation", pg_hint_kind_name(PG_HINT_APPROXIMATION));
}

/* The table of what an impl's own words mean (run/classify.c, docs/report.md "Failure
 * subcategories"): a reported exception is the whole story of an environment failure;
 * without one the captured output is read; device labels read both; an output that came
 * back is never blamed on the environment. */
static const char *label_of(enum pg_impl_fact fact, const char *type, const char *msg,
                            const char *err_text, const char **recipe) {
  static char err_buf[256];
  struct pg_impl_outcome o;
  pg_impl_outcome_init(&o);
  o.fact = fact;
  o.status = fact == PG_IMPL_FACT_OK ? PG_IMPL_DONE : PG_IMPL_FAILED;
  snprintf(o.exc_type, sizeof o.exc_type, "%s", type);
  snprintf(o.exc_message, sizeof o.exc_message, "%s", msg);
  snprintf(err_buf, sizeof err_buf, "%s", err_text);
  o.sandbox.err = err_text ? err_buf : NULL;
  const char *sub = pg_classify_subcategory(&o, recipe);
  o.sandbox.err = NULL; /* not owned */
  pg_impl_outcome_reset(&o);
  return sub;
}

PG_TEST(output_words_table) {
  const char *recipe = NULL;
  PG_CHECK_EQ_STR("shared_library", label_of(PG_IMPL_FACT_IMPORT_FAILED, "OSError",
                  "libhccl.so: cannot open shared object file: No such file", NULL, &recipe));
  PG_CHECK(recipe && strstr(recipe, "LD_LIBRARY_PATH"));
  PG_CHECK_EQ_STR("missing_module", label_of(PG_IMPL_FACT_IMPORT_FAILED,
                  "ModuleNotFoundError", "No module named 'pypto'", NULL, &recipe));
  PG_CHECK_EQ_STR("undefined_symbol", label_of(PG_IMPL_FACT_WORKER_ERROR, "ImportError",
                  "/x/libtile_fwk.so: UNDEFINED SYMBOL: _Z1f", NULL, &recipe));
  PG_CHECK_EQ_STR("pto_enum", label_of(PG_IMPL_FACT_WORKER_ERROR, "AttributeError",
                  "type object 'DataType' has no attribute 'DT_BF16'", NULL, &recipe));
  /* the exception decides: a warning printed before it is not why the call failed */
  PG_CHECK(label_of(PG_IMPL_FACT_WORKER_ERROR, "ValueError", "bad tile",
                    "warning: No module named 'torch_npu'", &recipe) == NULL);
  PG_CHECK(recipe == NULL);
  /* no exception as data: the captured output */
  PG_CHECK_EQ_STR("cann_env", label_of(PG_IMPL_FACT_EXIT_NONZERO, "", "",
                  "error: ASCEND_HOME_PATH is not set", &recipe));
  PG_CHECK(recipe != NULL);
  /* outputs that came back wrong are the kernel's, whatever the log says */
  PG_CHECK(label_of(PG_IMPL_FACT_WRONG_OUTPUT_SHAPE, "", "",
                    "libx.so: cannot open shared object file", &recipe) == NULL);
  /* device labels: the message or the captured output, the verdict unchanged */
  PG_CHECK_EQ_STR("aicore", label_of(PG_IMPL_FACT_WORKER_ERROR, "RuntimeError",
                  "stream sync failed", "[ERROR] AICORE EXCEPTION at k.cce:12", &recipe));
  PG_CHECK(recipe == NULL);
  PG_CHECK_EQ_STR("tile_shape", label_of(PG_IMPL_FACT_WORKER_ERROR, "RuntimeError",
                  "L0C size exceeded", NULL, &recipe));
  PG_CHECK(label_of(PG_IMPL_FACT_WORKER_ERROR, "RuntimeError", "L0C size is 128K", NULL,
                    &recipe) == NULL);
  PG_CHECK_EQ_STR("oom", label_of(PG_IMPL_FACT_WORKER_ERROR, "RuntimeError", "x",
                  "rtMalloc failed, size 1", &recipe));
  PG_CHECK_EQ_STR("workspace_overlap", label_of(PG_IMPL_FACT_OK, "", "",
                  "workspace overlap between 'a' and 'b'", &recipe));
  PG_CHECK_EQ_STR("host_crash", label_of(PG_IMPL_FACT_SIGNAL, "", "", NULL, &recipe));
  PG_CHECK_EQ_STR("oom", label_of(PG_IMPL_FACT_OOM, "", "", NULL, &recipe));
  PG_CHECK(label_of(PG_IMPL_FACT_UNAVAILABLE, "", "", "aicore error", &recipe) == NULL);
  PG_CHECK(label_of(PG_IMPL_FACT_WORKER_ERROR, "RuntimeError", "plain", "all fine",
                    &recipe) == NULL);
}
