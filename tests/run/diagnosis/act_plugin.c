/* Diagnosis fixture plugin for tests/run/diagnosis/op (y = gelu(x), erf form, in float),
 * compiled once per planted bug (-DACT_FAULT=…):
 *   ACT_NONE       correct
 *   ACT_UNWRITTEN  never writes the block rows 32.., columns 64.. (the NaN prefill stays)
 *   ACT_NONDET     element [1, 3] one ulp up on every second call of the process (inside
 *                  the tolerance: only --repeat sees it)
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define ACT_NONE 0
#define ACT_UNWRITTEN 1
#define ACT_NONDET 2
#ifndef ACT_FAULT
#define ACT_FAULT ACT_NONE
#endif

__attribute__((visibility("default"))) int act_module1_wrapper(const DLTensor *in, int32_t n_in,
                                                               DLTensor *out, int32_t n_out,
                                                               const pg_call *call);

int act_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                        const pg_call *call) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 2;
  if (strcmp(call->mode, "sim") != 0) return PG_UNAVAILABLE;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
#if ACT_FAULT == ACT_UNWRITTEN
      if (r >= 32 && c >= 64) continue;
#endif
      float v = x[r * cols + c];
      y[r * cols + c] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
#if ACT_FAULT == ACT_NONDET
  static int calls;
  if (++calls % 2 == 0 && rows > 1 && cols > 3) y[cols + 3] = nextafterf(y[cols + 3], INFINITY);
#endif
  return 0;
}
