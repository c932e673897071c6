/* swiglu_ffn emulated-device impl — what an accelerator kernel for the SwiGLU FFN
 * computes, run on the CPU, exported with the impl ABI (include/phasegate/impl.h) for
 * every phase: swiglu_ffn_module1_wrapper (gate, up), ..._module12_wrapper (h) and
 * ..._module123_wrapper (y).
 *
 * Device-like numerics, deliberately different from the goldens: operands are read
 * from fp16/bf16 storage into fp32, matmuls accumulate in fp32 over K tiles of 32 whose
 * partial sums are added at the end (another summation order than BLAS), silu uses a
 * fast exp (exp2 split + polynomial), and h is stored as fp16 between the vector and
 * the cube stage. Modes: `sim` always runs; `npu` returns PG_UNAVAILABLE unless
 * PHASEGATE_EMULATE_NPU=1 (then it runs with 64-wide tiles, like a second device).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define EXPORT __attribute__((visibility("default")))

/* Reads a whole tensor into a new fp32 buffer (what the device's loads produce). */
static float *load_f32(const DLTensor *t, int64_t n) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  if (!p) return NULL;
  for (int64_t i = 0; i < n; i++) p[i] = (float)pg_load_f64(t->data, dt, (size_t)i);
  return p;
}

static void store(DLTensor *t, const float *v, int64_t n) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  for (int64_t i = 0; i < n; i++) pg_store_f64(t->data, dt, (size_t)i, v[i]);
}

/* c[M,N] = a[M,K] b[K,N], fp32 accumulation per K tile, tile partials summed last. */
static void tiled_matmul(const float *a, const float *b, float *c, int64_t M, int64_t K,
                         int64_t N, int64_t tile) {
  int64_t n_tiles = (K + tile - 1) / tile;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float total = 0.0f;
      for (int64_t t = n_tiles - 1; t >= 0; t--) { /* tiles drained last-to-first */
        float part = 0.0f;
        int64_t k1 = (t + 1) * tile < K ? (t + 1) * tile : K;
        for (int64_t k = t * tile; k < k1; k++) part += a[i * K + k] * b[k * N + j];
        total += part;
      }
      c[i * N + j] = total;
    }
}

/* exp(x) as a vector unit does it: 2^(x log2 e) = 2^n * 2^f, f in [-0.5, 0.5],
 * 2^f by a degree-6 polynomial (relative error ~1e-7). */
static float fast_expf(float x) {
  if (x != x) return x;
  if (x > 88.0f) return INFINITY;
  if (x < -103.0f) return 0.0f;
  float y = x * 1.44269504f;
  float n = floorf(y + 0.5f);
  float f = y - n;
  const float l = 0.69314718f;
  float p = 1.0f + f * l * (1.0f + f * l * (0.5f + f * l * (1.0f / 6 + f * l * (1.0f / 24 +
                 f * l * (1.0f / 120 + f * l * (1.0f / 720))))));
  return ldexpf(p, (int)n);
}

static float silu(float g) { return g / (1.0f + fast_expf(-g)); }

static int mode_check(const pg_call *call, int64_t *tile) {
  *tile = 32;
  if (strcmp(call->mode, "sim") == 0) return 0;
  if (strcmp(call->mode, "npu") == 0) {
    const char *e = getenv("PHASEGATE_EMULATE_NPU");
    if (!e || strcmp(e, "1") != 0) {
      call->log(call, PG_LOG_INFO, "npu: no device here (set PHASEGATE_EMULATE_NPU=1 to emulate)");
      return PG_UNAVAILABLE;
    }
    *tile = 64;
    return 0;
  }
  call->log(call, PG_LOG_ERROR, "unknown mode (this impl supports sim and npu)");
  return 2;
}

/* Runs the block up to module k and writes the phase-k boundary outputs. */
static int run(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
               const pg_call *call, int k) {
  int64_t tile;
  int rc = mode_check(call, &tile);
  if (rc) return rc;
  if (n_in != 4 || n_out != (k == 1 ? 2 : 1)) {
    call->log(call, PG_LOG_ERROR, "unexpected tensor count");
    return 3;
  }
  int64_t T = in[0].shape[0], D = in[0].shape[1], F = in[1].shape[1];
  float *x = load_f32(&in[0], T * D), *wg = load_f32(&in[1], D * F), *wu = load_f32(&in[2], D * F);
  float *gate = malloc((size_t)(T * F > 0 ? T * F : 1) * sizeof *gate);
  float *up = malloc((size_t)(T * F > 0 ? T * F : 1) * sizeof *up);
  float *wd = NULL, *y = NULL;
  rc = 4;
  if (!x || !wg || !wu || !gate || !up) goto done;
  tiled_matmul(x, wg, gate, T, D, F, tile);
  tiled_matmul(x, wu, up, T, D, F, tile);
  if (k == 1) {
    store(&out[0], gate, T * F);
    store(&out[1], up, T * F);
    rc = 0;
    goto done;
  }
  /* module 2: h = silu(gate) * up, kept in fp16 storage like the device's buffer */
  for (int64_t i = 0; i < T * F; i++) gate[i] = pg_f16_to_f32(pg_f32_to_f16(silu(gate[i]) * up[i]));
  if (k == 2) {
    store(&out[0], gate, T * F);
    rc = 0;
    goto done;
  }
  wd = load_f32(&in[3], F * D);
  y = malloc((size_t)(T * D > 0 ? T * D : 1) * sizeof *y);
  if (!wd || !y) goto done;
  tiled_matmul(gate, wd, y, T, F, D, tile);
  store(&out[0], y, T * D);
  rc = 0;
done:
  if (rc == 4) call->log(call, PG_LOG_ERROR, "out of memory");
  free(x), free(wg), free(wu), free(gate), free(up), free(wd), free(y);
  return rc;
}

EXPORT int swiglu_ffn_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                      int32_t n_out, const pg_call *call) {
  return run(in, n_in, out, n_out, call, 1);
}
EXPORT int swiglu_ffn_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                       int32_t n_out, const pg_call *call) {
  return run(in, n_in, out, n_out, call, 2);
}
EXPORT int swiglu_ffn_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                        int32_t n_out, const pg_call *call) {
  return run(in, n_in, out, n_out, call, 3);
}
