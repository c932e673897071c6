/* phasegate goldens/ — the golden plan (docs/design.md §5): every golden step of a graph
 * compiled once. Per step: the parse (parse.c), the kernel (with close names when it
 * is unknown), argument and output counts, each tensor argument resolved to the step,
 * primary input or module output it names, and the attributes compiled for the
 * kernel (plan_attrs.c). Problems are recorded with their step, never fatal here:
 * validation reports them all, running a step returns its first.
 *
 * Not here: checking shapes (validate.c), running steps (steps.c), composition
 * (compose.c).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

/* ---------------------------------------------------------------- helpers */

static const struct pg__kernel_source default_ks = {pg_kernel_find, pg_kernel_list};

/* The kernel source, NULL meaning built-in. */
static const struct pg__kernel_source *ks_or_default(const struct pg__kernel_source *ks) {
  return ks ? ks : &default_ks;
}

static void problem_free(struct pg__problem *pr) {
  free(pr->message);
  memset(pr, 0, sizeof *pr);
}

const char *pg__strip_op(const char *msg, const char *op) {
  size_t n = strlen(op);
  if (strncmp(msg, op, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') return msg + n + 2;
  return msg;
}

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int sub = prev + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
      row[j] = sub < best ? sub : best;
      prev = cur;
    }
  }
  return row[lb];
}

/* Writes ", did you mean 'x', 'y'?" (close kernel names) or a short list into buf. */
static void suggest_ops(const struct pg__kernel_source *ks, const char *name, char *buf,
                        size_t size) {
  const struct pg_kernel_def *const *defs = NULL;
  int n = ks->list ? ks->list(&defs) : 0;
  size_t used = 0;
  int found = 0;
  buf[0] = '\0';
  size_t nl = strlen(name);
  for (int i = 0; i < n && defs; i++) {
    const char *k = defs[i]->name;
    int d = edit_distance(name, k);
    int close = d <= 2 || (nl >= 3 && strstr(k, name) != NULL) ||
                (strlen(k) >= 4 && strstr(name, k) != NULL);
    if (!close) continue;
    int w = snprintf(buf + used, size - used, "%s'%s'", found ? ", " : "; did you mean ", k);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
    found++;
  }
  if (found) {
    snprintf(buf + used, size - used, "?");
    return;
  }
  if (n == 0) {
    snprintf(buf, size, "; the kernel table is empty");
    return;
  }
  used = (size_t)snprintf(buf, size, "; known ops:");
  for (int i = 0; i < n && defs && used < size; i++) {
    int w = snprintf(buf + used, size - used, " %s", defs[i]->name);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
  }
}

/* ---------------------------------------------------------------- resolution */

static int primary_index(const struct pg_op_graph *g, const char *name) {
  for (int i = g->n_primary - 1; i >= 0; i--)
    if (g->primary_inputs[i].name && strcmp(g->primary_inputs[i].name, name) == 0) return i;
  return -1;
}

static int module_declares(const struct pg_op_graph *g, int id, const char *name) {
  const struct pg_module *m = pg_graph_module(g, id);
  for (int i = 0; m && i < m->n_outputs; i++)
    if (m->outputs[i].name && strcmp(m->outputs[i].name, name) == 0) return 1;
  return 0;
}

static int step_defines(const struct pg__pstep *ps, const char *name) {
  if (ps->problem[PG__P_PARSE].code) return 0; /* a step that does not parse defines nothing */
  for (int o = 0; o < ps->pub.n_outputs; o++)
    if (strcmp(ps->pub.outputs[o], name) == 0) return 1;
  return 0;
}

/* Where `name` comes from for step s of sp (steps 0..s-1 compiled): the latest earlier
 * step defining it, sp->m's declared input of that name through its source, a primary
 * input, the latest earlier module's output. The op level (sp->m NULL) sees its steps
 * and the primary inputs. */
static struct pg_golden_source resolve(const struct pg_op_graph *g, const struct pg__pspec *sp,
                                       int s, const char *name) {
  for (int j = s - 1; j >= 0; j--)
    if (step_defines(&sp->steps[j], name)) return (struct pg_golden_source){PG_GOLDEN_SRC_STEP, j};
  const struct pg_module *m = sp->m;
  for (int i = 0; m && i < m->n_inputs; i++) {
    const struct pg_tensor_decl *d = &m->inputs[i];
    if (!d->name || strcmp(d->name, name) != 0) continue;
    int p = d->source_module == 0 ? primary_index(g, name) : -1;
    if (p >= 0) return (struct pg_golden_source){PG_GOLDEN_SRC_PRIMARY, p};
    if (d->source_module > 0 && d->source_module < m->id &&
        module_declares(g, d->source_module, name))
      return (struct pg_golden_source){PG_GOLDEN_SRC_MODULE, d->source_module};
  }
  int p = primary_index(g, name);
  if (p >= 0) return (struct pg_golden_source){PG_GOLDEN_SRC_PRIMARY, p};
  for (int j = m ? m->id - 1 : 0; j >= 1; j--)
    if (module_declares(g, j, name)) return (struct pg_golden_source){PG_GOLDEN_SRC_MODULE, j};
  return (struct pg_golden_source){PG_GOLDEN_SRC_NONE, 0};
}

/* ---------------------------------------------------------------- one step */

/* Copies n names (rows of PG_NAME_MAX) to *p, advancing it; dst[i] points to each. */
static void copy_names(char **p, const char (*names)[PG_NAME_MAX], int n, const char **dst) {
  for (int i = 0; i < n; i++) {
    size_t k = strlen(names[i]) + 1;
    memcpy(*p, names[i], k);
    dst[i] = *p;
    *p += k;
  }
}

/* Copies the names of st into one owned block that ps->pub points into. */
static int keep_names(struct pg__pstep *ps, const struct pg__step *st) {
  size_t n = strlen(st->op) + 1;
  for (int o = 0; o < st->n_outs; o++) n += strlen(st->outs[o]) + 1;
  for (int i = 0; i < st->n_inputs; i++) n += strlen(st->inputs[i]) + 1;
  char *p = ps->names = malloc(n);
  if (!p) return PG_ENOMEM;
  memcpy(p, st->op, strlen(st->op) + 1);
  ps->pub.op = p;
  p += strlen(st->op) + 1;
  ps->pub.n_outputs = st->n_outs;
  copy_names(&p, st->outs, st->n_outs, ps->pub.outputs);
  ps->pub.n_inputs = st->n_inputs;
  copy_names(&p, st->inputs, st->n_inputs, ps->pub.inputs);
  memcpy(ps->out_offsets, st->out_offsets, sizeof ps->out_offsets);
  memcpy(ps->input_offsets, st->input_offsets, sizeof ps->input_offsets);
  ps->op_offset = st->op_offset;
  return PG_OK;
}

/* Records the argument and output count problems of a step whose kernel is known. */
static int check_counts(struct pg__pstep *ps, const struct pg__step *st) {
  const struct pg_kernel_def *def = ps->pub.kernel;
  int rc = PG_OK;
  if (st->n_inputs < def->min_inputs || st->n_inputs > def->max_inputs) {
    if (def->min_inputs == def->max_inputs)
      rc = pg__problem_set(&ps->problem[PG__P_N_IN], PG_EINVAL, st->op_offset,
                           "%s: takes %d tensor argument%s, got %d", def->name,
                           def->min_inputs, def->min_inputs == 1 ? "" : "s", st->n_inputs);
    else
      rc = pg__problem_set(&ps->problem[PG__P_N_IN], PG_EINVAL, st->op_offset,
                           "%s: takes %d to %d tensor arguments, got %d", def->name,
                           def->min_inputs, def->max_inputs, st->n_inputs);
  }
  if (rc == PG_OK && st->n_outs != def->n_outputs)
    rc = pg__problem_set(&ps->problem[PG__P_N_OUT], PG_EINVAL, st->out_offsets[0],
                         "%s: produces %d output%s, the step names %d", def->name,
                         def->n_outputs, def->n_outputs == 1 ? "" : "s", st->n_outs);
  return rc;
}

const struct pg__problem *pg__pstep_problem(const struct pg__pstep *ps) {
  for (int k = 0; k < PG__P_COUNT; k++)
    if (ps->problem[k].code) return &ps->problem[k];
  return NULL;
}

/* pub.problem: the first recorded problem's message. */
static void first_problem(struct pg__pstep *ps) {
  const struct pg__problem *pr = pg__pstep_problem(ps);
  ps->pub.problem = pr ? pr->message : NULL;
}

static int compile_step(const struct pg_op_graph *g, const struct pg__kernel_source *ks,
                        struct pg__pspec *sp, int s) {
  struct pg__pstep *ps = &sp->steps[s];
  const struct pg_golden_step *gs = &sp->g->steps[s];
  ps->src = gs;
  ps->pub.text = gs->text ? gs->text : "";
  ps->pub.mark = gs->mark;
  struct pg__step st;
  struct pg_error e;
  pg_error_clear(&e);
  int prc = pg__step_parse(gs->text, &st, &e);
  PG_RETURN_IF_ERROR(keep_names(ps, &st)); /* on a parse error: what was read before it */
  int rc = PG_OK;
  ps->pub.parsed = prc == PG_OK;
  if (prc != PG_OK) {
    rc = pg__problem_set(&ps->problem[PG__P_PARSE], prc, e.column > 0 ? e.column - 1 : 0, "%s",
                         e.message);
    first_problem(ps);
    return rc;
  }
  ps->pub.kernel = ks->find(st.op);
  if (!ps->pub.kernel) {
    char hint[768];
    suggest_ops(ks, st.op, hint, sizeof hint);
    rc = pg__problem_set(&ps->problem[PG__P_OP], PG_ENOTFOUND, st.op_offset, "unknown op '%s'%s",
                         st.op, hint);
  } else {
    rc = check_counts(ps, &st);
  }
  for (int i = 0; rc == PG_OK && i < st.n_inputs; i++) {
    ps->pub.sources[i] = resolve(g, sp, s, st.inputs[i]);
    if (ps->pub.sources[i].kind == PG_GOLDEN_SRC_NONE && !ps->problem[PG__P_INPUT].code)
      rc = pg__problem_set(&ps->problem[PG__P_INPUT], PG_ENOTFOUND, st.input_offsets[i],
                           PG__UNKNOWN_TENSOR_FMT, st.inputs[i]);
  }
  if (rc == PG_OK) rc = pg__pstep_compile_attrs(ps, &st);
  first_problem(ps);
  return rc;
}

static void pstep_reset(struct pg__pstep *ps) {
  for (int k = 0; k < PG__P_COUNT; k++) problem_free(&ps->problem[k]);
  pg__pstep_free_attrs(ps);
  free(ps->names);
  memset(ps, 0, sizeof *ps);
}

/* ---------------------------------------------------------------- a module's golden */

void pg__pspec_reset(struct pg__pspec *sp) {
  if (!sp) return;
  for (int s = 0; s < sp->n_steps; s++) pstep_reset(&sp->steps[s]);
  free(sp->steps);
  free(sp->inputs);
  memset(sp, 0, sizeof *sp);
}

int pg__pspec_build(const struct pg_op_graph *graph, const struct pg__kernel_source *ks,
                    const struct pg_module *m, const struct pg_golden_spec *g,
                    struct pg__pspec *out, struct pg_error *err) {
  memset(out, 0, sizeof *out);
  out->m = m;
  out->g = g;
  ks = ks_or_default(ks);
  int rc = PG_OK;
  if (m && m->n_inputs > 0) {
    out->inputs = calloc((size_t)m->n_inputs, sizeof *out->inputs);
    if (!out->inputs) rc = PG_ENOMEM;
    for (int i = 0; rc == PG_OK && i < m->n_inputs; i++)
      out->inputs[i] = resolve(graph, out, 0, m->inputs[i].name ? m->inputs[i].name : "");
  }
  if (rc == PG_OK && g->kind == PG_GOLDEN_STEPS && g->n_steps > 0) {
    out->steps = calloc((size_t)g->n_steps, sizeof *out->steps);
    if (!out->steps) rc = PG_ENOMEM;
    for (int s = 0; rc == PG_OK && s < g->n_steps; s++) {
      out->n_steps = s + 1;
      rc = compile_step(graph, ks, out, s);
    }
  }
  if (rc != PG_OK) {
    pg__pspec_reset(out);
    return pg_error_set(err, rc, "out of memory compiling golden steps");
  }
  return PG_OK;
}

/* ---------------------------------------------------------------- the plan */

int pg__golden_plan_build_ks(const struct pg_op_graph *g, const struct pg__kernel_source *ks,
                             struct pg_golden_plan **out, struct pg_error *err) {
  *out = NULL;
  if (!g) return pg_error_set(err, PG_EINVAL, "golden plan: no graph");
  struct pg_golden_plan *p = calloc(1, sizeof *p);
  if (p && g->n_modules > 0) p->mods = calloc((size_t)g->n_modules, sizeof *p->mods);
  if (!p || (g->n_modules > 0 && !p->mods)) {
    free(p);
    return pg_error_set(err, PG_ENOMEM, "out of memory building the golden plan");
  }
  p->graph = g;
  p->ks = ks_or_default(ks);
  int rc = PG_OK;
  for (int i = 0; rc == PG_OK && i < g->n_modules; i++)
    rc = pg__pspec_build(g, p->ks, &g->modules[i], &g->modules[i].golden, &p->mods[i], err);
  if (rc == PG_OK) rc = pg__pspec_build(g, p->ks, NULL, &g->op_golden, &p->op, err);
  if (rc != PG_OK) {
    pg_golden_plan_free(p);
    return rc;
  }
  *out = p;
  return PG_OK;
}

int pg_golden_plan_build(const struct pg_op_graph *g, struct pg_golden_plan **out,
                         struct pg_error *err) {
  return pg__golden_plan_build_ks(g, NULL, out, err);
}

void pg_golden_plan_free(struct pg_golden_plan *p) {
  if (!p) return;
  for (int i = 0; p->mods && i < p->graph->n_modules; i++) pg__pspec_reset(&p->mods[i]);
  pg__pspec_reset(&p->op);
  free(p->mods);
  free(p);
}

const struct pg_op_graph *pg_golden_plan_graph(const struct pg_golden_plan *p) {
  return p ? p->graph : NULL;
}

const struct pg__pspec *pg__plan_spec(const struct pg_golden_plan *p, int module_id) {
  if (!p) return NULL;
  if (module_id == 0) return &p->op;
  for (int i = 0; i < p->graph->n_modules; i++)
    if (p->graph->modules[i].id == module_id) return &p->mods[i];
  return NULL;
}

/* ---------------------------------------------------------------- queries */

int pg_golden_plan_n_steps(const struct pg_golden_plan *p, int module_id) {
  const struct pg__pspec *sp = pg__plan_spec(p, module_id);
  return sp ? sp->n_steps : -1;
}

const struct pg_golden_plan_step *pg_golden_plan_step(const struct pg_golden_plan *p,
                                                      int module_id, int s) {
  const struct pg__pspec *sp = pg__plan_spec(p, module_id);
  return sp && s >= 0 && s < sp->n_steps ? &sp->steps[s].pub : NULL;
}

int pg_golden_plan_find(const struct pg_golden_plan *p, const char *tensor, int *module_id,
                        int *step) {
  for (int i = 0; p && tensor && i < p->graph->n_modules; i++)
    for (int s = 0; s < p->mods[i].n_steps; s++) {
      const struct pg_golden_plan_step *ps = &p->mods[i].steps[s].pub;
      for (int o = 0; o < ps->n_outputs; o++)
        if (strcmp(ps->outputs[o], tensor) == 0) {
          if (module_id) *module_id = p->graph->modules[i].id;
          if (step) *step = s;
          return 1;
        }
    }
  return 0;
}

static int spec_uses(const struct pg__pspec *sp, const char *kernel) {
  for (int s = 0; s < sp->n_steps; s++)
    if (sp->steps[s].pub.kernel && strcmp(sp->steps[s].pub.kernel->name, kernel) == 0) return 1;
  return 0;
}

int pg_golden_plan_uses_kernel(const struct pg_golden_plan *p, int k, const char *kernel) {
  if (!p || !kernel) return 0;
  for (int i = 0; i < p->graph->n_modules; i++)
    if ((k <= 0 || p->graph->modules[i].id <= k) && spec_uses(&p->mods[i], kernel)) return 1;
  return k <= 0 && spec_uses(&p->op, kernel);
}

int pg_golden_plan_step_attrs(const struct pg_golden_plan *p, int module_id, int s,
                              const struct pg_bindings *dims,
                              struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS], int *n_attrs,
                              struct pg_error *err) {
  const struct pg__pspec *sp = pg__plan_spec(p, module_id);
  if (!sp || s < 0 || s >= sp->n_steps)
    return pg_error_set(err, PG_EINVAL, "golden plan: module %d has no step %d", module_id, s);
  const struct pg__pstep *ps = &sp->steps[s];
  if (!ps->pub.kernel) return pg_error_set(err, PG_EINVAL, "%s", ps->pub.problem);
  for (int k = PG__P_SYNTAX; k <= PG__P_ATTRS; k++)
    if (ps->problem[k].code)
      return pg_error_set(err, ps->problem[k].code, "%s", ps->problem[k].message);
  int offset = 0;
  PG_RETURN_IF_ERROR(pg__pstep_eval_attrs(ps, dims, attrs, &offset, NULL, err));
  if (n_attrs) *n_attrs = ps->n_attrs;
  return PG_OK;
}
