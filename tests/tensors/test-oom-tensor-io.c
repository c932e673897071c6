/* phasegate tests — out-of-memory sweeps of tensor I/O (runner/tensors/npy.c, safetensors.c):
 * .npy read from a buffer and from a file (every dtype, format 1.0/2.0/3.0, big-endian,
 * with and without mmap) and write; safetensors read (file and buffer) and write;
 * pg_tensor_file_read of a named safetensors entry (present and missing).
 * Every faulted run must fail with PG_ENOMEM or produce the reference bytes. Small
 * tensors only: files stay below the mmap threshold except where noted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_oom.h"
#include "phasegate/tensor.h"
#include "tensors/tensors.h"

static char tmpdir[256];

/* Builds a .npy buffer: header version major (1..3), descr, shape "(2, 3)", payload. */
static size_t make_npy(unsigned char *buf, size_t cap, int major, const char *descr,
                       const char *shape, const void *payload, size_t n) {
  char dict[256];
  int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                    descr, shape);
  size_t pre = major == 1 ? 10 : 12;
  size_t total = (pre + (size_t)dl + 1 + 63) / 64 * 64;
  size_t hl = total - pre;
  if (total + n > cap) abort();
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  if (major == 1) {
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
  } else {
    for (int i = 0; i < 4; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
  }
  memset(buf + pre, ' ', hl);
  memcpy(buf + pre, dict, (size_t)dl);
  buf[total - 1] = '\n';
  memcpy(buf + total, payload, n);
  return total + n;
}

static unsigned long long tensor_hash(unsigned long long h, const struct pg_tensor *t) {
  h = pg_oom_hash(h, t->name, strlen(t->name));
  h = pg_oom_hash(h, &t->dtype, sizeof t->dtype);
  h = pg_oom_hash(h, &t->dl.ndim, sizeof t->dl.ndim);
  h = pg_oom_hash(h, t->shape, sizeof(int64_t) * (size_t)t->dl.ndim);
  return pg_oom_hash(h, t->dl.data, t->nbytes);
}

/* ---- .npy from a buffer ---- */

struct npy_buf_ctx {
  const unsigned char *data;
  size_t size;
  unsigned flags;
  unsigned long long ref;
};

static int npy_buf_once(void *vctx, int reference, struct pg_error *err) {
  struct npy_buf_ctx *c = vctx;
  struct pg_tensor t;
  pg_tensor_init(&t);
  int rc = pg_npy_read_buffer_ex(c->data, c->size, c->flags, &t, err);
  if (rc == PG_OK) rc = pg_oom_same(&c->ref, reference, tensor_hash(0, &t), "tensor", err);
  pg_tensor_reset(&t);
  return rc;
}

/* ---- .npy from a file ---- */

struct npy_file_ctx {
  char path[512];
  unsigned flags;
  unsigned long long ref;
};

static int npy_file_once(void *vctx, int reference, struct pg_error *err) {
  struct npy_file_ctx *c = vctx;
  struct pg_tensor t;
  pg_tensor_init(&t);
  int rc = pg_npy_read_ex(c->path, c->flags, &t, err);
  if (rc == PG_OK) rc = pg_oom_same(&c->ref, reference, tensor_hash(0, &t), "tensor", err);
  pg_tensor_reset(&t);
  return rc;
}

/* ---- .npy and safetensors writers ---- */

static unsigned long long file_hash(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  unsigned long long h = 0;
  unsigned char b[4096];
  size_t n;
  while ((n = fread(b, 1, sizeof b, f)) > 0) h = pg_oom_hash(h, b, n);
  fclose(f);
  return h;
}

struct write_ctx {
  const struct pg_tensor *tensors;
  int count;
  int safetensors;
  char path[512];
  unsigned long long ref;
};

static int write_once(void *vctx, int reference, struct pg_error *err) {
  struct write_ctx *c = vctx;
  unlink(c->path);
  int rc = c->safetensors ? pg_safetensors_write(c->path, c->tensors, c->count, err)
                          : pg_npy_write(c->path, &c->tensors[0], err);
  if (rc == PG_OK) rc = pg_oom_same(&c->ref, reference, file_hash(c->path), "file bytes", err);
  else if (access(c->path, F_OK) == 0)
    rc = pg_error_set(err, PG_EINTERNAL, "a failed write left %s behind", c->path);
  return rc;
}

/* ---- safetensors readers ---- */

struct st_read_ctx {
  const char *path;
  const unsigned char *data;
  size_t size;
  unsigned long long ref;
};

static int st_read_once(void *vctx, int reference, struct pg_error *err) {
  struct st_read_ctx *c = vctx;
  struct pg_tensor *ts = NULL;
  int n = 0;
  int rc = c->data ? pg_safetensors_read_buffer(c->data, c->size, "mem.safetensors", &ts, &n, err)
                   : pg_safetensors_read(c->path, &ts, &n, err);
  if (rc == PG_OK) {
    unsigned long long h = pg_oom_hash(0, &n, sizeof n);
    for (int i = 0; i < n; i++) h = tensor_hash(h, &ts[i]);
    rc = pg_oom_same(&c->ref, reference, h, "tensors", err);
    pg_tensor_list_free(ts, n);
  }
  return rc;
}

/* ---- pg_tensor_file_read: by extension, a named safetensors entry ---- */

struct file_read_ctx {
  const char *path, *name;
  unsigned long long ref;
};

static int file_read_once(void *vctx, int reference, struct pg_error *err) {
  struct file_read_ctx *c = vctx;
  struct pg_tensor t;
  pg_tensor_init(&t);
  int rc = pg_tensor_file_read(c->path, c->name, &t, err);
  if (rc == PG_OK) rc = pg_oom_same(&c->ref, reference, tensor_hash(0, &t), "tensor", err);
  pg_tensor_reset(&t);
  return rc;
}

/* Reads a whole small file into a static buffer. */
static size_t slurp(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/pg-oom-io-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  int bad = 0;
  static unsigned char payload[6 * 8], buf[1024];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)(i * 37 + 1);
  payload[0] = 0x3c; /* keep a few sane values; bytes are compared, not values */

  /* Every dtype, every header version, both byte orders where they differ. */
  static const struct { const char *descr; size_t es; } dt[] = {
      {"<f4", 4}, {">f4", 4}, {"<f2", 2}, {">f2", 2}, {"<u2", 2}, {"<f8", 8}, {">f8", 8},
      {"|i1", 1}, {"|u1", 1}, {"<i4", 4}, {">i4", 4}, {"<i8", 8}, {">i8", 8}, {"|b1", 1},
      {"|V2", 2}};
  for (size_t d = 0; d < sizeof dt / sizeof dt[0]; d++) {
    for (int major = 1; major <= 3; major++) {
      if (dt[d].es == 1) /* booleans must be 0/1 */
        for (size_t i = 0; i < 6; i++) payload[i] = (unsigned char)(i & 1);
      struct npy_buf_ctx c = {buf, 0, PG_NPY_ACCEPT_V2_AS_BF16, 0};
      c.size = make_npy(buf, sizeof buf, major, dt[d].descr, "(2, 3)", payload, 6 * dt[d].es);
      char name[64];
      snprintf(name, sizeof name, "npy_buffer %s v%d", dt[d].descr, major);
      struct pg_oom_opts o = {.min_sites = 1};
      bad |= pg_oom_sweep_ex(name, npy_buf_once, &c, &o);
    }
  }
  /* A header lie: the reference status is an error, faulted runs must keep it. */
  {
    struct npy_buf_ctx c = {buf, 0, 0, 0};
    c.size = make_npy(buf, sizeof buf, 1, "<f4", "(2, 3)", payload, 8);
    struct pg_oom_opts o = {.min_sites = -1};
    bad |= pg_oom_sweep_ex("npy_buffer truncated", npy_buf_once, &c, &o);
  }

  /* Files: written by the writer sweep, then read with and without mmap. */
  struct pg_tensor ts[3];
  int64_t shp[2] = {2, 3}, shp1[1] = {5};
  struct pg_error err;
  for (int i = 0; i < 3; i++) pg_tensor_init(&ts[i]);
  pg_tensor_set_name(&ts[0], "x");
  pg_tensor_set_name(&ts[1], "y");
  pg_tensor_set_name(&ts[2], "mask");
  if (pg_tensor_alloc(&ts[0], PG_DTYPE_F32, 2, shp, &err) ||
      pg_tensor_alloc(&ts[1], PG_DTYPE_BF16, 2, shp, &err) ||
      pg_tensor_alloc(&ts[2], PG_DTYPE_BOOL, 1, shp1, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  for (int i = 0; i < 3; i++)
    for (size_t b = 0; b < ts[i].nbytes; b++)
      ((unsigned char *)ts[i].dl.data)[b] = i == 2 ? (unsigned char)(b & 1) : (unsigned char)(b * 7);
  for (int i = 0; i < 2; i++) {
    struct write_ctx w = {&ts[i], 1, 0, "", 0};
    snprintf(w.path, sizeof w.path, "%s/%s.npy", tmpdir, ts[i].name);
    bad |= pg_oom_sweep_ex(i ? "npy_write bf16" : "npy_write f32", write_once, &w,
                           &(struct pg_oom_opts){.min_sites = 1});
    for (unsigned flags = 0; flags <= PG_NPY_NO_MMAP; flags += PG_NPY_NO_MMAP) {
      struct npy_file_ctx r = {"", flags, 0};
      snprintf(r.path, sizeof r.path, "%s", w.path);
      char name[200];
      snprintf(name, sizeof name, "npy_read %s%s", ts[i].name, flags ? " no-mmap" : "");
      bad |= pg_oom_sweep_ex(name, npy_file_once, &r, &(struct pg_oom_opts){.min_sites = 1});
    }
  }
  struct write_ctx sw = {ts, 3, 1, "", 0};
  snprintf(sw.path, sizeof sw.path, "%s/all.safetensors", tmpdir);
  bad |= pg_oom_sweep("safetensors_write", write_once, &sw);
  struct st_read_ctx sr = {sw.path, NULL, 0, 0};
  bad |= pg_oom_sweep("safetensors_read", st_read_once, &sr);
  static unsigned char sbuf[4096];
  struct st_read_ctx sb = {NULL, sbuf, slurp(sw.path, sbuf, sizeof sbuf), 0};
  bad |= pg_oom_sweep("safetensors_read_buffer", st_read_once, &sb);

  struct file_read_ctx fr = {sw.path, "y", 0};
  bad |= pg_oom_sweep("tensor_file_read safetensors y", file_read_once, &fr);
  struct file_read_ctx fm = {sw.path, "nope", 0}; /* PG_ENOTFOUND, also under faults */
  bad |= pg_oom_sweep("tensor_file_read safetensors missing name", file_read_once, &fm);

  for (int i = 0; i < 3; i++) pg_tensor_reset(&ts[i]);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (!bad && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return bad;
}
