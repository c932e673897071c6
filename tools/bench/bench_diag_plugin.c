/* The impl plugin of the diagnosis-cost benchmark (tools/bench/bench_diagnosis.sh): one
 * module, x [R, C] fp32 -> y = scale(x, 2), z = softmax(x, axis=-1), with a bug planted
 * in each output so both fail and are diagnosed: y = 4 x (the factor applied twice),
 * z = softmax over axis 0. */
#include <math.h>
#include <stdlib.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

PG_IMPL_EXPORT int diag_module1_wrapper(const DLTensor *inputs, int32_t n_inputs,
                                        DLTensor *outputs, int32_t n_outputs,
                                        const pg_call *call) {
  (void)call;
  if (n_inputs != 1 || n_outputs != 2 || inputs[0].ndim != 2) return 1;
  int64_t R = inputs[0].shape[0], C = inputs[0].shape[1];
  const float *x = inputs[0].data;
  float *y = outputs[0].data, *z = outputs[1].data;
  for (int64_t i = 0; i < R * C; i++) y[i] = 4.0f * x[i];
  float *mx = malloc((size_t)C * sizeof *mx), *sum = calloc((size_t)C, sizeof *sum);
  if (!mx || !sum) {
    free(mx);
    free(sum);
    return 1;
  }
  for (int64_t c = 0; c < C; c++) mx[c] = -INFINITY;
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) mx[c] = fmaxf(mx[c], x[r * C + c]);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) sum[c] += z[r * C + c] = expf(x[r * C + c] - mx[c]);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) z[r * C + c] /= sum[c];
  free(mx);
  free(sum);
  return 0;
}
