/* swiglu_ffn golden library — the op-level golden `swiglu_ffn_fused_golden` for
 * composition verification: the whole block y = (silu(x Wg) * (x Wu)) Wd computed
 * row by row in double precision in one fused loop, with no intermediate rounding,
 * so it shares no code and no summation order with the step composition it checks
 * (matmul/silu/mul through OpenBLAS, h rounded to fp16). Golden plugin ABI:
 * include/phasegate/golden.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "phasegate/golden.h"

static double get(const DLTensor *t, int64_t i, int bits) {
  return bits == 64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

static void put(DLTensor *t, int64_t i, double v, int bits) {
  if (bits == 64) ((double *)t->data)[i] = v;
  else ((float *)t->data)[i] = (float)v;
}

__attribute__((visibility("default"))) int swiglu_ffn_fused_golden(
    const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out, const pg_golden_ctx *ctx) {
  if (n_in != 4 || n_out != 1) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "expected inputs x, w_gate, w_up, w_down and output y");
    return 1;
  }
  if (in[0].ndim != 2 || in[1].ndim != 2 || in[3].ndim != 2) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "x and the weights must be 2-D");
    return 1;
  }
  int bits = ctx->precision_bits;
  int64_t T = in[0].shape[0], D = in[0].shape[1], F = in[1].shape[1];
  if (in[1].shape[0] != D || in[2].shape[0] != D || in[2].shape[1] != F || in[3].shape[0] != F ||
      in[3].shape[1] != D || out[0].shape[0] != T || out[0].shape[1] != D) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "inconsistent shapes");
    return 1;
  }
  double *h = malloc((size_t)(F > 0 ? F : 1) * sizeof *h);
  if (!h) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "out of memory");
    return 1;
  }
  for (int64_t t = 0; t < T; t++) {
    for (int64_t f = 0; f < F; f++) {
      double g = 0, u = 0;
      for (int64_t d = 0; d < D; d++) {
        double xv = get(&in[0], t * D + d, bits);
        g += xv * get(&in[1], d * F + f, bits);
        u += xv * get(&in[2], d * F + f, bits);
      }
      h[f] = g / (1.0 + exp(-g)) * u;
    }
    for (int64_t d = 0; d < D; d++) {
      double acc = 0;
      for (int64_t f = 0; f < F; f++) acc += h[f] * get(&in[3], f * D + d, bits);
      put(&out[0], t * D + d, acc, bits);
    }
  }
  free(h);
  return 0;
}
