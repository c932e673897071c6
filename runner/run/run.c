/* phasegate runner — pg_run, the orchestration of one phase (see run.h): the impl's
 * one-time check, contract and suite, the phase number (checked once), modes, case
 * selection, everything that would otherwise fail once per case checked before the
 * first one, the cases (serially here, or jobs.c), and the summary handed to the hooks.
 *
 * Each case is case.c's; what its outcome means is classify.c's; the report and the
 * console lines are the report room's, reached through the hooks in pg_run_opts.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/golden_cache.h"
#include "run/run_internal.h"
#include "base/base.h"
#include "phasegate/goldens.h"

void pg_run_linef(pg_run_line_fn fn, void *user, int to_stderr, const char *fmt, ...) {
  if (!fn) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fn(user, to_stderr, line);
}

void pg_run_summary_reset(struct pg_run_summary *s) {
  if (!s) return;
  free(s->report_path);
  s->report_path = NULL;
}

/* Comma-separated list membership. */
static int in_list(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, item, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* The device CTest allocated: its id (-1: none) and the resource type that gave it. */
static int device_from_env(char *kind, size_t size) {
  const char *types = getenv("CTEST_RESOURCE_GROUP_0");
  if (!types || !*types) return -1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", types);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char var[320] = "CTEST_RESOURCE_GROUP_0_";
    size_t n = strlen(var);
    for (const char *c = t; *c && n + 1 < sizeof var; c++)
      var[n++] = (char)toupper((unsigned char)*c);
    var[n] = '\0';
    const char *v = getenv(var);
    const char *id = v ? strstr(v, "id:") : NULL;
    if (!id) continue;
    id += 3;
    while (*id && !isdigit((unsigned char)*id) && *id != ',' && *id != ';') id++;
    if (isdigit((unsigned char)*id)) {
      snprintf(kind, size, "%s", t);
      return (int)strtol(id, NULL, 10);
    }
  }
  return -1;
}

int pg_run_device_from_env(void) {
  char kind[64];
  return device_from_env(kind, sizeof kind);
}

/* ------------------------------------------------------------------ checks */

/* A directory we are about to write into: it exists (or, with create, is created with
 * its parents) and is writable. */
static int usable_dir(const char *opt, const char *dir, int create, struct pg_error *err) {
  if (create && pg_mkdir_p(dir) != 0)
    return pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO,
                        "%s: cannot create directory '%s': %s", opt, dir,
                        strerror(errno));
  struct stat st;
  if (stat(dir, &st) != 0)
    return pg_error_set(err, PG_ENOENT, "%s: directory '%s' does not exist", opt, dir);
  if (!S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "%s: '%s' is not a directory", opt, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return pg_error_set(err, PG_EIO, "%s: cannot write into '%s': %s", opt, dir,
                        strerror(errno));
  return PG_OK;
}

/* Everything that would otherwise fail once per case, or only after every case ran,
 * checked once before the first one. Directories are created last, so a refused
 * run leaves nothing behind. */
static int check_before_cases(struct pg__run *rc, const int *sel, int n_sel,
                              struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  int ret;
  if (o->golden_data) {
    if (!pg_is_dir(o->golden_data))
      return pg_error_set(err, PG_ENOENT, "--golden-data: '%s' is not a directory",
                          o->golden_data);
    char *p = pg_path_join(o->golden_data, "in");
    if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
    int single = pg_is_dir(p);
    free(p);
    if (single) {
      /* DIR/in + DIR/out hold one case: applying them to several would compare every
       * case against the same references. */
      int shared = 0;
      for (int i = 0; i < n_sel; i++) {
        p = pg_path_fmt("%s/%s/in", o->golden_data, rc->suite.cases[sel[i]].id);
        if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
        shared += !pg_is_dir(p);
        free(p);
      }
      if (shared > 1)
        return pg_error_set(err, PG_EINVAL, "--golden-data: '%s' holds a single case (in/ and "
                            "out/); %d cases are selected: pick the one it belongs to with "
                            "--case ID", o->golden_data, n_sel);
    }
  }
  if ((ret = pg_impl_check_finish(&rc->probe, err)) != PG_OK) return ret;
  if (rc->probe.python[0]) memcpy(rc->python, rc->probe.python, sizeof rc->python);
  rc->report_unwritable = 1; /* until the report's place is checked */
  const char *slash = strrchr(rc->report_path, '/');
  char *dir = !slash ? pg_strdup(".")
              : slash == rc->report_path ? pg_strdup("/")
                                         : pg_path_fmt("%.*s", (int)(slash - rc->report_path),
                                                       rc->report_path);
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (o->report_path && pg_is_dir(o->report_path))
    /* A file the user named: its directory must exist (a typo must not grow a tree). */
    ret = pg_error_set(err, PG_EINVAL, "--report: '%s' is a directory; name the report file "
                       "(or use --report-dir)", o->report_path);
  else if (o->report_path)
    ret = usable_dir("--report", dir, 0, err);
  else
    ret = usable_dir("--report-dir", dir, 1, err);
  free(dir);
  if (ret != PG_OK) return ret;
  rc->report_unwritable = 0;
  if (o->save_data && (ret = usable_dir("--save-data", o->save_data, 1, err)) != PG_OK)
    return ret;
  return PG_OK;
}

/* Sends the findings from *printed on (each one once, however often it is called). */
static void print_diags(const struct pg__run *rc, const struct pg_diags *d, int *printed) {
  for (; *printed < d->count; (*printed)++) {
    char buf[2048];
    if (d->items[*printed].severity == PG_SEV_NOTE) continue; /* notes are validate's */
    pg_diag_format(&d->items[*printed], buf, sizeof buf);
    pg__line(rc, 1, "%s", buf);
  }
}

/* --modes: comma-separated names, in order, duplicates dropped; NULL means "sim". An
 * empty list or item is refused: `--modes ""` from an unset variable must not quietly
 * run sim. */
static int parse_modes(struct pg__run *rc, const char *modes, struct pg_error *err) {
  if (!modes) modes = "sim";
  if (!*modes)
    return pg_error_set(err, PG_EINVAL, "--modes: empty list (give e.g. --modes sim,npu)");
  if (strlen(modes) >= sizeof rc->modes_buf)
    return pg_error_set(err, PG_ELIMIT, "--modes: list too long");
  rc->modes_buf[0] = '\0';
  for (const char *p = modes;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0)
      return pg_error_set(err, PG_EINVAL, "--modes '%s': empty mode name in the list", modes);
    char t[1024];
    snprintf(t, sizeof t, "%.*s", (int)len, p);
    /* modes become directory names (exec, replay): same alphabet as case ids */
    int ok = len <= 63 && strcmp(t, ".") != 0 && strcmp(t, "..") != 0;
    for (const char *c = t; ok && *c; c++)
      ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.';
    if (!ok)
      return pg_error_set(err, PG_EINVAL, "--modes: '%s' is not a valid mode name "
                          "([A-Za-z0-9_.-]+, at most 63 characters)", t);
    if (!in_list(rc->modes_buf, t)) {
      if (++rc->n_modes > PG_MAX_MODES)
        return pg_error_set(err, PG_ELIMIT, "--modes: more than %d modes", PG_MAX_MODES);
      size_t l = strlen(rc->modes_buf);
      snprintf(rc->modes_buf + l, sizeof rc->modes_buf - l, "%s%s", l ? "," : "", t);
    }
    if (!e) break;
    p = e + 1;
  }
  rc->n_modes = 0; /* counted again when the names are split into rc->modes */
  return PG_OK;
}

/* --inspect NAME must name an output compared at this boundary, or an inspection probe
 * of module k (`acc` or `inspection_acc`: every iteration's metrics). A tensor of the
 * contract that is not at this boundary gets a note (nothing to show for it here);
 * any other name is an error listing the valid names. */
static int check_inspect(struct pg__run *rc, int k, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  const char *name = rc->o->inspect;
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  int n = pg_contract_boundary(c, k, decls, PG_IMPL_MAX_OUTPUTS, err);
  if (n < 0) return n;
  char names[1024] = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(decls[i]->name, name) == 0) return PG_OK;
    size_t l = strlen(names);
    snprintf(names + l, sizeof names - l, "%s'%s'", i ? ", " : "", decls[i]->name);
  }
  const struct pg_module *mk = pg_contract_module(c, k);
  for (int i = 0; mk && i < mk->n_probes; i++) {
    const char *p = mk->probes[i].name;
    if (p && (strcmp(p, name) == 0 ||
              (strncmp(name, "inspection_", 11) == 0 && strcmp(name + 11, p) == 0)))
      return PG_OK;
  }
  /* The pypto workflow's protocol (docs/pypto.md "Inspection probes"): module k declares
   * no probes and its Python golden's file defines module_<k>_inspect: NAME is one of
   * the probes that function returns (which it returns is known when it runs). */
  char companion[64] = "";
  int pypto = 0;
  const struct pg_py_golden *g = pg_contract_phase_golden(c, k) == PG_PHASE_GOLDEN_PYTHON
                                     ? pg_contract_py_golden(c, k) : NULL;
  if (g && g->file && (!mk || mk->n_probes == 0)) {
    snprintf(companion, sizeof companion, "module_%d_inspect", k);
    struct pg_py_scan scan;
    struct pg_error se;
    pg_error_clear(&se);
    if (pg_py_scan_file(g->file, &scan, &se) == PG_OK) {
      pypto = pg_py_scan_def(&scan, companion) != NULL;
      pg_py_scan_reset(&scan);
    }
  }
  if (pypto && rc->o->golden_data) {
    pg__line(rc, 1, "phasegate run: note: --inspect '%s': --golden-data brings no reference "
             "for the pypto workflow's probes (%s is not called); nothing to inspect", name,
             companion);
    return PG_OK;
  }
  if (pypto) {
    const char *probe = strncmp(name, "inspection_", 11) == 0 ? name + 11 : name;
    if (!*probe || strlen(probe) >= sizeof rc->pypto_probe)
      return pg_error_set(err, PG_EINVAL, "--inspect '%s': not a probe name", name);
    snprintf(rc->pypto_probe, sizeof rc->pypto_probe, "%s", probe);
    return PG_OK;
  }
  int known = 0;
  for (int i = 0; i < c->n_primary; i++) known |= strcmp(c->primary_inputs[i].name, name) == 0;
  for (int m = 0; m < c->n_modules; m++)
    for (int i = 0; i < c->modules[m].n_outputs; i++)
      known |= strcmp(c->modules[m].outputs[i].name, name) == 0;
  for (int m = 0; m < c->n_modules; m++)
    for (int i = 0; i < c->modules[m].n_probes; i++)
      known |= strcmp(c->modules[m].probes[i].name, name) == 0;
  if (known) {
    pg__line(rc, 1, "phasegate run: note: --inspect '%s' is not an output of the M%d boundary "
         "(%s); nothing to inspect in this phase", name, k, names);
    return PG_OK;
  }
  if (companion[0])
    return pg_error_set(err, PG_ENOTFOUND, "--inspect '%s': no such tensor in op '%s'; the M%d "
                        "boundary outputs are %s, and %s defines no %s (the pypto workflow's "
                        "inspection companion)", name, c->op, k, names, g->file, companion);
  return pg_error_set(err, PG_ENOTFOUND, "--inspect '%s': no such tensor in op '%s'; the M%d "
                      "boundary outputs are %s", name, c->op, k, names);
}

/* ------------------------------------------------------------------ pg_run */

/* --up-to-module, checked once against the op's module count (the only place that
 * reads it); k is passed down from here. */
static int check_phase(struct pg__run *rc, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  const struct pg_contract *c = &rc->contract;
  int k = o->up_to_module;
  if (o->e2e && (k == 0 || k == c->n_modules)) { /* the whole op: phase N */
    rc->k = c->n_modules;
    return PG_OK;
  }
  if (o->e2e)
    return pg_error_set(err, PG_EINVAL, "--e2e runs the whole op, phase %d of op '%s'; "
                        "--up-to-module %s names another", c->n_modules, c->op,
                        o->up_to_module_arg ? o->up_to_module_arg : "?");
  if (k >= 1 && k <= c->n_modules) {
    rc->k = k;
    return PG_OK;
  }
  if (k < 0)
    return pg_error_set(err, PG_EINVAL, "--up-to-module: expected a module number in 1..%d for "
                        "op '%s', got '%s'", c->n_modules, c->op,
                        o->up_to_module_arg ? o->up_to_module_arg : "");
  if (k == 0 && !o->up_to_module_arg)
    return pg_error_set(err, PG_EINVAL, "--up-to-module K is required (K in 1..%d for op '%s')",
                        c->n_modules, c->op);
  return pg_error_set(err, PG_EINVAL, "--up-to-module %d outside 1..%d for op '%s'", k,
                      c->n_modules, c->op);
}

/* --implemented-phases K (the CMake PHASES) names a phase of the op: 1..N. */
static int check_implemented(const struct pg__run *rc, struct pg_error *err) {
  int n = rc->o->implemented_phases, total = rc->contract.n_modules;
  if (n == 0 || (n >= 1 && n <= total)) return PG_OK;
  return pg_error_set(err, PG_EINVAL, "--implemented-phases %d outside 1..%d for op '%s' "
                      "(the phases implemented so far, at most its module count)", n, total,
                      rc->contract.op);
}

/* --report PATH; else --report-dir DIR: DIR/<name>/M<k>/evaluation_report.json (name:
 * --report-name, the CMake registration, else the op: two registrations of one op
 * directory never share a report); else a pypto op directory (--op-dir DIR finds
 * DIR/eval/): DIR/eval/evaluation_report.json, where the seed's runner writes it; else
 * ./phasegate-reports/<name>/M<k>/. NULL: out of memory. */
static char *report_path_for(const struct pg__run *rc, const char *op, int k) {
  const struct pg_run_opts *o = rc->o;
  int dir_given = o->report_dir && *o->report_dir;
  if (o->report_path) return pg_strdup(o->report_path);
  if (!dir_given && o->op_dir && !o->contract_path && o->e2e &&
      pg_op_dir_layout(o->op_dir) == PG_OP_LAYOUT_PYPTO)
    return pg_path_fmt("%s/eval/evaluation_report_e2e.json", o->op_dir);
  if (!dir_given && o->op_dir && !o->contract_path &&
      pg_op_dir_layout(o->op_dir) == PG_OP_LAYOUT_PYPTO)
    return pg_path_fmt("%s/eval/evaluation_report.json", o->op_dir);
  const char *name = o->report_name && *o->report_name ? o->report_name : op;
  if (o->e2e)
    return pg_path_fmt("%s/%s/e2e/evaluation_report.json",
                       dir_given ? o->report_dir : "phasegate-reports", name);
  return pg_path_fmt("%s/%s/M%d/evaluation_report.json",
                     dir_given ? o->report_dir : "phasegate-reports", name, k);
}

static char *default_report_path(const struct pg__run *rc) {
  return report_path_for(rc, rc->contract.op, rc->k);
}

/* Phase k has a golden (docs/design.md §3, §5): one clear error before any case instead of
 * an ERROR per case. --golden-data brings its own references. */
static int check_golden(struct pg__run *rc, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  if (rc->o->e2e && !rc->o->golden_data &&
      pg_contract_phase_golden(c, 0) == PG_PHASE_GOLDEN_NONE) {
    char why[768];
    pg_contract_no_golden_reason(c, 0, why, sizeof why);
    return pg_error_set(err, PG_EVALIDATE, "%s: --e2e compares op '%s' with its op-level "
                        "golden: %s", rc->contract_path, c->op, why);
  }
  if (rc->o->golden_data || rc->o->e2e ||
      pg_contract_phase_golden(c, rc->k) != PG_PHASE_GOLDEN_NONE)
    return PG_OK;
  char why[768];
  pg_contract_no_golden_reason(c, rc->k, why, sizeof why);
  return pg_error_set(err, PG_EVALIDATE, "%s: phase %d of op '%s' has no golden: %s; give the "
                      "module a `golden:` or a Python golden (docs/goldens.md), or pass "
                      "--golden-data", rc->contract_path, rc->k, c->op, why);
}

/* The Python goldens' worker, when any golden up to phase k is Python (bisection runs
 * the earlier phases too). Its process starts with the first golden computed. */
static int open_py_golden(struct pg__run *rc, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  int any = rc->contract.test_inputs != NULL; /* make_inputs runs in the same worker */
  for (int j = o->e2e ? 0 : 1; j <= (o->e2e ? 0 : rc->k); j++)
    any |= pg_contract_phase_golden(&rc->contract, j) == PG_PHASE_GOLDEN_PYTHON;
  if (!any || o->golden_data) return PG_OK;
  /* an interpreter that cannot run them: one error now, not one per case */
  PG_RETURN_IF_ERROR(pg__py_golden_preflight(o->python, &rc->contract, o->e2e ? 0 : rc->k,
                                             rc->python, err));
  struct pg_py_golden_worker_opts po = {o->python, o->work_dir, o->work_dir, rc->timeout_s,
                                        o->serve_control, o->hooks.redact_numbers};
  return pg_py_golden_worker_open(&po, &rc->py, err);
}

/* Starts the persistent process of the first mode on the device (pg_impl_prestart), as
 * configure() will name them; a --modes that configure() refuses starts nothing. */
static void prestart_first_mode(struct pg__run *rc) {
  const struct pg_run_opts *o = rc->o;
  struct pg_error e;
  pg_error_clear(&e);
  if (parse_modes(rc, o->modes, &e) != PG_OK) return; /* reported by configure() */
  char first[64];
  snprintf(first, sizeof first, "%.*s", (int)strcspn(rc->modes_buf, ","), rc->modes_buf);
  char kind[64];
  int device = o->device_id >= 0 ? o->device_id : device_from_env(kind, sizeof kind);
  pg_impl_prestart(&rc->impl, first, device < 0 ? 0 : device, o->rlimit_as,
                   o->timeout_s > 0 ? o->timeout_s : 120);
}

/* The impl of --impl (rc->own.impl_spec), its load probe started: the plugin's (a fork +
 * dlopen, or the prestarted host's handshake) runs while the contract and suite load; its
 * verdict is collected in check_before_cases. Forked before any thread exists. */
static int open_impl(struct pg__run *rc, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  PG_RETURN_IF_ERROR(pg_impl_parse(o->impl_spec, &rc->impl, err));
  rc->impl.fresh_process = o->fresh_process;
  rc->impl.max_calls = o->worker_max_calls;
  rc->impl.serve_control = o->serve_control;
  rc->impl.python = o->python;
  rc->impl.log_dir = o->work_dir;
  if (rc->not_implemented) return PG_OK;
  /* The first mode's persistent process starts now (not with --jobs: the workers fork
   * and start their own), so its start-up overlaps everything up to the first call; a
   * plugin host's load is then the plugin's load probe too (one dlopen, not two). */
  if (o->jobs <= 1) prestart_first_mode(rc);
  return pg_impl_check_start(&rc->impl, o->timeout_s > 0 ? o->timeout_s : 120, o->rlimit_as,
                             &rc->probe, err);
}

/* --e2e without --impl: the op directory's integrated <op>_impl.py, through <op>_wrapper. */
static int default_e2e_impl(struct pg__run *rc, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  if (!c->op_impl)
    return pg_error_set(err, PG_ENOENT, "--e2e: op '%s' has no integrated impl %s/%s_impl.py; "
                        "write it, or name the impl with --impl", c->op,
                        c->op_dir ? c->op_dir : "<op dir>", c->op);
  rc->default_impl = pg_path_fmt("python:%s::%s_wrapper", c->op_impl, c->op);
  if (!rc->default_impl) return pg_error_set(err, PG_ENOMEM, "out of memory");
  rc->own.impl_spec = rc->default_impl;
  return open_impl(rc, err);
}

/* The impl (its load probe started), the contract, the phase, the suite. */
static int load(struct pg__run *rc, struct pg_run_summary *s, struct pg_diags *diags,
                struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  int ret, n_printed = 0;
  int strength_only = o->strength_policy == PG_STRENGTH_ONLY; /* no impl at all */
  if (!o->impl_spec && !o->e2e && !strength_only)
    return pg_error_set(err, PG_EINVAL, "--impl is required");
  if (strength_only && o->golden_data)
    return pg_error_set(err, PG_EINVAL, "suite strength is kept in the golden cache: it "
                        "cannot be computed from --golden-data");
  /* A phase not implemented yet never touches the impl, not even its load probe (its
   * library may lack the phase's wrapper, or not be built at all). --e2e runs the
   * integrated impl, whatever the staged phases have reached. */
  rc->not_implemented = !o->e2e && o->implemented_phases > 0 &&
                        o->up_to_module > o->implemented_phases;
  if (o->impl_spec && !strength_only) PG_RETURN_IF_ERROR(open_impl(rc, err));
  if (!o->contract_path && !o->op_dir)
    return pg_error_set(err, PG_EINVAL, "--op-dir or --contract is required");
  rc->stage = PG__STAGE_OP_FILES; /* from here to the case selection: the op's files */
  PG_RETURN_IF_ERROR(pg_op_paths_resolve(o->op_dir, o->contract_path, o->suite_path,
                                         rc->contract_path, sizeof rc->contract_path,
                                         rc->suite_path, sizeof rc->suite_path, err));
  /* The one validation validate and list run too (run/check.c); a missing suite is
   * reported after the contract's findings and the phase check. */
  const char *suite = pg_is_file(rc->suite_path) ? rc->suite_path : NULL;
  ret = pg_op_load(rc->contract_path, suite, &rc->contract, &rc->suite, diags, err);
  print_diags(rc, diags, &n_printed); /* warnings of a valid op, or every finding */
  if (ret != PG_OK) {
    s->diagnosed = diags->n_errors > 0;
    if (!err || !err->message[0]) pg_error_set(err, ret, "%s: invalid contract or suite",
                                               rc->contract_path);
    return ret;
  }
  PG_RETURN_IF_ERROR(pg_golden_plan_build(&rc->contract.graph, &rc->plan, err));
  if (!o->impl_spec && o->e2e && o->strength_policy != PG_STRENGTH_ONLY)
    PG_RETURN_IF_ERROR(default_e2e_impl(rc, err));
  PG_RETURN_IF_ERROR(check_phase(rc, err));
  PG_RETURN_IF_ERROR(check_implemented(rc, err));
  if (!rc->not_implemented) PG_RETURN_IF_ERROR(check_golden(rc, err));
  if (o->inspect) PG_RETURN_IF_ERROR(check_inspect(rc, rc->k, err));
  rc->stage = PG__STAGE_ENVIRONMENT;
  /* Without a golden cache every case computes its golden: load OpenBLAS (if a golden
   * step needs it) while the inputs are generated. */
  if (o->no_golden_cache && !o->golden_data && !rc->not_implemented)
    pg__blas_preload_start(rc, rc->k);
  if (!suite) {
    rc->stage = PG__STAGE_OP_FILES;
    return pg_error_set(err, PG_ENOENT, "%s: no suite file", rc->suite_path);
  }
  return PG_OK;
}

/* Modes, device, golden library and cache. */
static int configure(struct pg__run *rc, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  PG_RETURN_IF_ERROR(parse_modes(rc, o->modes, err));
  int n = 0;
  for (const char *p = rc->modes_buf; *p && n < PG_MAX_MODES; n++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(rc->mode_store[n], sizeof rc->mode_store[n], "%.*s", (int)(len < 63 ? len : 63), p);
    rc->modes[n] = rc->mode_store[n];
    p = e ? e + 1 : p + len;
  }
  rc->n_modes = o->strength_policy == PG_STRENGTH_ONLY ? 0 : n;
  rc->timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
  /* the device's kind: the CTest resource type that gave it, else the last mode (the
   * device-like one, docs/design.md §8) */
  rc->device_id = o->device_id >= 0 ? o->device_id
                                    : device_from_env(rc->device_kind, sizeof rc->device_kind);
  /* else the pypto workflow's own line, `export TILE_FWK_DEVICE_ID=N` (docs/pypto.md) */
  const char *tile = getenv("TILE_FWK_DEVICE_ID");
  char *end = NULL;
  long tid = tile && *tile ? strtol(tile, &end, 10) : -1;
  if (rc->device_id < 0 && end && !*end && tid >= 0 && tid < 1 << 20) rc->device_id = (int)tid;
  if (rc->device_id < 0) rc->device_id = 0;
  if (!rc->device_kind[0] && n > 0) snprintf(rc->device_kind, sizeof rc->device_kind, "%s",
                                             rc->modes[n - 1]);
  if (rc->not_implemented) return PG_OK; /* no golden is computed */
  PG_RETURN_IF_ERROR(open_py_golden(rc, err));
  if (o->golden_lib) PG_RETURN_IF_ERROR(pg_golden_lib_open(o->golden_lib, &rc->golden_lib, err));
  if (!o->no_golden_cache && !o->golden_data) {
    char dir[4096];
    struct pg_error ce;
    pg_error_clear(&ce);
    int dr = pg_golden_cache_dir_default(dir, sizeof dir, &ce);
    if (dr == PG_ENOTFOUND) return PG_OK; /* no place for a cache: goldens are computed */
    if (dr != PG_OK) return pg_error_set(err, dr, "%s", ce.message);
    rc->cache_dir = pg_strdup(dir);
    if (!rc->cache_dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
    uint64_t cap; /* a bad PHASEGATE_CACHE_MAX_BYTES is refused, not silently ignored */
    PG_RETURN_IF_ERROR(pg_golden_cache_max_default(&cap, err));
  }
  return PG_OK;
}

/* The selected cases' suite indices into *sel (owned by the caller). */
static int select_cases(struct pg__run *rc, int **sel, int *n_sel, struct pg_error *err) {
  const struct pg_run_opts *o = rc->o;
  for (const char *p = o->case_ids; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    int found = len == 0; /* empty items are skipped */
    for (int i = 0; !found && i < rc->suite.n_cases; i++)
      found = strlen(rc->suite.cases[i].id) == len && strncmp(rc->suite.cases[i].id, p, len) == 0;
    if (!found)
      return pg_error_set(err, PG_ENOTFOUND, "%s: no case '%.*s' in the suite", rc->suite_path,
                          (int)len, p);
    p = e ? e + 1 : NULL;
  }
  *sel = calloc((size_t)(rc->suite.n_cases + 1), sizeof **sel);
  if (!*sel) return pg_error_set(err, PG_ENOMEM, "out of memory");
  *n_sel = 0;
  for (int i = 0; i < rc->suite.n_cases; i++) {
    const struct pg_case *cs = &rc->suite.cases[i];
    if (o->case_ids && !in_list(o->case_ids, cs->id)) continue;
    if (o->levels_mask && !(o->levels_mask & (1u << cs->level))) continue;
    (*sel)[(*n_sel)++] = i;
  }
  if (*n_sel == 0)
    return pg_error_set(err, PG_ENOTFOUND, "no case of %s matches the selection", rc->suite_path);
  return PG_OK;
}

/* The run's verdict (classify.c), then the summary lines. */
static void summarize(struct pg__run *rc, struct pg_run_summary *s,
                      const struct pg_case_result *results, int n, int wrote,
                      const struct pg_error *re) {
  pg__classify_run(s, results, n, wrote == PG_OK);
  if (wrote != PG_OK) pg__line(rc, 1, "phasegate: error: %s", re->message);
  else if (re->message[0]) pg__line(rc, 1, "phasegate: warning: %s", re->message);
  const struct pg_run_hooks *h = &rc->o->hooks;
  if (h->summary_lines) h->summary_lines(&rc->phase, s, results, n, rc->o->on_line, rc->o->user);
}

/* What the hooks are told about the phase and the run that wrote it. */
static void fill_phase(struct pg__run *rc, const char *op, int k) {
  const struct pg_run_opts *o = rc->o;
  rc->phase = (struct pg_run_phase){
      .op = op, .impl_spec = o->impl_spec, .up_to_module = k,
      .total_modules = rc->contract.n_modules, .tool_version = o->tool_version,
      .contract_path = rc->contract_path[0] ? rc->contract_path : NULL,
      .suite_path = rc->suite_path[0] ? rc->suite_path : NULL, .modes = rc->modes_buf,
      .inspect = o->inspect, .registration = o->report_name, .run_id = rc->run_id,
      .session = rc->session[0] ? rc->session : NULL, .started_ms = rc->started_ms,
      .host = rc->host, .device_kind = rc->device_kind[0] ? rc->device_kind : "host",
      .device_index = rc->device_id, .suite_cases = rc->suite.n_cases,
      .python = rc->python[0] ? rc->python : NULL};
}

/* This run's id, host and start; the session id from --report-session's file (a
 * missing or empty file: no session, the run's report stands alone). */
static void identify(struct pg__run *rc) {
  rc->started_ms = pg_wall_ms();
  uint64_t r[2] = {0, 0};
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) /* entropy not ready */
    r[0] = (uint64_t)rc->started_ms * 1000003u ^ (uint64_t)getpid() << 32, r[1] = (uint64_t)rc;
  snprintf(rc->run_id, sizeof rc->run_id, "%016llx%08llx", (unsigned long long)r[0],
           (unsigned long long)(r[1] & 0xffffffffu));
  if (gethostname(rc->host, sizeof rc->host) != 0) snprintf(rc->host, sizeof rc->host, "unknown");
  rc->host[sizeof rc->host - 1] = '\0';
  const char *sf = rc->o->report_session;
  FILE *f = sf && *sf ? fopen(sf, "r") : NULL;
  if (f) {
    if (fgets(rc->session, sizeof rc->session, f)) rc->session[strcspn(rc->session, " \t\r\n")] = '\0';
    else rc->session[0] = '\0';
    fclose(f);
  }
}

/* The op a directory is named for (DIR, or DIR/eval in the pypto layout): its real
 * path's last component, when that is a valid op name; "" otherwise. */
static void op_name_of_dir(const char *dir, char *out, size_t size) {
  out[0] = '\0';
  char *real = realpath(dir, NULL);
  if (!real) return;
  size_t n = strlen(real);
  char *base = strrchr(real, '/');
  if (base && strcmp(base, "/eval") == 0 && base != real) {
    *base = '\0';
    base = strrchr(real, '/');
  }
  const char *name = base ? base + 1 : real;
  int ok = *name && strlen(name) < size && n > 0;
  for (const char *c = name; ok && *c; c++)
    ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.';
  if (ok) snprintf(out, size, "%s", name);
  free(real);
}

/* The op a contract names, for a run refused before it loaded it (the impl was
 * refused first): "" when it cannot be read. Its findings are not this refusal's. */
static void contract_op(const struct pg__run *rc, char *out, size_t size) {
  const struct pg_run_opts *o = rc->o;
  char cp[4096], sp[4096];
  struct pg_error e;
  struct pg_diags d;
  struct pg_contract c;
  pg_diags_init(&d);
  pg_contract_init(&c);
  if ((o->op_dir || o->contract_path) &&
      pg_op_paths_resolve(o->op_dir, o->contract_path, o->suite_path, cp, sizeof cp, sp,
                          sizeof sp, &e) == PG_OK &&
      pg_contract_load(cp, &c, &d, &e) == PG_OK && c.op)
    snprintf(out, size, "%s", c.op);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
}

/* A refused run (exit 2 before any case) still replaces the phase's verdict: a report
 * with status ERROR, its category and findings, when the op and the phase are known
 * (from the contract, else the op directory's name, and --up-to-module). */
static void persist_refusal(struct pg__run *rc, const struct pg_diags *diags,
                            const struct pg_error *why, struct pg_run_summary *s) {
  const struct pg_run_opts *o = rc->o;
  int k = rc->k ? rc->k : o->up_to_module;
  char op[256] = "";
  if (rc->contract.op) snprintf(op, sizeof op, "%s", rc->contract.op);
  else contract_op(rc, op, sizeof op);
  if (!op[0] && o->op_dir) op_name_of_dir(o->op_dir, op, sizeof op);
  if (!o->hooks.persist || k < 1 || (!op[0] && !o->report_path) || rc->report_unwritable) return;
  char *path = s->report_path ? pg_strdup(s->report_path) : report_path_for(rc, op, k);
  if (!path) return;
  /* a file the user named goes where its directory already is: a refusal never grows a
   * tree for it (a mistyped --report), nor writes over a directory */
  char *dir = o->report_path ? pg_strdup(path) : NULL;
  if (dir && strrchr(dir, '/')) *strrchr(dir, '/') = '\0';
  int bad = o->report_path && (!dir || pg_is_dir(path) ||
                               (strchr(path, '/') && !pg_is_dir(dir)));
  free(dir);
  if (bad) {
    free(path);
    return;
  }
  fill_phase(rc, op[0] ? op : "unknown", k);
  rc->phase.refusal = why->message[0] ? why->message : "refused";
  rc->phase.refusal_category = pg_category_name(pg__classify_refusal(rc->stage));
  rc->phase.findings = diags;
  rc->phase.ended_ms = pg_wall_ms();
  struct pg_error we;
  pg_error_clear(&we);
  if (o->hooks.persist(path, &rc->phase, NULL, 0, &we) != PG_OK)
    pg__line(rc, 1, "phasegate: warning: the refused run's report was not written: %s",
             we.message);
  free(s->report_path);
  s->report_path = path;
}

/* Every selected case, serially or in --jobs workers, persisted; then the summary. */
static void run_cases(struct pg__run *rc, const int *sel, int n_sel, struct pg_run_summary *s,
                      struct pg_case_result *results) {
  const struct pg_run_opts *o = rc->o;
  fill_phase(rc, rc->contract.op, rc->k);
  struct pg_error re;
  pg_error_clear(&re);
  int wrote = PG_OK;
  if (o->strength_policy == PG_STRENGTH_ONLY) { /* the cache is the result: no report */
    for (int i = 0; i < n_sel; i++) pg__run_case(rc, &rc->suite.cases[sel[i]], &results[i]);
    pg__classify_strength_run(s, results, n_sel);
    return;
  }
  if (o->jobs > 1 && n_sel > 1 && !rc->not_implemented) {
    pg__blas_preload_join(rc); /* before forking the workers */
    wrote = pg__run_parallel(rc, sel, n_sel, o->jobs > 64 ? 64 : o->jobs, results, &re);
  } else {
    struct pg_run_progress pr = {0, n_sel * rc->n_modes, 0, 0};
    double t0 = pg_now_ms();
    for (int i = 0; i < n_sel; i++) {
      pg__run_case(rc, &rc->suite.cases[sel[i]], &results[i]);
      if (!o->on_progress) continue;
      const struct pg_case_result *r = &results[i];
      int bad = 0;
      for (int m = 0; m < r->n_modes; m++)
        bad += r->modes[m].status == PG_VERDICT_FAIL || r->modes[m].status == PG_VERDICT_ERROR;
      if (!bad && (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR)) bad = rc->n_modes;
      pr.done += rc->n_modes;
      pr.failed += bad < rc->n_modes ? bad : rc->n_modes;
      pr.elapsed_ms = pg_now_ms() - t0;
      o->on_progress(o->user, &pr);
    }
    if (o->hooks.persist)
      wrote = o->hooks.persist(rc->report_path, &rc->phase, results, n_sel, &re);
  }
  summarize(rc, s, results, n_sel, wrote, &re);
}

int pg_run(const struct pg_run_opts *o, struct pg_run_summary *s, struct pg_error *err) {
  memset(s, 0, sizeof *s);
  s->exit_code = 2;
  s->status = PG_VERDICT_ERROR;
  if (!o->hooks.redact)
    return pg_error_set(err, PG_EINVAL, "pg_run: no redact hook: the information barrier is "
                        "required (pass pg_report_hooks())");
  struct pg__run *rc = calloc(1, sizeof *rc);
  if (!rc) return pg_error_set(err, PG_ENOMEM, "out of memory");
  rc->own = *o;
  rc->o = &rc->own;
  identify(rc);
  /* first, before the probe, BLAS or input threads and any impl process: whatever the
   * impl's processes fork is ended with this run, kill -9 included. Without one (no
   * fork possible) the run goes on: the death signals still cover the direct children. */
  struct pg_error wd_err;
  pg_error_clear(&wd_err);
  (void)pg_impl_watchdog_start(&wd_err);
  pg_contract_init(&rc->contract);
  pg_suite_init(&rc->suite);
  struct pg_diags diags;
  pg_diags_init(&diags);
  struct pg_case_result *results = NULL;
  int *sel = NULL, n_sel = 0;
  int ret = load(rc, s, &diags, err);
  if (ret == PG_OK) ret = configure(rc, err);
  if (ret == PG_OK) {
    rc->stage = PG__STAGE_OP_FILES;
    ret = select_cases(rc, &sel, &n_sel, err);
    if (ret == PG_OK) rc->stage = PG__STAGE_ENVIRONMENT;
  }
  if (ret == PG_OK && o->strength_policy != PG_STRENGTH_ONLY) {
    s->report_path = default_report_path(rc);
    rc->report_path = s->report_path;
    if (!s->report_path) ret = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  if (ret == PG_OK && o->strength_policy != PG_STRENGTH_ONLY)
    ret = check_before_cases(rc, sel, n_sel, err);
  if (ret == PG_OK && !(results = calloc((size_t)n_sel + 1, sizeof *results)))
    ret = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (ret == PG_OK) run_cases(rc, sel, n_sel, s, results);
  pg_impl_check_cancel(&rc->probe); /* a refused run does not wait for the probe */
  pg__blas_preload_join(rc);
  pg_impl_close(&rc->impl);
  pg_py_golden_worker_close(rc->py);
  if (ret != PG_OK) {
    s->exit_code = 2;
    s->status = PG_VERDICT_ERROR;
    if (o->strength_policy != PG_STRENGTH_ONLY) persist_refusal(rc, &diags, err, s);
  }
  for (int i = 0; results && i < n_sel; i++) pg_case_result_reset(&results[i]);
  free(results);
  free(sel);
  pg_diags_reset(&diags);
  if (rc->golden_lib) pg_golden_lib_close(rc->golden_lib);
  free(rc->cache_dir);
  pg_golden_plan_free(rc->plan);
  pg_suite_reset(&rc->suite);
  pg_contract_reset(&rc->contract);
  free(rc->default_impl);
  free(rc);
  return ret;
}
