/* goldens/ private: what the reference kernels (goldens/kernels_*.c) share —
 * argument checking and messages for `infer`, numpy broadcasting, axis handling,
 * attribute access with defaults, the per-call preparation of `run` (validation of
 * the caller's tensors, widening of inputs to the compute dtype) and a small
 * deterministic parallel-for. Not part of any public header.
 */
#ifndef PHASEGATE_KERNELS_INTERNAL_H
#define PHASEGATE_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/kernels.h"

/* Every kernel's def, one extern per name; kernels_registry.c lists them. */
#define PG__KERNEL_NAMES(X)                                                             \
  X(abs) X(add) X(cast) X(causal_mask) X(cumsum) X(div) X(exp) X(gelu) X(identity)      \
  X(l2norm) X(layernorm) X(log) X(log_softmax) X(matmul) X(max) X(maximum) X(mean)      \
  X(minimum) X(mul) X(neg) X(permute) X(relu) X(reshape) X(rmsnorm) X(rope) X(rsqrt)    \
  X(scale) X(sigmoid) X(silu) X(softmax) X(sqrt) X(sub) X(sum) X(tanh) X(transpose)

#define PG__KERNEL_EXTERN(n) extern const struct pg_kernel_def pg__kdef_##n;
PG__KERNEL_NAMES(PG__KERNEL_EXTERN)
#undef PG__KERNEL_EXTERN

/* The def of kernel NAME (one output), from its infer_NAME and run_NAME defined
 * before it: PG__KERNEL_DEF(rope, 1, 2, rope_attrs, "rotary position embedding"); */
#define PG__KERNEL_DEF(NAME, MIN_INPUTS, MAX_INPUTS, DECLS, SUMMARY)                      \
  const struct pg_kernel_def pg__kdef_##NAME = {                                         \
      .name = #NAME, .min_inputs = (MIN_INPUTS), .max_inputs = (MAX_INPUTS),             \
      .n_outputs = 1, .attrs = (DECLS), .summary = (SUMMARY), .infer = infer_##NAME,     \
      .run = run_##NAME}

/* One member of a kernel family: infer_NAME returns INFER and run_NAME returns RUN,
 * parenthesised expressions over the parameters (in, n, attrs, out, err) and
 * (args, outputs, err) that call the family's shared infer / run; then its def. */
#define PG__KERNEL_WRAPPED(NAME, MIN_INPUTS, MAX_INPUTS, DECLS, SUMMARY, INFER, RUN)      \
  static int infer_##NAME(const struct pg_tensor_meta *in, int n,                        \
                          const struct pg_attr_value *attrs, struct pg_tensor_meta *out,  \
                          struct pg_error *err) {                                        \
    (void)attrs;                                                                         \
    return INFER;                                                                        \
  }                                                                                      \
  static int run_##NAME(const struct pg_kernel_args *args,                               \
                        struct pg_tensor *const *outputs, struct pg_error *err) {        \
    return RUN;                                                                          \
  }                                                                                      \
  PG__KERNEL_DEF(NAME, MIN_INPUTS, MAX_INPUTS, DECLS, SUMMARY)

/* ---- messages ---- */

/* "[2, 4, 128]" into buf (always NUL-terminated); returns buf. */
const char *pg__shape_str(const int64_t *shape, int ndim, char *buf, size_t size);

/* ---- infer helpers ---- */

/* Arity (min..max, naming the arguments, e.g. "a, b[, c]") and valid dtypes. */
int pg__check_inputs(const char *op, const char *arg_list, const struct pg_tensor_meta *in,
                     int n, int min, int max, struct pg_error *err);

/* The compute dtype of a kernel: F64 if any float input is F64, else F32. */
enum pg_dtype pg__result_dtype(const struct pg_tensor_meta *in, int n);

/* Normalises a possibly negative axis against rank `ndim` (error names op and arg). */
int pg__norm_axis(const char *op, const char *arg, int64_t axis, int ndim, int *out,
                  struct pg_error *err);

/* numpy broadcasting of two shapes (error names both arguments and the dim). */
int pg__broadcast(const char *op, const char *an, const struct pg_tensor_meta *a,
                  const char *bn, const struct pg_tensor_meta *b, struct pg_tensor_meta *out,
                  struct pg_error *err);

/* Is `from` broadcastable to exactly `to` (unidirectional)? */
int pg__broadcasts_to(const struct pg_tensor_meta *from, int to_ndim, const int64_t *to_shape);

/* Element strides of `from` laid over the `ndim` dims of a target shape, 0 where
 * broadcast (from must broadcast to the target). */
void pg__broadcast_strides(const struct pg_tensor_meta *from, int ndim, int64_t *strides);

/* Product of shape[lo..hi). */
int64_t pg__prod(const int64_t *shape, int lo, int hi);

/* ---- attributes ---- */

/* The attr at `idx` (def order), or the declared default when attrs is NULL or the
 * value's type is 0 (absent). Values of another numeric type are converted. */
const struct pg_attr_value *pg__attr(const struct pg_attr_decl *decls,
                                     const struct pg_attr_value *attrs, int idx);
double pg__attr_f(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);
int64_t pg__attr_i(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);
int pg__attr_b(const struct pg_attr_decl *decls, const struct pg_attr_value *attrs, int idx);

/* ---- run preparation ---- */

typedef int (*pg__infer_fn)(const struct pg_tensor_meta *inputs, int n_inputs,
                            const struct pg_attr_value *attrs, struct pg_tensor_meta *outputs,
                            struct pg_error *err);

struct pg__kctx {
  const char *op;
  int n_in, n_out, n_threads;
  enum pg_dtype dt;                                  /* compute dtype: F32 or F64 */
  struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS];   /* complete, defaults filled */
  struct pg_tensor_meta in[PG_KERNEL_MAX_INPUTS];
  struct pg_tensor_meta out[PG_KERNEL_MAX_OUTPUTS];
  const void *x[PG_KERNEL_MAX_INPUTS];   /* input data in `dt` */
  const void *raw[PG_KERNEL_MAX_INPUTS]; /* input data as given, dtype in[i].dtype */
  void *y[PG_KERNEL_MAX_OUTPUTS];        /* output data (dtype dt) */
  int64_t in_numel[PG_KERNEL_MAX_INPUTS], out_numel[PG_KERNEL_MAX_OUTPUTS];
  void *owned[PG_KERNEL_MAX_INPUTS];     /* widened copies to free */
};

/* Validates args/outputs against `infer`, fills defaults, widens inputs whose dtype
 * is not the compute dtype (except those in keep_raw_mask, read via raw[]).
 * On error nothing needs releasing; on PG_OK call pg__kctx_end. */
int pg__kctx_begin(struct pg__kctx *k, const char *op, const struct pg_attr_decl *decls,
                   pg__infer_fn infer, const struct pg_kernel_args *args,
                   struct pg_tensor *const *outputs, int n_outputs, unsigned keep_raw_mask,
                   struct pg_error *err);
void pg__kctx_end(struct pg__kctx *k);

/* ---- deterministic parallel-for ---- */

/* Work items [begin, end) of one chunk. Must not fail or allocate. */
typedef void (*pg__range_fn)(void *ctx, int64_t begin, int64_t end);

/* Splits [0, n) into contiguous chunks of at least `grain` items over up to
 * `n_threads` threads (0 = default: online CPUs, at most 8) and runs fn on each.
 * Every item is computed by exactly one call with the same code path whatever the
 * split, so results do not depend on the thread count. Falls back to the calling
 * thread when a thread cannot be created. */
void pg__parallel_for(int64_t n, int64_t grain, int n_threads, pg__range_fn fn, void *ctx);

/* ---- matmul tiles (kernels_blas.c) ---- */

/* How matmul cuts nbatch gemms of m x n x k (batch folded into m when it folds): tiles
 * of {rows, cols}, {mb, nb} of them per gemm, each one single-threaded gemm call.
 * Depends on these four numbers only, never on a thread count. */
void pg__matmul_tiles(int64_t m, int64_t n, int64_t k, int64_t nbatch, int64_t tiles[4]);

/* Copies `src` (meta sm, dtype dt) broadcast to the shape of `dm` into dst. */
void pg__broadcast_copy(enum pg_dtype dt, const void *src, const struct pg_tensor_meta *sm,
                        void *dst, const struct pg_tensor_meta *dm);

/* ---- exp for the fp32 reference mode ---- */

/* e^x in double for kernels whose results are fp32 (softmax, log_softmax, exp, sigmoid,
 * silu, gelu-tanh in the fp32 reference mode): no libm call per element, several lanes
 * at a time with GCC/clang generic vectors (gcc will not if-convert the clamps of a
 * scalar loop under -ftrapping-math, so the auto-vectoriser cannot do it).
 * Method (as in table-driven libm exps): n = round(x·64/ln2), r = x − n·ln2/64 with
 * ln2/64 split hi/lo so n·hi is exact (|r| ≤ ln2/128), e^r − 1 by its Taylor series to
 * degree 5 (truncation < 2^-54), e^x = 2^(n>>6) · T[n&63] · e^r with T[j] = 2^(j/64)
 * correctly rounded, the power of two applied as two normal halves so a subnormal
 * result rounds once. Measured against expl (tests/goldens, dense sweep of
 * [-708, 709.7]): relative error < 2^-51 (about 2 ulp of a double); rounded to float
 * it is the correctly rounded float. NaN stays NaN, -inf and x < -745.2 give 0, x >
 * 709.8 gives +inf. Only IEEE + - * / and integer bit operations, never FMA (C11 mode
 * for gcc; kernels_common.c turns contraction off for clang), so every lane of every
 * width gives the same bits: results do not depend on the CPU or the thread count.
 * Vectors stay local (no vector parameters or returns: those change the psABI). */
typedef double pg__v4d __attribute__((vector_size(16))); /* SSE2 / NEON width: */
typedef int64_t pg__v4i __attribute__((vector_size(16)));  /* gcc scalarises wider */
typedef uint64_t pg__v4u __attribute__((vector_size(16))); /* compares without AVX */

#define PG__V4(c) ((pg__v4d){(c), (c)})
#define PG__V4U(c) ((pg__v4u){(c), (c)})

/* 2^(j/64), j = 0..63, correctly rounded (kernels_common.c). */
extern const double pg__exp2_tab64[64];

/* The body of the exp kernels for one vector type (VD double, VI/VU its signed and
 * unsigned integer twins, VC/VCU broadcast constants); reads IN, writes OUT (may alias). */
#define PG__EXP_BODY(VD, VI, VU, VC, VCU, IN, OUT)                                      \
  do {                                                                                  \
    VD x;                                                                               \
    __builtin_memcpy(&x, (IN), sizeof x);                                               \
    VI lo = (VI)(x < VC(-746.0)), hi = (VI)(x > VC(710.0));                             \
    /* clamps by mask: NaN compares false and stays NaN */                              \
    x = (VD)(((VI)x & ~(lo | hi)) | ((VI)VC(-746.0) & lo) |                             \
                  ((VI)VC(710.0) & hi));                                                \
    /* n = round(x * 64/ln2): adding 0x1.8p52 rounds to an integer in the low bits */   \
    const VD shift = VC(6755399441055744.0);                                            \
    VD kd = x * VC(92.33248261689366) + shift;                                          \
    VU kb = (VU)kd;                                                                     \
    kd -= shift;                                                                        \
    /* r = x - n*ln2/64, |r| <= ln2/128; ln2/64 split so n*hi is exact (|n| < 2^17) */  \
    VD r = (x - kd * VC(1.08304246932675596327e-02)) -                                  \
                kd * VC(2.98158582698529328128e-12);                                    \
    /* e^r - 1 by Taylor to degree 5: truncation <= (ln2/128)^6/720 < 2^-54 */          \
    VD p = VC(1.0 / 120.0);                                                             \
    p = p * r + VC(1.0 / 24.0);                                                         \
    p = p * r + VC(1.0 / 6.0);                                                          \
    p = p * r + VC(0.5);                                                                \
    p = p * r + VC(1.0);                                                                \
    p = p * r;                                                                          \
    /* n + 2^16 = bits(kd + shift) - bits(shift) + 2^16 >= 0 (n in [-68926, 65600]);    \
     * e^x = 2^(n>>6) * 2^((n&63)/64) * e^r, 2^(n>>6) as two normal halves so a         \
     * subnormal result rounds once, in the last multiply */                            \
    VU n = kb - VCU(UINT64_C(0x4338000000000000) - 65536u);                             \
    VU e = (n >> 6) - VCU(1024u); /* two's complement, in [-1077, 1025] */              \
    VU e1 = ((e + VCU(2048u)) >> 1) - VCU(1024u), e2 = e - e1;                          \
    VD t;                                                                               \
    for (int l_ = 0; l_ < (int)(sizeof t / sizeof t[0]); l_++)                          \
      t[l_] = pg__exp2_tab64[n[l_] & 63];                                               \
    VD s1 = (VD)((e1 + VCU(1023u)) << 52), s2 = (VD)((e2 + VCU(1023u)) << 52);          \
    x = (t + t * p) * s1 * s2;                                                          \
    __builtin_memcpy((OUT), &x, sizeof x);                                              \
  } while (0)

/* out[0..2) = e^in[0..2); in and out may alias. */
static inline void pg__exp2_r32(const double *in, double *out) {
  PG__EXP_BODY(pg__v4d, pg__v4i, pg__v4u, PG__V4, PG__V4U, in, out);
}

/* out[0..4) = e^in[0..4); in and out may alias. */
static inline void pg__exp4_r32(const double *in, double *out) {
  pg__exp2_r32(in, out);
  pg__exp2_r32(in + 2, out + 2);
}

/* One value through the same code (same bits as the vector lanes). */
static inline double pg__exp_r32(double x) {
  double v[2] = {x, x};
  pg__exp2_r32(v, v);
  return v[0];
}

/* The sigmoid body for one vector type: 1/(1+e) for in >= 0 and e/(1+e) below, with
 * e = e^-|in| (never overflows); NaN stays NaN. Reads IN, writes OUT. */
#define PG__SIGMOID_BODY(VD, VI, VU, VC, VCU, IN, OUT)                                  \
  do {                                                                                   \
    VD sx_, se_;                                                                         \
    __builtin_memcpy(&sx_, (IN), sizeof sx_);                                            \
    VI ge_ = (VI)(sx_ >= VC(0.0));                                                       \
    VD ma_ = (VD)((VI)sx_ | (VI)VC(-0.0)); /* -|x| */                                    \
    PG__EXP_BODY(VD, VI, VU, VC, VCU, &ma_, &se_);                                       \
    VD num_ = (VD)(((VI)se_ & ~ge_) | ((VI)VC(1.0) & ge_));                              \
    sx_ = num_ / (VC(1.0) + se_);                                                        \
    __builtin_memcpy((OUT), &sx_, sizeof sx_);                                           \
  } while (0)

/* In place over buf[0..n), n a multiple of 4: e^x and 1/(1+e^-x) as above, four lanes
 * at a time with AVX2 where the CPU has it (kernels_common.c), else two; the same
 * operations per lane either way, so the same bits. */
void pg__exp_r32_n(double *buf, int64_t n);
void pg__sigmoid_r32_n(double *buf, int64_t n);
/* The two-lane versions alone (what CPUs without AVX2 run), for tests. */
void pg__exp_r32_n_portable(double *buf, int64_t n);
void pg__sigmoid_r32_n_portable(double *buf, int64_t n);

#endif /* PHASEGATE_KERNELS_INTERNAL_H */
