/* tests/tensors — safetensors reader/writer without numpy: round trip of every dtype
 * (empty and 0-d included), pg_tensor_file_read by name, and refusals from buffers
 * (every truncation of a valid file fails cleanly; bad offsets name the tensor). */
#include <stdio.h>
#include <string.h>

#include "pg_test.h"
#include "tensors/tensors.h"

static void make(struct pg_tensor *t, const char *name, enum pg_dtype dt, int ndim,
                 const int64_t *shape) {
  struct pg_error err;
  pg_tensor_init(t);
  pg_tensor_set_name(t, name);
  PG_CHECK_OK(pg_tensor_alloc(t, dt, ndim, shape, &err));
  for (int64_t i = 0; i < t->numel; i++) pg_store_f64(t->dl.data, dt, (size_t)i, (double)(i % 5) - 2);
}

PG_TEST(safetensors_roundtrip_and_file_read) {
  char path[4096];
  snprintf(path, sizeof path, "%s/all.safetensors", pg_test_tmpdir());
  struct pg_tensor ts[PG_DTYPE_COUNT + 1];
  int n = 0;
  int64_t s23[2] = {2, 3}, s0[2] = {0, 4};
  for (int dt = PG_DTYPE_F32; dt < PG_DTYPE_COUNT; dt++) {
    char name[32];
    snprintf(name, sizeof name, "t_%s", pg_dtype_name((enum pg_dtype)dt));
    make(&ts[n++], name, (enum pg_dtype)dt, 2, s23);
  }
  make(&ts[n++], "empty", PG_DTYPE_F16, 2, s0);
  make(&ts[n++], "scalar \"quoted\"", PG_DTYPE_F64, 0, NULL);
  struct pg_error err;
  PG_CHECK_MSG(pg_safetensors_write(path, ts, n, &err) == PG_OK, "%s", err.message);
  struct pg_tensor *back = NULL;
  int count = 0;
  PG_CHECK_MSG(pg_safetensors_read(path, &back, &count, &err) == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(n, count);
  for (int i = 0; i < n; i++) {
    PG_CHECK_EQ_STR(ts[i].name, back[i].name);
    PG_CHECK_EQ_INT(ts[i].dtype, back[i].dtype);
    PG_CHECK_EQ_INT(ts[i].dl.ndim, back[i].dl.ndim);
    PG_CHECK(ts[i].nbytes == back[i].nbytes && memcmp(ts[i].dl.data, back[i].dl.data, ts[i].nbytes) == 0);
  }
  pg_tensor_list_free(back, count);
  struct pg_tensor one;
  pg_tensor_init(&one);
  PG_CHECK_OK(pg_tensor_file_read(path, "t_int32", &one, &err));
  PG_CHECK(one.dtype == PG_DTYPE_I32 && ((int32_t *)one.dl.data)[4] == 2);
  pg_tensor_reset(&one);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_tensor_file_read(path, "nope", &one, &err));
  PG_CHECK(strstr(err.message, "nope"));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_tensor_file_read(path, NULL, &one, &err));
  /* the buffer reader agrees with the file reader */
  FILE *f = fopen(path, "rb");
  static unsigned char buf[8192];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  PG_CHECK_OK(pg_safetensors_read_buffer(buf, len, path, &back, &count, &err));
  PG_CHECK_EQ_INT(n, count);
  pg_tensor_list_free(back, count);
  /* every truncation fails cleanly (ASan: no over-read) */
  for (size_t k = 0; k < len; k++) {
    unsigned char *copy = malloc(k ? k : 1);
    memcpy(copy, buf, k);
    back = NULL;
    PG_CHECK(pg_safetensors_read_buffer(copy, k, "cut", &back, &count, &err) != PG_OK);
    PG_CHECK(back == NULL && count == 0);
    free(copy);
  }
  for (int i = 0; i < n; i++) pg_tensor_reset(&ts[i]);
}

static void refuse(const char *json, size_t data_len, int code, const char *needle) {
  unsigned char buf[1024];
  size_t h = strlen(json);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, json, h);
  memset(buf + 8 + h, 0, data_len);
  struct pg_tensor *list = NULL;
  int count = 0;
  struct pg_error err;
  int rc = pg_safetensors_read_buffer(buf, 8 + h + data_len, "x.safetensors", &list, &count, &err);
  PG_CHECK_MSG(rc == code, "%s: got %s (%s)", json, pg_err_name(rc), rc ? err.message : "");
  PG_CHECK_MSG(strstr(err.message, needle) && strstr(err.message, "x.safetensors"),
               "%s: message '%s' lacks '%s'", json, err.message, needle);
}

PG_TEST(safetensors_refusals) {
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, PG_EPARSE,
         "tensor 'a': data_offsets [0, 8] outside the 4-byte data section");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8, PG_EPARSE,
         "tensors 'a' and 'b' overlap");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, PG_EPARSE, "need 12");
  refuse("{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, PG_EDTYPE,
         "unsupported dtype 'C64'");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, PG_EPARSE,
         "shape[0] is not a non-negative integer");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,4]}}", 4, PG_ELIMIT, "absurd shape");
  refuse("{\"a\":[1,2]}", 0, PG_EPARSE, "entry must be an object");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", 4, PG_EPARSE,
         "text after the JSON object");
  refuse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]", 4, PG_EPARSE,
         "JSON syntax error");
  refuse("{\"__metadata__\":[]}", 0, PG_EPARSE, "__metadata__ must be an object");
}
