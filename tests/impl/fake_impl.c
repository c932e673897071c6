/* A test plugin for the runner's unit tests: op "fake", phase 1 doubles its float32
 * input into "y"; the case id selects a fault (crash, hang, overrun, unavail, noop,
 * fail, oom, exit) so one library exercises every sandbox/adapter classification.
 * Phase 2 (fake_module12_wrapper) is deliberately missing. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phasegate/impl.h"

int fake_module1_wrapper(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,
                         int32_t n_outputs, const pg_call *call);

int fake_module1_wrapper(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,
                         int32_t n_outputs, const pg_call *call) {
  const char *c = call->case_id;
  if (n_inputs != 1 || n_outputs != 1) return 2;
  if (strcmp(call->mode, "npu") == 0) return PG_UNAVAILABLE;
  int64_t n = 1;
  for (int i = 0; i < inputs[0].ndim; i++) n *= inputs[0].shape[i];
  const float *x = inputs[0].data;
  float *y = outputs[0].data;
  call->log(call, PG_LOG_INFO, "fake impl running");
  printf("hello from the fake impl, device %d, dim N=%lld\n", (int)call->device_id,
         (long long)pg_call_dim(call, "N", -1));
  if (strcmp(c, "crash") == 0) raise(SIGSEGV);
  if (strcmp(c, "hang") == 0) for (;;) pause();
  if (strcmp(c, "noop") == 0) return 0;
  if (strcmp(c, "fail") == 0) return 5;
  if (strcmp(c, "exit") == 0) exit(3);
  if (strcmp(c, "oom") == 0) {
    void *p = malloc((size_t)1 << 40);
    if (!p) { fprintf(stderr, "fake: out of memory\n"); return 12; }
    free(p);
  }
  for (int64_t i = 0; i < n; i++) y[i] = 2.0f * x[i];
  if (strcmp(c, "overrun") == 0) y[n + 3] = 1.0f;
  return 0;
}
