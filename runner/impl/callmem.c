/* phasegate runner — one call's memory (impl/plugin_shm.h): the layout the plugin
 * adapter (its persistent host and --fresh-process child) and the worker adapter's
 * protocol v1.1 share, and the checks made on it after the call: guard bytes after each
 * output (a write past the buffer), outputs still holding their prefill (never written).
 * Called by plugin.c and worker.c; calls neither. Reports nothing itself: the callers
 * turn what it finds into facts (pg__impl_fact). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "impl/adapter.h"
#include "impl/plugin_shm.h"

size_t pg__callmem_page(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

void pg__callmem_prefill(void *data, enum pg_dtype t, int64_t n, size_t nbytes) {
  switch (t) {
    case PG_DTYPE_F32:
      for (int64_t i = 0; i < n; i++) ((uint32_t *)data)[i] = PG_PREFILL_F32;
      return;
    case PG_DTYPE_F16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)data)[i] = PG_PREFILL_F16;
      return;
    case PG_DTYPE_BF16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)data)[i] = PG_PREFILL_BF16;
      return;
    case PG_DTYPE_F64:
      for (int64_t i = 0; i < n; i++) ((uint64_t *)data)[i] = PG_PREFILL_F64;
      return;
    default: memset(data, PG_INT_PREFILL, nbytes); return;
  }
}

/* 1 when every element still holds the prefill pattern (the impl never wrote it). */
static int untouched(const void *data, enum pg_dtype t, int64_t n, size_t nbytes) {
  if (n == 0) return 0;
  switch (t) {
    case PG_DTYPE_F32:
      for (int64_t i = 0; i < n; i++) if (((const uint32_t *)data)[i] != PG_PREFILL_F32) return 0;
      return 1;
    case PG_DTYPE_F16:
      for (int64_t i = 0; i < n; i++) if (((const uint16_t *)data)[i] != PG_PREFILL_F16) return 0;
      return 1;
    case PG_DTYPE_BF16:
      for (int64_t i = 0; i < n; i++) if (((const uint16_t *)data)[i] != PG_PREFILL_BF16) return 0;
      return 1;
    case PG_DTYPE_F64:
      for (int64_t i = 0; i < n; i++) if (((const uint64_t *)data)[i] != PG_PREFILL_F64) return 0;
      return 1;
    default:
      for (size_t i = 0; i < nbytes; i++) if (((const uint8_t *)data)[i] != PG_INT_PREFILL) return 0;
      return 1;
  }
}

static size_t pages(size_t bytes, size_t psz) { return (bytes + psz - 1) / psz * psz; }

int pg__callmem_layout(const struct pg_impl_request *req, struct pg_impl_outcome *out,
                       struct pg_callmem_layout *l, struct pg_error *err) {
  size_t psz = pg__callmem_page(), off = psz;
  memset(l, 0, sizeof *l);
  for (int i = 0; i < req->n_outputs; i++) {
    const struct pg_impl_output_spec *s = &req->outputs[i];
    struct pg_tensor *t = &out->outputs[i];
    pg_tensor_set_name(t, s->name);
    PG_RETURN_IF_ERROR(pg_tensor_describe(t, s->dtype, s->ndim, s->shape, err));
    l->out_off[i] = off;
    l->out_span[i] = pages(t->nbytes + PG_CANARY_BYTES, psz);
    off += l->out_span[i];
  }
  l->in_start = off;
  for (int i = 0; i < req->n_inputs; i++) off += pages(req->inputs[i].nbytes, psz);
  l->size = off;
  return PG_OK;
}

static cJSON *tensor_entry(const char *name, enum pg_dtype dtype, int ndim, const int64_t *shape,
                           size_t offset, size_t nbytes) {
  cJSON *o = cJSON_CreateObject(), *sh = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "dtype", pg_dtype_name(dtype));
  for (int a = 0; a < ndim; a++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[a]));
  cJSON_AddItemToObject(o, "shape", sh);
  cJSON_AddNumberToObject(o, "offset", (double)offset);
  cJSON_AddNumberToObject(o, "nbytes", (double)nbytes);
  return o;
}

void pg__callmem_fill(char *base, const struct pg_callmem_layout *l,
                      const struct pg_impl_request *req, struct pg_impl_outcome *out,
                      cJSON *request) {
  size_t psz = pg__callmem_page();
  cJSON *outs = cJSON_GetObjectItemCaseSensitive(request, "outputs");
  for (int i = 0; i < req->n_outputs; i++) {
    struct pg_tensor *t = &out->outputs[i];
    t->dl.data = base + l->out_off[i];
    pg__callmem_prefill(t->dl.data, t->dtype, t->numel, t->nbytes);
    memset((char *)t->dl.data + t->nbytes, PG_CANARY_BYTE, l->out_span[i] - t->nbytes);
    out->n_outputs = i + 1;
    cJSON_AddItemToArray(outs, tensor_entry(t->name, t->dtype, t->dl.ndim, t->shape,
                                            l->out_off[i], t->nbytes));
  }
  cJSON *ins = cJSON_GetObjectItemCaseSensitive(request, "inputs");
  size_t o = l->in_start;
  for (int i = 0; i < req->n_inputs; i++) {
    const struct pg_tensor *t = &req->inputs[i];
    if (t->nbytes) memcpy(base + o, t->dl.data, t->nbytes);
    cJSON_AddItemToArray(ins, tensor_entry(t->name, t->dtype, t->dl.ndim, t->shape, o, t->nbytes));
    o += pages(t->nbytes, psz);
  }
}

int pg__callmem_canary_hit(const struct pg_impl_outcome *out, const struct pg_callmem_layout *l,
                           size_t *at) {
  for (int i = 0; i < out->n_outputs; i++) {
    const struct pg_tensor *t = &out->outputs[i];
    const unsigned char *g = (const unsigned char *)t->dl.data + t->nbytes;
    for (size_t j = 0; j < l->out_span[i] - t->nbytes; j++)
      if (g[j] != PG_CANARY_BYTE) {
        *at = j;
        return i;
      }
  }
  return -1;
}

int pg__callmem_unwritten(const struct pg_impl_outcome *out) {
  for (int i = 0; i < out->n_outputs; i++) {
    const struct pg_tensor *t = &out->outputs[i];
    if (untouched(t->dl.data, t->dtype, t->numel, t->nbytes)) return i;
  }
  return -1;
}

int pg__callmem_outputs_out(struct pg_impl_outcome *out, struct pg_error *err) {
  int rc = PG_OK;
  for (int i = 0; i < out->n_outputs; i++) {
    struct pg_tensor *t = &out->outputs[i], copy;
    const void *src = t->dl.data;
    t->dl.data = NULL; /* never freed here: the pool's memory */
    if (out->status != PG_IMPL_DONE || rc != PG_OK || !src) continue;
    pg_tensor_init(&copy);
    pg_tensor_set_name(&copy, t->name);
    rc = pg_tensor_alloc(&copy, t->dtype, t->dl.ndim, t->shape, err);
    if (rc == PG_OK && t->nbytes) memcpy(copy.dl.data, src, t->nbytes);
    pg_tensor_move(t, &copy);
  }
  if (out->status != PG_IMPL_DONE || rc != PG_OK) {
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
  }
  return rc;
}
