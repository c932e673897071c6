/* phasegate goldens/ — counterfactual goldens (docs/design.md §8 "Hints", "Suite strength"):
 * the bug hypotheses that apply to a module's built-in steps (pg_golden_mutations) and
 * how one is applied when that step runs (pg__mutation_apply, called by steps.c): an
 * attribute flipped, scaled or moved to another axis, inputs rounded to a narrower
 * float, the last K tile of a matmul or the last block of a softmax's axis dropped (a
 * loop that stops one tile early), or the matmul recomputed with another summation
 * order / accumulator, bf16 chunked ones included (pg__mutation_run).
 *
 * Not here: running the mutant golden over a shared prefix (compose.c), judging it
 * against the impl or the reference (runner/run/diagnose.c, classify.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "f16_bulk.h"
#include "golden_private.h"
#include "kernels_internal.h"

/* ---------------------------------------------------------------- enumeration */

struct mlist {
  struct pg_golden_mutation *out;
  int n, max, module_id, step;
};

#if defined(__GNUC__)
__attribute__((format(printf, 7, 8)))
#endif
static struct pg_golden_mutation *add(struct mlist *l, enum pg_golden_mutation_kind kind,
                                      enum pg_mutation_family fam, int attr, double param,
                                      int64_t iparam, const char *fmt, ...) {
  if (l->n >= l->max) return NULL;
  struct pg_golden_mutation *m = &l->out[l->n++];
  memset(m, 0, sizeof *m);
  m->module_id = l->module_id;
  m->step = l->step;
  m->kind = kind;
  m->family = fam;
  m->attr = attr;
  m->param = param;
  m->iparam = iparam;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->detail, sizeof m->detail, fmt, ap);
  va_end(ap);
  return m;
}

static int is_one_of(const char *name, const char *const *names) {
  for (; *names; names++)
    if (strcmp(name, *names) == 0) return 1;
  return 0;
}

/* Tile sizes whose dropped last tile is a hypothesis (8..256), in the order a hint
 * names them: two tiles that drop the same elements are one mutant, named by the
 * first (powers of two first, largest first: K = 40 missing its last 8 is "tile 32"). */
static const int k_tiles[] = {256, 128, 64, 32, 16, 8, 192, 96, 48};
/* K chunks of a chunked low-precision accumulator, and the KV blocks of an attention
 * loop over a softmax axis (docs/diagnosis.md "Counterfactual goldens"). */
static const int k_chunks[] = {16, 32, 64, 128};
static const int k_blocks[] = {256, 128, 64, 32, 16};

static void matmul_mutations(struct mlist *l, const struct pg_kernel_def *def,
                             const struct pg_attr_value *attrs, int alpha_expr, int s) {
  int ta = pg_kernel_attr_index(def, "trans_a"), tb = pg_kernel_attr_index(def, "trans_b");
  int al = pg_kernel_attr_index(def, "alpha");
  add(l, PG_MUT_FLIP_BOOL, PG_MUTF_TRANSPOSED, ta, 0, 0, "step %d matmul: trans_a flipped", s + 1);
  add(l, PG_MUT_FLIP_BOOL, PG_MUTF_TRANSPOSED, tb, 0, 0, "step %d matmul: trans_b flipped", s + 1);
  double alpha = attrs && attrs[al].type == PG_ATTR_FLOAT ? attrs[al].f : 1.0;
  if (alpha_expr) { /* alpha=1/sqrt(D): its value is known only when the step runs */
    add(l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, al, 0.0, 1,
        "step %d matmul: alpha missing (factor 1/alpha)", s + 1);
    add(l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, al, 0.0, 2,
        "step %d matmul: alpha applied twice (factor alpha)", s + 1);
  } else if (alpha != 1.0 && alpha != 0.0) {
    add(l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, al, 1.0 / alpha, 0,
        "step %d matmul: alpha missing (factor 1/alpha)", s + 1);
    add(l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, al, alpha, 0,
        "step %d matmul: alpha applied twice (factor alpha)", s + 1);
  }
  add(l, PG_MUT_ROUND_INPUTS, PG_MUTF_LOW_PRECISION_INPUTS, -1, 0, PG_DTYPE_F16,
      "step %d matmul: inputs rounded to fp16", s + 1);
  add(l, PG_MUT_ROUND_INPUTS, PG_MUTF_LOW_PRECISION_INPUTS, -1, 0, PG_DTYPE_BF16,
      "step %d matmul: inputs rounded to bf16", s + 1);
  add(l, PG_MUT_ROUND_INPUTS, PG_MUTF_LOW_PRECISION_INPUTS, -1, 0, 0,
      "step %d matmul: inputs rounded to tf32", s + 1);
  for (size_t t = 0; t < sizeof k_tiles / sizeof k_tiles[0]; t++)
    add(l, PG_MUT_TAIL_DROP, PG_MUTF_TAIL_DROPPED, -1, 0, k_tiles[t],
        "step %d matmul: last K tile dropped, the K loop stops one tile early (tile %d)",
        s + 1, k_tiles[t]);
  add(l, PG_MUT_ACCUMULATE, PG_MUTF_LOW_PRECISION_ACCUMULATION, -1, 0, PG_SUM_FP16_ACC,
      "step %d matmul: fp16 accumulation", s + 1);
  add(l, PG_MUT_ACCUMULATE, PG_MUTF_LOW_PRECISION_ACCUMULATION, -1, 0, PG_SUM_BF16_ACC,
      "step %d matmul: bf16 accumulation", s + 1);
  for (size_t t = 0; t < sizeof k_chunks / sizeof k_chunks[0]; t++)
    add(l, PG_MUT_ACCUMULATE, PG_MUTF_LOW_PRECISION_ACCUMULATION, -1, k_chunks[t],
        PG_SUM_BF16_CHUNK_ACC,
        "step %d matmul: bf16 accumulator, rounded after each K chunk of %d", s + 1,
        k_chunks[t]);
}

/* The kernels whose exp a fast approximation would replace (0: none). */
enum { FE_NONE, FE_EXP, FE_SIGMOID, FE_SILU, FE_SOFTMAX };
static int fast_exp_kernel(const char *name) {
  return strcmp(name, "exp") == 0       ? FE_EXP
         : strcmp(name, "sigmoid") == 0 ? FE_SIGMOID
         : strcmp(name, "silu") == 0    ? FE_SILU
         : strcmp(name, "softmax") == 0 ? FE_SOFTMAX
                                        : FE_NONE;
}

/* Whether a step after step s of the module is a matmul. */
static int matmul_after(const struct pg__pspec *sp, int s) {
  for (int t = s + 1; t < sp->n_steps; t++)
    if (sp->steps[t].pub.kernel && strcmp(sp->steps[t].pub.kernel->name, "matmul") == 0) return 1;
  return 0;
}

int pg_golden_mutations(const struct pg_golden_plan *p, int module_id,
                        struct pg_golden_mutation *out, int max) {
  static const char *const axis_ops[] = {"softmax", "log_softmax", "layernorm", "rmsnorm",
                                         "l2norm",  "sum",         "mean",      "max",
                                         "cumsum",  NULL};
  const struct pg__pspec *sp = p ? pg__plan_spec(p, module_id) : NULL;
  struct mlist l = {out, 0, max, module_id, 0};
  for (int s = 0; sp && s < sp->n_steps; s++) {
    const struct pg__pstep *ps = &sp->steps[s];
    const struct pg_kernel_def *def = ps->pub.kernel;
    if (!def || pg__pstep_problem(ps)) continue;
    l.step = s;
    /* the attributes as written where they need no dims (defaults, literals) */
    struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS];
    int na = pg_kernel_attrs_default(def, attrs);
    for (int a = 0; a < na && a < ps->n_attrs; a++)
      if (ps->attr[a].how == PG__ATTR_VALUE) attrs[a] = ps->attr[a].value;
    if (strcmp(def->name, "matmul") == 0) {
      int al = pg_kernel_attr_index(def, "alpha");
      matmul_mutations(&l, def, attrs, al >= 0 && al < ps->n_attrs && ps->attr[al].how == PG__ATTR_EXPR, s);
    } else if (strcmp(def->name, "scale") == 0) {
      add(&l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, 0, 0.0, 1,
          "step %d scale: factor missing (factor 1/factor)", s + 1);
      add(&l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, 0, 0.0, 2,
          "step %d scale: factor applied twice (factor factor)", s + 1);
      add(&l, PG_MUT_SCALE_ATTR, PG_MUTF_SCALED, 0, 0.0, 3,
          "step %d scale: inverse factor (factor 1/factor^2)", s + 1);
    } else if (is_one_of(def->name, axis_ops)) {
      int ax = pg_kernel_attr_index(def, "axis");
      for (int a = 0; a < 4; a++)
        add(&l, PG_MUT_SET_AXIS, PG_MUTF_WRONG_AXIS, ax, 0, a, "step %d %s: over axis %d",
            s + 1, def->name, a);
    } else if (strcmp(def->name, "gelu") == 0) {
      int tanh_now = attrs[0].type == PG_ATTR_STRING && strcmp(attrs[0].s, "tanh") == 0;
      struct pg_golden_mutation *m =
          add(&l, PG_MUT_SET_STRING, PG_MUTF_APPROXIMATION, 0, 0, 0, "step %d gelu: %s", s + 1,
              tanh_now ? "tanh->erf" : "erf->tanh");
      if (m) snprintf(m->sparam, sizeof m->sparam, "%s", tanh_now ? "none" : "tanh");
    }
    /* an attention's KV loop that stops one block early: a softmax a later matmul of
     * the module reads (a lone softmax's row loop would still write the last block) */
    if (strcmp(def->name, "softmax") == 0 && matmul_after(sp, s))
      for (size_t t = 0; t < sizeof k_blocks / sizeof k_blocks[0]; t++)
        add(&l, PG_MUT_TAIL_DROP, PG_MUTF_TAIL_DROPPED, pg_kernel_attr_index(def, "axis"), 0,
            k_blocks[t], "step %d softmax: last block of its axis left out, the loop over "
            "it stops one block early (block %d)", s + 1, k_blocks[t]);
    if (fast_exp_kernel(def->name)) /* softmax has its wrong axes too */
      add(&l, PG_MUT_FAST_EXP, PG_MUTF_APPROXIMATION, pg_kernel_attr_index(def, "axis"), 0,
          fast_exp_kernel(def->name), "step %d %s: fast exp (exponent-bit approximation)",
          s + 1, def->name);
  }
  return l.n;
}

/* ---------------------------------------------------------------- applying one */

/* x rounded to tf32 (10 mantissa bits, nearest even), as tensor cores read fp32. */
static float round_tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  memcpy(&x, &u, 4);
  return x;
}

static int round_copy(struct pg_tensor *dst, const struct pg_tensor *src, int64_t to,
                      struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_tensor_alloc(dst, src->dtype, src->dl.ndim, src->shape, err));
  memcpy(dst->dl.data, src->dl.data, src->nbytes);
  int64_t n = src->numel;
  if (src->dtype == PG_DTYPE_F32) {
    float *p = dst->dl.data;
    if (to == PG_DTYPE_F16) pg__f32_round_f16_n(p, n);
    else if (to == PG_DTYPE_BF16) for (int64_t i = 0; i < n; i++) p[i] = pg_bf16_to_f32(pg_f32_to_bf16(p[i]));
    else for (int64_t i = 0; i < n; i++) p[i] = round_tf32(p[i]);
  } else {
    double *p = dst->dl.data;
    unsigned char tmp[8];
    for (int64_t i = 0; i < n; i++) {
      if (to == 0) {
        p[i] = round_tf32((float)p[i]);
        continue;
      }
      pg_store_f64(tmp, (enum pg_dtype)to, 0, p[i]);
      p[i] = pg_load_f64(tmp, (enum pg_dtype)to, 0);
    }
  }
  return PG_OK;
}

/* Whether a rounded copy holds the same values as its source (NaN equals NaN: a
 * payload that rounding canonicalises is no change). */
static int same_values(const struct pg_tensor *a, const struct pg_tensor *b) {
  if (a->dtype == b->dtype && memcmp(a->dl.data, b->dl.data, a->nbytes) == 0) return 1;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = pg_load_f64(a->dl.data, a->dtype, (size_t)i);
    double y = pg_load_f64(b->dl.data, b->dtype, (size_t)i);
    if (x != y && !(x != x && y != y)) return 0;
  }
  return 1;
}

/* A matmul operand that is 1 x 1 in its last two axes reads the same transposed. */
static int unit_matrix(const struct pg_tensor *t) {
  int nd = t->dl.ndim;
  return nd >= 2 && t->shape[nd - 1] == 1 && t->shape[nd - 2] == 1;
}

/* Whether an earlier tile of `list` drops the same elements of a reduction of K as
 * `tile` does (then that one is the mutant: the same hypothesis runs once). */
static int same_drop_earlier(const int *list, size_t n, int64_t tile, int64_t K) {
  int64_t keep = (K - 1) / tile * tile;
  for (size_t i = 0; i < n && list[i] != tile; i++)
    if (K > list[i] && (K - 1) / list[i] * list[i] == keep) return 1;
  return 0;
}

/* a's copy with its last tile along axis `kax` (partial or full: the loop over it stops
 * one tile early) set to `fill`: 0 drops a matmul's products, -inf a softmax's terms. */
static int tail_drop(const struct pg_tensor *a, int kax, int64_t tile, double fill,
                     struct pg_tensor *dst, struct pg_error *err) {
  int nd = a->dl.ndim;
  int64_t K = a->shape[kax], keep = (K - 1) / tile * tile;
  if (K <= tile || (a->dtype != PG_DTYPE_F32 && a->dtype != PG_DTYPE_F64))
    return pg_error_set(err, PG_ENOTSUP, "a reduction of %lld has no last tile of %lld to drop",
                        (long long)K, (long long)tile);
  PG_RETURN_IF_ERROR(pg_tensor_alloc(dst, a->dtype, nd, a->shape, err));
  memcpy(dst->dl.data, a->dl.data, a->nbytes);
  int64_t inner = pg__prod(a->shape, kax + 1, nd), outer = pg__prod(a->shape, 0, kax);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t f = (o * K + keep) * inner; f < (o + 1) * K * inner; f++)
      pg_store_f64(dst->dl.data, a->dtype, (size_t)f, fill);
  return PG_OK;
}

int pg__mutation_apply(const struct pg_golden_mutation *mut, const struct pg__pstep *ps,
                       struct pg_kernel_args *args, struct pg_tensor *tmp, int *run_override,
                       struct pg_error *err) {
  const struct pg_kernel_def *def = ps->pub.kernel;
  struct pg_attr_value *at = mut->attr >= 0 && mut->attr < args->n_attrs ? &args->attrs[mut->attr] : NULL;
  *run_override = 0;
  switch (mut->kind) {
    case PG_MUT_FLIP_BOOL:
      if (!at) break;
      /* trans_a / trans_b (attrs 0 and 1) of a 1 x 1 operand: the same step */
      if (strcmp(def->name, "matmul") == 0 && mut->attr < 2 && mut->attr < args->n_inputs &&
          unit_matrix(args->inputs[mut->attr]))
        return pg_error_set(err, PG_ENOTSUP, "'%s' changes nothing here", mut->detail);
      at->type = PG_ATTR_BOOL;
      at->b = !at->b;
      return PG_OK;
    case PG_MUT_SCALE_ATTR:
      if (!at) break;
      double was = at->f;
      if (mut->iparam == 0) at->f *= mut->param;      /* a fixed factor (alpha's) */
      else if (mut->iparam == 1) at->f = 1.0;         /* the factor missing */
      else if (mut->iparam == 2) at->f *= at->f;      /* applied twice */
      else at->f = at->f != 0 ? 1.0 / at->f : at->f;  /* inverted */
      if (at->f == was) /* a factor of 1 (or -1 inverted): the same step */
        return pg_error_set(err, PG_ENOTSUP, "'%s' changes nothing here", mut->detail);
      return PG_OK;
    case PG_MUT_SET_AXIS: {
      if (!at || args->n_inputs < 1) break;
      int nd = args->inputs[0]->dl.ndim;
      int64_t cur = at->type ? at->i : def->attrs[mut->attr].default_value.i;
      if (cur < 0) cur += nd;
      if (mut->iparam >= nd || mut->iparam == cur) break;
      at->type = PG_ATTR_INT;
      at->i = mut->iparam;
      return PG_OK;
    }
    case PG_MUT_SET_STRING:
      if (!at) break;
      if (at->type == PG_ATTR_STRING && strcmp(at->s, mut->sparam) == 0)
        return pg_error_set(err, PG_ENOTSUP, "'%s' changes nothing here", mut->detail);
      at->type = PG_ATTR_STRING;
      snprintf(at->s, sizeof at->s, "%s", mut->sparam);
      return PG_OK;
    case PG_MUT_ROUND_INPUTS: {
      /* inputs already in that precision (fp16 data rounded to fp16 or tf32): the
       * rounding is a no-op, the mutant the reference itself, not a hypothesis */
      int changed = 0;
      for (int i = 0; i < args->n_inputs && i < 2; i++) {
        if (!pg_dtype_is_float(args->inputs[i]->dtype)) continue;
        PG_RETURN_IF_ERROR(round_copy(&tmp[i], args->inputs[i], mut->iparam, err));
        changed |= !same_values(&tmp[i], args->inputs[i]);
        args->inputs[i] = &tmp[i];
      }
      if (!changed)
        return pg_error_set(err, PG_ENOTSUP, "'%s' changes nothing here", mut->detail);
      return PG_OK;
    }
    case PG_MUT_TAIL_DROP: {
      if (args->n_inputs < 1) break;
      const struct pg_tensor *a = args->inputs[0];
      int nd = a->dl.ndim, kax;
      double fill = 0.0;
      if (strcmp(def->name, "matmul") == 0) {
        int ta = args->attrs[0].type ? args->attrs[0].b : 0;
        kax = nd == 1 ? 0 : ta ? nd - 2 : nd - 1;
      } else if (strcmp(def->name, "softmax") == 0 && at) {
        int64_t ax = at->type ? at->i : def->attrs[mut->attr].default_value.i;
        kax = (int)(ax < 0 ? ax + nd : ax);
        if (kax < 0 || kax >= nd) break;
        fill = -HUGE_VAL;
      } else {
        break;
      }
      int sm = fill != 0.0;
      if (same_drop_earlier(sm ? k_blocks : k_tiles,
                            sm ? sizeof k_blocks / sizeof *k_blocks : sizeof k_tiles / sizeof *k_tiles,
                            mut->iparam, a->shape[kax]))
        return pg_error_set(err, PG_ENOTSUP, "'%s' drops what an earlier tile drops", mut->detail);
      PG_RETURN_IF_ERROR(tail_drop(a, kax, mut->iparam, fill, &tmp[0], err));
      args->inputs[0] = &tmp[0];
      return PG_OK;
    }
    case PG_MUT_ACCUMULATE:
      if (strcmp(def->name, "matmul") != 0 || args->n_inputs != 2) break;
      *run_override = 1;
      return PG_OK;
    case PG_MUT_FAST_EXP:
      if (fast_exp_kernel(def->name) != mut->iparam || args->n_inputs != 1 ||
          !pg_dtype_is_float(args->inputs[0]->dtype))
        break;
      *run_override = 1;
      return PG_OK;
    default:
      break;
  }
  return pg_error_set(err, PG_ENOTSUP, "mutation '%s' does not apply", mut->detail);
}

/* ---------------------------------------------------------------- summation orders */

static double round_acc(double v, enum pg_golden_sum_order o) {
  if (o == PG_SUM_FP16_ACC) return pg_f16_to_f32(pg_f32_to_f16((float)v));
  if (o == PG_SUM_BF16_ACC) return pg_bf16_to_f32(pg_f32_to_bf16((float)v));
  return v;
}

/* Sum of p[0..n) in the given order; `f32` rounds every partial sum to float. */
static double sum_order(const double *p, int64_t n, enum pg_golden_sum_order o, int64_t tile,
                        int f32) {
#define RND(v) (f32 ? (double)(float)(v) : (v))
  double acc = 0.0;
  switch (o) {
    case PG_SUM_REVERSED:
      for (int64_t i = n - 1; i >= 0; i--) acc = RND(acc + p[i]);
      return acc;
    case PG_SUM_BLOCKED:
      for (int64_t b = 0; b < n; b += tile) {
        double part = 0.0;
        for (int64_t i = b; i < n && i < b + tile; i++) part = RND(part + p[i]);
        acc = RND(acc + part);
      }
      return acc;
    case PG_SUM_PAIRWISE:
      if (n <= 8) {
        for (int64_t i = 0; i < n; i++) acc = RND(acc + p[i]);
        return acc;
      }
      return RND(sum_order(p, n / 2, o, tile, f32) + sum_order(p + n / 2, n - n / 2, o, tile, f32));
    case PG_SUM_KAHAN: {
      double c = 0.0;
      for (int64_t i = 0; i < n; i++) {
        double y = RND(p[i] - c), t = RND(acc + y);
        c = RND(RND(t - acc) - y);
        acc = t;
      }
      return acc;
    }
    case PG_SUM_FP64:
      for (int64_t i = 0; i < n; i++) acc += p[i];
      return acc;
    case PG_SUM_FP16_ACC:
    case PG_SUM_BF16_ACC:
      for (int64_t i = 0; i < n; i++) acc = round_acc(acc + p[i], o);
      return acc;
    case PG_SUM_BF16_CHUNK_ACC:
      for (int64_t b = 0; b < n; b += tile) {
        double part = 0.0;
        for (int64_t i = b; i < n && i < b + tile; i++) part = (float)(part + p[i]);
        acc = round_acc(acc + part, PG_SUM_BF16_ACC);
      }
      return acc;
    default:
      for (int64_t i = 0; i < n; i++) acc = RND(acc + p[i]);
      return acc;
  }
#undef RND
}

/* ---------------------------------------------------------------- fast exp */

/* e^x through the exponent bits (Schraudolph 1999): 2^(x / ln 2) written into the high
 * word of a double, the mantissa linear in between; up to about 4 % off. The
 * approximation some hand-written kernels use where libm's exp is too slow. */
static double fast_exp(double x) {
  if (x != x) return x;
  if (x < -700.0) return 0.0;
  if (x > 700.0) return HUGE_VAL;
  uint64_t hi = (uint64_t)(int64_t)(1512775.3951951856 * x + 1072632447.0);
  uint64_t u = hi << 32;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static int fast_exp_run(const struct pg_golden_mutation *mut, const struct pg_kernel_args *args,
                        struct pg_tensor *y, struct pg_error *err) {
  const struct pg_tensor *x = args->inputs[0];
  const void *src = x->dl.data;
  void *dst = y->dl.data;
  if (mut->iparam != FE_SOFTMAX) {
    for (int64_t i = 0; i < x->numel; i++) {
      double v = pg_load_f64(src, x->dtype, (size_t)i);
      double r = mut->iparam == FE_EXP       ? fast_exp(v)
                 : mut->iparam == FE_SIGMOID ? 1.0 / (1.0 + fast_exp(-v))
                                             : v / (1.0 + fast_exp(-v));
      pg_store_f64(dst, y->dtype, (size_t)i, r);
    }
    return PG_OK;
  }
  int nd = x->dl.ndim;
  int64_t axis = mut->attr >= 0 && mut->attr < args->n_attrs && args->attrs[mut->attr].type
                     ? args->attrs[mut->attr].i
                     : -1;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis >= nd) return pg_error_set(err, PG_ENOTSUP, "softmax axis out of range");
  int64_t len = x->shape[axis], inner = pg__prod(x->shape, (int)axis + 1, nd);
  int64_t outer = pg__prod(x->shape, 0, (int)axis);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      size_t base = (size_t)(o * len * inner + in);
      double m = -HUGE_VAL, sum = 0.0;
      for (int64_t j = 0; j < len; j++)
        m = fmax(m, pg_load_f64(src, x->dtype, base + (size_t)(j * inner)));
      for (int64_t j = 0; j < len; j++)
        sum += fast_exp(pg_load_f64(src, x->dtype, base + (size_t)(j * inner)) - m);
      for (int64_t j = 0; j < len; j++) {
        size_t at = base + (size_t)(j * inner);
        pg_store_f64(dst, y->dtype, at, fast_exp(pg_load_f64(src, x->dtype, at) - m) / sum);
      }
    }
  return PG_OK;
}

int pg__mutation_run(const struct pg_golden_mutation *mut, const struct pg_kernel_args *args,
                     struct pg_tensor *const *outs, struct pg_error *err) {
  if (mut->kind == PG_MUT_FAST_EXP) return fast_exp_run(mut, args, outs[0], err);
  const struct pg_tensor *a = args->inputs[0], *b = args->inputs[1];
  struct pg_tensor *y = outs[0];
  int ta = args->attrs[0].type ? args->attrs[0].b : 0, tb = args->attrs[1].type ? args->attrs[1].b : 0;
  double alpha = args->attrs[2].type ? args->attrs[2].f : 1.0;
  int na = a->dl.ndim, nb = b->dl.ndim;
  if (na < 2 || nb < 2 || !pg_dtype_is_float(a->dtype) || !pg_dtype_is_float(b->dtype))
    return pg_error_set(err, PG_ENOTSUP, "summation orders need 2-D or batched float operands");
  int64_t M = ta ? a->shape[na - 1] : a->shape[na - 2], K = ta ? a->shape[na - 2] : a->shape[na - 1];
  int64_t N = tb ? b->shape[nb - 2] : b->shape[nb - 1];
  int64_t batch_a = pg__prod(a->shape, 0, na - 2), batch_b = pg__prod(b->shape, 0, nb - 2);
  if (batch_b != 1 && batch_b != batch_a)
    return pg_error_set(err, PG_ENOTSUP, "summation orders: broadcast batches not modelled");
  double p[4096];
  if (K > 4096) return pg_error_set(err, PG_ENOTSUP, "summation orders: K > 4096");
  int f32 = a->dtype == PG_DTYPE_F32;
  enum pg_golden_sum_order o = (enum pg_golden_sum_order)mut->iparam;
  int64_t tile = mut->param > 0 ? (int64_t)mut->param : 32;
  if (o == PG_SUM_BF16_CHUNK_ACC && K <= tile) /* one chunk: only the result rounded */
    return pg_error_set(err, PG_ENOTSUP, "K = %lld is one chunk of %lld", (long long)K,
                        (long long)tile);
  for (int64_t z = 0; z < batch_a; z++) {
    int64_t ao = z * M * K, bo = (batch_b == 1 ? 0 : z) * K * N, yo = z * M * N;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        for (int64_t q = 0; q < K; q++) {
          double x = pg_load_f64(a->dl.data, a->dtype, (size_t)(ao + (ta ? q * M + i : i * K + q)));
          double w = pg_load_f64(b->dl.data, b->dtype, (size_t)(bo + (tb ? j * K + q : q * N + j)));
          p[q] = f32 ? (double)((float)x * (float)w) : x * w;
        }
        pg_store_f64(y->dl.data, y->dtype, (size_t)(yo + i * N + j), alpha * sum_order(p, K, o, tile, f32));
      }
  }
  return PG_OK;
}
