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
 * What the worker says when the golden fails may print any tensor: each piece of it
 * (its message, a line it wrote, its stderr's last line) passes the number barrier
 * (pg_redact_numbers, through the caller's hook, as the impl's `quote`) where the impl
 * room quotes it, so phasegate's own sentence around it keeps its numbers (exit status,
 * signal, fd); the message names the golden's file and function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  const char *paths[64];
  int n = 0;
  for (int j = 1; j <= k && n < 64; j++) {
    const struct pg_py_golden *g = pg_contract_phase_golden(c, j) == PG_PHASE_GOLDEN_PYTHON
                                       ? pg_contract_py_golden(c, j) : NULL;
    if (g && g->file) paths[n++] = g->file;
  }
  if (n == 0) return PG_OK;
  char what[256];
  snprintf(what, sizeof what, "the Python goldens of op '%.200s'", c->op);
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

/* One call of `function` in g's file: the primary inputs in, outputs as specs. */
static int py_call(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                   const struct pg_case *cs, const struct pg_case_data *d,
                   const struct pg_py_golden *g, const char *function,
                   const struct pg_impl_output_spec *specs, int n, const char *probe,
                   struct pg_tensor *out, int *n_out, struct pg_error *err) {
  const char *names[PG_PY_GOLDEN_MAX_DIMS];
  int64_t values[PG_PY_GOLDEN_MAX_DIMS];
  for (int i = 0; i < d->dims.count; i++) {
    names[i] = d->dims.items[i].name;
    values[i] = d->dims.items[i].value;
  }
  char suffix[64] = "op";
  if (k > 0) pg_phase_suffix(k, suffix, sizeof suffix);
  struct pg_impl_request req;
  memset(&req, 0, sizeof req);
  req.op = c->op;
  req.suffix = suffix;
  req.up_to_module = k;
  req.total_modules = c->n_modules;
  req.mode = "cpu";
  req.case_id = cs && cs->id ? cs->id : "golden";
  req.n_dims = d->dims.count;
  req.dim_names = names;
  req.dim_values = values;
  req.knobs_json = cs && cs->json ? cs->json : "{}";
  req.inputs = d->inputs;
  req.n_inputs = c->n_primary;
  req.outputs = (struct pg_impl_output_spec *)specs;
  req.n_outputs = n;
  req.timeout_s = w->timeout_s;
  req.work_dir = w->work_dir;
  req.call_file = g->file;
  req.call_function = function;
  req.call_cast_outputs = 1;
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
  return py_call(w, c, k, cs, d, g, g->function, specs, n, NULL, out, n_out, err);
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
  return py_call(w, c, k, cs, d, g, fn, specs, n_probes, NULL, out, &n, err);
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
  return py_call(w, c, k, cs, d, g, fn, &spec, 1, probe, out, &n, err);
}
