/* A plugin impl of tests/run/inspection/op (chunk_accum) for inspection probes: the wrapper
 * of phase 1 gets its boundary output `total` and then the probe buffer
 * `inspection_acc` ([ITERS, B, D], the running sum after each chunk).
 *   -DPROBE_DRIFT  the accumulation picks up a bias from iteration 5 on
 *   -DPROBE_SKIP   the probe buffer is left unwritten (its NaN prefill survives)
 * It also prints its inputs' first values, so the barrier test can look for them. */
#include <stdint.h>
#include <stdio.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int chunk_accum_module1_wrapper(const DLTensor *inputs, int32_t n_inputs,
                                       DLTensor *outputs, int32_t n_outputs,
                                       const pg_call *call) {
  (void)call;
  if (n_inputs < 1 || n_outputs < 2) return 1; /* the probe buffer must be there */
  const DLTensor *x = &inputs[0];
  int64_t iters = x->shape[0], per = x->shape[1] * x->shape[2];
  const float *xs = x->data;
  float *total = outputs[0].data, *acc = outputs[1].data;
  fprintf(stderr, "probe_impl: x[0] = %.9g\n", xs[0]);
  for (int64_t e = 0; e < per; e++) {
    float run = 0.0f;
    for (int64_t i = 0; i < iters; i++) {
      run += xs[i * per + e];
#ifdef PROBE_DRIFT
      if (i >= 5) run += 0.01f;
#endif
#ifndef PROBE_SKIP
      acc[i * per + e] = run;
#endif
    }
    total[e] = run;
  }
  /* the probe's value after iteration 3 is a reference value too: the barrier hides it */
  if (iters > 3) fprintf(stderr, "probe_impl: acc[3][0] = %.6g\n", (double)acc[3 * per]);
  return 0;
}
