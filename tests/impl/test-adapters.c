/* Unit tests for runner/impl (the adapters): the plugin adapter's classification of every
 * outcome (done, unavailable, crash, hang, overrun, never written, non-zero return,
 * exit, allocation failure, missing symbol), spec parsing, and the exec/replay
 * adapters' structural checks (skipped until .npy I/O is available). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "impl/impl.h"
#include "run/run.h"
#include "pg_test.h"
#include "tensors/tensors.h"

struct fixture {
  struct pg_tensor x;
  struct pg_impl_output_spec y;
  const char *dim_names[1];
  int64_t dim_values[1];
  struct pg_impl_request req;
};

static void fixture_init(struct fixture *f, const char *case_id, const char *mode,
                         const char *suffix) {
  memset(f, 0, sizeof *f);
  pg_tensor_init(&f->x);
  pg_tensor_set_name(&f->x, "x");
  int64_t shape[2] = {3, 5};
  PG_CHECK_OK(pg_tensor_alloc(&f->x, PG_DTYPE_F32, 2, shape, NULL));
  for (int i = 0; i < 15; i++) ((float *)f->x.dl.data)[i] = (float)i;
  f->y.name = "y";
  f->y.dtype = PG_DTYPE_F32;
  f->y.ndim = 2;
  f->y.shape[0] = 3;
  f->y.shape[1] = 5;
  f->dim_names[0] = "N";
  f->dim_values[0] = 15;
  f->req.op = "fake";
  f->req.suffix = suffix;
  f->req.up_to_module = (int)strlen(suffix);
  f->req.total_modules = 2;
  f->req.mode = mode;
  f->req.device_id = 3;
  f->req.case_id = case_id;
  f->req.n_dims = 1;
  f->req.dim_names = f->dim_names;
  f->req.dim_values = f->dim_values;
  f->req.knobs_json = "{\"id\":\"x\"}";
  f->req.inputs = &f->x;
  f->req.n_inputs = 1;
  f->req.outputs = &f->y;
  f->req.n_outputs = 1;
  f->req.timeout_s = 5;
}

/* fresh: one forked child per call (--fresh-process); else the persistent plugin host. */
static void run_plugin_as(int fresh, const char *case_id, const char *mode, const char *suffix,
                          struct pg_impl_outcome *o) {
  struct fixture f;
  fixture_init(&f, case_id, mode, suffix);
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse("plugin:" PG_FAKE_IMPL, &impl, NULL));
  impl.fresh_process = fresh;
  if (strcmp(case_id, "hang") == 0) f.req.timeout_s = 0.3;
  if (strcmp(case_id, "oom") == 0) f.req.rlimit_as = (uint64_t)1 << 34;
  struct pg_error err;
  int rc = pg_impl_invoke(&impl, &f.req, o, &err);
  PG_CHECK_MSG(rc == PG_OK, "invoke: %s", err.message);
  pg_impl_close(&impl);
  pg_tensor_reset(&f.x);
}

static void run_plugin(const char *case_id, const char *mode, const char *suffix,
                       struct pg_impl_outcome *o) {
  run_plugin_as(0, case_id, mode, suffix, o);
}

PG_TEST(impl_parse) {
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse("exec:python3 x.py --flag", &impl, NULL));
  PG_CHECK_EQ_STR("exec", pg_impl_kind(&impl));
  PG_CHECK_EQ_STR("python3 x.py --flag", impl.target);
  PG_CHECK_OK(pg_impl_parse("replay:/d", &impl, NULL));
  PG_CHECK_EQ_STR("replay", pg_impl_kind(&impl));
  PG_CHECK_OK(pg_impl_parse("/a/b/libx.so", &impl, NULL));
  PG_CHECK_EQ_STR("plugin", pg_impl_kind(&impl));
  /* the seed's spelling: a bare PATH.py is python: (the target unchanged) */
  PG_CHECK_OK(pg_impl_parse("../modules/x_module1_impl.py", &impl, NULL));
  PG_CHECK_EQ_STR("python", pg_impl_kind(&impl));
  PG_CHECK_EQ_STR("../modules/x_module1_impl.py", impl.target);
  struct pg_error err;
  PG_CHECK(pg_impl_parse("bogus", &impl, &err) == PG_EINVAL);
  PG_CHECK(strstr(err.message, "plugin:PATH.so") != NULL);
  PG_CHECK_MSG(strstr(err.message, "a bare PATH.so is plugin:, PATH.py is python:"), "%s",
               err.message);
  PG_CHECK(pg_impl_parse(".py", &impl, &err) == PG_EINVAL); /* a suffix alone is no path */
  PG_CHECK(pg_impl_parse("exec:", &impl, &err) == PG_EINVAL);
  PG_CHECK(pg_impl_parse("foo:bar", &impl, &err) == PG_EINVAL);
  PG_CHECK_MSG(strstr(err.message, "unknown scheme 'foo:'") &&
               strstr(err.message, "plugin:PATH.so, exec:COMMAND, worker:COMMAND, python:FILE.py[::FUNCTION] or replay:DIR"), "%s",
               err.message);
}

/* pg_impl_check: PG_OK, or the expected error whose message contains `needle`. */
static void expect_check(const char *spec, int want, const char *needle) {
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse(spec, &impl, NULL));
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_impl_check(&impl, 5, 0, &err);
  PG_CHECK_MSG(rc == want, "%s: rc %d (want %d): %s", spec, rc, want, err.message);
  if (needle) PG_CHECK_MSG(strstr(err.message, needle) != NULL, "%s: '%s' lacks '%s'", spec,
                           err.message, needle);
}

PG_TEST(impl_check_plugin) {
  expect_check("plugin:" PG_FAKE_IMPL, PG_OK, NULL);
  expect_check("plugin:/nonexistent/libnope.so", PG_ENOENT,
               "impl plugin '/nonexistent/libnope.so' does not exist");
  expect_check("plugin:/", PG_EINVAL, "is a directory, not a shared library");
  expect_check("plugin:/dev/null", PG_EINVAL, "is not a regular file");
  char path[4200];
  snprintf(path, sizeof path, "%s/notelf.so", pg_test_tmpdir());
  FILE *f = fopen(path, "w");
  PG_CHECK(f != NULL);
  if (f) {
    fputs("not a shared object\n", f);
    fclose(f);
  }
  char spec[4300];
  snprintf(spec, sizeof spec, "plugin:%s", path);
  expect_check(spec, PG_EINVAL, "cannot be loaded: ");
}

PG_TEST(impl_check_constructor) {
  /* The runner (this process) survives; the message says what happened while loading. */
  expect_check("plugin:" PG_CTOR_CRASH_IMPL, PG_EIMPL, "crashed with SIGSEGV while loading");
  expect_check("plugin:" PG_CTOR_EXIT_IMPL, PG_EIMPL, "ended the process with status 5");
}

PG_TEST(impl_check_two_steps) {
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse("plugin:" PG_CTOR_CRASH_IMPL, &impl, NULL));
  struct pg_impl_probe p;
  struct pg_error err;
  PG_CHECK_OK(pg_impl_check_start(&impl, 5, 0, &p, &err));
  PG_CHECK(pg_impl_check_finish(&p, &err) == PG_EIMPL);
  PG_CHECK_MSG(strstr(err.message, "crashed with SIGSEGV while loading"), "%s", err.message);
  /* cancel kills and reaps a running probe, and is a no-op after finish */
  PG_CHECK_OK(pg_impl_parse("plugin:" PG_FAKE_IMPL, &impl, NULL));
  PG_CHECK_OK(pg_impl_check_start(&impl, 5, 0, &p, &err));
  PG_CHECK(p.running);
  pg_impl_check_cancel(&p);
  PG_CHECK(!p.running);
  pg_impl_check_cancel(&p);
  /* the cheap checks fail at start, with nothing left running */
  PG_CHECK_OK(pg_impl_parse("plugin:/nonexistent/x.so", &impl, NULL));
  PG_CHECK(pg_impl_check_start(&impl, 5, 0, &p, &err) == PG_ENOENT);
  PG_CHECK(!p.running);
}

PG_TEST(impl_check_exec_replay) {
  expect_check("exec:true", PG_OK, NULL);
  expect_check("exec: \t ", PG_EINVAL, "the command is empty");
  expect_check("replay:/", PG_OK, NULL);
  expect_check("replay:/nonexistent/dump", PG_ENOENT, "replay directory '/nonexistent/dump' "
               "does not exist");
  expect_check("replay:/dev/null", PG_EINVAL, "is not a directory");
}

PG_TEST(plugin_done) {
  for (int fresh = 0; fresh < 2; fresh++) {
    struct pg_impl_outcome o;
    run_plugin_as(fresh, "ok", "sim", "1", &o);
    PG_CHECK_MSG(o.status == PG_IMPL_DONE, "status %d: %s", o.status, o.summary);
    PG_CHECK_EQ_INT(1, o.n_outputs);
    const float *y = o.outputs[0].dl.data;
    for (int i = 0; i < 15; i++) PG_CHECK_NEAR(2.0 * i, y[i], 0);
    /* a forked child's streams are captured apart; the plugin host writes both to its
     * one log (in order), which the sandbox result carries as err */
    PG_CHECK(strstr(fresh ? o.sandbox.out : o.sandbox.err, "device 3, dim N=15") != NULL);
    PG_CHECK(strstr(o.sandbox.err, "[impl sim info] fake impl running") != NULL);
    pg_impl_outcome_reset(&o);
  }
}

PG_TEST(plugin_unavailable) {
  struct pg_impl_outcome o;
  run_plugin("ok", "npu", "1", &o);
  PG_CHECK_EQ_INT(PG_IMPL_UNAVAILABLE, o.status);
  pg_impl_outcome_reset(&o);
}

static void expect_fail(const char *case_id, const char *suffix, enum pg_category cat,
                        const char *needle) {
  struct pg_impl_outcome o;
  run_plugin(case_id, "sim", suffix, &o);
  PG_CHECK_MSG(o.status == PG_IMPL_FAILED, "%s: status %d", case_id, o.status);
  PG_CHECK_MSG(pg_classify_category(&o) == cat, "%s: category %d, summary %s", case_id, pg_classify_category(&o),
               o.summary);
  PG_CHECK_MSG(strstr(o.summary, needle) != NULL, "%s: summary '%s' lacks '%s'", case_id,
               o.summary, needle);
  pg_impl_outcome_reset(&o);
}

PG_TEST(plugin_crash) { expect_fail("crash", "1", PG_CAT_RUNTIME, "crashed with SIGSEGV"); }
PG_TEST(plugin_hang) { expect_fail("hang", "1", PG_CAT_RUNTIME, "timed out after 0.3 s"); }
PG_TEST(plugin_overrun) {
  expect_fail("overrun", "1", PG_CAT_RUNTIME, "wrote past output buffer 'y'");
}
PG_TEST(plugin_never_written) {
  expect_fail("noop", "1", PG_CAT_STRUCTURAL, "never wrote output 'y'");
}
PG_TEST(plugin_nonzero) { expect_fail("fail", "1", PG_CAT_RUNTIME, "returned 5"); }
PG_TEST(plugin_exit) { expect_fail("exit", "1", PG_CAT_RUNTIME, "exited the process"); }
PG_TEST(plugin_oom) {
  if (PG_SANDBOX_ASAN) PG_SKIP("RLIMIT_AS is not applied under AddressSanitizer");
  expect_fail("oom", "1", PG_CAT_RUNTIME, "allocation failure");
}
PG_TEST(plugin_missing_symbol) {
  expect_fail("ok", "12", PG_CAT_STRUCTURAL, "missing wrapper symbol 'fake_module12_wrapper'");
}

PG_TEST(plugin_missing_file) {
  struct fixture f;
  fixture_init(&f, "ok", "sim", "1");
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse("plugin:/nonexistent/libnope.so", &impl, NULL));
  struct pg_impl_outcome o;
  PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
  PG_CHECK_EQ_INT(PG_IMPL_FAILED, o.status);
  PG_CHECK_EQ_INT(PG_CAT_INFRA, pg_classify_category(&o));
  pg_impl_outcome_reset(&o);
  pg_tensor_reset(&f.x);
}

/* ---- exec and replay: need the .npy writer/reader ---- */

static int npy_available(void) {
  struct pg_tensor t;
  pg_tensor_init(&t);
  int64_t s[1] = {1};
  if (pg_tensor_alloc(&t, PG_DTYPE_F32, 1, s, NULL) != PG_OK) return 0;
  ((float *)t.dl.data)[0] = 1;
  char p[4200];
  snprintf(p, sizeof p, "%s/probe.npy", pg_test_tmpdir());
  int ok = pg_npy_write(p, &t, NULL) == PG_OK;
  pg_tensor_reset(&t);
  return ok;
}

static void run_exec(const char *command, const char *mode, struct pg_impl_outcome *o) {
  struct fixture f;
  fixture_init(&f, "c1", mode, "1");
  f.req.work_dir = pg_test_tmpdir();
  char spec[4200];
  snprintf(spec, sizeof spec, "exec:%s", command);
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse(spec, &impl, NULL));
  struct pg_error err;
  int rc = pg_impl_invoke(&impl, &f.req, o, &err);
  PG_CHECK_MSG(rc == PG_OK, "invoke: %s", err.message);
  pg_tensor_reset(&f.x);
}

PG_TEST(exec_protocol) {
  if (!npy_available()) PG_SKIP(".npy writer not available yet");
  struct pg_impl_outcome o;
  /* The shell impl copies its input as the output and checks the environment. */
  run_exec("test \"$PHASEGATE_MODE\" = sim && test \"$PHASEGATE_DEVICE_ID\" = 3 && "
           "test -f \"$PHASEGATE_REQUEST\" && grep -q '\"suffix\"' \"$PHASEGATE_REQUEST\" && "
           "cp \"$PHASEGATE_IN_DIR/x.npy\" \"$PHASEGATE_OUT_DIR/y.npy\"",
           "sim", &o);
  PG_CHECK_MSG(o.status == PG_IMPL_DONE, "status %d: %s", o.status, o.summary);
  PG_CHECK_NEAR(14.0, ((const float *)o.outputs[0].dl.data)[14], 0);
  pg_impl_outcome_reset(&o);

  run_exec("exit 77", "npu", &o);
  PG_CHECK_EQ_INT(PG_IMPL_UNAVAILABLE, o.status);
  pg_impl_outcome_reset(&o);

  run_exec("echo boom >&2; exit 3", "sim", &o);
  PG_CHECK_EQ_INT(PG_IMPL_FAILED, o.status);
  PG_CHECK_EQ_INT(PG_CAT_RUNTIME, pg_classify_category(&o));
  PG_CHECK(strstr(o.sandbox.err, "boom") != NULL);
  pg_impl_outcome_reset(&o);

  run_exec("cp \"$PHASEGATE_IN_DIR/x.npy\" \"$PHASEGATE_OUT_DIR/y.npy\"; "
           "cp \"$PHASEGATE_IN_DIR/x.npy\" \"$PHASEGATE_OUT_DIR/extra.npy\"", "sim", &o);
  PG_CHECK_EQ_INT(PG_CAT_STRUCTURAL, pg_classify_category(&o));
  PG_CHECK(strstr(o.summary, "wrong output count") != NULL);
  PG_CHECK(strstr(o.summary, "extra.npy") != NULL);
  pg_impl_outcome_reset(&o);

  run_exec("true", "sim", &o);
  PG_CHECK_EQ_INT(PG_CAT_STRUCTURAL, pg_classify_category(&o));
  PG_CHECK(strstr(o.summary, "missing output 'y'") != NULL);
  pg_impl_outcome_reset(&o);

}

/* A Python impl using ml_dtypes writes bfloat16 as '<V2': accepted for a bfloat16
 * output, refused for any other dtype. */
PG_TEST(exec_bf16_as_v2) {
  if (!npy_available()) PG_SKIP(".npy writer not available yet");
  char path[4200];
  snprintf(path, sizeof path, "%s/v2.npy", pg_test_tmpdir());
  char dict[128];
  int n = snprintf(dict, sizeof dict, "{'descr': '<V2', 'fortran_order': False, 'shape': (3, 5), }");
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  FILE *fp = fopen(path, "wb");
  PG_CHECK(fp != NULL);
  unsigned short hl = (unsigned short)(n + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, fp);
  fputc(hl & 0xff, fp);
  fputc(hl >> 8, fp);
  fwrite(dict, 1, (size_t)n, fp);
  for (int i = 0; i < pad; i++) fputc(' ', fp);
  fputc('\n', fp);
  for (int i = 0; i < 15; i++) { /* bf16 of i: the top half of the float's bits */
    float v = (float)i;
    unsigned int u;
    memcpy(&u, &v, 4);
    fputc((u >> 16) & 0xff, fp);
    fputc(u >> 24, fp);
  }
  fclose(fp);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "cp '%s' \"$PHASEGATE_OUT_DIR/y.npy\"", path);
  for (int pass = 0; pass < 2; pass++) {
    struct fixture f;
    fixture_init(&f, "c1", "sim", "1");
    f.y.dtype = pass == 0 ? PG_DTYPE_BF16 : PG_DTYPE_F32;
    f.req.work_dir = pg_test_tmpdir();
    char spec[4500];
    snprintf(spec, sizeof spec, "exec:%s", cmd);
    struct pg_impl impl;
    PG_CHECK_OK(pg_impl_parse(spec, &impl, NULL));
    struct pg_impl_outcome o;
    PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
    if (pass == 0) {
      PG_CHECK_MSG(o.status == PG_IMPL_DONE, "status %d: %s", o.status, o.summary);
      PG_CHECK_EQ_INT(PG_DTYPE_BF16, o.outputs[0].dtype);
      PG_CHECK_NEAR(14.0, pg_load_f64(o.outputs[0].dl.data, PG_DTYPE_BF16, 14), 0);
    } else {
      PG_CHECK_EQ_INT(PG_CAT_STRUCTURAL, pg_classify_category(&o));
    }
    pg_impl_outcome_reset(&o);
    pg_tensor_reset(&f.x);
  }
}

PG_TEST(replay_layout) {
  if (!npy_available()) PG_SKIP(".npy writer not available yet");
  const char *root = pg_test_tmpdir();
  char p[4200];
  snprintf(p, sizeof p, "%s/c1", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/c1/sim", root);
  mkdir(p, 0777);
  struct fixture f;
  fixture_init(&f, "c1", "sim", "1");
  snprintf(p, sizeof p, "%s/c1/sim/y.npy", root);
  PG_CHECK_OK(pg_npy_write(p, &f.x, NULL));
  char spec[4200];
  snprintf(spec, sizeof spec, "replay:%s", root);
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse(spec, &impl, NULL));
  struct pg_impl_outcome o;
  PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
  PG_CHECK_MSG(o.status == PG_IMPL_DONE, "%s", o.summary);
  pg_impl_outcome_reset(&o);
  f.req.mode = "npu";
  PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
  PG_CHECK_EQ_INT(PG_IMPL_UNAVAILABLE, o.status);
  pg_impl_outcome_reset(&o);
  /* wrong shape */
  f.y.shape[1] = 4;
  f.req.mode = "sim";
  PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
  PG_CHECK_EQ_INT(PG_CAT_STRUCTURAL, pg_classify_category(&o));
  PG_CHECK(strstr(o.summary, "shape [3, 5], expected [3, 4]") != NULL);
  pg_impl_outcome_reset(&o);
  pg_tensor_reset(&f.x);
}

PG_TEST(exec_safetensors_and_timeout) {
  if (!npy_available()) PG_SKIP(".npy writer not available yet");
  /* an impl that ships its outputs as one safetensors file */
  struct fixture f;
  fixture_init(&f, "c1", "sim", "1");
  struct pg_tensor ts[2];
  pg_tensor_init(&ts[0]);
  pg_tensor_init(&ts[1]);
  int64_t shape[2] = {3, 5};
  PG_CHECK_OK(pg_tensor_alloc(&ts[0], PG_DTYPE_F32, 2, shape, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&ts[1], PG_DTYPE_F32, 2, shape, NULL));
  memset(ts[0].dl.data, 0, ts[0].nbytes);
  memset(ts[1].dl.data, 0, ts[1].nbytes);
  pg_tensor_set_name(&ts[0], "y");
  pg_tensor_set_name(&ts[1], "extra");
  char good[4200], bad[4200], cmd[9000];
  snprintf(good, sizeof good, "%s/good.safetensors", pg_test_tmpdir());
  snprintf(bad, sizeof bad, "%s/bad.safetensors", pg_test_tmpdir());
  PG_CHECK_OK(pg_safetensors_write(good, ts, 1, NULL));
  PG_CHECK_OK(pg_safetensors_write(bad, ts, 2, NULL));
  struct pg_impl_outcome o;
  snprintf(cmd, sizeof cmd, "cp '%s' \"$PHASEGATE_OUT_DIR/outputs.safetensors\"", good);
  run_exec(cmd, "sim", &o);
  PG_CHECK_MSG(o.status == PG_IMPL_DONE, "%s", o.summary);
  PG_CHECK_EQ_STR("y", o.outputs[0].name);
  pg_impl_outcome_reset(&o);
  snprintf(cmd, sizeof cmd, "cp '%s' \"$PHASEGATE_OUT_DIR/outputs.safetensors\"", bad);
  run_exec(cmd, "sim", &o);
  PG_CHECK_EQ_INT(PG_CAT_STRUCTURAL, pg_classify_category(&o));
  PG_CHECK_MSG(strstr(o.summary, "'extra'") != NULL, "%s", o.summary);
  pg_impl_outcome_reset(&o);
  pg_tensor_reset(&ts[0]);
  pg_tensor_reset(&ts[1]);
  pg_tensor_reset(&f.x);

  /* a hanging command and its background child are killed at the timeout */
  fixture_init(&f, "c1", "sim", "1");
  f.req.work_dir = pg_test_tmpdir();
  f.req.timeout_s = 0.3;
  struct pg_impl impl;
  PG_CHECK_OK(pg_impl_parse("exec:sleep 30 & sleep 30", &impl, NULL));
  PG_CHECK_OK(pg_impl_invoke(&impl, &f.req, &o, NULL));
  PG_CHECK_EQ_INT(PG_CAT_RUNTIME, pg_classify_category(&o));
  PG_CHECK_MSG(strstr(o.summary, "timed out") != NULL, "%s", o.summary);
  PG_CHECK(o.wall_ms < 2000);
  pg_impl_outcome_reset(&o);
  pg_tensor_reset(&f.x);
}
