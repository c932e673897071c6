/* phasegate runner — Python goldens (docs/design.md §5): a phase whose cumulative golden is
 * a Python function (opdir/golden_files.c found it) is computed by phasegate's Python worker
 * (tools/python/phasegate/worker.py), never inside the runner.
 *
 * The worker is an ordinary `worker:` impl of the impl room (impl/worker.c, the pool of
 * impl/pool.c, the protocol engine of impl/proc.c): one process per run (per --jobs
 * worker), started on the first golden call and reused for every case, in mode "cpu",
 * each request carrying the "call" object (file, function, cast_outputs: true: each leaf
 * is cast to the declared dtype, as a torch golden's result is rounded). Under CTest it
 * is leased from the op's `phasegate serve` daemon like the impl's processes, so
 * Python and torch start once per daemon, not once per case test.
 *
 * The same worker runs the op's own input code, make_inputs(case) of eval/test_inputs.py
 * (docs/pypto.md "Inputs from make_inputs"): one request whose outputs are the primary
 * inputs, and a small JSON file beside it saying which case keys it read, the argument
 * order (PRIMARY_INPUT_ORDER) and the non-tensor inputs.
 *
 * What the worker says when the golden fails may print any tensor: each piece of it
 * (its message, a line it wrote, its stderr's last line) passes the number barrier
 * (pg_redact_numbers, through the caller's hook, as the impl's `quote`) where the impl
 * room quotes it, so phasegate's own sentence around it keeps its numbers (exit status,
 * signal, fd); the message names the golden's file and function.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "run/run_internal.h"

struct pg_py_golden_worker {
  struct pg_impl impl;                   /* a worker: python -m phasegate.worker */
  double timeout_s;
  const char *work_dir;
  int calls;                             /* golden calls made */
};

int pg_py_golden_worker_open(const struct pg_py_golden_worker_opts *o,
                             struct pg_py_golden_worker **out, struct pg_error *err) {
  *out = NULL;
  struct pg_py_golden_worker *w = calloc(1, sizeof *w);
  char *command = NULL;
  int rc = w ? pg_python_worker_command(o->python, &command, err)
             : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) rc = pg_impl_worker(command, &w->impl, err);
  free(command);
  if (rc != PG_OK) {
    free(w);
    return rc;
  }
  /* Under CTest the op's `phasegate serve` daemon keeps this worker warm across tests
   * too (a lease keyed by its own command and mode "cpu", apart from the impl's). */
  w->impl.serve_control = o->serve_control;
  w->impl.log_dir = o->log_dir;
  w->timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
  w->work_dir = o->work_dir;
  w->impl.quote = o->redact; /* the barrier for the worker's own words */
  *out = w;
  return PG_OK;
}

int pg__py_golden_preflight(const char *python, const struct pg_contract *c, int k,
                            char *about, struct pg_error *err) {
  const char *paths[66];
  int n = 0;
  if (c->test_inputs) paths[n++] = c->test_inputs;
  if (k == 0 && pg_contract_py_golden(c, 0)) paths[n++] = pg_contract_py_golden(c, 0)->file;
  for (int j = 1; j <= k && n < 64; j++) {
    const struct pg_py_golden *g = pg_contract_phase_golden(c, j) == PG_PHASE_GOLDEN_PYTHON
                                       ? pg_contract_py_golden(c, j) : NULL;
    if (g && g->file) paths[n++] = g->file;
  }
  if (n == 0) return PG_OK;
  char what[256];
  snprintf(what, sizeof what, "the Python goldens%s of op '%.200s'",
           c->test_inputs ? " and test_inputs.py" : "", c->op);
  return pg_python_preflight(python, what, paths, n, about, err);
}

void pg_py_golden_worker_close(struct pg_py_golden_worker *w) {
  if (!w) return;
  pg_impl_close(&w->impl);
  free(w);
}

/* err = "Python golden FILE::FUNCTION: <what>": what the impl room said, the worker's
 * own words in it already behind the barrier (w->impl.quote). */
static int golden_failed(const struct pg_py_golden_worker *w, const struct pg_py_golden *g,
                         const char *function, int code, const char *what,
                         struct pg_error *err) {
  if (!w->impl.quote)
    what = "failed (the worker's message is withheld: no barrier to pass it through)";
  return pg_error_set(err, code, "Python golden %.1500s::%.200s: %.1200s", g->file, function,
                      what);
}

/* The request's common part: dims, case, knobs, timeout (inputs and outputs are the
 * caller's). */
static void request_init(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                         const struct pg_case *cs, const struct pg_case_data *d,
                         const char **names, int64_t *values, char *suffix, size_t ssize,
                         struct pg_impl_request *req) {
  for (int i = 0; i < d->dims.count; i++) {
    names[i] = d->dims.items[i].name;
    values[i] = d->dims.items[i].value;
  }
  snprintf(suffix, ssize, "op");
  if (k > 0) pg_phase_suffix(k, suffix, ssize);
  memset(req, 0, sizeof *req);
  req->op = c->op;
  req->suffix = suffix;
  req->up_to_module = k;
  req->total_modules = c->n_modules;
  req->mode = "cpu";
  req->case_id = cs && cs->id ? cs->id : "golden";
  req->n_dims = d->dims.count;
  req->dim_names = names;
  req->dim_values = values;
  req->knobs_json = cs && cs->json ? cs->json : "{}";
  req->timeout_s = w->timeout_s;
  req->work_dir = w->work_dir;
  req->arguments_json = d->arguments;
}

/* One call of `function` in g's file: the primary inputs in, outputs as specs. */
static int py_call(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                   const struct pg_case *cs, const struct pg_case_data *d,
                   const struct pg_py_golden *g, const char *function, const char *precision,
                   const struct pg_impl_output_spec *specs, int n, const char *probe,
                   struct pg_tensor *out, int *n_out, struct pg_error *err) {
  const char *names[PG_PY_GOLDEN_MAX_DIMS];
  int64_t values[PG_PY_GOLDEN_MAX_DIMS];
  char suffix[64];
  struct pg_impl_request req;
  request_init(w, c, k, cs, d, names, values, suffix, sizeof suffix, &req);
  req.inputs = d->inputs;
  req.n_inputs = c->n_primary;
  req.outputs = (struct pg_impl_output_spec *)specs;
  req.n_outputs = n;
  req.call_file = g->file;
  req.call_function = function;
  req.call_cast_outputs = 1;
  req.call_precision = precision;
  req.call_probe = probe;
  struct pg_impl_outcome o;
  pg_impl_outcome_init(&o);
  struct pg_error ie;
  pg_error_clear(&ie);
  w->calls++;
  int rc = pg_impl_invoke(&w->impl, &req, &o, &ie);
  if (rc != PG_OK) {
    golden_failed(w, g, function, rc, ie.message, err);
  } else if (o.status == PG_IMPL_DONE) {
    for (int i = 0; i < n; i++) {
      pg_tensor_move(&out[i], &o.outputs[i]);
      pg_tensor_set_name(&out[i], specs[i].name);
    }
    *n_out = n;
  } else {
    rc = golden_failed(w, g, function, PG_EIMPL, o.summary[0] ? o.summary : "failed", err);
  }
  pg_impl_outcome_reset(&o);
  return rc;
}

int pg_py_golden_call(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                      const struct pg_case *cs, const struct pg_case_data *d,
                      struct pg_tensor *out, int *n_out, struct pg_error *err) {
  return pg_py_golden_call_precision(w, c, k, cs, d, NULL, out, n_out, err);
}

int pg_py_golden_call_precision(struct pg_py_golden_worker *w, const struct pg_contract *c,
                                int k, const struct pg_case *cs, const struct pg_case_data *d,
                                const char *precision, struct pg_tensor *out, int *n_out,
                                struct pg_error *err) {
  *n_out = 0;
  const struct pg_py_golden *g = pg_contract_py_golden(c, k);
  if (!g) return pg_error_set(err, PG_ENOTFOUND, "golden %d has no Python golden", k);
  if (d->dims.count > PG_PY_GOLDEN_MAX_DIMS)
    return pg_error_set(err, PG_ELIMIT, "more than %d dims", PG_PY_GOLDEN_MAX_DIMS);
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  /* k = 0: the op-level golden returns the final outputs */
  int n = pg__phase_outputs(c, k ? k : c->n_modules, cs, &d->dims, decls, specs, err);
  if (n < 0) return n;
  return py_call(w, c, k, cs, d, g, g->function, precision, specs, n, NULL, out, n_out, err);
}

/* The `_inspect` companion's name for a golden function's name, into buf. */
static void inspect_name(const char *function, char *buf, size_t size) {
  size_t l = strlen(function);
  if (l > 7 && strcmp(function + l - 7, "_golden") == 0)
    snprintf(buf, size, "%.*s_inspect", (int)(l - 7), function);
  else
    snprintf(buf, size, "%s_inspect", function);
}

int pg_py_golden_inspect(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                         const struct pg_case *cs, const struct pg_case_data *d,
                         const struct pg_tensor_decl *const *probes, int n_probes,
                         struct pg_tensor *out, struct pg_error *err) {
  const struct pg_py_golden *g = pg_contract_py_golden(c, k);
  if (!g) return pg_error_set(err, PG_ENOTFOUND, "golden %d has no Python golden", k);
  if (d->dims.count > PG_PY_GOLDEN_MAX_DIMS)
    return pg_error_set(err, PG_ELIMIT, "more than %d dims", PG_PY_GOLDEN_MAX_DIMS);
  if (n_probes > PG_IMPL_MAX_OUTPUTS) return pg_error_set(err, PG_ELIMIT, "too many probes");
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < n_probes; i++) {
    specs[i].name = probes[i]->name; /* a dict returned by _inspect is keyed by probe name */
    specs[i].dtype = pg_case_dtype(cs, probes[i]);
    PG_RETURN_IF_ERROR(pg_decl_shape(probes[i], &d->dims, &specs[i].ndim, specs[i].shape, err));
  }
  char fn[256];
  inspect_name(g->function, fn, sizeof fn);
  int n = 0;
  return py_call(w, c, k, cs, d, g, fn, NULL, specs, n_probes, NULL, out, &n, err);
}

int pg_py_golden_inspect_pypto(struct pg_py_golden_worker *w, const struct pg_contract *c,
                               int k, const struct pg_case *cs, const struct pg_case_data *d,
                               const char *probe, struct pg_tensor *out, struct pg_error *err) {
  const struct pg_py_golden *g = pg_contract_py_golden(c, k);
  if (!g || !g->file) return pg_error_set(err, PG_ENOTFOUND, "golden %d has no Python golden", k);
  if (d->dims.count > PG_PY_GOLDEN_MAX_DIMS)
    return pg_error_set(err, PG_ELIMIT, "more than %d dims", PG_PY_GOLDEN_MAX_DIMS);
  /* no file declares the probe's shape: it is what the companion returns (ndim -1) */
  struct pg_impl_output_spec spec = {probe, PG_DTYPE_F32, -1, {0}};
  char fn[64];
  snprintf(fn, sizeof fn, "module_%d_inspect", k);
  int n = 0;
  return py_call(w, c, k, cs, d, g, fn, NULL, &spec, 1, probe, out, &n, err);
}

/* ------------------------------------------------------------------ make_inputs */

/* err = "FILE (case ID): make_inputs: <what>": the worker's words in what already behind
 * the number barrier (w->impl.quote). */
static int inputs_failed(const struct pg_py_golden_worker *w, const struct pg_contract *c,
                         const struct pg_case *cs, int code, const char *what,
                         struct pg_error *err) {
  if (!w->impl.quote) what = "(the worker's message is withheld: no barrier to pass it through)";
  return pg_error_set(err, code, "%.1500s (case '%.128s'): make_inputs failed: %.1200s",
                      c->test_inputs, cs->id, what);
}

/* The case's knobs that `read` (make_inputs's keys read) lacks, into unread. */
static void unread_knobs(const struct pg_case *cs, const cJSON *read, char *unread, size_t size) {
  cJSON *kv = cJSON_Parse(cs->json ? cs->json : "{}");
  const cJSON *item;
  cJSON_ArrayForEach(item, kv) {
    if (!pg_case_key_is_knob(item->string)) continue;
    int seen = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, read) seen |= cJSON_IsString(r) && strcmp(r->valuestring, item->string) == 0;
    size_t l = strlen(unread);
    if (!seen && l + strlen(item->string) + 3 < size)
      snprintf(unread + l, size - l, "%s%s", l ? ", " : "", item->string);
  }
  cJSON_Delete(kv);
}

/* What the worker wrote to the result file: the knobs left unread, and d->arguments when
 * the order is not the contract's or there are scalars. */
static int read_result(const struct pg_contract *c, const struct pg_case *cs, const char *path,
                       struct pg_case_data *d, char *unread, size_t size, struct pg_error *err) {
  char *text = NULL;
  size_t len = 0;
  PG_RETURN_IF_ERROR(pg_read_file(path, 1 << 20, &text, &len, err));
  cJSON *r = cJSON_Parse(text);
  free(text);
  const cJSON *order = cJSON_GetObjectItemCaseSensitive(r, "order");
  const cJSON *scalars = cJSON_GetObjectItemCaseSensitive(r, "scalars");
  if (!cJSON_IsArray(order) || !cJSON_IsObject(scalars)) {
    cJSON_Delete(r);
    return pg_error_set(err, PG_EPARSE, "%s (case '%s'): the worker's make_inputs result is "
                        "not {\"read\", \"order\", \"scalars\"}", c->test_inputs, cs->id);
  }
  if (unread) unread_knobs(cs, cJSON_GetObjectItemCaseSensitive(r, "read"), unread, size);
  int plain = cJSON_GetArraySize(scalars) == 0 && cJSON_GetArraySize(order) == c->n_primary;
  for (int i = 0; plain && i < c->n_primary; i++) {
    const cJSON *n = cJSON_GetArrayItem(order, i);
    plain = cJSON_IsString(n) && strcmp(n->valuestring, c->primary_inputs[i].name) == 0;
  }
  int rc = PG_OK;
  if (!plain) {
    cJSON_DeleteItemFromObjectCaseSensitive(r, "read");
    d->arguments = cJSON_PrintUnformatted(r);
    if (!d->arguments) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  cJSON_Delete(r);
  return rc;
}

int pg_py_make_inputs(struct pg_py_golden_worker *w, const struct pg_contract *c,
                      const struct pg_case *cs, struct pg_case_data *d, char *unread,
                      size_t size, struct pg_error *err) {
  if (unread && size) unread[0] = '\0';
  if (!c->test_inputs) return pg_error_set(err, PG_EINVAL, "op '%s' has no test_inputs.py", c->op);
  if (d->dims.count > PG_PY_GOLDEN_MAX_DIMS || c->n_primary > PG_IMPL_MAX_OUTPUTS)
    return pg_error_set(err, PG_ELIMIT, "case '%s': too many dims or inputs", cs->id);
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < c->n_primary; i++) {
    specs[i].name = c->primary_inputs[i].name;
    specs[i].dtype = pg_case_dtype(cs, &c->primary_inputs[i]);
    PG_RETURN_IF_ERROR(pg_decl_shape(&c->primary_inputs[i], &d->dims, &specs[i].ndim,
                                     specs[i].shape, err));
  }
  const char *tmp = w->work_dir ? w->work_dir : getenv("TMPDIR");
  char *path = pg_path_fmt("%s/pg-make-inputs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!path) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int fd = mkstemp(path);
  if (fd < 0) {
    int rc = pg_error_set(err, PG_EIO, "cannot create %s for make_inputs' result", path);
    free(path);
    return rc;
  }
  close(fd);
  const char *names[PG_PY_GOLDEN_MAX_DIMS];
  int64_t values[PG_PY_GOLDEN_MAX_DIMS];
  char suffix[64];
  struct pg_impl_request req;
  free(d->arguments);
  d->arguments = NULL;
  request_init(w, c, 0, cs, d, names, values, suffix, sizeof suffix, &req);
  req.outputs = specs;
  req.n_outputs = c->n_primary;
  req.call_file = c->test_inputs;
  req.call_function = "make_inputs";
  req.call_kind = "make_inputs";
  req.call_result_file = path;
  struct pg_impl_outcome o;
  pg_impl_outcome_init(&o);
  struct pg_error ie;
  pg_error_clear(&ie);
  w->calls++;
  int rc = pg_impl_invoke(&w->impl, &req, &o, &ie);
  if (rc != PG_OK) {
    inputs_failed(w, c, cs, rc, ie.message, err);
  } else if (o.status != PG_IMPL_DONE) {
    rc = inputs_failed(w, c, cs, PG_EIMPL, o.summary[0] ? o.summary : "failed", err);
  } else {
    for (int i = 0; i < c->n_primary; i++) {
      pg_tensor_reset(&d->inputs[i]);
      pg_tensor_move(&d->inputs[i], &o.outputs[i]);
      pg_tensor_set_name(&d->inputs[i], specs[i].name);
    }
    rc = read_result(c, cs, path, d, unread, size, err);
  }
  pg_impl_outcome_reset(&o);
  unlink(path);
  free(path);
  return rc;
}
