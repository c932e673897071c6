/* phasegate — the impl ABI: what a device implementation plugin exports.
 *
 * For each phase it supports, a plugin exports
 *
 *   int <op>_module<suffix>_wrapper(const DLTensor *inputs, int32_t n_inputs,
 *                                   DLTensor *outputs, int32_t n_outputs,
 *                                   const pg_call *call);
 *
 * e.g. attention_module12_wrapper for phase 2 of `attention`. Inputs are the op's
 * primary inputs in contract order; outputs are the Mk boundary outputs in declared
 * order (phase N: final_outputs), preallocated by the runner, pre-filled with NaN
 * (integers: a canary pattern) and followed by canary bytes that must stay intact.
 * Return 0 when done, PG_UNAVAILABLE when the requested mode cannot run here (the
 * case is then SKIPPED), anything else for a runtime error.
 * The plugin runs in a forked child process with a timeout: crashing is reported,
 * not fatal. Header-only; needs nothing but DLPack's header.
 */
#ifndef PHASEGATE_IMPL_H
#define PHASEGATE_IMPL_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PG_IMPL_ABI_VERSION 1
#define PG_UNAVAILABLE 77 /* same value as the exec adapter's exit code and CTest's skip */

enum pg_log_level { PG_LOG_DEBUG = 0, PG_LOG_INFO = 1, PG_LOG_WARN = 2, PG_LOG_ERROR = 3 };

typedef struct pg_call pg_call;

/* Log sink: messages land in the case's captured output in the report. */
typedef void (*pg_log_fn)(const pg_call *call, int level, const char *message);

/* Device sink: the name of the device the call ran on ("NVIDIA H200", "Ascend910B3"),
 * shown as run.device.name in the report. Call it through pg_call_device_name(). */
typedef void (*pg_device_name_fn)(const pg_call *call, const char *name);

struct pg_call {
  uint32_t abi_version;      /* PG_IMPL_ABI_VERSION */
  uint32_t struct_size;      /* sizeof(pg_call) as the runner saw it: fields may grow */
  const char *op;            /* "attention" */
  const char *suffix;        /* "12" */
  int32_t up_to_module;      /* k */
  int32_t total_modules;     /* N */
  const char *mode;          /* "sim", "npu", … */
  int32_t device_id;         /* from CTEST_RESOURCE_GROUP_0_<TYPE>, else 0 */
  const char *case_id;       /* "L2_fp32" */
  int32_t n_dims;            /* bound dims, e.g. B=2 H=4 S=128 D=64 */
  const char *const *dim_names;
  const int64_t *dim_values;
  const char *knobs_json;    /* the case as written in the suite (JSON object text) */
  pg_log_fn log;             /* never NULL */
  void *user;                /* runner-private */
  /* added to ABI version 1 later: struct_size says whether the runner has it */
  pg_device_name_fn device_name; /* never NULL when present */
};

/* Says which device this call ran on; ignored by a runner that predates the field, so a
 * plugin built against this header works with either. */
static inline void pg_call_device_name(const pg_call *call, const char *name) {
  size_t end = (size_t)((const char *)&call->device_name - (const char *)call) +
               sizeof call->device_name;
  if (call->struct_size >= end && call->device_name && name) call->device_name(call, name);
}

/* Looks up a bound dim by name; returns `fallback` when absent. */
static inline int64_t pg_call_dim(const pg_call *call, const char *name, int64_t fallback) {
  for (int32_t i = 0; i < call->n_dims; i++) {
    const char *a = call->dim_names[i], *b = name;
    while (*a && *a == *b) a++, b++;
    if (*a == *b) return call->dim_values[i];
  }
  return fallback;
}

/* Marks a wrapper for export from the plugin (default visibility, C linkage in C++):
 *   PG_IMPL_EXPORT int attention_module1_wrapper(...);                               */
#ifdef __cplusplus
#define PG__IMPL_LINKAGE extern "C"
#else
#define PG__IMPL_LINKAGE
#endif
#if defined(__GNUC__)
#define PG_IMPL_EXPORT PG__IMPL_LINKAGE __attribute__((visibility("default")))
#else
#define PG_IMPL_EXPORT PG__IMPL_LINKAGE
#endif

typedef int (*pg_wrapper_fn)(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,
                             int32_t n_outputs, const pg_call *call);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_IMPL_H */
