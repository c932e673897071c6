/* phasegate fuzz harness — the .npy reader (runner/tensors/npy.c) from a buffer.
 *
 *   clang -fsanitize=fuzzer,address,undefined (built by tools/fuzz/CMakeLists.txt)
 *   ./fuzz_npy tests/fuzz-corpus/npy
 *
 * Every input is read with and without the V2-as-bfloat16 flag. Invariants (a
 * violation traps so the fuzzer keeps the input): success means a valid dtype, a
 * rank <= PG_MAX_NDIM and numel * itemsize == nbytes with every byte readable (we
 * checksum them, so ASan sees any bad pointer) and bool bytes in {0, 1}; failure
 * always carries a message and leaves the tensor empty. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensors/tensors.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static void one(const uint8_t *data, size_t size, unsigned flags) {
  struct pg_tensor t;
  struct pg_error err;
  pg_tensor_init(&t);
  pg_error_clear(&err);
  int rc = pg_npy_read_buffer_ex(data, size, flags, &t, &err);
  if (rc != PG_OK) {
    check(rc < 0 && err.message[0] != '\0' && t.dl.data == NULL);
    return;
  }
  check(pg_dtype_size(t.dtype) > 0 && t.dl.ndim >= 0 && t.dl.ndim <= PG_MAX_NDIM);
  int64_t n = 1;
  for (int i = 0; i < t.dl.ndim; i++) n *= t.shape[i];
  check(n == t.numel && (size_t)n * pg_dtype_size(t.dtype) == t.nbytes && t.nbytes <= size);
  unsigned sum = 0;
  for (size_t i = 0; i < t.nbytes; i++) sum += ((const uint8_t *)t.dl.data)[i];
  if (t.dtype == PG_DTYPE_BOOL)
    for (size_t i = 0; i < t.nbytes; i++) check(((const uint8_t *)t.dl.data)[i] <= 1);
  (void)sum;
  pg_tensor_reset(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, 0);
  one(data, size, PG_NPY_ACCEPT_V2_AS_BF16);
  return 0;
}
