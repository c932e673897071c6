/* tests/tensors — .npy reader/writer: round trips for every dtype and rank (0-d and
 * empty included), versions 2.0/3.0, big-endian input, mmap-backed reads, and the
 * refusals (each names the file and what is wrong; none crashes or over-reads). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pg_test.h"
#include "tensors/tensors.h"

static void path_in_tmp(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", pg_test_tmpdir(), name);
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  PG_CHECK(f);
  PG_CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* Builds a .npy image: version, header dict text (padded as numpy does), payload. */
static size_t make_npy(unsigned char *out, size_t cap, int major, const char *dict,
                       const void *payload, size_t plen) {
  size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
  size_t total = (pre + dl + 1 + 63) / 64 * 64, hlen = total - pre;
  PG_CHECK(total + plen <= cap);
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = 0;
  out[8] = (unsigned char)hlen;
  out[9] = (unsigned char)(hlen >> 8);
  if (major > 1) out[10] = out[11] = 0;
  memcpy(out + pre, dict, dl);
  memset(out + pre + dl, ' ', hlen - dl - 1);
  out[total - 1] = '\n';
  if (plen) memcpy(out + total, payload, plen);
  return total + plen;
}

PG_TEST(npy_roundtrip_every_dtype_and_rank) {
  char path[4096];
  path_in_tmp(path, sizeof path, "t.npy");
  int64_t shapes[][3] = {{2, 3, 4}, {5, 0, 0}, {0, 3, 0}};
  int ranks[] = {3, 1, 2};
  for (int dt = PG_DTYPE_F32; dt < PG_DTYPE_COUNT; dt++) {
    for (int s = -1; s < 3; s++) { /* s == -1: 0-d */
      struct pg_tensor t, r;
      struct pg_error err;
      pg_tensor_init(&t);
      pg_tensor_init(&r);
      int nd = s < 0 ? 0 : ranks[s];
      PG_CHECK_OK(pg_tensor_alloc(&t, (enum pg_dtype)dt, nd, s < 0 ? NULL : shapes[s], &err));
      for (int64_t i = 0; i < t.numel; i++) pg_store_f64(t.dl.data, t.dtype, (size_t)i, (double)(i % 7) - 3);
      PG_CHECK_MSG(pg_npy_write(path, &t, &err) == PG_OK, "%s", err.message);
      PG_CHECK_MSG(pg_npy_read(path, &r, &err) == PG_OK, "%s", err.message);
      PG_CHECK_EQ_INT(dt, r.dtype);
      PG_CHECK_EQ_INT(nd, r.dl.ndim);
      for (int i = 0; i < nd; i++) PG_CHECK_EQ_INT(t.shape[i], r.shape[i]);
      PG_CHECK_EQ_INT(t.numel, r.numel);
      PG_CHECK(memcmp(t.dl.data, r.dl.data, t.nbytes) == 0);
      pg_tensor_reset(&t);
      pg_tensor_reset(&r);
    }
  }
  struct stat st;
  PG_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
}

PG_TEST(npy_versions_and_big_endian) {
  unsigned char buf[512];
  struct pg_tensor t;
  struct pg_error err;
  /* big-endian int32 1, 2, 3 in a version 2.0 file */
  const unsigned char be[] = {0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3};
  size_t n = make_npy(buf, sizeof buf, 2, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", be, 12);
  pg_tensor_init(&t);
  PG_CHECK_MSG(pg_npy_read_buffer(buf, n, &t, &err) == PG_OK, "%s", err.message);
  PG_CHECK_EQ_INT(PG_DTYPE_I32, t.dtype);
  PG_CHECK(((int32_t *)t.dl.data)[0] == 1 && ((int32_t *)t.dl.data)[2] == 3);
  pg_tensor_reset(&t);
  /* big-endian float64 -2.5 in version 3.0, 0-d; key order free, double quotes */
  const unsigned char bed[] = {0xc0, 0x04, 0, 0, 0, 0, 0, 0};
  n = make_npy(buf, sizeof buf, 3, "{\"shape\": (), \"fortran_order\": False, \"descr\": \">f8\"}", bed, 8);
  PG_CHECK_MSG(pg_npy_read_buffer(buf, n, &t, &err) == PG_OK, "%s", err.message);
  PG_CHECK(t.dtype == PG_DTYPE_F64 && t.dl.ndim == 0 && ((double *)t.dl.data)[0] == -2.5);
  pg_tensor_reset(&t);
  /* '<u2' reads as bfloat16; '<V2' only with the flag */
  const uint16_t bf[] = {0x3f80, 0xc000};
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", bf, 4);
  PG_CHECK_OK(pg_npy_read_buffer(buf, n, &t, &err));
  PG_CHECK(t.dtype == PG_DTYPE_BF16 && pg_load_f64(t.dl.data, t.dtype, 1) == -2.0);
  pg_tensor_reset(&t);
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", bf, 4);
  PG_CHECK_EQ_INT(PG_EDTYPE, pg_npy_read_buffer(buf, n, &t, &err));
  PG_CHECK(strstr(err.message, "V2-as-bfloat16"));
  PG_CHECK_OK(pg_npy_read_buffer_ex(buf, n, PG_NPY_ACCEPT_V2_AS_BF16, &t, &err));
  PG_CHECK(t.dtype == PG_DTYPE_BF16 && pg_load_f64(t.dl.data, t.dtype, 0) == 1.0);
  pg_tensor_reset(&t);
  /* Fortran order of a shape with one non-trivial axis is the same bytes */
  n = make_npy(buf, sizeof buf, 1, "{'descr': '|u1', 'fortran_order': True, 'shape': (1, 2), }", "ab", 2);
  PG_CHECK_OK(pg_npy_read_buffer(buf, n, &t, &err));
  pg_tensor_reset(&t);
  /* bool bytes are normalised to 0/1; Python 2 'L' suffixes accepted */
  n = make_npy(buf, sizeof buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2L,), }", "\x00\x07", 2);
  PG_CHECK_OK(pg_npy_read_buffer(buf, n, &t, &err));
  PG_CHECK(((uint8_t *)t.dl.data)[0] == 0 && ((uint8_t *)t.dl.data)[1] == 1);
  pg_tensor_reset(&t);
}

static void refuse(const char *what, const void *data, size_t n, int code, const char *needle) {
  char path[4096];
  path_in_tmp(path, sizeof path, "bad.npy");
  write_bytes(path, data, n);
  struct pg_tensor t;
  struct pg_error err;
  pg_tensor_init(&t);
  int rc = pg_npy_read(path, &t, &err);
  PG_CHECK_MSG(rc == code, "%s: expected %s, got %s (%s)", what, pg_err_name(code),
               pg_err_name(rc), rc ? err.message : "");
  PG_CHECK_MSG(strstr(err.message, needle) && strstr(err.message, "bad.npy"),
               "%s: message '%s' lacks '%s' or the path", what, err.message, needle);
  /* the same bytes from a buffer must fail the same way */
  PG_CHECK_EQ_INT(code, pg_npy_read_buffer(data, n, &t, &err));
  pg_tensor_reset(&t);
}

PG_TEST(npy_refusals) {
  unsigned char buf[512];
  float four[4] = {1, 2, 3, 4};
  size_t n;
  refuse("empty", "", 0, PG_EPARSE, "bad magic");
  refuse("magic", "\x93NUMPX\x01\x00\x00\x00", 10, PG_EPARSE, "bad magic");
  refuse("version", "\x93NUMPY\x04\x00\x00\x00", 10, PG_ENOTSUP, "version 4.0");
  refuse("short preamble", "\x93NUMPY\x02\x00\x10", 9, PG_EPARSE, "bad magic");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four, 16);
  refuse("fortran", buf, n, PG_ENOTSUP, "Fortran");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", four, 16);
  refuse("object", buf, n, PG_EDTYPE, "object arrays");
  n = make_npy(buf, sizeof buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", four, 8);
  refuse("structured", buf, n, PG_EDTYPE, "structured");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four, 16);
  refuse("complex", buf, n, PG_EDTYPE, "unsupported dtype '<c8'");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four, 16);
  refuse("truncated", buf, n, PG_EPARSE, "truncated data");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four, 16);
  refuse("trailing", buf, n, PG_EPARSE, "do not match the file size");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", four, 4);
  refuse("ndim", buf, n, PG_ELIMIT, "more than 8 dimensions");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", four, 4);
  refuse("absurd", buf, n, PG_ELIMIT, "absurd shape");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", four, 4);
  refuse("dim overflow", buf, n, PG_EPARSE, "dimension too large");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four, 16);
  refuse("negative", buf, n, PG_EPARSE, "non-negative integer");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", four, 16);
  refuse("1-tuple", buf, n, PG_EPARSE, "trailing comma");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, }", four, 16);
  refuse("missing shape", buf, n, PG_EPARSE, "missing key 'shape'");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", four, 16);
  refuse("extra key", buf, n, PG_EPARSE, "unknown key");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", four, 16);
  refuse("dup key", buf, n, PG_EPARSE, "duplicate key");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (4,)}", four, 16);
  refuse("syntax", buf, n, PG_EPARSE, "expected ',' or '}'");
  n = make_npy(buf, sizeof buf, 1, "{'descr: '<f4', 'fortran_order': False, 'shape': (4,)}", four, 16);
  refuse("quote", buf, n, PG_EPARSE, "expected ':'");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': maybe, 'shape': (4,)}", four, 16);
  refuse("bool", buf, n, PG_EPARSE, "True or False");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} junk", four, 16);
  refuse("junk", buf, n, PG_EPARSE, "after the header dict");
  n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,", four, 16);
  refuse("unterminated", buf, n, PG_EPARSE, "expected a non-negative integer");
  /* header length pointing past the end of the file */
  unsigned char lie[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0x7f, '{', '}'};
  refuse("header length", lie, 12, PG_EPARSE, "truncated .npy header");
  unsigned char big[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0x7f};
  refuse("header size", big, 12, PG_ELIMIT, "too large");
}

PG_TEST(npy_every_prefix_fails_cleanly) {
  /* Every truncation of a valid file is refused (under ASan: without over-reads). */
  unsigned char buf[512];
  double d[3] = {1, 2, 3};
  size_t n = make_npy(buf, sizeof buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d, 24);
  for (size_t k = 0; k < n; k++) {
    unsigned char *copy = malloc(k ? k : 1);
    memcpy(copy, buf, k);
    struct pg_tensor t;
    pg_tensor_init(&t);
    PG_CHECK(pg_npy_read_buffer(copy, k, &t, NULL) != PG_OK);
    free(copy);
  }
}

PG_TEST(npy_large_is_mmapped_and_correct) {
  char path[4096];
  path_in_tmp(path, sizeof path, "big.npy");
  struct pg_tensor t, r, c;
  struct pg_error err;
  int64_t shape[2] = {1024, 300};
  pg_tensor_init(&t);
  pg_tensor_init(&r);
  pg_tensor_init(&c);
  PG_CHECK_OK(pg_tensor_alloc(&t, PG_DTYPE_F32, 2, shape, &err));
  for (int64_t i = 0; i < t.numel; i++) ((float *)t.dl.data)[i] = (float)i * 0.25f;
  PG_CHECK_OK(pg_npy_write(path, &t, &err));
  PG_CHECK_OK(pg_npy_read(path, &r, &err));
  PG_CHECK(r.release != NULL); /* mmap-backed */
  PG_CHECK(((uintptr_t)r.dl.data % 64) == 0);
  PG_CHECK(memcmp(t.dl.data, r.dl.data, t.nbytes) == 0);
  ((float *)r.dl.data)[0] = 42; /* private mapping: writable, file untouched */
  PG_CHECK_OK(pg_npy_read_ex(path, PG_NPY_NO_MMAP, &c, &err));
  PG_CHECK(c.release == NULL && ((float *)c.dl.data)[0] == 0.0f);
  PG_CHECK(memcmp(t.dl.data, c.dl.data, t.nbytes) == 0);
  pg_tensor_reset(&t);
  pg_tensor_reset(&r);
  pg_tensor_reset(&c);
}

PG_TEST(file_read_dispatch) {
  char path[4096];
  snprintf(path, sizeof path, "%s/v2.npy", pg_test_tmpdir());
  unsigned char buf[256];
  const uint16_t bf[] = {0x4040}; /* 3.0 */
  size_t n = make_npy(buf, sizeof buf, 1, "{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }", bf, 2);
  write_bytes(path, buf, n);
  struct pg_tensor t;
  struct pg_error err;
  pg_tensor_init(&t);
  PG_CHECK_EQ_INT(PG_EDTYPE, pg_tensor_file_read(path, "x", &t, &err));
  PG_CHECK_OK(pg_tensor_file_read_ex(path, "x", PG_NPY_ACCEPT_V2_AS_BF16, &t, &err));
  PG_CHECK(t.dtype == PG_DTYPE_BF16 && pg_load_f64(t.dl.data, t.dtype, 0) == 3.0);
  PG_CHECK_EQ_STR("x", t.name);
  pg_tensor_reset(&t);
}

PG_TEST(npy_io_errors) {
  struct pg_tensor t;
  struct pg_error err;
  pg_tensor_init(&t);
  PG_CHECK_EQ_INT(PG_ENOENT, pg_npy_read("/nonexistent/x.npy", &t, &err));
  PG_CHECK(strstr(err.message, "/nonexistent/x.npy"));
  PG_CHECK_EQ_INT(PG_EIO, pg_npy_read(pg_test_tmpdir(), &t, &err));
  int64_t n = 3;
  PG_CHECK_OK(pg_tensor_alloc(&t, PG_DTYPE_F32, 1, &n, &err));
  PG_CHECK_EQ_INT(PG_EIO, pg_npy_write("/nonexistent/dir/x.npy", &t, &err));
  PG_CHECK(strstr(err.message, "/nonexistent/dir/x.npy"));
  pg_tensor_reset(&t);
}
