/* tests/tensors — a small driver the Python differential tests call:
 *   tensor_tool copy IN OUT        read IN (.npy/.safetensors, all tensors) and write OUT
 *   tensor_tool info IN            print "name dtype d0,d1,..." per tensor
 *   tensor_tool conv IN PREFIX     f32/f64 .npy -> PREFIX_f16.npy, PREFIX_bf16.npy (pg_store_f64
 *                                  for f64, pg_f32_to_* for f32)
 *   tensor_tool widen PREFIX       all 65536 fp16 / bf16 patterns -> f32 (PREFIX_{f16,bf16}.npy)
 *   tensor_tool fill SPEC DTYPE N SEED NAME THREADS OUT   a generated tensor
 * Exit 0 on success, 1 with the error message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdir/opdir.h"
#include "tensors/tensors.h"
#include "tensors/rng.h"
#include "tensors/tensors.h"

static int fail(const struct pg_error *err) {
  fprintf(stderr, "tensor_tool: %s\n", err->message);
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int read_all(const char *path, struct pg_tensor **list, int *n, struct pg_error *err) {
  if (ends_with(path, ".safetensors")) return pg_safetensors_read(path, list, n, err);
  *list = calloc(1, sizeof **list);
  pg_tensor_init(*list);
  *n = 1;
  return pg_npy_read(path, *list, err);
}

int main(int argc, char **argv) {
  struct pg_error err;
  pg_error_clear(&err);
  if (argc < 2) return 2;
  const char *cmd = argv[1];
  if (strcmp(cmd, "copy") == 0 && argc == 4) {
    struct pg_tensor *list = NULL;
    int n = 0;
    if (read_all(argv[2], &list, &n, &err) != PG_OK) return fail(&err);
    int rc = ends_with(argv[3], ".safetensors") ? pg_safetensors_write(argv[3], list, n, &err)
                                                : pg_npy_write(argv[3], &list[0], &err);
    pg_tensor_list_free(list, n);
    return rc == PG_OK ? 0 : fail(&err);
  }
  if (strcmp(cmd, "info") == 0 && argc == 3) {
    struct pg_tensor *list = NULL;
    int n = 0;
    if (read_all(argv[2], &list, &n, &err) != PG_OK) return fail(&err);
    for (int i = 0; i < n; i++) {
      printf("%s %s ", list[i].name[0] ? list[i].name : "-", pg_dtype_name(list[i].dtype));
      for (int d = 0; d < list[i].dl.ndim; d++) printf("%s%lld", d ? "," : "", (long long)list[i].shape[d]);
      printf("\n");
    }
    pg_tensor_list_free(list, n);
    return 0;
  }
  if (strcmp(cmd, "conv") == 0 && argc == 4) {
    struct pg_tensor in, h, b;
    pg_tensor_init(&in);
    pg_tensor_init(&h);
    pg_tensor_init(&b);
    if (pg_npy_read(argv[2], &in, &err) != PG_OK) return fail(&err);
    if (pg_tensor_alloc(&h, PG_DTYPE_F16, in.dl.ndim, in.shape, &err) != PG_OK ||
        pg_tensor_alloc(&b, PG_DTYPE_BF16, in.dl.ndim, in.shape, &err) != PG_OK)
      return fail(&err);
    for (int64_t i = 0; i < in.numel; i++) {
      uint16_t *hp = h.dl.data, *bp = b.dl.data;
      if (in.dtype == PG_DTYPE_F32) {
        float x = ((float *)in.dl.data)[i];
        hp[i] = pg_f32_to_f16(x);
        bp[i] = pg_f32_to_bf16(x);
      } else {
        double x = ((double *)in.dl.data)[i];
        pg_store_f64(h.dl.data, PG_DTYPE_F16, (size_t)i, x);
        pg_store_f64(b.dl.data, PG_DTYPE_BF16, (size_t)i, x);
      }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s_f16.npy", argv[3]);
    if (pg_npy_write(path, &h, &err) != PG_OK) return fail(&err);
    snprintf(path, sizeof path, "%s_bf16.npy", argv[3]);
    if (pg_npy_write(path, &b, &err) != PG_OK) return fail(&err);
    pg_tensor_reset(&in);
    pg_tensor_reset(&h);
    pg_tensor_reset(&b);
    return 0;
  }
  if (strcmp(cmd, "widen") == 0 && argc == 3) {
    struct pg_tensor t;
    int64_t n = 65536;
    pg_tensor_init(&t);
    if (pg_tensor_alloc(&t, PG_DTYPE_F32, 1, &n, &err) != PG_OK) return fail(&err);
    char path[4096];
    for (int k = 0; k < 2; k++) {
      for (uint32_t i = 0; i < 65536; i++)
        ((float *)t.dl.data)[i] = k ? pg_bf16_to_f32((uint16_t)i) : pg_f16_to_f32((uint16_t)i);
      snprintf(path, sizeof path, "%s_%s.npy", argv[2], k ? "bf16" : "f16");
      if (pg_npy_write(path, &t, &err) != PG_OK) return fail(&err);
    }
    pg_tensor_reset(&t);
    return 0;
  }
  if (strcmp(cmd, "fill") == 0 && argc == 9) {
    struct pg_fill f;
    struct pg_tensor t;
    int64_t n = atoll(argv[4]);
    pg_tensor_init(&t);
    if (pg_fill_parse(argv[2], &f, &err) != PG_OK) return fail(&err);
    if (pg_tensor_alloc(&t, pg_dtype_parse(argv[3]), 1, &n, &err) != PG_OK) return fail(&err);
    if (pg_fill_generate(&t, &f, strtoull(argv[5], NULL, 0), argv[6], atoi(argv[7]), &err) != PG_OK)
      return fail(&err);
    if (pg_npy_write(argv[8], &t, &err) != PG_OK) return fail(&err);
    pg_tensor_reset(&t);
    return 0;
  }
  fprintf(stderr, "tensor_tool: bad arguments\n");
  return 2;
}
