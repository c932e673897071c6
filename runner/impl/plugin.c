/* phasegate runner — the plugin adapter: `plugin:PATH.so`.
 *
 * Every output buffer is its own MAP_SHARED anonymous mapping created before fork:
 * the child dlopen()s the plugin, calls <op>_module<suffix>_wrapper, and its writes
 * land directly in memory the parent keeps (no copy through pipes). Each buffer is
 * pre-filled with a distinctive NaN (integers: 0xA5 bytes) and followed by at least
 * PG_CANARY_BYTES guard bytes that are checked after the call. A small shared header
 * page tells the parent how far the child got (loaded, symbol found, returned rc).
 */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/impl.h"
#include "impl/plugin_shm.h"
#include "impl/pool.h"
#include "phasegate/impl.h"

#define STAGE_START PG_PLUGIN_STAGE_START
#define STAGE_DLOPEN_FAILED PG_PLUGIN_STAGE_DLOPEN_FAILED
#define STAGE_NOSYM PG_PLUGIN_STAGE_NOSYM
#define STAGE_NOMEM PG_PLUGIN_STAGE_NOMEM
#define STAGE_CALLING PG_PLUGIN_STAGE_CALLING
#define STAGE_RETURNED PG_PLUGIN_STAGE_RETURNED
#define shared_hdr pg_plugin_shm_hdr

struct child_ctx {
  const struct pg_impl *impl;
  const struct pg_impl_request *req;
  struct shared_hdr *hdr;
  DLTensor *outputs;
  const char *symbol;
};

static size_t page_bytes(void);
static int pg__plugin_host_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                                 struct pg_error *err);

/* Distinctive NaN payloads, so "never written" differs from "wrote NaN". */
#define PG_PREFILL_F32 0x7FC5A5A5u
#define PG_PREFILL_F16 0x7E5Au
#define PG_PREFILL_BF16 0x7FA5u
#define PG_PREFILL_F64 0x7FF8A5A5A5A5A5A5ull

static void prefill(void *data, enum pg_dtype t, int64_t n, size_t nbytes) {
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

static void release_mapping(struct pg_tensor *t) {
  if (t->owned) munmap(t->owned, (size_t)(uintptr_t)t->release_ctx);
}

static void child_log(const pg_call *call, int level, const char *message) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  const char *lv = (level >= 0 && level <= 3) ? names[level] : "log";
  fprintf(stderr, "[impl %s %s] %s\n", call && call->mode ? call->mode : "", lv,
          message ? message : "");
  fflush(stderr);
}

/* dlopen() of a name without '/' searches the library path, not the current directory
 * that stat() looked at: `plugin:libx.so` means ./libx.so. */
static void *open_plugin(const char *target) {
  char buf[4200];
  if (!strchr(target, '/')) {
    snprintf(buf, sizeof buf, "./%s", target);
    target = buf;
  }
  return dlopen(target, RTLD_NOW | RTLD_LOCAL);
}

static int child_main(void *vctx) {
  struct child_ctx *c = vctx;
  const struct pg_impl_request *req = c->req;
  void *h = open_plugin(c->impl->target);
  if (!h) {
    const char *e = dlerror();
    snprintf(c->hdr->msg, sizeof c->hdr->msg, "%s", e ? e : "dlopen failed");
    c->hdr->stage = STAGE_DLOPEN_FAILED;
    return 3;
  }
  dlerror();
  void *sym = dlsym(h, c->symbol);
  if (!sym) {
    c->hdr->stage = STAGE_NOSYM;
    return 3;
  }
  pg_wrapper_fn fn;
  memcpy(&fn, &sym, sizeof fn); /* object pointer -> function pointer without a cast warning */
  DLTensor *in = calloc((size_t)(req->n_inputs > 0 ? req->n_inputs : 1), sizeof *in);
  if (!in) {
    c->hdr->stage = STAGE_NOMEM;
    return 4;
  }
  for (int i = 0; i < req->n_inputs; i++) in[i] = pg_tensor_dl(&req->inputs[i]);
  pg_call call;
  memset(&call, 0, sizeof call);
  call.abi_version = PG_IMPL_ABI_VERSION;
  call.struct_size = (uint32_t)sizeof call;
  call.op = req->op;
  call.suffix = req->suffix;
  call.up_to_module = req->up_to_module;
  call.total_modules = req->total_modules;
  call.mode = req->mode;
  call.device_id = req->device_id;
  call.case_id = req->case_id;
  call.n_dims = req->n_dims;
  call.dim_names = req->dim_names;
  call.dim_values = req->dim_values;
  call.knobs_json = req->knobs_json ? req->knobs_json : "{}";
  call.log = child_log;
  c->hdr->stage = STAGE_CALLING;
  int rc = fn(in, req->n_inputs, c->outputs, req->n_outputs, &call);
  c->hdr->rc = rc;
  c->hdr->stage = STAGE_RETURNED;
  fflush(NULL);
  return 0;
}

int pg__plugin_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  const struct pg_impl_request *req = p->req;
  pg_impl_symbol(req->op, req->suffix, p->symbol, sizeof p->symbol);
  struct stat st;
  if (stat(impl->target, &st) != 0)
    return pg__outcome_fail(out, PG_CAT_INFRA, "impl plugin '%s' does not exist (%s)",
                            impl->target, strerror(errno)),
           PG_OK;
  if (!impl->fresh_process) return pg__plugin_host_start(p, out, err);
  size_t psz = page_bytes();
  struct shared_hdr *hdr = mmap(NULL, sizeof *hdr, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (hdr == MAP_FAILED) return pg_error_set(err, PG_ENOMEM, "mmap: %s", strerror(errno));
  memset(hdr, 0, sizeof *hdr);
  DLTensor dl_out[PG_IMPL_MAX_OUTPUTS];
  int rc = PG_OK;
  for (int i = 0; i < req->n_outputs; i++) {
    const struct pg_impl_output_spec *s = &req->outputs[i];
    struct pg_tensor *t = &out->outputs[i];
    pg_tensor_set_name(t, s->name);
    rc = pg_tensor_describe(t, s->dtype, s->ndim, s->shape, err);
    if (rc != PG_OK) goto fail;
    size_t sz = (t->nbytes + PG_CANARY_BYTES + psz - 1) / psz * psz;
    void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      rc = pg_error_set(err, PG_ENOMEM, "cannot map %zu bytes for output '%s': %s", sz,
                        s->name, strerror(errno));
      goto fail;
    }
    t->owned = m;
    t->dl.data = m;
    t->release = release_mapping;
    t->release_ctx = (void *)(uintptr_t)sz;
    p->map_size[i] = sz;
    prefill(m, t->dtype, t->numel, t->nbytes);
    memset((char *)m + t->nbytes, PG_CANARY_BYTE, sz - t->nbytes);
    dl_out[i] = pg_tensor_dl(t);
    out->n_outputs = i + 1;
  }
  /* ctx and dl_out only need to live until the fork: the child has its own copy. */
  struct child_ctx ctx = {impl, req, hdr, dl_out, p->symbol};
  struct pg_sandbox_opts so = {req->timeout_s, req->rlimit_as, 0, 0};
  rc = pg_sandbox_start(child_main, &ctx, &so, &p->proc, err);
  if (rc != PG_OK) goto fail;
  p->hdr = hdr;
  p->running = 1;
  return PG_OK;
fail:
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
  out->n_outputs = 0;
  munmap(hdr, sizeof *hdr);
  return rc;
}

/* How the call went, from the header page the calling process (a forked child or the
 * plugin host) wrote and how that process ended (out->sandbox): the same judgement
 * for both. Fills out; returns 1 when the process that ran it is still healthy. */
static int judge_call(struct pg_impl_pending *p, struct pg_impl_outcome *out) {
  const struct pg_impl *impl = p->impl;
  const struct pg_impl_request *req = p->req;
  struct shared_hdr *hdr = p->hdr;
  const char *symbol = p->symbol;
  const struct pg_sandbox_result *sr = &out->sandbox;
  int healthy = 0;
  char what[160];
  snprintf(what, sizeof what, "%s", symbol);
  if (pg__classify_abnormal(sr, req, what, out)) goto done;
  switch (hdr->stage) {
    case STAGE_DLOPEN_FAILED:
      pg__outcome_fail(out, PG_CAT_STRUCTURAL, "cannot load impl plugin: %.400s", hdr->msg);
      goto done;
    case STAGE_NOSYM:
      healthy = 1;
      pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                       "missing wrapper symbol '%s' in %.300s (phase %d needs it)", symbol,
                       impl->target, req->up_to_module);
      goto done;
    case STAGE_NOMEM:
      pg__outcome_fail(out, PG_CAT_RUNTIME, "allocation failure: the impl process ran out of "
                       "memory before calling %s (mode '%s')", symbol, req->mode);
      goto done;
    case STAGE_RETURNED: break;
    case STAGE_CALLING:
      pg__outcome_fail(out, PG_CAT_RUNTIME, "%s exited the process with status %d instead of "
                       "returning (mode '%s')", symbol, sr->exit_code, req->mode);
      goto done;
    default:
      pg__outcome_fail(out, PG_CAT_INFRA, "plugin child exited with status %d before the call",
                       sr->exit_code);
      goto done;
  }
  /* Canaries first: an overrun may have corrupted anything, including a return code. */
  for (int i = 0; i < req->n_outputs; i++) {
    const struct pg_tensor *t = &out->outputs[i];
    const unsigned char *g = (const unsigned char *)t->dl.data + t->nbytes;
    size_t glen = p->map_size[i] - t->nbytes;
    for (size_t j = 0; j < glen; j++)
      if (g[j] != PG_CANARY_BYTE) {
        pg__outcome_fail(out, PG_CAT_RUNTIME,
                         "%s wrote past output buffer '%s' (guard byte %zu after its %zu bytes "
                         "was overwritten, mode '%s')",
                         symbol, req->outputs[i].name, j, t->nbytes, req->mode);
        goto done;
      }
  }
  healthy = 1; /* returned, canaries intact: whatever the wrapper said, the host may go on */
  if (hdr->rc == PG_UNAVAILABLE) {
    out->status = PG_IMPL_UNAVAILABLE;
    snprintf(out->summary, sizeof out->summary, "mode '%s' is unavailable (%s returned %d)",
             req->mode, symbol, PG_UNAVAILABLE);
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
    goto done;
  }
  if (hdr->rc != 0) {
    if (pg_sandbox_text_says_oom(sr->err) || pg_sandbox_text_says_oom(sr->out))
      pg__outcome_fail(out, PG_CAT_RUNTIME, "allocation failure: %s returned %d after running "
                       "out of memory (mode '%s')", symbol, (int)hdr->rc, req->mode);
    else {
      char last[200];
      pg__last_line(sr->err, last, sizeof last);
      pg__outcome_fail(out, PG_CAT_RUNTIME, "%s returned %d (runtime error, mode '%s')%s%s",
                       symbol, (int)hdr->rc, req->mode, last[0] ? ": " : "", last);
    }
    goto done;
  }
  for (int i = 0; i < req->n_outputs; i++) {
    const struct pg_tensor *t = &out->outputs[i];
    if (untouched(t->dl.data, t->dtype, t->numel, t->nbytes)) {
      pg__outcome_fail(out, PG_CAT_STRUCTURAL,
                       "%s returned 0 but never wrote output '%s' (still NaN-prefilled)",
                       symbol, req->outputs[i].name);
      goto done;
    }
  }
  out->status = PG_IMPL_DONE;
done:
  return healthy;
}

/* ---- persistent: the plugin host (plugin_host.c) ---- */

static size_t page_bytes(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

static int write_at(int fd, const void *data, size_t n, size_t off) {
  const char *b = data;
  while (n > 0) {
    ssize_t w = pwrite(fd, b, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w, n -= (size_t)w, off += (size_t)w;
  }
  return 0;
}

static cJSON *tensor_entry(const char *name, enum pg_dtype dtype, int ndim, const int64_t *shape,
                           size_t offset) {
  cJSON *o = cJSON_CreateObject(), *sh = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "dtype", pg_dtype_name(dtype));
  for (int a = 0; a < ndim; a++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[a]));
  cJSON_AddItemToObject(o, "shape", sh);
  cJSON_AddNumberToObject(o, "offset", (double)offset);
  return o;
}

/* The call's request line (everything but the memory, which travels as an fd). */
static cJSON *host_request(const struct pg_impl_pending *p) {
  const struct pg_impl_request *req = p->req;
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "symbol", p->symbol);
  cJSON_AddStringToObject(r, "op", req->op);
  cJSON_AddStringToObject(r, "suffix", req->suffix);
  cJSON_AddNumberToObject(r, "up_to_module", req->up_to_module);
  cJSON_AddNumberToObject(r, "total_modules", req->total_modules);
  cJSON_AddStringToObject(r, "mode", req->mode);
  cJSON_AddNumberToObject(r, "device_id", req->device_id);
  cJSON_AddStringToObject(r, "case", req->case_id);
  cJSON *dims = cJSON_AddObjectToObject(r, "dims");
  for (int i = 0; dims && i < req->n_dims; i++)
    cJSON_AddNumberToObject(dims, req->dim_names[i], (double)req->dim_values[i]);
  cJSON *knobs = req->knobs_json ? cJSON_Parse(req->knobs_json) : NULL;
  cJSON_AddItemToObject(r, "knobs", knobs ? knobs : cJSON_CreateObject());
  cJSON_AddArrayToObject(r, "inputs");
  cJSON_AddArrayToObject(r, "outputs");
  return r;
}

/* Lays out the call's memory file: header page, inputs (copied in), outputs
 * (NaN-prefilled, canary-guarded, each mapped on its own like the fork path's). */
static int host_memory(struct pg_impl_pending *p, struct pg_impl_outcome *out, cJSON *rq,
                       struct pg_error *err) {
  const struct pg_impl_request *req = p->req;
  size_t psz = page_bytes(), off = psz;
  size_t in_off[PG_IMPL_MAX_OUTPUTS * 4], out_off[PG_IMPL_MAX_OUTPUTS];
  if (req->n_inputs > (int)(sizeof in_off / sizeof *in_off))
    return pg_error_set(err, PG_ELIMIT, "too many inputs for the plugin host");
  for (int i = 0; i < req->n_inputs; i++) {
    in_off[i] = off;
    off += (req->inputs[i].nbytes + psz - 1) / psz * psz;
  }
  for (int i = 0; i < req->n_outputs; i++) {
    const struct pg_impl_output_spec *s = &req->outputs[i];
    struct pg_tensor *t = &out->outputs[i];
    pg_tensor_set_name(t, s->name);
    PG_RETURN_IF_ERROR(pg_tensor_describe(t, s->dtype, s->ndim, s->shape, err));
    out_off[i] = off;
    p->map_size[i] = (t->nbytes + PG_CANARY_BYTES + psz - 1) / psz * psz;
    off += p->map_size[i];
  }
  p->memfd = memfd_create("phasegate-call", MFD_CLOEXEC);
  if (p->memfd < 0 || ftruncate(p->memfd, (off_t)off) != 0)
    return pg_error_set(err, PG_ENOMEM, "cannot create %zu bytes of call memory: %s", off,
                        strerror(errno));
  p->hdr = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, p->memfd, 0);
  if (p->hdr == MAP_FAILED) {
    p->hdr = NULL;
    return pg_error_set(err, PG_ENOMEM, "mmap: %s", strerror(errno));
  }
  cJSON *ins = cJSON_GetObjectItemCaseSensitive(rq, "inputs");
  for (int i = 0; i < req->n_inputs; i++) {
    const struct pg_tensor *t = &req->inputs[i];
    if (write_at(p->memfd, t->dl.data, t->nbytes, in_off[i]) != 0)
      return pg_error_set(err, PG_EIO, "cannot write input '%s' to call memory: %s", t->name,
                          strerror(errno));
    cJSON_AddItemToArray(ins, tensor_entry(t->name, t->dtype, t->dl.ndim, t->shape, in_off[i]));
  }
  cJSON *outs = cJSON_GetObjectItemCaseSensitive(rq, "outputs");
  for (int i = 0; i < req->n_outputs; i++) {
    struct pg_tensor *t = &out->outputs[i];
    size_t sz = p->map_size[i];
    void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, p->memfd, (off_t)out_off[i]);
    if (m == MAP_FAILED)
      return pg_error_set(err, PG_ENOMEM, "cannot map output '%s': %s", t->name,
                          strerror(errno));
    t->owned = m;
    t->dl.data = m;
    t->release = release_mapping;
    t->release_ctx = (void *)(uintptr_t)sz;
    prefill(m, t->dtype, t->numel, t->nbytes);
    memset((char *)m + t->nbytes, PG_CANARY_BYTE, sz - t->nbytes);
    out->n_outputs = i + 1;
    cJSON_AddItemToArray(outs, tensor_entry(t->name, t->dtype, t->dl.ndim, t->shape, out_off[i]));
  }
  cJSON_AddNumberToObject(rq, "size", (double)off);
  return PG_OK;
}

static void host_cleanup(struct pg_impl_pending *p, struct pg_impl_outcome *out, int keep_outputs) {
  if (p->memfd >= 0) close(p->memfd);
  p->memfd = -1;
  if (p->hdr) munmap(p->hdr, page_bytes());
  p->hdr = NULL;
  if (!keep_outputs) {
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
  }
}

static int pg__plugin_host_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                                 struct pg_error *err) {
  p->memfd = -1;
  cJSON *rq = host_request(p);
  int rc = rq ? host_memory(p, out, rq, err) : pg_error_set(err, PG_ENOMEM, "out of memory");
  struct pg_proc *w = NULL;
  if (rc == PG_OK) {
    struct pg_proc_result sf;
    pg_proc_result_init(&sf);
    struct pg_error se;
    pg_error_clear(&se);
    w = pg__pool_acquire(p->impl, p->req, &sf, &se);
    if (!w && se.code != PG_EIMPL) {
      *err = se;
      rc = se.code;
    } else if (!w) { /* the host died loading the plugin (the probe passed: rare) */
      pg__proc_to_sandbox(&sf, &out->sandbox);
      char last[400];
      pg__last_line(out->sandbox.err, last, sizeof last);
      pg__outcome_fail(out, PG_CAT_STRUCTURAL, "the plugin host could not start: %.400s",
                       last[0] ? last : se.message);
    }
    pg_proc_result_reset(&sf);
  }
  if (rc == PG_OK && w) rc = pg_proc_send(w, rq, p->memfd, &p->call_id, err);
  cJSON_Delete(rq);
  if (rc != PG_OK || !w) {
    host_cleanup(p, out, 0);
    return rc;
  }
  close(p->memfd); /* the host has its own copy of the fd; the mappings stay */
  p->memfd = -1;
  p->worker = w;
  p->running = 1;
  return PG_OK;
}

static int pg__plugin_host_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                                  struct pg_error *err) {
  struct pg_proc *w = p->worker;
  struct pg_proc_result r;
  pg_proc_result_init(&r);
  int rc = pg_proc_wait(w, p->call_id, p->req->timeout_s, &r, err);
  int healthy = 0;
  if (rc == PG_OK) {
    pg__proc_to_sandbox(&r, &out->sandbox);
    out->wall_ms = r.wall_ms;
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r.answer, "status"));
    if (r.end == PG_PROC_ANSWERED && st && strcmp(st, "ok") != 0) {
      const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r.answer, "message"));
      pg__outcome_fail(out, PG_CAT_INFRA, "the plugin host could not run the call: %.300s",
                       m ? m : st);
    } else if (r.end == PG_PROC_PROTOCOL) {
      pg__outcome_fail(out, PG_CAT_INFRA, "the plugin host broke the protocol: %s", r.protocol);
    } else {
      if (r.end == PG_PROC_ANSWERED) out->sandbox.exited = 1;
      healthy = judge_call(p, out) && r.end == PG_PROC_ANSWERED;
    }
  }
  pg_proc_result_reset(&r);
  pg__pool_release(p->impl, w, healthy);
  host_cleanup(p, out, rc == PG_OK && out->status == PG_IMPL_DONE);
  return rc;
}

int pg__plugin_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err) {
  if (p->worker) return pg__plugin_host_finish(p, out, err);
  int rc = pg_sandbox_wait(&p->proc, &out->sandbox, err);
  if (rc == PG_OK) {
    out->wall_ms = out->sandbox.wall_ms;
    judge_call(p, out);
  } else {
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
  }
  munmap(p->hdr, sizeof(struct shared_hdr));
  return rc;
}

/* ---- the one-time load check (pg_impl_check) ---- */

struct probe_page {
  volatile int32_t stage; /* 1 = loaded, 2 = dlopen failed */
  char msg[1024];
};

static int probe_child(void *vctx) {
  const struct pg_impl *impl = ((void **)vctx)[0];
  struct probe_page *pp = ((void **)vctx)[1];
  void *h = open_plugin(impl->target);
  if (!h) {
    const char *e = dlerror();
    snprintf(pp->msg, sizeof pp->msg, "%s", e ? e : "dlopen failed");
    pp->stage = 2;
    return 3;
  }
  pp->stage = 1;
  return 0;
}

int pg__plugin_probe_start(struct pg_impl_probe *p, uint64_t rlimit_as, struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  struct stat st;
  if (stat(impl->target, &st) != 0)
    return pg_error_set(err, PG_ENOENT, "impl plugin '%s' does not exist (%s)", impl->target,
                        strerror(errno));
  if (S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "impl plugin '%s' is a directory, not a shared library",
                        impl->target);
  if (!S_ISREG(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "impl plugin '%s' is not a regular file", impl->target);
  struct probe_page *pp = mmap(NULL, sizeof *pp, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (pp == MAP_FAILED) return pg_error_set(err, PG_ENOMEM, "mmap: %s", strerror(errno));
  memset(pp, 0, sizeof *pp);
  /* In a child: a constructor that crashes, hangs or exits must not end the runner.
   * ctx only needs to live until the fork. */
  void *ctx[2] = {(void *)impl, pp};
  struct pg_sandbox_opts so = {p->timeout_s, rlimit_as, 4096, 0};
  int rc = pg_sandbox_start(probe_child, ctx, &so, &p->proc, err);
  if (rc != PG_OK) {
    munmap(pp, sizeof *pp);
    return rc;
  }
  p->page = pp;
  p->running = 1;
  return PG_OK;
}

int pg__plugin_probe_finish(struct pg_impl_probe *p, struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  struct probe_page *pp = p->page;
  struct pg_sandbox_result sr;
  pg_sandbox_result_init(&sr);
  p->running = 0;
  int rc = pg_sandbox_wait(&p->proc, &sr, err);
  if (rc == PG_OK) {
    char sig[32];
    if (pp->stage == 2)
      rc = pg_error_set(err, PG_EINVAL, "impl plugin '%s' cannot be loaded: %.700s",
                        impl->target, pp->msg);
    else if (sr.timed_out)
      rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' did not finish loading within %g s "
                        "(a library constructor hangs?)", impl->target, p->timeout_s);
    else if (sr.signaled)
      rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' crashed with %s while loading (in a "
                        "library constructor)", impl->target,
                        pg_signal_name(sr.signo, sig, sizeof sig));
    else if (pp->stage != 1)
      rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' ended the process with status %d "
                        "while loading (in a library constructor)", impl->target, sr.exit_code);
  }
  pg_sandbox_result_reset(&sr);
  munmap(pp, sizeof *pp);
  p->page = NULL;
  return rc;
}
