/* tools/stress: the impl plugin of the `phasegate serve` load and fault tests
 * (serve_load.sh, serve_faults.sh). Op `load`, phase 1: every output is 2 * the first
 * input (float32), so an answer is a function of what its client sent and cross-talk
 * between clients shows. A case whose id starts with "crash" ends the plugin host with
 * SIGSEGV (the "crashing every 50th call" variant); one starting with "slow" takes
 * 0.3 s and one starting with "hang" 30 s, so a test can kill a client, a worker or
 * the daemon mid-call. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "phasegate/impl.h"

PG_IMPL_EXPORT int load_module1_wrapper(const DLTensor *inputs, int32_t n_inputs,
                                        DLTensor *outputs, int32_t n_outputs,
                                        const pg_call *call) {
  if (strncmp(call->case_id, "crash", 5) == 0) raise(SIGSEGV);
  if (strncmp(call->case_id, "slow", 4) == 0) usleep(300000);
  if (strncmp(call->case_id, "hang", 4) == 0) sleep(30);
  if (n_inputs < 1) return 1;
  int64_t n = 1;
  for (int a = 0; a < inputs[0].ndim; a++) n *= inputs[0].shape[a];
  const float *x = inputs[0].data;
  for (int32_t o = 0; o < n_outputs; o++) {
    int64_t m = 1;
    for (int a = 0; a < outputs[o].ndim; a++) m *= outputs[o].shape[a];
    if (m != n || inputs[0].dtype.bits != 32 || outputs[o].dtype.bits != 32) return 2;
    float *y = outputs[o].data;
    for (int64_t i = 0; i < n; i++) y[i] = 2.0f * x[i];
  }
  return 0;
}
