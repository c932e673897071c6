/* A no-op impl plugin for the persistence benchmarks (tools/bench/bench_persist.sh):
 * every wrapper writes zeros to its outputs and returns. With PG_BENCH_FIRST_CALL_MS
 * set, the first call in a process sleeps that long first — what creating a CUDA
 * context costs a real GPU plugin (0.2-0.4 s measured on an H100 host). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

static int first_call_done;

static int noop(DLTensor *outputs, int32_t n_outputs) {
  if (!first_call_done) {
    first_call_done = 1;
    const char *ms = getenv("PG_BENCH_FIRST_CALL_MS");
    long v = ms ? strtol(ms, NULL, 10) : 0;
    if (v > 0) {
      struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  for (int32_t i = 0; i < n_outputs; i++) {
    int64_t n = 1;
    for (int a = 0; a < outputs[i].ndim; a++) n *= outputs[i].shape[a];
    memset(outputs[i].data, 0, (size_t)n * (outputs[i].dtype.bits / 8u));
  }
  return 0;
}

#define NOOP_WRAPPER(name)                                                              \
  PG_IMPL_EXPORT int name(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,  \
                          int32_t n_outputs, const pg_call *call) {                     \
    (void)inputs, (void)n_inputs, (void)call;                                           \
    return noop(outputs, n_outputs);                                                    \
  }

NOOP_WRAPPER(attention_module1_wrapper)
NOOP_WRAPPER(attention_module12_wrapper)
NOOP_WRAPPER(attention_module123_wrapper)
NOOP_WRAPPER(bench_module1_wrapper)
