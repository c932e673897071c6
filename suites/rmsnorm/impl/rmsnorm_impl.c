/* rmsnorm emulated-device impl — the fused rmsnorm a vector unit computes, run on the
 * CPU and exported with the impl ABI (include/phasegate/impl.h) as
 * rmsnorm_module1_wrapper (module_count 1: phase 1 is the whole op).
 *
 * Device-like numerics: x and weight are read from fp16/bf16 storage into fp32; the
 * sum of squares is accumulated in fp32 lanes of 16 whose partials are reduced as a
 * tree (not left to right); 1/sqrt uses the bit-trick estimate refined by two
 * Newton steps (relative error ~5e-6), as a hardware rsqrt + refinement does.
 * Modes: `sim` runs; `npu` returns PG_UNAVAILABLE unless PHASEGATE_EMULATE_NPU=1.
 */
#include <stdlib.h>
#include <string.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define LANES 16

static float approx_rsqrt(float v) {
  uint32_t i;
  memcpy(&i, &v, 4);
  i = 0x5f375a86u - (i >> 1);
  float y;
  memcpy(&y, &i, 4);
  y = y * (1.5f - 0.5f * v * y * y);
  y = y * (1.5f - 0.5f * v * y * y);
  return y;
}

__attribute__((visibility("default"))) int rmsnorm_module1_wrapper(
    const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out, const pg_call *call) {
  if (strcmp(call->mode, "npu") == 0) {
    const char *e = getenv("PHASEGATE_EMULATE_NPU");
    if (!e || strcmp(e, "1") != 0) {
      call->log(call, PG_LOG_INFO, "npu: no device here (set PHASEGATE_EMULATE_NPU=1 to emulate)");
      return PG_UNAVAILABLE;
    }
  } else if (strcmp(call->mode, "sim") != 0) {
    call->log(call, PG_LOG_ERROR, "unknown mode (this impl supports sim and npu)");
    return 2;
  }
  if (n_in != 2 || n_out != 1 || in[0].ndim < 1) {
    call->log(call, PG_LOG_ERROR, "expected inputs x, weight and output y");
    return 3;
  }
  enum pg_dtype xt = pg_dtype_from_dl(in[0].dtype), wt = pg_dtype_from_dl(in[1].dtype),
                yt = pg_dtype_from_dl(out[0].dtype);
  int64_t D = in[0].shape[in[0].ndim - 1], rows = 1;
  for (int i = 0; i < in[0].ndim - 1; i++) rows *= in[0].shape[i];
  float *row = malloc((size_t)(D > 0 ? D : 1) * sizeof *row);
  float *w = malloc((size_t)(D > 0 ? D : 1) * sizeof *w);
  if (!row || !w) {
    free(row), free(w);
    call->log(call, PG_LOG_ERROR, "out of memory");
    return 4;
  }
  for (int64_t d = 0; d < D; d++) w[d] = (float)pg_load_f64(in[1].data, wt, (size_t)d);
  const float eps = 1e-6f;
  for (int64_t r = 0; r < rows; r++) {
    float lane[LANES] = {0};
    for (int64_t d = 0; d < D; d++) {
      row[d] = (float)pg_load_f64(in[0].data, xt, (size_t)(r * D + d));
      lane[d % LANES] += row[d] * row[d];
    }
    for (int width = LANES / 2; width >= 1; width /= 2)
      for (int l = 0; l < width; l++) lane[l] += lane[l + width];
    float inv = approx_rsqrt(lane[0] / (float)(D > 0 ? D : 1) + eps);
    for (int64_t d = 0; d < D; d++)
      pg_store_f64(out[0].data, yt, (size_t)(r * D + d), (double)(row[d] * inv * w[d]));
  }
  free(row), free(w);
  return 0;
}
