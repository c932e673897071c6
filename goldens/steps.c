/* phasegate goldens/ — running a module's compiled golden steps (docs/design.md §5) over the
 * named-tensor table: each step's recorded problem, if any, becomes the error (at its
 * file:line:col, tagged "(golden)"); otherwise its arguments are looked up where the
 * plan resolved them, its attributes evaluated under the bound dims, its outputs
 * inferred and allocated (or, for a few single-input kernels, written over an input
 * nothing reads afterwards) and the kernel run.
 *
 * Not here: parsing and resolving the steps (parse.c, plan.c), composition across
 * modules and dtype rounding (compose.c).
 */
#include <stdio.h>
#include <string.h>

#include "golden_private.h"

int pg__pspec_reads(const struct pg__pspec *ps, int s, const char *name) {
  for (int j = s + 1; ps && j < ps->n_steps; j++) {
    const struct pg__pstep *st = &ps->steps[j];
    if (st->problem[PG__P_PARSE].code) return 1;
    for (int i = 0; i < st->pub.n_inputs; i++)
      if (strcmp(st->pub.inputs[i], name) == 0) return 1;
  }
  return 0;
}

/* Built-in kernels that may write their output over their single input: each output
 * element (softmax: each line) is computed from input values read before it is
 * written, in disjoint ranges per thread. (identity is not: memcpy onto itself.) */
static int in_place_kernel(const struct pg_kernel_def *def) {
  static const char *const names[] = {"abs",  "cast", "exp",  "gelu",  "log",     "log_softmax",
                                      "neg",  "relu", "rsqrt", "scale", "sigmoid", "silu",
                                      "softmax", "sqrt", "tanh"};
  if (def->max_inputs != 1 || def->n_outputs != 1 || def != pg_kernel_find(def->name)) return 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(def->name, names[i]) == 0) return 1;
  return 0;
}

/* The input whose buffer step s may take over for its output, or NULL: an owned
 * buffer of the output's dtype and size that nothing reads afterwards (no later step
 * of this module, no later module of the phase, not a boundary output, not a local
 * that becomes one of this module's outputs). Saves a fresh buffer (its page faults
 * or population) and keeps the data in cache. */
static struct pg__gtensor *in_place_source(const struct pg__run_ctx *rc,
                                           const struct pg__pspec *sp, int s,
                                           struct pg__gtensor *src,
                                           const struct pg_tensor_meta *om) {
  const struct pg_module *m = sp->m;
  if (!rc->read_later || !m || !src || !src->t.owned || !in_place_kernel(sp->steps[s].pub.kernel))
    return NULL;
  if (src->t.dtype != om->dtype || src->t.dl.ndim != om->ndim) return NULL;
  for (int a = 0; a < om->ndim; a++)
    if (src->t.shape[a] != om->shape[a]) return NULL;
  if (pg__pspec_reads(sp, s, src->name)) return NULL;
  if (src->module == -1) {
    for (int o = 0; o < m->n_outputs; o++)
      if (m->outputs[o].name && strcmp(m->outputs[o].name, src->name) == 0) return NULL;
    for (int p = 0; p < rc->n_keep; p++)
      if (strcmp(rc->keep[p], src->name) == 0) return NULL;
    return src;
  }
  return rc->read_later(rc->live, src, m->id) ? NULL : src;
}

/* The step's error at its position: "<file>:<line>:<col>: error: <message> (golden)". */
static int step_error(const struct pg__run_ctx *rc, const struct pg__pstep *ps, int code,
                      int offset, const char *message, struct pg_error *err) {
  const char *path = rc->graph && rc->graph->path ? rc->graph->path : "<contract>";
  int col0 = ps->src->mark.column > 0 ? ps->src->mark.column : 1;
  return pg_error_set_at(err, code, path, ps->src->mark.line, col0 + offset, "%s (golden)",
                         message);
}

/* A kernel's failure at the step's op: "<op>: <kernel message> (golden)". */
static int kernel_error(const struct pg__run_ctx *rc, const struct pg__pstep *ps, int code,
                        int offset, const struct pg_error *e, struct pg_error *err) {
  const char *op = ps->pub.kernel->name;
  char msg[PG_ERROR_MESSAGE_MAX];
  snprintf(msg, sizeof msg, "%s: %s", op, pg__strip_op(e->message, op));
  return step_error(rc, ps, code, offset, msg, err);
}

/* The first problem the plan recorded for the step, as an error; PG_OK when none. */
static int recorded_problem(const struct pg__run_ctx *rc, const struct pg__pstep *ps,
                            struct pg_error *err) {
  const struct pg__problem *pr = pg__pstep_problem(ps);
  return pr ? step_error(rc, ps, pr->code, pr->offset, pr->message, err) : PG_OK;
}

/* The step's inputs from tab, their metas, and its attributes under the dims. */
static int gather_args(const struct pg__run_ctx *rc, const struct pg__pstep *ps,
                       struct pg__gtable *tab, struct pg_kernel_args *args,
                       struct pg_tensor_meta *in_meta, struct pg__gtensor **src0,
                       struct pg_error *err) {
  memset(args, 0, sizeof *args);
  args->n_inputs = ps->pub.n_inputs;
  args->n_threads = rc->n_threads;
  *src0 = NULL;
  for (int i = 0; i < ps->pub.n_inputs; i++) {
    struct pg__gtensor *t = pg__gtable_source(tab, &ps->pub.sources[i], ps->pub.inputs[i]);
    if (i == 0) *src0 = t;
    if (!t || !t->t.dl.data) {
      char msg[PG_NAME_MAX + 32];
      snprintf(msg, sizeof msg, "unknown tensor '%s'", ps->pub.inputs[i]);
      return step_error(rc, ps, PG_ENOTFOUND, ps->input_offsets[i], msg, err);
    }
    args->inputs[i] = &t->t;
    in_meta[i].dtype = t->t.dtype;
    in_meta[i].ndim = t->t.dl.ndim;
    for (int a = 0; a < t->t.dl.ndim; a++) in_meta[i].shape[a] = t->t.shape[a];
  }
  struct pg_error e;
  pg_error_clear(&e);
  int offset = 0;
  int r = pg__pstep_eval_attrs(ps, rc->dims, args->attrs, &offset, NULL, &e);
  if (r != PG_OK) return step_error(rc, ps, r, offset, e.message, err);
  args->n_attrs = ps->n_attrs;
  return PG_OK;
}

/* Adds the step's outputs to tab, each with a fresh (pooled) buffer or, when `same`
 * is set, taking over that input's buffer (its entry keeps reading it through args
 * until the kernel ran). */
static int make_outputs(const struct pg__run_ctx *rc, const struct pg__pstep *ps,
                        struct pg__gtable *tab, const struct pg_tensor_meta *out_meta,
                        struct pg__gtensor *same, struct pg_tensor **outs,
                        struct pg_error *err) {
  for (int o = 0; o < ps->pub.n_outputs; o++) {
    struct pg__gtensor *t;
    PG_RETURN_IF_ERROR(pg__gtable_add(tab, ps->pub.outputs[o], -1, &t, err));
    pg_tensor_set_name(&t->t, ps->pub.outputs[o]);
    struct pg_error e;
    pg_error_clear(&e);
    int r;
    const struct pg_tensor_meta *om = &out_meta[o];
    if (same) {
      r = pg_tensor_describe(&t->t, om->dtype, om->ndim, om->shape, &e);
      if (r == PG_OK) {
        t->t.owned = same->t.owned;
        t->t.release = same->t.release;
        t->t.release_ctx = same->t.release_ctx;
        t->t.dl.data = same->t.dl.data;
        same->t.owned = NULL;
        same->t.release = NULL;
        same->t.release_ctx = NULL;
      }
    } else {
      r = pg__golden_alloc_from(rc->pool, &t->t, om->dtype, om->ndim, om->shape, &e);
    }
    if (r != PG_OK) return kernel_error(rc, ps, r, ps->out_offsets[o], &e, err);
    t->meta = *om;
    t->known = 1;
    outs[o] = &t->t;
  }
  return PG_OK;
}

/* A step under a mutation: never in place (the prefix's tensors are shared by every
 * mutant); a mutation whose shapes no longer fit is "does not apply" (PG_ENOTSUP). */
static int mutated_step(const struct pg__run_ctx *rc, const struct pg__pspec *sp, int s,
                        struct pg__gtable *tab, struct pg_kernel_args *args,
                        const struct pg_tensor_meta *in_meta, int override,
                        struct pg_error *err) {
  const struct pg__pstep *ps = &sp->steps[s];
  const struct pg_kernel_def *def = ps->pub.kernel;
  struct pg_tensor_meta out_meta[PG_KERNEL_MAX_OUTPUTS];
  memset(out_meta, 0, sizeof out_meta);
  struct pg_error e;
  pg_error_clear(&e);
  if (!def->infer || def->infer(in_meta, ps->pub.n_inputs, args->attrs, out_meta, &e) != PG_OK)
    return pg_error_set(err, PG_ENOTSUP, "mutation does not fit the shapes of %s", def->name);
  struct pg_tensor *outs[PG_KERNEL_MAX_OUTPUTS];
  PG_RETURN_IF_ERROR(make_outputs(rc, ps, tab, out_meta, NULL, outs, err));
  int r = override ? pg__mutation_run(rc->mut, args, outs, &e) : def->run(args, outs, &e);
  if (r == PG_ENOTSUP) return pg_error_set(err, r, "%s", e.message);
  return r == PG_OK ? PG_OK : kernel_error(rc, ps, r, ps->op_offset, &e, err);
}

static int run_step(const struct pg__run_ctx *rc, const struct pg__pspec *sp, int s,
                    struct pg__gtable *tab, struct pg_error *err) {
  const struct pg__pstep *ps = &sp->steps[s];
  PG_RETURN_IF_ERROR(recorded_problem(rc, ps, err));
  const struct pg_kernel_def *def = ps->pub.kernel;
  struct pg_kernel_args args;
  struct pg_tensor_meta in_meta[PG_KERNEL_MAX_INPUTS], out_meta[PG_KERNEL_MAX_OUTPUTS];
  struct pg__gtensor *src0;
  PG_RETURN_IF_ERROR(gather_args(rc, ps, tab, &args, in_meta, &src0, err));
  const struct pg_golden_mutation *mu = rc->mut;
  if (mu && (mu->module_id != (sp->m ? sp->m->id : 0) || mu->step != s)) mu = NULL;
  struct pg_tensor tmp[PG_KERNEL_MAX_INPUTS];
  int override = 0;
  if (mu) {
    for (int i = 0; i < PG_KERNEL_MAX_INPUTS; i++) pg_tensor_init(&tmp[i]);
    int r = pg__mutation_apply(mu, ps, &args, tmp, &override, err);
    if (r == PG_OK) r = mutated_step(rc, sp, s, tab, &args, in_meta, override, err);
    for (int i = 0; i < PG_KERNEL_MAX_INPUTS; i++) pg_tensor_reset(&tmp[i]);
    return r;
  }
  memset(out_meta, 0, sizeof out_meta);
  struct pg_error e;
  pg_error_clear(&e);
  int r = def->infer ? def->infer(in_meta, ps->pub.n_inputs, args.attrs, out_meta, &e)
                     : pg_error_set(&e, PG_EINTERNAL, "kernel has no infer function");
  if (r != PG_OK) return kernel_error(rc, ps, r, ps->op_offset, &e, err);
  struct pg_tensor *outs[PG_KERNEL_MAX_OUTPUTS];
  struct pg__gtensor *same = in_place_source(rc, sp, s, src0, &out_meta[0]);
  PG_RETURN_IF_ERROR(make_outputs(rc, ps, tab, out_meta, same, outs, err));
  pg_error_clear(&e);
  r = def->run(&args, outs, &e);
  if (same) same->t.dl.data = NULL; /* its buffer is the output's now */
  return r == PG_OK ? PG_OK : kernel_error(rc, ps, r, ps->op_offset, &e, err);
}

int pg__steps_run(const struct pg__run_ctx *rc, const struct pg__pspec *sp,
                  struct pg__gtable *tab, struct pg_error *err) {
  for (int s = 0; s < sp->n_steps; s++) PG_RETURN_IF_ERROR(run_step(rc, sp, s, tab, err));
  return PG_OK;
}
