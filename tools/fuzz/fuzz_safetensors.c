/* phasegate fuzz harness — the safetensors reader (runner/tensors/safetensors.c) from a
 * buffer (pg_safetensors_read_buffer).
 *
 *   clang -fsanitize=fuzzer,address,undefined (built by tools/fuzz/CMakeLists.txt)
 *   ./fuzz_safetensors tests/fuzz-corpus/safetensors
 *
 * Invariants (a violation traps): success means every tensor has a valid dtype, a
 * name, rank <= PG_MAX_NDIM, numel * itemsize == nbytes, readable bytes (checksummed
 * so ASan sees bad pointers), and the byte counts add up to at most the input size;
 * failure always carries a message and returns no list. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tensors/tensors.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pg_tensor *list = NULL;
  int count = -1;
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_safetensors_read_buffer(data, size, "<fuzz>", &list, &count, &err);
  if (rc != PG_OK) {
    check(rc < 0 && err.message[0] != '\0' && list == NULL && count == 0);
    return 0;
  }
  size_t total = 0;
  for (int i = 0; i < count; i++) {
    const struct pg_tensor *t = &list[i];
    check(pg_dtype_size(t->dtype) > 0 && t->dl.ndim >= 0 && t->dl.ndim <= PG_MAX_NDIM);
    check(t->name[0] != '\0' && strcmp(t->name, "__metadata__") != 0);
    int64_t n = 1;
    for (int d = 0; d < t->dl.ndim; d++) n *= t->shape[d];
    check(n == t->numel && (size_t)n * pg_dtype_size(t->dtype) == t->nbytes);
    unsigned sum = 0;
    for (size_t b = 0; b < t->nbytes; b++) sum += ((const uint8_t *)t->dl.data)[b];
    (void)sum;
    total += t->nbytes;
  }
  check(total + 8 <= size);
  pg_tensor_list_free(list, count);
  return 0;
}
