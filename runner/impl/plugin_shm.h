/* phasegate runner — what the plugin adapter, the plugin host and the worker adapter
 * share about one call's memory: a header page saying how far the call got, then the
 * tensors, each at a page-aligned offset of one memory file (memfd). The runner creates
 * and fills it (inputs copied in, outputs NaN-prefilled and followed by canary bytes),
 * the process that calls the wrapper (a forked child, the persistent plugin host, or a
 * worker that agreed to protocol v1.1, docs/worker_protocol.md "Version 1.1") maps the
 * same memory, so outputs land where the runner reads them, with no copy. The layout
 * helpers below (impl/callmem.c) are the one copy of that layout and its checks.
 * Internal to runner/impl/. */
#ifndef PHASEGATE_IMPL_PLUGIN_SHM_H
#define PHASEGATE_IMPL_PLUGIN_SHM_H

#include <stdint.h>
#include <stdio.h>

#include "phasegate/impl.h"
#include "impl/impl.h"

struct cJSON;

/* How far the call got; written by the calling process, read by the runner. */
enum pg_plugin_stage {
  PG_PLUGIN_STAGE_START = 0,
  PG_PLUGIN_STAGE_DLOPEN_FAILED,
  PG_PLUGIN_STAGE_NOSYM,
  PG_PLUGIN_STAGE_NOMEM,
  PG_PLUGIN_STAGE_CALLING,
  PG_PLUGIN_STAGE_RETURNED
};

struct pg_plugin_shm_hdr {
  volatile int32_t stage;
  volatile int32_t rc;
  char msg[1024];
  char device_name[128];     /* what the wrapper said through pg_call_device_name(), or "" */
};

/* The pg_call log callback of the process that calls the wrapper: a line on its
 * stderr, "[impl <mode> <level>] message", captured into the case's output. */
static inline void pg__impl_log(const pg_call *call, int level, const char *message) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  const char *lv = (level >= 0 && level <= 3) ? names[level] : "log";
  fprintf(stderr, "[impl %s %s] %s\n", call && call->mode ? call->mode : "", lv,
          message ? message : "");
  fflush(stderr);
}

/* The pg_call device-name callback: call->user is the call's shared header. */
static inline void pg__impl_device_name(const pg_call *call, const char *name) {
  struct pg_plugin_shm_hdr *hdr = call ? (struct pg_plugin_shm_hdr *)call->user : NULL;
  if (hdr && name) snprintf(hdr->device_name, sizeof hdr->device_name, "%s", name);
}

/* Distinctive NaN payloads, so "never written" differs from "wrote NaN" (integers:
 * PG_INT_PREFILL bytes). */
#define PG_PREFILL_F32 0x7FC5A5A5u
#define PG_PREFILL_F16 0x7E5Au
#define PG_PREFILL_BF16 0x7FA5u
#define PG_PREFILL_F64 0x7FF8A5A5A5A5A5A5ull

/* Where one call's tensors sit in its call memory: the header page at 0, then each
 * output (rounded up to whole pages, PG_CANARY_BYTES guard bytes at least after its
 * bytes), then each input, every one page-aligned. */
struct pg_callmem_layout {
  size_t out_off[PG_IMPL_MAX_OUTPUTS];
  size_t out_span[PG_IMPL_MAX_OUTPUTS]; /* bytes + guard, whole pages */
  size_t in_start;                      /* the first input's offset */
  size_t size;                          /* the whole call memory */
};

/* The system page size (4096 when unknown). */
size_t pg__callmem_page(void);

/* Fills data (n elements, nbytes) with the prefill pattern of dtype t. */
void pg__callmem_prefill(void *data, enum pg_dtype t, int64_t n, size_t nbytes);

/* Describes out->outputs[i] from the request's output specs and lays the call out.
 * PG_OK, or an error (a shape too large). */
int pg__callmem_layout(const struct pg_impl_request *req, struct pg_impl_outcome *out,
                       struct pg_callmem_layout *l, struct pg_error *err);

/* Points out->outputs into base (the pool's memory, never freed through them),
 * prefills them and writes their guard bytes, copies the inputs in, and lists every
 * tensor (name, dtype, shape, offset, nbytes) in the request's existing "inputs" and
 * "outputs" arrays. */
void pg__callmem_fill(char *base, const struct pg_callmem_layout *l,
                      const struct pg_impl_request *req, struct pg_impl_outcome *out,
                      struct cJSON *request);

/* The first output whose guard bytes were overwritten (-1: none), and the offset of the
 * first bad guard byte after its data in *at. */
int pg__callmem_canary_hit(const struct pg_impl_outcome *out, const struct pg_callmem_layout *l,
                           size_t *at);

/* The first output that still holds its prefill pattern everywhere (-1: none). */
int pg__callmem_unwritten(const struct pg_impl_outcome *out);

/* The outputs of a judged call leave the call memory (the next call reuses it): a
 * private copy each when the call is DONE, none otherwise (all reset). */
int pg__callmem_outputs_out(struct pg_impl_outcome *out, struct pg_error *err);

#endif
