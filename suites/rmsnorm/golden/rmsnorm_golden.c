/* rmsnorm golden library — the op-level golden `rmsnorm_fused_golden`: per row, the
 * mean square in double (a compensated running sum), then y = x * weight / sqrt(ms +
 * eps) with eps = 1e-6 as in the contract. Independent of goldens/' rmsnorm kernel,
 * so `phasegate selftest` compares two different computations. Golden plugin ABI:
 * include/phasegate/golden.h.
 */
#include <math.h>
#include <stdio.h>

#include "phasegate/golden.h"

static double get(const DLTensor *t, int64_t i, int bits) {
  return bits == 64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

__attribute__((visibility("default"))) int rmsnorm_fused_golden(
    const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out, const pg_golden_ctx *ctx) {
  if (n_in != 2 || n_out != 1 || in[0].ndim < 1 || in[1].ndim != 1) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "expected x [.., D], weight [D] and output y");
    return 1;
  }
  int bits = ctx->precision_bits;
  int64_t D = in[0].shape[in[0].ndim - 1], rows = 1;
  for (int i = 0; i < in[0].ndim - 1; i++) rows *= in[0].shape[i];
  if (in[1].shape[0] != D) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "weight has %lld elements, x rows have %lld",
             (long long)in[1].shape[0], (long long)D);
    return 1;
  }
  const double eps = 1e-6;
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0, comp = 0; /* Kahan */
    for (int64_t d = 0; d < D; d++) {
      double v = get(&in[0], r * D + d, bits);
      double yk = v * v - comp, t = sum + yk;
      comp = (t - sum) - yk;
      sum = t;
    }
    double inv = 1.0 / sqrt(sum / (double)(D > 0 ? D : 1) + eps);
    for (int64_t d = 0; d < D; d++) {
      double y = get(&in[0], r * D + d, bits) * inv * get(&in[1], d, bits);
      if (bits == 64) ((double *)out[0].data)[r * D + d] = y;
      else ((float *)out[0].data)[r * D + d] = (float)y;
    }
  }
  return 0;
}
