/* phasegate runner — the knobs check of an op whose inputs come from its own input code
 * (docs/pypto.md "Inputs from make_inputs"): `validate` calls make_inputs(case) once per
 * case, dry (the tensors are dropped), through the Python worker, and every knob of the
 * case that make_inputs never read is a warning naming the case and the key: the knob
 * changes nothing (a suite-side fix such as a smaller `scale_A` would do nothing). A
 * make_inputs that fails is an error naming test_inputs.py and the case, so `validate`
 * never says OK about inputs `run` cannot make. An interpreter that cannot run the file
 * at all is a warning: the environment's fault, not the op's.
 */
#include <stdio.h>
#include <string.h>

#include "run/run_internal.h"

/* One case, dry: its dims bound, make_inputs called, the unread knobs reported. */
static int check_case(struct pg_py_golden_worker *w, const struct pg_contract *c,
                      const struct pg_suite *s, const struct pg_case *cs, struct pg_diags *d) {
  struct pg_case_data data;
  struct pg_error e;
  pg_error_clear(&e);
  char unread[512] = "";
  int rc = pg_case_data_init(&data, c, &e);
  if (rc == PG_OK) rc = pg_case_data_bind(&data, c, cs, &e);
  if (rc == PG_OK) rc = pg_py_make_inputs(w, c, cs, &data, unread, sizeof unread, &e);
  pg_case_data_reset(&data);
  if (rc == PG_ENOMEM) return rc;
  if (rc != PG_OK)
    return pg_diags_add(d, PG_SEV_ERROR, s->path, cs->mark.line, cs->mark.column, "make_inputs",
                        "%s", e.message);
  for (char *k = unread, *next; *k; k = next) {
    next = strstr(k, ", ");
    int len = next ? (int)(next - k) : (int)strlen(k);
    next = next ? next + 2 : k + len;
    PG_RETURN_IF_ERROR(pg_diags_add(d, PG_SEV_WARNING, s->path, cs->mark.line, cs->mark.column,
                                    "knob", "case '%s': knob '%.*s' is never read by make_inputs "
                                    "of %s: it changes nothing", cs->id, len, k, c->test_inputs));
  }
  return PG_OK;
}

int pg_suite_check_knobs(const struct pg_contract *c, const struct pg_suite *s,
                         const char *python, char *(*redact)(const char *text),
                         struct pg_diags *d) {
  if (!c->test_inputs || !s || s->n_cases == 0) return PG_OK;
  struct pg_error e;
  pg_error_clear(&e);
  char about[PG_PYTHON_ABOUT_MAX];
  const char *paths[] = {c->test_inputs};
  int rc = pg_python_preflight(python, "test_inputs.py", paths, 1, about, &e);
  struct pg_py_golden_worker *w = NULL;
  struct pg_py_golden_worker_opts o = {python, NULL, NULL, 0, "", redact};
  if (rc == PG_OK) rc = pg_py_golden_worker_open(&o, &w, &e);
  if (rc != PG_OK)
    return rc == PG_ENOMEM ? rc
                           : pg_diags_add(d, PG_SEV_WARNING, c->test_inputs, 0, 0, "knob",
                                          "the knobs of the suite's cases were not checked "
                                          "against make_inputs: %s", e.message);
  for (int i = 0; rc == PG_OK && i < s->n_cases; i++) rc = check_case(w, c, s, &s->cases[i], d);
  pg_py_golden_worker_close(w);
  return rc;
}
