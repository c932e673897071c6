/* phasegate tests — the toy op's impl plugin for the CMake consumer tests: exact
 * float32 versions of M1 (y = 2x), M1..M2 (z = 3x) and M1..M3 (relu(3x)). A case with
 * the knob "inject_bug" gets a wrong M1 (-2x: a sign flip), so it fails at every phase.
 * With PHASEGATE_TOY_DEVLOCK=DIR set it logs its device id to DIR/devices.log, holds
 * DIR/dev<device id> while running and fails when another test holds the same
 * device (the resource-group test). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "phasegate/impl.h"

#if defined(__GNUC__)
#define TOY_EXPORT __attribute__((visibility("default")))
#else
#define TOY_EXPORT
#endif

static int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* Runs phase K for one call; returns 0 or a runtime error code. */
static int toy_phase(int k, const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                     const pg_call *call) {
  if (n_in != 1 || n_out != 1) return 3;
  const char *lockdir = getenv("PHASEGATE_TOY_DEVLOCK");
  char lock[4096] = "";
  if (lockdir) {
    char logpath[4096];
    snprintf(logpath, sizeof logpath, "%s/devices.log", lockdir);
    FILE *log = fopen(logpath, "a");
    if (log) {
      fprintf(log, "device=%d\n", (int)call->device_id);
      fclose(log);
    }
    snprintf(lock, sizeof lock, "%s/dev%d", lockdir, (int)call->device_id);
    if (mkdir(lock, 0755) != 0) {
      fprintf(stderr, "toy: device %d is in use by another test\n", (int)call->device_id);
      return 4;
    }
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  const float *x = (const float *)in[0].data;
  float *y = (float *)out[0].data;
  int bug = call->knobs_json && strstr(call->knobs_json, "inject_bug") != NULL;
  for (int64_t i = 0; i < numel(&in[0]); i++) {
    float v = (bug ? -2.0f : 2.0f) * x[i];
    if (k >= 2) v = v + x[i];
    if (k >= 3) v = v > 0.0f ? v : 0.0f;
    y[i] = v;
  }
  if (lockdir) rmdir(lock);
  return 0;
}

TOY_EXPORT int toy_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                   int32_t n_out, const pg_call *call) {
  return toy_phase(1, in, n_in, out, n_out, call);
}
TOY_EXPORT int toy_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                    int32_t n_out, const pg_call *call) {
  return toy_phase(2, in, n_in, out, n_out, call);
}
TOY_EXPORT int toy_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                     int32_t n_out, const pg_call *call) {
  return toy_phase(3, in, n_in, out, n_out, call);
}
