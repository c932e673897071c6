/* goldens/kernels_common.c — the plumbing every reference kernel shares: argument
 * and shape checks with messages that name the argument, numpy broadcasting,
 * attribute defaults, the validation/widening done at the start of every `run`, and
 * a per-call deterministic parallel-for (threads are created per call and joined
 * before returning, so there is no global state), and the vectorised e^x / sigmoid of
 * the fp32 reference mode (kernels_internal.h says how they are computed).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels_internal.h"

const char *pg__shape_str(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = 0;
  if (size == 0) return buf;
  buf[0] = '\0';
  int n = snprintf(buf, size, "[");
  if (n > 0) used = (size_t)n < size ? (size_t)n : size - 1;
  for (int i = 0; i < ndim && used < size - 1; i++) {
    n = snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < 0) break;
    used += (size_t)n < size - used ? (size_t)n : size - used - 1;
  }
  if (used < size - 1) snprintf(buf + used, size - used, "]");
  return buf;
}

int pg__check_inputs(const char *op, const char *arg_list, const struct pg_tensor_meta *in,
                     int n, int min, int max, struct pg_error *err) {
  if (n < min || n > max) {
    if (min == max)
      return pg_error_set(err, PG_EINVAL, "%s: expects %d input%s (%s), got %d", op, min,
                          min == 1 ? "" : "s", arg_list, n);
    return pg_error_set(err, PG_EINVAL, "%s: expects %d to %d inputs (%s), got %d", op, min,
                        max, arg_list, n);
  }
  if (n > 0 && !in) return pg_error_set(err, PG_EINVAL, "%s: no input metas given", op);
  for (int i = 0; i < n; i++) {
    if (pg_dtype_size(in[i].dtype) == 0)
      return pg_error_set(err, PG_EDTYPE, "%s: input %d has an invalid dtype", op, i + 1);
    if (in[i].ndim < 0 || in[i].ndim > PG_MAX_NDIM)
      return pg_error_set(err, PG_EINVAL, "%s: input %d has rank %d outside 0..%d", op, i + 1,
                          in[i].ndim, PG_MAX_NDIM);
    for (int d = 0; d < in[i].ndim; d++)
      if (in[i].shape[d] < 0)
        return pg_error_set(err, PG_EINVAL, "%s: input %d has a negative dimension", op, i + 1);
    int64_t numel;
    if (pg_shape_numel(in[i].ndim, in[i].shape, &numel, NULL) != PG_OK)
      return pg_error_set(err, PG_EOVERFLOW, "%s: input %d element count overflows", op, i + 1);
  }
  return PG_OK;
}

enum pg_dtype pg__result_dtype(const struct pg_tensor_meta *in, int n) {
  for (int i = 0; i < n; i++)
    if (in[i].dtype == PG_DTYPE_F64) return PG_DTYPE_F64;
  return PG_DTYPE_F32;
}

int pg__norm_axis(const char *op, const char *arg, int64_t axis, int ndim, int *out,
                  struct pg_error *err) {
  if (axis < -(int64_t)ndim || axis >= ndim)
    return pg_error_set(err, PG_EINVAL, "%s: axis %" PRId64 " out of range for %s of rank %d",
                        op, axis, arg, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return PG_OK;
}

int pg__broadcast(const char *op, const char *an, const struct pg_tensor_meta *a,
                  const char *bn, const struct pg_tensor_meta *b, struct pg_tensor_meta *out,
                  struct pg_error *err) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  int64_t shape[PG_MAX_NDIM];
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[160], sb[160];
      return pg_error_set(err, PG_ESHAPE,
                          "%s: cannot broadcast %s %s with %s %s (dimension %d of the result: "
                          "%" PRId64 " vs %" PRId64 ")",
                          op, an, pg__shape_str(a->shape, a->ndim, sa, sizeof sa), bn,
                          pg__shape_str(b->shape, b->ndim, sb, sizeof sb), i, da, db);
    }
    shape[i] = da == 1 ? db : da;
  }
  out->ndim = nd;
  memcpy(out->shape, shape, sizeof(int64_t) * (size_t)nd);
  int64_t numel;
  if (pg_shape_numel(nd, shape, &numel, NULL) != PG_OK)
    return pg_error_set(err, PG_EOVERFLOW, "%s: the broadcast result of %s and %s has too many elements",
                        op, an, bn);
  return PG_OK;
}

int pg__broadcasts_to(const struct pg_tensor_meta *from, int to_ndim, const int64_t *to_shape) {
  if (from->ndim > to_ndim) return 0;
  for (int i = 0; i < from->ndim; i++) {
    int64_t d = from->shape[from->ndim - 1 - i], t = to_shape[to_ndim - 1 - i];
    if (d != t && d != 1) return 0;
  }
  return 1;
}

void pg__broadcast_strides(const struct pg_tensor_meta *from, int ndim, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    int j = i - (ndim - from->ndim);
    if (j < 0) {
      strides[i] = 0;
      continue;
    }
    strides[i] = from->shape[j] == 1 ? 0 : s;
    s *= from->shape[j];
  }
}

int64_t pg__prod(const int64_t *shape, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= shape[i];
  return p;
}

/* ---- attributes ---- */

const struct pg_attr_value *pg__attr(const struct pg_attr_decl *decls,
                                     const struct pg_attr_value *attrs, int idx) {
  if (attrs && attrs[idx].type != 0) return &attrs[idx];
  return &decls[idx].default_value;
}

double pg__attr_f(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx) {
  const struct pg_attr_value *v = pg__attr(decls, attrs, idx);
  switch (v->type) {
    case PG_ATTR_INT: return (double)v->i;
    case PG_ATTR_BOOL: return v->b ? 1.0 : 0.0;
    default: return v->f;
  }
}

int64_t pg__attr_i(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx) {
  const struct pg_attr_value *v = pg__attr(decls, attrs, idx);
  switch (v->type) {
    case PG_ATTR_FLOAT:
      /* an expression evaluated as float ("-1", "D//2"): integral values only */
      if (v->f >= -9.0e15 && v->f <= 9.0e15) return (int64_t)v->f;
      return INT64_MIN;
    case PG_ATTR_BOOL: return v->b;
    default: return v->i;
  }
}

int pg__attr_b(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx) {
  const struct pg_attr_value *v = pg__attr(decls, attrs, idx);
  switch (v->type) {
    case PG_ATTR_FLOAT: return v->f != 0.0;
    case PG_ATTR_INT: return v->i != 0;
    default: return v->b != 0;
  }
}

/* ---- run preparation ---- */

static int meta_from_tensor(const char *op, int idx, const char *what, const struct pg_tensor *t,
                            struct pg_tensor_meta *m, int64_t *numel, struct pg_error *err) {
  if (!t) return pg_error_set(err, PG_EINVAL, "%s: %s %d is NULL", op, what, idx + 1);
  enum pg_dtype dt = t->dtype != PG_DTYPE_INVALID ? t->dtype : pg_dtype_from_dl(t->dl.dtype);
  if (pg_dtype_size(dt) == 0)
    return pg_error_set(err, PG_EDTYPE, "%s: %s %d has an invalid dtype", op, what, idx + 1);
  if (t->dl.ndim < 0 || t->dl.ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "%s: %s %d has rank %d outside 0..%d", op, what, idx + 1,
                        t->dl.ndim, PG_MAX_NDIM);
  const int64_t *shape = t->dl.shape ? t->dl.shape : t->shape;
  m->dtype = dt;
  m->ndim = t->dl.ndim;
  for (int i = 0; i < m->ndim; i++) m->shape[i] = shape[i];
  if (pg_shape_numel(m->ndim, m->shape, numel, NULL) != PG_OK)
    return pg_error_set(err, PG_EINVAL, "%s: %s %d has a bad shape", op, what, idx + 1);
  if (t->dl.strides) { /* only compact C order is accepted */
    int64_t s = 1;
    for (int i = m->ndim - 1; i >= 0; i--) {
      if (m->shape[i] != 1 && t->dl.strides[i] != s)
        return pg_error_set(err, PG_EINVAL, "%s: %s %d is not C-contiguous", op, what, idx + 1);
      s *= m->shape[i];
    }
  }
  if (*numel > 0 && !t->dl.data)
    return pg_error_set(err, PG_EINVAL, "%s: %s %d has no data", op, what, idx + 1);
  return PG_OK;
}

static void widen(const void *src, enum pg_dtype st, void *dst, enum pg_dtype dt, int64_t n) {
  if (dt == PG_DTYPE_F64) {
    double *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = pg_load_f64(src, st, (size_t)i);
  } else if (st == PG_DTYPE_F16) {
    float *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = pg_f16_to_f32(((const uint16_t *)src)[i]);
  } else if (st == PG_DTYPE_BF16) {
    float *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = pg_bf16_to_f32(((const uint16_t *)src)[i]);
  } else {
    float *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = (float)pg_load_f64(src, st, (size_t)i);
  }
}

int pg__kctx_begin(struct pg__kctx *k, const char *op, const struct pg_attr_decl *decls,
                   pg__infer_fn infer, const struct pg_kernel_args *args,
                   struct pg_tensor *const *outputs, int n_outputs, unsigned keep_raw_mask,
                   struct pg_error *err) {
  memset(k, 0, sizeof *k);
  k->op = op;
  if (!args) return pg_error_set(err, PG_EINVAL, "%s: no arguments", op);
  if (args->n_inputs < 0 || args->n_inputs > PG_KERNEL_MAX_INPUTS)
    return pg_error_set(err, PG_EINVAL, "%s: %d inputs is out of range", op, args->n_inputs);
  int n_decls = 0;
  while (decls && decls[n_decls].name) n_decls++;
  if (args->n_attrs < 0 || args->n_attrs > n_decls)
    return pg_error_set(err, PG_EINVAL, "%s: %d attributes given, %d declared", op,
                        args->n_attrs, n_decls);
  for (int i = 0; i < n_decls; i++)
    k->attrs[i] = (i < args->n_attrs && args->attrs[i].type != 0) ? args->attrs[i]
                                                                 : decls[i].default_value;
  k->n_in = args->n_inputs;
  k->n_out = n_outputs;
  k->n_threads = args->n_threads;
  for (int i = 0; i < k->n_in; i++)
    PG_RETURN_IF_ERROR(
        meta_from_tensor(op, i, "input", args->inputs[i], &k->in[i], &k->in_numel[i], err));
  PG_RETURN_IF_ERROR(infer(k->in, k->n_in, k->attrs, k->out, err));
  if (!outputs) return pg_error_set(err, PG_EINVAL, "%s: no outputs given", op);
  for (int o = 0; o < n_outputs; o++) {
    struct pg_tensor_meta m;
    PG_RETURN_IF_ERROR(meta_from_tensor(op, o, "output", outputs[o], &m, &k->out_numel[o], err));
    int same = m.dtype == k->out[o].dtype && m.ndim == k->out[o].ndim;
    for (int d = 0; same && d < m.ndim; d++) same = m.shape[d] == k->out[o].shape[d];
    if (!same) {
      char sa[160], sb[160];
      return pg_error_set(err, PG_ESHAPE, "%s: output %d is %s %s, infer says %s %s", op, o + 1,
                          pg_dtype_name(m.dtype), pg__shape_str(m.shape, m.ndim, sa, sizeof sa),
                          pg_dtype_name(k->out[o].dtype),
                          pg__shape_str(k->out[o].shape, k->out[o].ndim, sb, sizeof sb));
    }
    k->y[o] = (char *)outputs[o]->dl.data + outputs[o]->dl.byte_offset;
  }
  k->dt = n_outputs > 0 ? k->out[0].dtype : pg__result_dtype(k->in, k->n_in);
  if (k->dt != PG_DTYPE_F32 && k->dt != PG_DTYPE_F64)
    return pg_error_set(err, PG_EDTYPE, "%s: computes in float32 or float64, not %s", op,
                        pg_dtype_name(k->dt));
  for (int i = 0; i < k->n_in; i++) {
    const struct pg_tensor *t = args->inputs[i];
    k->raw[i] = (const char *)t->dl.data + t->dl.byte_offset;
    k->x[i] = k->raw[i];
    if (k->in[i].dtype == k->dt || (keep_raw_mask & (1u << i))) continue;
    size_t bytes = (size_t)(k->in_numel[i] ? k->in_numel[i] : 1) * pg_dtype_size(k->dt);
    k->owned[i] = malloc(bytes);
    if (!k->owned[i]) {
      pg__kctx_end(k);
      return pg_error_set(err, PG_ENOMEM, "%s: cannot allocate %zu bytes to widen input %d", op,
                          bytes, i + 1);
    }
    widen(k->raw[i], k->in[i].dtype, k->owned[i], k->dt, k->in_numel[i]);
    k->x[i] = k->owned[i];
  }
  return PG_OK;
}

void pg__kctx_end(struct pg__kctx *k) {
  for (int i = 0; i < PG_KERNEL_MAX_INPUTS; i++) {
    free(k->owned[i]);
    k->owned[i] = NULL;
  }
}

/* ---- parallel-for ---- */

struct chunk {
  pg__range_fn fn;
  void *ctx;
  int64_t begin, end;
};

static void *chunk_main(void *p) {
  struct chunk *c = p;
  c->fn(c->ctx, c->begin, c->end);
  return NULL;
}

#define PG__MAX_THREADS 16

void pg__parallel_for(int64_t n, int64_t grain, int n_threads, pg__range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int t = n_threads;
  if (t <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    t = c > 0 ? (int)(c < 8 ? c : 8) : 1;
  }
  if (t > PG__MAX_THREADS) t = PG__MAX_THREADS;
  if ((int64_t)t > n / grain) t = (int)(n / grain);
  if (t <= 1) {
    fn(ctx, 0, n);
    return;
  }
  struct chunk chunks[PG__MAX_THREADS];
  pthread_t tid[PG__MAX_THREADS];
  int started[PG__MAX_THREADS] = {0};
  for (int i = 0; i < t; i++) {
    chunks[i].fn = fn;
    chunks[i].ctx = ctx;
    chunks[i].begin = n * i / t;
    chunks[i].end = n * (i + 1) / t;
  }
  for (int i = 1; i < t; i++)
    started[i] = pthread_create(&tid[i], NULL, chunk_main, &chunks[i]) == 0;
  fn(ctx, chunks[0].begin, chunks[0].end);
  for (int i = 1; i < t; i++) {
    if (started[i]) pthread_join(tid[i], NULL);
    else fn(ctx, chunks[i].begin, chunks[i].end); /* could not start: do it here */
  }
}

/* ---- broadcast copy ---- */

void pg__broadcast_copy(enum pg_dtype dt, const void *src, const struct pg_tensor_meta *sm,
                        void *dst, const struct pg_tensor_meta *dm) {
  int nd = dm->ndim;
  int64_t numel = pg__prod(dm->shape, 0, nd);
  if (numel == 0) return;
  int64_t st[PG_MAX_NDIM], idx[PG_MAX_NDIM] = {0};
  pg__broadcast_strides(sm, nd, st);
  int64_t off = 0;
  size_t es = pg_dtype_size(dt);
  for (int64_t i = 0; i < numel; i++) {
    memcpy((char *)dst + (size_t)i * es, (const char *)src + (size_t)off * es, es);
    for (int d = nd - 1; d >= 0; d--) {
      idx[d]++;
      off += st[d];
      if (idx[d] < dm->shape[d]) break;
      off -= st[d] * idx[d];
      idx[d] = 0;
    }
  }
}

/* ---------------------------------------------------------------- exp, sigmoid (fp32 mode) */

/* No contraction into FMA anywhere here: every lane width must give the same bits
 * (gcc in C11 mode does not contract; clang would with FMA in the target). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

const double pg__exp2_tab64[64] = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0,
    0x1.0874518759bc8p+0, 0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0,
    0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0, 0x1.172b83c7d517bp+0,
    0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0,
    0x1.2d285a6e4030bp+0, 0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0,
    0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0, 0x1.3dea64c123422p+0,
    0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0,
    0x1.56f4736b527dap+0, 0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0,
    0x1.6247eb03a5585p+0, 0x1.6623882552225p+0, 0x1.6a09e667f3bcdp+0,
    0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0,
    0x1.868d99b4492edp+0, 0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0,
    0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0, 0x1.9c49182a3f090p+0,
    0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0,
    0x1.bcc1e904bc1d2p+0, 0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0,
    0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0, 0x1.d5818dcfba487p+0,
    0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0,
    0x1.fa7c1819e90d8p+0};

#define PG__VC2(c) ((pg__v4d){(c), (c)})
#define PG__VCU2(c) ((pg__v4u){(c), (c)})

void pg__exp_r32_n_portable(double *b, int64_t n) {
  for (int64_t i = 0; i < n; i += 2)
    PG__EXP_BODY(pg__v4d, pg__v4i, pg__v4u, PG__VC2, PG__VCU2, b + i, b + i);
}
void pg__sigmoid_r32_n_portable(double *b, int64_t n) {
  for (int64_t i = 0; i < n; i += 2)
    PG__SIGMOID_BODY(pg__v4d, pg__v4i, pg__v4u, PG__VC2, PG__VCU2, b + i, b + i);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* 32-byte vectors only inside AVX2 functions (elsewhere gcc splits their compares
 * into scalar code); "avx2" without "fma", so nothing can be fused. */
typedef double v4d_avx __attribute__((vector_size(32)));
typedef int64_t v4i_avx __attribute__((vector_size(32)));
typedef uint64_t v4u_avx __attribute__((vector_size(32)));
#define PG__VC4(c) ((v4d_avx){(c), (c), (c), (c)})
#define PG__VCU4(c) ((v4u_avx){(c), (c), (c), (c)})

__attribute__((target("avx2"))) static void exp_n_avx2(double *b, int64_t n) {
  for (int64_t i = 0; i < n; i += 4)
    PG__EXP_BODY(v4d_avx, v4i_avx, v4u_avx, PG__VC4, PG__VCU4, b + i, b + i);
}
__attribute__((target("avx2"))) static void sigmoid_n_avx2(double *b, int64_t n) {
  for (int64_t i = 0; i < n; i += 4)
    PG__SIGMOID_BODY(v4d_avx, v4i_avx, v4u_avx, PG__VC4, PG__VCU4, b + i, b + i);
}
#define HAVE_AVX2() __builtin_cpu_supports("avx2")
#else
#define HAVE_AVX2() 0
#define exp_n_avx2 pg__exp_r32_n_portable
#define sigmoid_n_avx2 pg__sigmoid_r32_n_portable
#endif

void pg__exp_r32_n(double *buf, int64_t n) {
  if (HAVE_AVX2()) exp_n_avx2(buf, n);
  else pg__exp_r32_n_portable(buf, n);
}

void pg__sigmoid_r32_n(double *buf, int64_t n) {
  if (HAVE_AVX2()) sigmoid_n_avx2(buf, n);
  else pg__sigmoid_r32_n_portable(buf, n);
}
