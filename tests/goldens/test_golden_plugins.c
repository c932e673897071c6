/* phasegate tests — a golden library with well- and badly-behaved golden plugins, for
 * tests/goldens: each exercises one check of goldens/plugin.c. */
#include <stdio.h>
#include <string.h>

#include "phasegate/golden.h"

#define EXPORT __attribute__((visibility("default")))

static int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* out[i] = 2 * in0[i] + (dim N), in the reference precision. */
EXPORT int good_golden(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                       const pg_golden_ctx *ctx) {
  if (n_in < 1 || n_out < 1) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "expected 1 input and 1 output");
    return 1;
  }
  double add = (double)pg_golden_dim(ctx, "N", 0);
  int64_t n = numel(&out[0]);
  for (int64_t i = 0; i < n; i++) {
    if (ctx->precision_bits == 64)
      ((double *)out[0].data)[i] = 2.0 * ((const double *)in[0].data)[i] + add;
    else
      ((float *)out[0].data)[i] = 2.0f * ((const float *)in[0].data)[i] + (float)add;
  }
  return 0;
}

/* Writes only the first element. */
EXPORT int lazy_golden(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                       const pg_golden_ctx *ctx) {
  (void)in, (void)n_in, (void)n_out;
  if (ctx->precision_bits == 64) ((double *)out[0].data)[0] = 1.0;
  else ((float *)out[0].data)[0] = 1.0f;
  return 0;
}

EXPORT int failing_golden(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                          const pg_golden_ctx *ctx) {
  (void)in, (void)n_in, (void)out, (void)n_out;
  snprintf(ctx->errbuf, ctx->errbuf_size, "weights are not positive definite");
  return 3;
}

EXPORT int reshaping_golden(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                            const pg_golden_ctx *ctx) {
  good_golden(in, n_in, out, n_out, ctx);
  out[0].shape[0] = 1;
  return 0;
}

/* Returns NaN on purpose: a golden may produce NaN where NaN is the right answer. */
EXPORT int nan_golden(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                      const pg_golden_ctx *ctx) {
  (void)in, (void)n_in, (void)n_out;
  int64_t n = numel(&out[0]);
  volatile double zero = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (ctx->precision_bits == 64) ((double *)out[0].data)[i] = zero / zero;
    else ((float *)out[0].data)[i] = (float)(zero / zero);
  }
  return 0;
}
