/* phasegate runner — impl adapters: how one (case, mode) call reaches the code under
 * test and what came back (DESIGN.md §6).
 *
 *   plugin:PATH.so   dlopen + <op>_module<suffix>_wrapper in a forked child; outputs
 *                    come back through MAP_SHARED memory, NaN-prefilled, canary-guarded
 *   exec:COMMAND     /bin/sh -c COMMAND with a fresh case directory (in/, out/,
 *                    request.json) and PHASEGATE_* environment variables
 *   replay:DIR       DIR/<case>/<mode>/<name>.npy dumped by an earlier device run
 *
 * Every failure of the impl is an outcome with a category and a one-sentence summary;
 * a negative return code means the runner itself could not do its part.
 */
#ifndef PHASEGATE_ADAPTER_H
#define PHASEGATE_ADAPTER_H

#include <stdint.h>

#include "phasegate/error.h"
#include "base/base.h"
#include "phasegate/tensor.h"
#include "impl/sandbox.h"

#define PG_IMPL_MAX_OUTPUTS 32
#define PG_CANARY_BYTES 64
#define PG_CANARY_BYTE 0xCB   /* guard bytes after every plugin output buffer */
#define PG_INT_PREFILL 0xA5   /* integer outputs start as 0xA5A5… */

enum pg_impl_kind { PG_IMPL_PLUGIN = 0, PG_IMPL_EXEC, PG_IMPL_REPLAY, PG_IMPL_WORKER };

struct pg_pool;

struct pg_impl {
  enum pg_impl_kind kind;
  char target[4096]; /* the path, command or directory after the "kind:" prefix */
  /* Persistent processes (plugin host, worker:): set by the caller after parsing. */
  int fresh_process;          /* one process per call (--fresh-process) */
  int max_calls;              /* recycle a process after this many calls; 0 = never */
  const char *serve_control;  /* lease processes from `phasegate serve` there (or NULL) */
  const char *log_dir;        /* where worker logs go (NULL: $TMPDIR) */
  struct pg_pool *pool;       /* the warm processes, created on first use; owned:
                                 release with pg_impl_close */
};

/* Ends every persistent process of the impl (EOF, then the group is killed) and frees
 * the pool. Safe when nothing was started; the impl can be used again afterwards. */
void pg_impl_close(struct pg_impl *impl);

/* Parses "plugin:PATH", "exec:COMMAND", "replay:DIR"; a bare path ending in .so is a
 * plugin. */
int pg_impl_parse(const char *spec, struct pg_impl *impl, struct pg_error *err);

enum pg_category {
  PG_CAT_NONE = 0,
  PG_CAT_PRECISION,
  PG_CAT_STRUCTURAL,
  PG_CAT_RUNTIME,
  PG_CAT_INFRA,
  PG_CAT_OTHER
};
const char *pg_category_name(enum pg_category c); /* "precision", …; NULL for NONE */

struct pg_impl_output_spec {
  const char *name;
  enum pg_dtype dtype;
  int ndim;
  int64_t shape[PG_MAX_NDIM];
};

struct pg_impl_request {
  const char *op, *suffix;
  int up_to_module, total_modules;
  const char *mode;
  int device_id;
  const char *case_id;
  int n_dims;
  const char *const *dim_names;
  const int64_t *dim_values;
  const char *knobs_json;                /* the case object as JSON text (or "{}") */
  const struct pg_tensor *inputs;        /* primary inputs, contract order, named */
  int n_inputs;
  const struct pg_impl_output_spec *outputs; /* boundary outputs, declared order */
  int n_outputs;
  double timeout_s;
  uint64_t rlimit_as;
  const char *work_dir;                  /* exec: where case dirs go (NULL: $TMPDIR) */
  int keep_work;                         /* exec: keep the case dir afterwards */
};

enum pg_impl_status { PG_IMPL_DONE = 0, PG_IMPL_UNAVAILABLE, PG_IMPL_FAILED };

struct pg_impl_outcome {
  enum pg_impl_status status;
  enum pg_category category; /* FAILED only */
  char summary[512];         /* one sentence; for UNAVAILABLE the reason */
  struct pg_tensor outputs[PG_IMPL_MAX_OUTPUTS]; /* DONE: in declared order */
  int n_outputs;
  struct pg_sandbox_result sandbox; /* captured stdout/stderr, exit status, wall time */
  double wall_ms;
  char work_dir[4096];       /* exec: the case directory used ("" if removed) */
};

void pg_impl_outcome_init(struct pg_impl_outcome *o);
void pg_impl_outcome_reset(struct pg_impl_outcome *o);

/* Runs one call. PG_OK whenever an outcome was produced (including impl failures);
 * a negative code (with err) when the runner could not do its part (infra). */
int pg_impl_invoke(const struct pg_impl *impl, const struct pg_impl_request *req,
                   struct pg_impl_outcome *out, struct pg_error *err);

/* The same call in two steps, so the runner can compute the golden while the impl
 * runs: pg_impl_start launches it (plugin, exec: the child is forked and start returns
 * at once; replay: the whole call), pg_impl_finish waits for it and fills `out` as
 * pg_impl_invoke would. finish must be called exactly once after start, with the same
 * `out`; `req` and everything it points to must stay valid until then. */
struct pg_impl_pending {
  const struct pg_impl *impl;
  const struct pg_impl_request *req;
  int rc;                    /* the result when nothing is running */
  int running;               /* a plugin child runs */
  struct pg_sandbox_proc proc;
  void *hdr;                 /* plugin: the shared header page */
  size_t map_size[PG_IMPL_MAX_OUTPUTS];
  char symbol[160];
  char work[4096];           /* exec: the case directory */
  struct pg_proc *worker;    /* persistent: the process serving this call */
  int64_t call_id;
  int memfd;                 /* plugin host: the call's memory (closed after sending) */
};
int pg_impl_start(const struct pg_impl *impl, const struct pg_impl_request *req,
                  struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err);
int pg_impl_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err);

/* Checks once, before any case runs, that the impl can be used at all, so a wrong
 * --impl is one clear error instead of an ERROR line per case: plugin: the path is a
 * regular file that dlopen() accepts (tried in a forked child under timeout_s and
 * rlimit_as, so a constructor that crashes, hangs or exits cannot end the runner; that
 * is an error too); exec: the command is not blank; replay: DIR is a directory.
 * PG_OK, or a negative code with a message naming the path. */
int pg_impl_check(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                  struct pg_error *err);

/* The same in two steps, so the plugin's load probe runs while the runner loads the
 * contract and suite: start does the cheap checks at once (an error there is final)
 * and forks the probe; then exactly one of finish (waits, returns the verdict) or
 * cancel (kills and reaps it; for error paths) must follow. `impl` must stay valid
 * until then. */
struct pg_impl_probe {
  const struct pg_impl *impl;
  double timeout_s;
  int running;
  struct pg_sandbox_proc proc;
  void *page;
};
int pg_impl_check_start(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                        struct pg_impl_probe *p, struct pg_error *err);
int pg_impl_check_finish(struct pg_impl_probe *p, struct pg_error *err);
void pg_impl_check_cancel(struct pg_impl_probe *p);

/* The wrapper symbol a plugin must export: "<op>_module<suffix>_wrapper". */
void pg_impl_symbol(const char *op, const char *suffix, char *buf, size_t size);

/* ---- internal, shared by the adapters ---- */
int pg__plugin_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     struct pg_error *err);
int pg__plugin_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err);
int pg__exec_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                   struct pg_error *err);
int pg__exec_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                    struct pg_error *err);
int pg__plugin_probe_start(struct pg_impl_probe *p, uint64_t rlimit_as, struct pg_error *err);
int pg__plugin_probe_finish(struct pg_impl_probe *p, struct pg_error *err);
int pg__worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     struct pg_error *err);
int pg__worker_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err);
/* exec: and worker: share the case directory and the request object. */
int pg__exec_case_dir(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err);
struct cJSON;
struct cJSON *pg__exec_request_json(const char *case_dir, const struct pg_impl_request *req);
int pg__replay_invoke(const struct pg_impl *impl, const struct pg_impl_request *req,
                      struct pg_impl_outcome *out, struct pg_error *err);
/* Reads the expected outputs from dir (<name>.npy or outputs.safetensors), checking
 * count, names, shapes and dtypes; a mismatch is a structural outcome. */
int pg__collect_outputs(const char *dir, const struct pg_impl_request *req,
                        struct pg_impl_outcome *out, struct pg_error *err);
/* Fills out->status/category/summary. Returns 0 for convenience. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int pg__outcome_fail(struct pg_impl_outcome *out, enum pg_category cat, const char *fmt, ...);
/* The last non-empty line of text (shortened from the left to fit). */
void pg__last_line(const char *text, char *buf, size_t size);
/* Classifies a sandbox result that did not end normally (timeout, signal) or that
 * reported an allocation failure; returns 1 when it filled `out`. */
int pg__classify_abnormal(const struct pg_sandbox_result *sr, const struct pg_impl_request *req,
                          const char *what, struct pg_impl_outcome *out);

#endif
