/* phasegate runner — the plugin adapter: `plugin:PATH.so`.
 *
 * By default the call runs in the persistent plugin host (impl/plugin_host.c), one per
 * (mode, device), started by exec and kept between calls (impl/pool.h): the call's
 * tensors travel in one memory file (memfd) passed with the request. With
 * --fresh-process it runs in a forked child, the outputs in MAP_SHARED mappings made
 * before the fork. Either way the wrapper's writes land directly in memory the runner
 * keeps (no copy back), each output is pre-filled with a distinctive NaN (integers:
 * 0xA5 bytes) and followed by at least PG_CANARY_BYTES guard bytes checked after the
 * call, and a header page (impl/plugin_shm.h) says how far the call got (loaded,
 * symbol found, returned rc), so both paths are judged by the same code. What it finds
 * is reported as a fact (impl.h); run/classify.c decides what it means.
 */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/adapter.h"
#include "impl/plugin_shm.h"
#include "impl/pool.h"
#include "base/base.h"
#include "phasegate/impl.h"

#define STAGE_DLOPEN_FAILED PG_PLUGIN_STAGE_DLOPEN_FAILED
#define STAGE_NOSYM PG_PLUGIN_STAGE_NOSYM
#define STAGE_NOMEM PG_PLUGIN_STAGE_NOMEM
#define STAGE_CALLING PG_PLUGIN_STAGE_CALLING
#define STAGE_RETURNED PG_PLUGIN_STAGE_RETURNED
#define shared_hdr pg_plugin_shm_hdr

/* One call's state (pg_impl_pending.call). */
struct plugin_call {
  struct pg_sandbox_proc proc;  /* --fresh-process: the forked child */
  struct shared_hdr *hdr;
  size_t hdr_size;              /* of the hdr mapping */
  struct pg_callmem_layout lay; /* where the outputs sit, their guard bytes (plugin_shm.h) */
  char symbol[160];
  struct pg_proc *host;         /* persistent: the plugin host serving the call */
  int64_t id;
};

struct child_ctx {
  const struct pg_impl *impl;
  const struct pg_impl_request *req;
  struct shared_hdr *hdr;
  DLTensor *outputs;
  const char *symbol;
};

int pg_impl_prefill_bits(const struct pg_impl *impl, enum pg_dtype t, uint64_t *bits) {
  /* the adapters with a persistent process lay their calls out in call memory (a worker
   * when it agreed to protocol v1.1; a v1 worker's files never hold the pattern) */
  if (!impl || !impl->ops || !impl->ops->process || !bits) return 0;
  switch (t) {
    case PG_DTYPE_F32: *bits = PG_PREFILL_F32; return 1;
    case PG_DTYPE_F16: *bits = PG_PREFILL_F16; return 1;
    case PG_DTYPE_BF16: *bits = PG_PREFILL_BF16; return 1;
    case PG_DTYPE_F64: *bits = PG_PREFILL_F64; return 1;
    default: {
      size_t sz = pg_dtype_size(t);
      if (sz == 0 || sz > 8) return 0;
      uint64_t b = 0;
      memset(&b, PG_INT_PREFILL, sz);
      *bits = b;
      return 1;
    }
  }
}

static void release_mapping(struct pg_tensor *t) {
  if (t->owned) munmap(t->owned, (size_t)(uintptr_t)t->release_ctx);
}

/* dlopen() of a name without '/' searches the library path, not the current directory
 * that stat() looked at: `plugin:libx.so` means ./libx.so. On failure msg says why. */
static void *open_plugin(const char *target, char *msg, size_t size) {
  char *local = NULL;
  if (!strchr(target, '/') && !(target = local = pg_path_join(".", target))) {
    snprintf(msg, size, "out of memory");
    return NULL;
  }
  void *h = dlopen(target, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(msg, size, "%s", e ? e : "dlopen failed");
  }
  free(local);
  return h;
}

static int child_main(void *vctx) {
  struct child_ctx *c = vctx;
  const struct pg_impl_request *req = c->req;
  void *h = open_plugin(c->impl->target, c->hdr->msg, sizeof c->hdr->msg);
  if (!h) {
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
  call.log = pg__impl_log;
  call.user = c->hdr;
  call.device_name = pg__impl_device_name;
  c->hdr->stage = STAGE_CALLING;
  int rc = fn(in, req->n_inputs, c->outputs, req->n_outputs, &call);
  free(in); /* the child exits next, but a fork's leak check still counts it */
  c->hdr->rc = rc;
  c->hdr->stage = STAGE_RETURNED;
  fflush(NULL);
  return 0;
}

/* Maps output i (prefilled, canary after it) into out->outputs[i]; PG_OK or an error. */
static int map_output(const struct pg_impl_output_spec *s, size_t psz, struct pg_tensor *t,
                      size_t *map_size, struct pg_error *err) {
  pg_tensor_set_name(t, s->name);
  PG_RETURN_IF_ERROR(pg_tensor_describe(t, s->dtype, s->ndim, s->shape, err));
  size_t sz = (t->nbytes + PG_CANARY_BYTES + psz - 1) / psz * psz;
  void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return pg_error_set(err, PG_ENOMEM, "cannot map %zu bytes for output '%s': %s", sz, s->name,
                        strerror(errno));
  t->owned = m;
  t->dl.data = m;
  t->release = release_mapping;
  t->release_ctx = (void *)(uintptr_t)sz;
  *map_size = sz;
  pg__callmem_prefill(m, t->dtype, t->numel, t->nbytes);
  memset((char *)m + t->nbytes, PG_CANARY_BYTE, sz - t->nbytes);
  return PG_OK;
}

static void call_free(struct plugin_call *c) {
  if (!c) return;
  if (c->hdr && c->hdr_size) munmap(c->hdr, c->hdr_size); /* the host's is the pool's */
  free(c);
}

/* The end of a start: the call runs (rc PG_OK: finish must follow), or it could not be
 * started (the outputs dropped, the call freed). */
static int started(struct pg_impl_pending *p, struct plugin_call *c, struct pg_impl_outcome *out,
                   int rc) {
  if (rc != PG_OK) {
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
    call_free(c);
    return rc;
  }
  p->call = c;
  p->running = 1;
  return PG_OK;
}

static int host_start(struct pg_impl_pending *p, struct plugin_call *c,
                      struct pg_impl_outcome *out, struct pg_error *err);
static int host_finish(struct pg_impl_pending *p, struct plugin_call *c,
                       struct pg_impl_outcome *out, struct pg_error *err);

static int plugin_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                        struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  const struct pg_impl_request *req = p->req;
  struct stat st;
  if (stat(impl->target, &st) != 0)
    return pg__impl_fact(out, PG_IMPL_FACT_NOT_FOUND, "impl plugin '%s' does not exist (%s)",
                         impl->target, strerror(errno)),
           PG_OK;
  struct plugin_call *c = calloc(1, sizeof *c);
  if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory");
  pg_impl_symbol(req->op, req->suffix, c->symbol, sizeof c->symbol);
  if (!impl->fresh_process) return host_start(p, c, out, err);
  size_t psz = pg__callmem_page();
  c->hdr_size = sizeof *c->hdr;
  c->hdr = mmap(NULL, sizeof *c->hdr, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (c->hdr == MAP_FAILED) {
    c->hdr = NULL;
    call_free(c);
    return pg_error_set(err, PG_ENOMEM, "mmap: %s", strerror(errno));
  }
  memset(c->hdr, 0, sizeof *c->hdr);
  DLTensor dl_out[PG_IMPL_MAX_OUTPUTS];
  int rc = PG_OK;
  for (int i = 0; rc == PG_OK && i < req->n_outputs; i++) {
    rc = map_output(&req->outputs[i], psz, &out->outputs[i], &c->lay.out_span[i], err);
    dl_out[i] = pg_tensor_dl(&out->outputs[i]);
    out->n_outputs = i + 1;
  }
  /* ctx and dl_out only need to live until the fork: the child has its own copy. */
  struct child_ctx ctx = {impl, req, c->hdr, dl_out, c->symbol};
  struct pg_sandbox_opts so = {req->timeout_s, req->rlimit_as, 0, 0};
  if (rc == PG_OK) rc = pg_sandbox_start(child_main, &ctx, &so, &c->proc, err);
  return started(p, c, out, rc);
}

/* The fact of a call whose child did not get to return from the wrapper; 1 if so. */
static int fact_before_return(const struct plugin_call *c, const struct pg_impl *impl,
                              const struct pg_impl_request *req, struct pg_impl_outcome *out) {
  const struct pg_sandbox_result *sr = &out->sandbox;
  const char *symbol = c->symbol;
  if (pg__impl_abnormal(sr, req, symbol, out)) return 1;
  switch (c->hdr->stage) {
    case STAGE_RETURNED: return 0;
    case STAGE_DLOPEN_FAILED:
      pg__impl_fact(out, PG_IMPL_FACT_LOAD_FAILED, "cannot load impl plugin: %.400s",
                    c->hdr->msg);
      return 1;
    case STAGE_NOSYM:
      pg__impl_fact(out, PG_IMPL_FACT_MISSING_SYMBOL,
                    "missing wrapper symbol '%s' in %.300s (phase %d needs it)", symbol,
                    impl->target, req->up_to_module);
      return 1;
    case STAGE_NOMEM:
      pg__impl_fact(out, PG_IMPL_FACT_OOM, "allocation failure: the impl process ran out of "
                    "memory before calling %s (mode '%s')", symbol, req->mode);
      return 1;
    case STAGE_CALLING:
      out->code = sr->exit_code;
      pg__impl_fact(out, PG_IMPL_FACT_EXIT_NONZERO, "%s exited the process with status %d "
                    "instead of returning (mode '%s')", symbol, sr->exit_code, req->mode);
      return 1;
    default:
      pg__impl_fact(out, PG_IMPL_FACT_RUNNER_FAILURE, "plugin child exited with status %d "
                    "before the call", sr->exit_code);
      return 1;
  }
}

/* The fact of a call whose wrapper returned: canaries, return code, unwritten outputs. */
static void fact_after_return(const struct plugin_call *c, const struct pg_impl_request *req,
                              struct pg_impl_outcome *out) {
  const struct pg_sandbox_result *sr = &out->sandbox;
  const char *symbol = c->symbol;
  int ret = (int)c->hdr->rc;
  /* the impl's memory: bounded, whatever it left there */
  snprintf(out->device_name, sizeof out->device_name, "%.*s",
           (int)sizeof c->hdr->device_name - 1, c->hdr->device_name);
  /* Canaries first: an overrun may have corrupted anything, including a return code. */
  size_t at = 0;
  int hit = pg__callmem_canary_hit(out, &c->lay, &at);
  if (hit >= 0) {
    out->output = hit;
    pg__impl_fact(out, PG_IMPL_FACT_CANARY_HIT,
                  "%s wrote past output buffer '%s' (guard byte %zu after its %zu bytes was "
                  "overwritten, mode '%s')", symbol, req->outputs[hit].name, at,
                  out->outputs[hit].nbytes, req->mode);
    return;
  }
  if (ret == PG_UNAVAILABLE) {
    pg__impl_fact(out, PG_IMPL_FACT_UNAVAILABLE, "mode '%s' is unavailable (%s returned %d)",
                  req->mode, symbol, PG_UNAVAILABLE);
    return;
  }
  if (ret != 0) {
    char last[200];
    pg__last_line(sr->err, last, sizeof last);
    out->code = ret;
    if (sr->says_oom)
      pg__impl_fact(out, PG_IMPL_FACT_OOM, "allocation failure: %s returned %d after running "
                    "out of memory (mode '%s')", symbol, ret, req->mode);
    else
      pg__impl_fact(out, PG_IMPL_FACT_RETURNED_ERROR, "%s returned %d (runtime error, mode "
                    "'%s')%s%s", symbol, ret, req->mode, last[0] ? ": " : "", last);
    return;
  }
  int unwritten = pg__callmem_unwritten(out);
  if (unwritten >= 0) {
    out->output = unwritten;
    pg__impl_fact(out, PG_IMPL_FACT_UNWRITTEN_OUTPUT,
                  "%s returned 0 but never wrote output '%s' (still NaN-prefilled)", symbol,
                  req->outputs[unwritten].name);
    return;
  }
  pg__impl_fact(out, PG_IMPL_FACT_OK, NULL);
}

static int plugin_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                         struct pg_error *err) {
  struct plugin_call *c = p->call;
  if (c->host) return host_finish(p, c, out, err);
  int rc = pg__impl_wait(&c->proc, out, err);
  if (rc == PG_OK) {
    if (!fact_before_return(c, p->impl, p->req, out)) fact_after_return(c, p->req, out);
  } else {
    for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&out->outputs[i]);
    out->n_outputs = 0;
  }
  call_free(c);
  p->call = NULL;
  return rc;
}

/* ---- the one-time load check (pg_impl_check) ---- */

struct probe_page {
  volatile int32_t stage; /* 1 = loaded, 2 = dlopen failed */
  char msg[1024];
};

struct plugin_probe {
  struct pg_sandbox_proc proc;
  struct probe_page *page;
};

static int probe_child(void *vctx) {
  const struct pg_impl *impl = ((void **)vctx)[0];
  struct probe_page *pp = ((void **)vctx)[1];
  void *h = open_plugin(impl->target, pp->msg, sizeof pp->msg);
  if (!h) {
    pp->stage = 2;
    return 3;
  }
  pp->stage = 1;
  return 0;
}

static void probe_free(struct plugin_probe *pr) {
  if (pr && pr->page) munmap(pr->page, sizeof *pr->page);
  free(pr);
}

static int plugin_probe_start(struct pg_impl_probe *p, struct pg_error *err) {
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
  /* The plugin host is already loading it (prestarted): its handshake is the probe, one
   * dlopen instead of two (docs/runner.md "Cost of the one-time impl check"). */
  if (pg__pool_has_prestarted(impl)) {
    p->priv = NULL;
    p->running = 1;
    return PG_OK;
  }
  struct plugin_probe *pr = calloc(1, sizeof *pr);
  if (!pr) return pg_error_set(err, PG_ENOMEM, "out of memory");
  pr->page = mmap(NULL, sizeof *pr->page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                  -1, 0);
  if (pr->page == MAP_FAILED) {
    pr->page = NULL;
    probe_free(pr);
    return pg_error_set(err, PG_ENOMEM, "mmap: %s", strerror(errno));
  }
  memset(pr->page, 0, sizeof *pr->page);
  /* In a child: a constructor that crashes, hangs or exits must not end the runner.
   * ctx only needs to live until the fork. */
  void *ctx[2] = {(void *)impl, pr->page};
  struct pg_sandbox_opts so = {p->timeout_s, p->rlimit_as, 4096, 0};
  int rc = pg_sandbox_start(probe_child, ctx, &so, &pr->proc, err);
  if (rc != PG_OK) {
    probe_free(pr);
    return rc;
  }
  p->priv = pr;
  p->running = 1;
  return PG_OK;
}

/* The probe's verdict from the prestarted host's start: the same sentences as the
 * forked probe's (the host loads the plugin as the probe child would, under the same
 * timeout and address-space limit). */
static int host_probe_finish(struct pg_impl_probe *p, struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  struct pg_proc_result sf;
  pg_proc_result_init(&sf);
  struct pg_error se;
  pg_error_clear(&se);
  int rc = PG_OK;
  p->running = 0;
  if (!pg__pool_await_prestarted(impl, &sf, &rc, &se) || rc == PG_OK) {
    pg_proc_result_reset(&sf);
    return PG_OK;
  }
  char last[800] = "", sig[32];
  static const char k_load[] = "cannot load impl plugin: "; /* plugin_host.c's line */
  if (sf.captured) pg__last_line(sf.captured, last, sizeof last);
  if (rc != PG_EIMPL)
    rc = pg_error_set(err, rc, "%s", se.message);
  else if (sf.exited && sf.exit_code == 3 && strncmp(last, k_load, sizeof k_load - 1) == 0)
    rc = pg_error_set(err, PG_EINVAL, "impl plugin '%s' cannot be loaded: %.700s", impl->target,
                      last + sizeof k_load - 1);
  else if (sf.end == PG_PROC_TIMEOUT)
    rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' did not finish loading within %g s "
                      "(a library constructor hangs?)", impl->target, p->timeout_s);
  else if (sf.signaled)
    rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' crashed with %s while loading (in a "
                      "library constructor)", impl->target,
                      pg_signal_name(sf.signo, sig, sizeof sig));
  else if (sf.exited)
    rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s' ended the process with status %d "
                      "while loading (in a library constructor)", impl->target, sf.exit_code);
  else
    rc = pg_error_set(err, PG_EIMPL, "impl plugin '%s': the plugin host could not start: %s",
                      impl->target, se.message);
  pg_proc_result_reset(&sf);
  return rc;
}

static int plugin_probe_finish(struct pg_impl_probe *p, struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  struct plugin_probe *pr = p->priv;
  if (!pr) return host_probe_finish(p, err);
  struct probe_page *pp = pr->page;
  struct pg_sandbox_result sr;
  pg_sandbox_result_init(&sr);
  int rc = pg_sandbox_wait(&pr->proc, &sr, err);
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
  probe_free(pr);
  p->priv = NULL;
  p->running = 0;
  return rc;
}

static void plugin_probe_cancel(struct pg_impl_probe *p) {
  struct plugin_probe *pr = p->priv;
  if (!pr) { /* the prestarted host: pg_impl_close ends it */
    p->running = 0;
    return;
  }
  kill(-pr->proc.pid, SIGKILL); /* its own process group (sandbox) */
  kill(pr->proc.pid, SIGKILL);
  struct pg_error e;
  plugin_probe_finish(p, &e);
}


/* ---- persistent: the plugin host (impl/plugin_host.c) ---- */

/* The call's request line: everything but the memory, which travels as an fd. */
static cJSON *host_request(const struct plugin_call *c, const struct pg_impl_request *req) {
  cJSON *r = pg__call_json(req);
  if (r) cJSON_AddStringToObject(r, "symbol", c->symbol);
  cJSON_AddArrayToObject(r, "inputs");
  cJSON_AddArrayToObject(r, "outputs");
  return r;
}

/* Lays the call out in the host's call memory (impl/pool.h, impl/plugin_shm.h): the
 * header page, the outputs (NaN-prefilled, canary-guarded; out->outputs point into it
 * until the call is judged, then they are copied out), the inputs (copied in); lists
 * them in the request, with the memory fd when the host does not have it yet
 * (*send_fd). */
static int host_memory(struct plugin_call *c, const struct pg_impl_pending *p,
                       struct pg_impl_outcome *out, cJSON *rq, int *send_fd,
                       struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__callmem_layout(p->req, out, &c->lay, err));
  int fd = -1, fresh = 0;
  char *base = pg__pool_memory(p->impl, c->host, c->lay.size, &fd, &fresh, err);
  if (!base) return err->code;
  *send_fd = fresh ? fd : -1;
  c->hdr = (struct shared_hdr *)base;
  c->hdr_size = 0; /* the pool's memory: not unmapped per call */
  memset(c->hdr, 0, sizeof *c->hdr);
  pg__callmem_fill(base, &c->lay, p->req, out, rq);
  cJSON_AddNumberToObject(rq, "size", (double)c->lay.size);
  return PG_OK;
}

/* The host could not be started (it died loading the plugin: the probe passed, so this
 * is rare): the facts of that start. */
static void host_start_failed(struct pg_proc_result *sf, const struct pg_error *se,
                              const struct pg_impl_request *req, struct pg_impl_outcome *out) {
  pg__proc_to_sandbox(sf, &out->sandbox);
  if (sf->end != PG_PROC_EXITED || !pg__impl_abnormal(&out->sandbox, req, "the plugin host", out)) {
    char last[400];
    pg__last_line(out->sandbox.err, last, sizeof last);
    pg__impl_fact(out, PG_IMPL_FACT_LOAD_FAILED, "the plugin host could not start: %.400s",
                  last[0] ? last : se->message);
  }
}

static int host_start(struct pg_impl_pending *p, struct plugin_call *c,
                      struct pg_impl_outcome *out, struct pg_error *err) {
  struct pg_proc_result sf;
  pg_proc_result_init(&sf);
  struct pg_error se;
  pg_error_clear(&se);
  int rc = PG_OK, send_fd = -1;
  c->host = pg__pool_acquire(p->impl, p->req, &sf, &se);
  if (!c->host && se.code != PG_EIMPL) {
    *err = se;
    rc = se.code;
  } else if (!c->host) {
    host_start_failed(&sf, &se, p->req, out);
  }
  pg_proc_result_reset(&sf);
  cJSON *rq = c->host ? host_request(c, p->req) : NULL;
  if (c->host && !rq) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK && rq) rc = host_memory(c, p, out, rq, &send_fd, err);
  if (c->host) out->startup_ms = c->host->calls == 0 ? c->host->start_ms : 0;
  if (rc == PG_OK && rq) rc = pg_proc_send(c->host, rq, send_fd, &c->id, err);
  cJSON_Delete(rq);
  if (rc != PG_OK) /* the outputs point into the pool's memory: never freed here */
    for (int i = 0; i < out->n_outputs; i++) out->outputs[i].dl.data = NULL;
  if (rc == PG_OK && !c->host) { /* the start's fact is recorded: nothing runs */
    call_free(c);
    return PG_OK;
  }
  return started(p, c, out, rc);
}

static int host_finish(struct pg_impl_pending *p, struct plugin_call *c,
                       struct pg_impl_outcome *out, struct pg_error *err) {
  struct pg_proc_result r;
  pg_proc_result_init(&r);
  int rc = pg_proc_wait(c->host, c->id, p->req->timeout_s, &r, err);
  int healthy = 0;
  if (rc == PG_OK) {
    pg__proc_to_sandbox(&r, &out->sandbox);
    out->wall_ms = r.wall_ms;
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r.answer, "status"));
    if (r.end == PG_PROC_ANSWERED && st && strcmp(st, "ok") != 0) {
      const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r.answer, "message"));
      pg__impl_fact(out, PG_IMPL_FACT_RUNNER_FAILURE, "the plugin host could not run the call: "
                    "%.300s", m ? m : st);
    } else if (r.end == PG_PROC_PROTOCOL) {
      /* the host writes nothing but its answers there: the plugin wrote on its fds */
      pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the plugin host broke the protocol "
                    "while %s ran in mode '%s' (the plugin wrote on the host's protocol fds?): "
                    "%s", c->symbol, p->req->mode, r.protocol);
    } else {
      if (r.end == PG_PROC_ANSWERED) out->sandbox.exited = 1;
      int before = fact_before_return(c, p->impl, p->req, out);
      if (!before && r.end != PG_PROC_ANSWERED) {
        /* the wrapper returned, then the host could not answer: only the plugin can have
         * taken its socket away (closed fd 3 and 4, or dup2()ed over them) */
        pg__impl_fact(out, PG_IMPL_FACT_WORKER_PROTOCOL, "the plugin host lost its protocol "
                      "fds after %s returned in mode '%s': the plugin closed or replaced fds "
                      "%s (the host then %s)", c->symbol, p->req->mode, PG_PROC_FDS,
                      r.exited ? "exited" : "was killed");
      } else if (!before) {
        fact_after_return(c, p->req, out);
        /* returned, canaries intact: whatever the wrapper said, the host may go on */
        healthy = r.end == PG_PROC_ANSWERED && out->fact != PG_IMPL_FACT_CANARY_HIT;
      } else {
        healthy = r.end == PG_PROC_ANSWERED && out->fact == PG_IMPL_FACT_MISSING_SYMBOL;
      }
    }
  }
  if (rc != PG_OK) out->status = PG_IMPL_FAILED;
  int crc = pg__callmem_outputs_out(out, err);
  if (rc == PG_OK) rc = crc;
  pg_proc_result_reset(&r);
  pg__pool_release(p->impl, c->host, rc == PG_OK && healthy);
  call_free(c);
  p->call = NULL;
  return rc;
}

static int plugin_process(const struct pg_impl *impl, struct pg_proc_program *out,
                          struct pg_error *err) {
  return pg__process_of_target(impl, PG_PROC_PLUGIN, out, err);
}

const struct pg_impl_ops pg__plugin_ops = {
    .name = "plugin",
    .usage = "plugin:PATH.so",
    .bare_suffix = ".so",
    .probe_start = plugin_probe_start,
    .probe_finish = plugin_probe_finish,
    .probe_cancel = plugin_probe_cancel,
    .start = plugin_start,
    .finish = plugin_finish,
    .prestart = pg__pool_prestart,
    .close = pg__pool_close,
    .process = plugin_process,
};
