/* phasegate goldens/ — golden plugins (docs/design.md §5, include/phasegate/golden.h):
 * opening a golden library, finding a module's golden symbol in it and calling it with
 * tensors we allocated, then checking the plugin kept to the ABI (return code, every
 * output element written, shapes/dtypes/data pointers untouched).
 *
 * "Written" is checked with a canary: floating outputs are prefilled with a NaN whose
 * payload (0x7fa5a5a5 / 0x7ff4a5a5a5a5a5a5) no arithmetic produces (a computed NaN is the
 * default quiet NaN or a propagated input NaN), so a golden may still return NaN where
 * NaN is the right answer. Integer outputs of 16 bits and more get 0xa5 bytes; 8-bit
 * and bool outputs cannot be checked without false alarms and are zero-filled.
 * Golden plugins run in-process: they are the user's trusted reference code.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

struct golden_lib {
  void *dl;
  char path[4096];
};

int pg_golden_lib_open(const char *path, void **handle, struct pg_error *err) {
  if (!handle) return pg_error_set(err, PG_EINVAL, "pg_golden_lib_open: no handle");
  *handle = NULL;
  if (!path || !*path) return pg_error_set(err, PG_EINVAL, "golden library: empty path");
  struct golden_lib *lib = calloc(1, sizeof *lib);
  if (!lib) return pg_error_set(err, PG_ENOMEM, "out of memory opening golden library");
  snprintf(lib->path, sizeof lib->path, "%s", path);
  /* dlopen() without a slash searches the library path; a golden library is a file */
  char buf[4200];
  const char *p = path;
  if (!strchr(path, '/')) {
    snprintf(buf, sizeof buf, "./%s", path);
    p = buf;
  }
  FILE *f = fopen(p, "rb");
  if (!f) {
    free(lib);
    return pg_error_set(err, PG_ENOENT, "golden library '%s': cannot open: no such file", path);
  }
  fclose(f);
  dlerror();
  lib->dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!lib->dl) {
    const char *why = dlerror();
    pg_error_set(err, PG_EIO, "golden library '%s': cannot load: %s", path,
                 why ? why : "unknown dlopen error");
    free(lib);
    return PG_EIO;
  }
  *handle = lib;
  return PG_OK;
}

void pg_golden_lib_close(void *handle) {
  struct golden_lib *lib = handle;
  if (!lib) return;
  if (lib->dl) dlclose(lib->dl);
  free(lib);
}

#define CANARY_F32 0x7fa5a5a5u
#define CANARY_F64 0x7ff4a5a5a5a5a5a5ull

static void prefill(struct pg_tensor *t) {
  size_t n = (size_t)t->numel;
  if (t->dtype == PG_DTYPE_F32) {
    uint32_t *p = t->dl.data;
    for (size_t i = 0; i < n; i++) p[i] = CANARY_F32;
  } else if (t->dtype == PG_DTYPE_F64) {
    uint64_t *p = t->dl.data;
    for (size_t i = 0; i < n; i++) p[i] = CANARY_F64;
  } else if (pg_dtype_size(t->dtype) >= 2) {
    memset(t->dl.data, 0xa5, t->nbytes);
  } else {
    memset(t->dl.data, 0, t->nbytes);
  }
}

/* Elements still holding the canary. */
static int64_t unwritten(const struct pg_tensor *t, int64_t *first) {
  size_t n = (size_t)t->numel, es = pg_dtype_size(t->dtype);
  int64_t count = 0;
  *first = -1;
  if (es < 2) return 0;
  const unsigned char *p = t->dl.data;
  for (size_t i = 0; i < n; i++) {
    int same;
    if (t->dtype == PG_DTYPE_F32) {
      uint32_t u;
      memcpy(&u, p + i * 4, 4);
      same = u == CANARY_F32;
    } else if (t->dtype == PG_DTYPE_F64) {
      uint64_t u;
      memcpy(&u, p + i * 8, 8);
      same = u == CANARY_F64;
    } else {
      same = 1;
      for (size_t b = 0; b < es; b++) same &= p[i * es + b] == 0xa5;
    }
    if (same) {
      if (*first < 0) *first = (int64_t)i;
      count++;
    }
  }
  return count;
}

int pg__golden_plugin_call(void *handle, const char *symbol, const char *op, int module_id,
                           const char *module_name, int precision_bits,
                           const struct pg_bindings *dims, struct pg_tensor *const *inputs,
                           int n_inputs, struct pg_tensor *const *outputs, int n_outputs,
                           struct pg_error *err) {
  struct golden_lib *lib = handle;
  if (!lib || !lib->dl) return pg_error_set(err, PG_EINVAL, "golden plugin '%s': no library", symbol);
  if (!symbol || !*symbol) return pg_error_set(err, PG_EINVAL, "golden plugin: empty symbol name");
  dlerror();
  void *sym = dlsym(lib->dl, symbol);
  if (!sym)
    return pg_error_set(err, PG_ENOSYM,
                        "golden plugin symbol '%s' not found in golden library '%s' (export "
                        "it with C linkage and default visibility)",
                        symbol, lib->path);
  pg_golden_fn fn;
  memcpy(&fn, &sym, sizeof fn); /* object pointer -> function pointer, as POSIX allows */

  int rc = PG_OK;
  int n_dims = dims ? dims->count : 0;
  DLTensor *din = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *din);
  DLTensor *dout = calloc((size_t)(n_outputs ? n_outputs : 1), sizeof *dout);
  int64_t(*in_shapes)[PG_MAX_NDIM] = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *in_shapes);
  int64_t(*out_shapes)[PG_MAX_NDIM] =
      calloc((size_t)(n_outputs ? n_outputs : 1), sizeof *out_shapes);
  const char **dnames = calloc((size_t)(n_dims ? n_dims : 1), sizeof *dnames);
  int64_t *dvalues = calloc((size_t)(n_dims ? n_dims : 1), sizeof *dvalues);
  if (!din || !dout || !in_shapes || !out_shapes || !dnames || !dvalues) {
    rc = pg_error_set(err, PG_ENOMEM, "out of memory calling golden plugin '%s'", symbol);
    goto done;
  }
  for (int i = 0; i < n_dims; i++) {
    dnames[i] = dims->items[i].name;
    dvalues[i] = dims->items[i].value;
  }
  /* each call gets its own copies of the shapes, so a plugin cannot alter ours */
  for (int i = 0; i < n_inputs; i++) {
    din[i] = pg_tensor_dl(inputs[i]);
    memcpy(in_shapes[i], inputs[i]->shape, sizeof in_shapes[i]);
    din[i].shape = in_shapes[i];
  }
  for (int i = 0; i < n_outputs; i++) {
    prefill(outputs[i]);
    dout[i] = pg_tensor_dl(outputs[i]);
    memcpy(out_shapes[i], outputs[i]->shape, sizeof out_shapes[i]);
    dout[i].shape = out_shapes[i];
  }
  char errbuf[512];
  errbuf[0] = '\0';
  pg_golden_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.abi_version = PG_GOLDEN_ABI_VERSION;
  ctx.struct_size = (uint32_t)sizeof ctx;
  ctx.op = op ? op : "";
  ctx.module_id = module_id;
  ctx.module_name = module_name ? module_name : "";
  ctx.precision_bits = precision_bits ? precision_bits : 32;
  ctx.n_dims = n_dims;
  ctx.dim_names = dnames;
  ctx.dim_values = dvalues;
  ctx.errbuf = errbuf;
  ctx.errbuf_size = sizeof errbuf;
  int r = fn(din, n_inputs, dout, n_outputs, &ctx);
  errbuf[sizeof errbuf - 1] = '\0';
  if (r != 0) {
    rc = pg_error_set(err, PG_EIMPL, "golden plugin '%s' (%s) returned %d: %s", symbol,
                      lib->path, r, errbuf[0] ? errbuf : "no reason given");
    goto done;
  }
  for (int i = 0; i < n_outputs; i++) {
    const struct pg_tensor *t = outputs[i];
    int same = dout[i].ndim == t->dl.ndim && dout[i].data == t->dl.data &&
               dout[i].dtype.code == t->dl.dtype.code && dout[i].dtype.bits == t->dl.dtype.bits &&
               dout[i].dtype.lanes == t->dl.dtype.lanes && dout[i].shape == out_shapes[i];
    for (int a = 0; same && a < t->dl.ndim; a++) same = out_shapes[i][a] == t->shape[a];
    if (!same) {
      rc = pg_error_set(err, PG_ESHAPE,
                        "golden plugin '%s' changed the shape, dtype or data pointer of output "
                        "'%s' (outputs are allocated by phasegate; write into them)",
                        symbol, t->name);
      goto done;
    }
    int64_t first;
    int64_t left = unwritten(t, &first);
    if (left > 0) {
      rc = pg_error_set(err, PG_EIMPL,
                        "golden plugin '%s' left %lld of %lld elements of output '%s' unwritten "
                        "(first at flat index %lld)",
                        symbol, (long long)left, (long long)t->numel, t->name, (long long)first);
      goto done;
    }
  }
done:
  free(din);
  free(dout);
  free(in_shapes);
  free(out_shapes);
  free(dnames);
  free(dvalues);
  return rc;
}
