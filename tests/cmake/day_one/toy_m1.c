/* phasegate tests — day one: the toy op's impl with M1 only (y = 2x). There is no
 * toy_module12_wrapper and no toy_module123_wrapper yet: PHASES 1 says so. */
#include "phasegate/impl.h"

__attribute__((visibility("default"))) int toy_module1_wrapper(const DLTensor *in, int32_t n_in,
                                                               DLTensor *out, int32_t n_out,
                                                               const pg_call *call) {
  (void)call;
  if (n_in != 1 || n_out != 1) return 3;
  int64_t n = 1;
  for (int i = 0; i < in[0].ndim; i++) n *= in[0].shape[i];
  const float *x = (const float *)in[0].data;
  float *y = (float *)out[0].data;
  for (int64_t i = 0; i < n; i++) y[i] = 2.0f * x[i];
  return 0;
}
