/* tests/goldens/test-kernels-infer.c — `infer` of the reference kernels on
 * bad arguments: exact messages for the common mistakes (they reach users through
 * golden-step validation as "file:line:col: error: <message>"), error codes for the
 * rest, and `run` refusing outputs that do not match infer.
 */
#include "kt_util.h"

static struct pg_tensor_meta meta(enum pg_dtype dt, int nd, const int64_t *s) {
  struct pg_tensor_meta m;
  memset(&m, 0, sizeof m);
  m.dtype = dt;
  m.ndim = nd;
  for (int i = 0; i < nd; i++) m.shape[i] = s[i];
  return m;
}

/* Runs infer with the given attrs (NULL = defaults); returns the code, fills msg. */
static int infer(const char *op, struct kt_attrs *a, int n, const struct pg_tensor_meta *in,
                 struct pg_tensor_meta *out, struct pg_error *err) {
  const struct pg_kernel_def *def = pg_kernel_find(op);
  PG_CHECK(def != NULL);
  struct kt_attrs local;
  if (!a) {
    kt_attrs_init(&local, def);
    a = &local;
  }
  pg_error_clear(err);
  return def->infer(in, n, a->v, out, err);
}

#define F32 PG_DTYPE_F32

PG_TEST(matmul_inner_dims_message) {
  int64_t s[4] = {2, 4, 128, 64};
  struct pg_tensor_meta in[2] = {meta(F32, 4, s), meta(F32, 4, s)}, out[1];
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("matmul", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("matmul: inner dimensions differ: a is [2, 4, 128, 64], b is [2, 4, 128, 64] "
                  "with trans_b=false (64 vs 128)",
                  err.message);
  struct kt_attrs at;
  kt_attrs_init(&at, pg_kernel_find("matmul"));
  kt_set_b(&at, "trans_b", 1);
  PG_CHECK_OK(infer("matmul", &at, 2, in, out, &err));
  PG_CHECK_EQ_INT(4, out[0].ndim);
  PG_CHECK_EQ_INT(128, out[0].shape[2]);
  PG_CHECK_EQ_INT(128, out[0].shape[3]);
  kt_set_b(&at, "trans_a", 1);
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("matmul", &at, 2, in, out, &err));
  PG_CHECK_EQ_STR("matmul: inner dimensions differ: a is [2, 4, 128, 64] with trans_a=true, b is "
                  "[2, 4, 128, 64] with trans_b=true (128 vs 64)",
                  err.message);
}

PG_TEST(matmul_other_errors) {
  int64_t a[3] = {2, 5, 7}, b[3] = {3, 7, 4}, c[2] = {5, 3}, k[1] = {7};
  struct pg_tensor_meta in[3] = {meta(F32, 3, a), meta(F32, 3, b), meta(F32, 2, c)}, out[1];
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("matmul", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("matmul: batch dimensions do not broadcast: a is [2, 5, 7] (batch [2]), b is "
                  "[3, 7, 4] (batch [3])",
                  err.message);
  in[1] = meta(F32, 1, k);
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("matmul", NULL, 3, in, out, &err));
  PG_CHECK_EQ_STR("matmul: c [5, 3] does not broadcast to the output shape [2, 5]", err.message);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("matmul", NULL, 1, in, out, &err));
  PG_CHECK_EQ_STR("matmul: expects 2 to 3 inputs (a, b[, c]), got 1", err.message);
  struct pg_tensor_meta sc = meta(F32, 0, a);
  in[1] = sc;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("matmul", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("matmul: b must have rank >= 1, got a scalar", err.message);
  /* fp64 anywhere makes the result fp64; fp16 inputs compute in fp32 */
  int64_t m[2] = {5, 7}, n2[2] = {7, 2};
  struct pg_tensor_meta mix[2] = {meta(PG_DTYPE_F16, 2, m), meta(PG_DTYPE_BF16, 2, n2)};
  PG_CHECK_OK(infer("matmul", NULL, 2, mix, out, &err));
  PG_CHECK_EQ_INT(PG_DTYPE_F32, out[0].dtype);
  mix[1].dtype = PG_DTYPE_F64;
  PG_CHECK_OK(infer("matmul", NULL, 2, mix, out, &err));
  PG_CHECK_EQ_INT(PG_DTYPE_F64, out[0].dtype);
  mix[1].dtype = PG_DTYPE_INVALID;
  PG_CHECK_EQ_INT(PG_EDTYPE, infer("matmul", NULL, 2, mix, out, &err));
  PG_CHECK_EQ_STR("matmul: input 2 has an invalid dtype", err.message);
}

PG_TEST(broadcast_and_axis_messages) {
  int64_t a[3] = {1, 3, 1}, b[3] = {5, 2, 7};
  struct pg_tensor_meta in[2] = {meta(F32, 3, a), meta(F32, 3, b)}, out[1];
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("add", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("add: cannot broadcast a [1, 3, 1] with b [5, 2, 7] (dimension 1 of the result: "
                  "3 vs 2)",
                  err.message);
  int64_t h1[2] = {(int64_t)1 << 40, 1}, h2[2] = {1, (int64_t)1 << 40};
  struct pg_tensor_meta huge[2] = {meta(F32, 2, h1), meta(F32, 2, h2)};
  PG_CHECK_EQ_INT(PG_EOVERFLOW, infer("mul", NULL, 2, huge, out, &err));
  PG_CHECK_EQ_INT(PG_EOVERFLOW, infer("matmul", NULL, 2, huge, out, &err));
  struct kt_attrs at;
  kt_attrs_init(&at, pg_kernel_find("softmax"));
  kt_set_i(&at, "axis", 3);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("softmax", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("softmax: axis 3 out of range for x of rank 3", err.message);
  kt_set_i(&at, "axis", -4);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("softmax", &at, 1, in, out, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, infer("softmax", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("softmax: expects 1 input (x), got 2", err.message);
}

PG_TEST(norm_rope_layout_messages) {
  int64_t x[2] = {2, 128}, w[1] = {64}, r[3] = {2, 7, 63}, p[1] = {5};
  struct pg_tensor_meta in[3] = {meta(F32, 2, x), meta(F32, 1, w), meta(F32, 1, w)}, out[1];
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("layernorm", NULL, 2, in, out, &err));
  PG_CHECK_EQ_STR("layernorm: weight [64] does not broadcast to the normalized shape [128] of x "
                  "[2, 128]",
                  err.message);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("rmsnorm", NULL, 3, in, out, &err));
  PG_CHECK_EQ_STR("rmsnorm: expects 1 to 2 inputs (x[, weight]), got 3", err.message);

  struct pg_tensor_meta rin[2] = {meta(F32, 3, r), meta(PG_DTYPE_I64, 1, p)};
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("rope", NULL, 1, rin, out, &err));
  PG_CHECK_EQ_STR("rope: the last dim of x (D) must be even, got 63", err.message);
  rin[0].shape[2] = 64;
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("rope", NULL, 2, rin, out, &err));
  PG_CHECK_EQ_STR("rope: positions [5] does not broadcast to the leading shape [2, 7] of x "
                  "[2, 7, 64]",
                  err.message);
  rin[1].shape[0] = 7;
  PG_CHECK_OK(infer("rope", NULL, 2, rin, out, &err));
  PG_CHECK_EQ_INT(PG_DTYPE_F32, out[0].dtype);
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("causal_mask", NULL, 1, in + 1, out, &err));
  PG_CHECK_EQ_STR("causal_mask: x must have rank >= 2 ([..., rows, cols]), got rank 1", err.message);

  struct kt_attrs at;
  kt_attrs_init(&at, pg_kernel_find("reshape"));
  int64_t bad[2] = {3, -1}, two[2] = {-1, -1}, big[2] = {16, 17};
  kt_set_ints(&at, "shape", 2, bad);
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("reshape", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("reshape: cannot reshape x [2, 128] (256 elements) into [3, -1]", err.message);
  kt_set_ints(&at, "shape", 2, two);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("reshape", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("reshape: shape [-1, -1] has more than one -1", err.message);
  kt_set_ints(&at, "shape", 2, big);
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("reshape", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("reshape: cannot reshape x [2, 128] (256 elements) into [16, 17] (272 elements)",
                  err.message);

  kt_attrs_init(&at, pg_kernel_find("permute"));
  int64_t p3[3] = {0, 2, 1}, p2[2] = {1, 1};
  kt_set_ints(&at, "perm", 3, p3);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("permute", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("permute: perm [0, 2, 1] has 3 entries, x has rank 2", err.message);
  kt_set_ints(&at, "perm", 2, p2);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("permute", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("permute: perm [1, 1] is not a permutation of 0..1", err.message);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("permute", NULL, 1, in, out, &err));
  PG_CHECK_EQ_STR("permute: missing required attribute perm", err.message);
  PG_CHECK_EQ_INT(PG_EINVAL, infer("transpose", NULL, 1, in + 1, out, &err));
  PG_CHECK_EQ_STR("transpose: axis -2 out of range for x of rank 1", err.message);

  kt_attrs_init(&at, pg_kernel_find("gelu"));
  kt_set_s(&at, "approximate", "fast");
  PG_CHECK_EQ_INT(PG_EINVAL, infer("gelu", &at, 1, in, out, &err));
  PG_CHECK_EQ_STR("gelu: approximate must be \"none\" or \"tanh\", got \"fast\"", err.message);
  kt_attrs_init(&at, pg_kernel_find("cast"));
  kt_set_s(&at, "dtype", "float8");
  PG_CHECK_EQ_INT(PG_EINVAL, infer("cast", &at, 1, in, out, &err));
  PG_CHECK(strstr(err.message, "cast: unknown dtype \"float8\"") == err.message);

  int64_t z[2] = {3, 0};
  struct pg_tensor_meta zin[1] = {meta(F32, 2, z)};
  PG_CHECK_EQ_INT(PG_ESHAPE, infer("max", NULL, 1, zin, out, &err));
  PG_CHECK_EQ_STR("max: axis 1 of x [3, 0] is empty and max has no identity", err.message);
  PG_CHECK_OK(infer("sum", NULL, 1, zin, out, &err));
  PG_CHECK_EQ_INT(1, out[0].ndim);
  PG_CHECK_EQ_INT(3, out[0].shape[0]);
}

PG_TEST(run_refuses_mismatching_outputs_and_bad_tensors) {
  int64_t s[2] = {3, 4}, bad[2] = {4, 3};
  struct pg_tensor *x = kt_tensor(PG_DTYPE_F32, 2, s, 1, 0, 1);
  struct pg_tensor o, o16;
  pg_tensor_init(&o);
  pg_tensor_init(&o16);
  struct pg_error err;
  PG_CHECK_OK(pg_tensor_alloc(&o, PG_DTYPE_F32, 2, bad, &err));
  PG_CHECK_OK(pg_tensor_alloc(&o16, PG_DTYPE_F16, 2, s, &err));
  struct pg_kernel_args args;
  memset(&args, 0, sizeof args);
  args.n_inputs = 1;
  args.inputs[0] = x;
  struct pg_tensor *outs[1] = {&o};
  const struct pg_kernel_def *def = pg_kernel_find("exp");
  PG_CHECK_EQ_INT(PG_ESHAPE, def->run(&args, outs, &err));
  PG_CHECK_EQ_STR("exp: output 1 is float32 [4, 3], infer says float32 [3, 4]", err.message);
  outs[0] = &o16;
  PG_CHECK_EQ_INT(PG_ESHAPE, def->run(&args, outs, &err));
  args.inputs[0] = NULL;
  PG_CHECK_EQ_INT(PG_EINVAL, def->run(&args, outs, &err));
  PG_CHECK_EQ_STR("exp: input 1 is NULL", err.message);
  args.n_inputs = 9;
  PG_CHECK_EQ_INT(PG_EINVAL, def->run(&args, outs, &err));
  args.n_inputs = 1;
  args.inputs[0] = x;
  args.n_attrs = 3; /* exp declares none */
  PG_CHECK_EQ_INT(PG_EINVAL, def->run(&args, outs, &err));
  /* a tensor claiming data it does not have */
  struct pg_tensor nodata;
  pg_tensor_init(&nodata);
  PG_CHECK_OK(pg_tensor_describe(&nodata, PG_DTYPE_F32, 2, s, &err));
  args.n_attrs = 0;
  args.inputs[0] = &nodata;
  PG_CHECK_EQ_INT(PG_EINVAL, def->run(&args, outs, &err));
  PG_CHECK_EQ_STR("exp: input 1 has no data", err.message);
  pg_tensor_reset(&o);
  pg_tensor_reset(&o16);
  kt_free(x);
}

/* Random arities, ranks, dims (0..4), dtypes and attribute values for every kernel:
 * infer must answer without crashing, and whenever infer accepts, run on real tensors
 * of those shapes must succeed too (under ASan this also proves no over-read). */
PG_TEST(random_arguments_infer_then_run_agree) {
  static const enum pg_dtype dts[4] = {PG_DTYPE_F32, PG_DTYPE_F64, PG_DTYPE_F16, PG_DTYPE_I32};
  static const double fl[6] = {-1, 0, 1e-5, 0.5, 2, 10000};
  static const char *const words[7] = {"none", "tanh", "float16", "bfloat16", "int8", "x", ""};
  const struct pg_kernel_def *const *defs;
  int nk = pg_kernel_list(&defs);
  uint64_t seed = 42;
  int accepted = 0, per_kernel[64] = {0};
  for (int iter = 0; iter < 6000; iter++) {
    const struct pg_kernel_def *def = defs[iter % nk];
    int n_in = def->min_inputs + (int)kt_rand(&seed, -0.3, def->max_inputs - def->min_inputs + 1.3);
    if (n_in < 0) n_in = 0;
    if (n_in > PG_KERNEL_MAX_INPUTS) n_in = PG_KERNEL_MAX_INPUTS;
    struct pg_tensor_meta in[PG_KERNEL_MAX_INPUTS], out[PG_KERNEL_MAX_OUTPUTS];
    memset(in, 0, sizeof in);
    /* correlated shapes: start from one random shape, perturb per input */
    int base_nd = (int)kt_rand(&seed, 0, 5);
    int64_t base[PG_MAX_NDIM];
    for (int d = 0; d < base_nd; d++) base[d] = (int64_t)kt_rand(&seed, 0, 5);
    for (int i = 0; i < n_in; i++) {
      in[i].dtype = dts[(int)kt_rand(&seed, 0, 4)];
      in[i].ndim = kt_rand(&seed, 0, 1) < 0.6 ? base_nd : (int)kt_rand(&seed, 0, 5);
      for (int d = 0; d < in[i].ndim; d++) {
        int bd = d + base_nd - in[i].ndim;
        double r = kt_rand(&seed, 0, 1);
        in[i].shape[d] = (bd >= 0 && r < 0.7) ? base[bd] : r < 0.85 ? 1 : (int64_t)kt_rand(&seed, 0, 5);
      }
    }
    struct kt_attrs at;
    kt_attrs_init(&at, def);
    for (int a = 0; a < at.n; a++) {
      if (kt_rand(&seed, 0, 1) < 0.3) continue; /* keep the default / absent */
      struct pg_attr_value *v = &at.v[a];
      memset(v, 0, sizeof *v);
      v->type = def->attrs[a].type;
      v->f = fl[(int)kt_rand(&seed, 0, 6)];
      v->i = (int64_t)kt_rand(&seed, -5, 6);
      v->b = kt_rand(&seed, 0, 1) < 0.5;
      v->n_ints = (int)kt_rand(&seed, 0, 6);
      for (int k = 0; k < v->n_ints; k++) v->ints[k] = (int64_t)kt_rand(&seed, -5, 6);
      snprintf(v->s, sizeof v->s, "%s", words[(int)kt_rand(&seed, 0, 7)]);
    }
    struct pg_error err;
    pg_error_clear(&err);
    int rc = def->infer(in, n_in, at.v, out, &err);
    if (rc != PG_OK) {
      PG_CHECK_MSG(rc < 0 && err.message[0] != '\0', "%s: error %d without a message", def->name, rc);
      PG_CHECK_MSG(strncmp(err.message, def->name, strlen(def->name)) == 0,
                   "%s: message does not name the op: %s", def->name, err.message);
      continue;
    }
    accepted++;
    per_kernel[iter % nk]++;
    PG_CHECK(out[0].ndim >= 0 && out[0].ndim <= PG_MAX_NDIM);
    PG_CHECK(out[0].dtype == PG_DTYPE_F32 || out[0].dtype == PG_DTYPE_F64);
    struct pg_tensor *ts[PG_KERNEL_MAX_INPUTS] = {0};
    for (int i = 0; i < n_in; i++) ts[i] = kt_tensor(in[i].dtype, in[i].ndim, in[i].shape, (uint64_t)iter, 0.1, 3);
    struct pg_tensor *o = NULL;
    rc = kt_run(def->name, &at, n_in, (const struct pg_tensor *const *)ts, (iter % 3), &o, &err);
    PG_CHECK_MSG(rc == PG_OK, "%s: infer accepted but run failed: %s", def->name, err.message);
    kt_check_shape(o, out[0].ndim, out[0].shape);
    for (int i = 0; i < n_in; i++) kt_free(ts[i]);
    kt_free(o);
  }
  PG_CHECK_MSG(accepted > 1000, "only %d random calls accepted", accepted);
  for (int k = 0; k < nk && k < 64; k++)
    PG_CHECK_MSG(per_kernel[k] >= 5, "%s: only %d random calls accepted", defs[k]->name,
                 per_kernel[k]);
}
