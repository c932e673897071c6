/* phasegate — the golden plugin ABI: a reference implementation of one module (or
 * of the whole op) written by the user in C and loaded with --golden-lib.
 *
 * A module whose contract says `golden: {plugin: NAME}` is computed by
 *
 *   int NAME(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,
 *            int32_t n_outputs, const pg_golden_ctx *ctx);
 *
 * exported by the golden library. Inputs are the module's declared inputs, outputs
 * its declared outputs, both in declared order, already allocated by the runner with
 * the bound shapes. Floating tensors arrive in the reference precision (float32 by
 * default, float64 with --reference-precision fp64) whatever their declared dtype;
 * the runner rounds the results to the declared dtype afterwards. Integer and bool
 * tensors keep their declared dtype. Return 0 on success; on failure write a reason
 * into ctx->errbuf and return non-zero. Header-only.
 */
#ifndef PHASEGATE_GOLDEN_H
#define PHASEGATE_GOLDEN_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PG_GOLDEN_ABI_VERSION 1

typedef struct pg_golden_ctx pg_golden_ctx;

struct pg_golden_ctx {
  uint32_t abi_version;       /* PG_GOLDEN_ABI_VERSION */
  uint32_t struct_size;
  const char *op;
  int32_t module_id;          /* 0 for the op-level golden */
  const char *module_name;
  int32_t precision_bits;     /* 32 or 64: the dtype of floating tensors */
  int32_t n_dims;
  const char *const *dim_names;
  const int64_t *dim_values;
  char *errbuf;               /* reason on failure, NUL-terminated */
  size_t errbuf_size;
};

static inline int64_t pg_golden_dim(const pg_golden_ctx *ctx, const char *name,
                                    int64_t fallback) {
  for (int32_t i = 0; i < ctx->n_dims; i++) {
    const char *a = ctx->dim_names[i], *b = name;
    while (*a && *a == *b) a++, b++;
    if (*a == *b) return ctx->dim_values[i];
  }
  return fallback;
}

typedef int (*pg_golden_fn)(const DLTensor *inputs, int32_t n_inputs, DLTensor *outputs,
                            int32_t n_outputs, const pg_golden_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_GOLDEN_H */
