/* phasegate runner — what the plugin adapter and the plugin host share about one call's
 * memory: a header page saying how far the call got, then the tensors, each at a
 * page-aligned offset of one memory file (memfd). The runner creates and fills it
 * (inputs copied in, outputs NaN-prefilled and followed by canary bytes), the process
 * that calls the wrapper (a forked child or the persistent plugin host) maps the same
 * memory, so outputs land where the runner reads them, with no copy.
 * Internal to runner/impl/. */
#ifndef PHASEGATE_IMPL_PLUGIN_SHM_H
#define PHASEGATE_IMPL_PLUGIN_SHM_H

#include <stdint.h>
#include <stdio.h>

#include "phasegate/impl.h"

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

#endif
