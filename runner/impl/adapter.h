/* phasegate runner — what an impl adapter implements, and the helpers the adapters
 * share; private to runner/impl/ (other rooms include impl/impl.h only).
 *
 * Adding an adapter is one new file that defines `const struct pg_impl_ops
 * pg__<name>_ops` plus one row in PG_IMPL_ADAPTERS (impl/adapter.c) and its source in
 * runner/CMakeLists.txt. The operations fit a persistent process pool: start/finish
 * may reuse a process kept in impl->state, close ends them all once at the end of the
 * run. Nothing here decides verdicts: adapters report facts (pg__impl_fact).
 */
#ifndef PHASEGATE_IMPL_ADAPTER_H
#define PHASEGATE_IMPL_ADAPTER_H

#include "impl/impl.h"
#include "impl/proc.h"

struct pg_impl_ops {
  const char *name;        /* "plugin": also the prefix, "plugin:" */
  const char *usage;       /* "plugin:PATH.so", for messages listing the accepted forms */
  const char *bare_suffix; /* a spec without a prefix that ends in this picks the adapter
                              (".so"); NULL: never */
  /* The one-time check (pg_impl_check_start): the cheap checks at once, an error there
   * is final; a slow check may leave p->running set, then exactly one of probe_finish
   * or probe_cancel is called. The latter two may be NULL if running is never set. */
  int (*probe_start)(struct pg_impl_probe *p, struct pg_error *err);
  int (*probe_finish)(struct pg_impl_probe *p, struct pg_error *err);
  void (*probe_cancel)(struct pg_impl_probe *p);
  /* One call: start launches it (p->running = 1 when finish must follow; a call done
   * at once leaves it 0), finish waits and fills `out`. Either may put state in
   * p->call; finish frees it. `out` is initialised before start. */
  int (*start)(struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err);
  int (*finish)(struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err);
  /* Starts the process the first call of (mode, device) will use, without waiting for
   * it (a persistent adapter's start-up overlaps the runner's work); NULL: nothing to
   * start ahead. */
  void (*prestart)(struct pg_impl *impl, const char *mode, int device, uint64_t rlimit_as,
                   double timeout_s);
  /* Ends what impl->state holds; NULL when the adapter keeps nothing between calls. */
  void (*close)(struct pg_impl *impl);
  /* The program of the persistent process the pool starts (or leases from `phasegate
   * serve`) for this impl, into *out (owned by the caller); NULL for an adapter whose
   * calls need no persistent process (exec:, replay:). */
  int (*process)(const struct pg_impl *impl, struct pg_proc_program *out, struct pg_error *err);
};

/* The `process` hook of plugin: and worker: (kind PG_PROC_PLUGIN or PG_PROC_COMMAND on
 * impl->target). */
int pg__process_of_target(const struct pg_impl *impl, enum pg_proc_kind kind,
                          struct pg_proc_program *out, struct pg_error *err);

/* Records what happened: sets out->fact, out->status and the summary; for any fact but
 * OK it also drops the outputs. Returns 0, so an adapter can `return pg__impl_fact(…),
 * PG_OK`. out->output / code / expected / got are the caller's to set. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int pg__impl_fact(struct pg_impl_outcome *out, enum pg_impl_fact fact, const char *fmt, ...);

/* Waits for the call's child (pg_sandbox_wait) into out->sandbox and out->wall_ms. */
int pg__impl_wait(struct pg_sandbox_proc *proc, struct pg_impl_outcome *out,
                  struct pg_error *err);

/* Reads the expected outputs from dir (<name>.npy or outputs.safetensors), checking
 * count, names, shapes and dtypes; a mismatch is a WRONG_OUTPUT_* fact. */
int pg__collect_outputs(const char *dir, const struct pg_impl_request *req,
                        struct pg_impl_outcome *out, struct pg_error *err);

/* Checks output i (as read, or as a worker described it) against its spec: 1 if its
 * dtype and shape are the declared ones, else 0 with a WRONG_OUTPUT_DTYPE/SHAPE fact. */
int pg__impl_check_output(const struct pg_tensor *t, const struct pg_impl_request *req, int i,
                          struct pg_impl_outcome *out);

/* The same for the out/ of a case directory the runner made (exec:, worker:), opened
 * without following any link: out/ or an output that is a symlink, a hard link, a FIFO
 * or a device, or a removed out/, is an UNSAFE_OUTPUT fact and nothing is read. */
int pg__collect_case_outputs(const char *case_dir, const struct pg_impl_request *req,
                             struct pg_impl_outcome *out, struct pg_error *err);

/* What every request object says about the call: schema_version, op, suffix,
 * up_to_module, total_modules, mode, device_id, case, dims, knobs (exec:'s
 * request.json, the worker: and plugin host lines). NULL when out of memory. */
struct cJSON *pg__call_json(const struct pg_impl_request *req);
/* Adds the "call" object of phasegate's Python worker (file, function, cast_outputs,
 * and req's inspection fields: "inspect_probe", "inspect_kwargs") to a request: the one
 * builder for python: impls and Python goldens. PG_ENOMEM. */
int pg__call_object_add(struct cJSON *request, const struct pg_impl_request *req,
                        const char *file, const char *function, int cast_outputs);

/* exec: and worker: share the case directory and the request object (impl/exec.c):
 * a fresh case directory with in/<name>.npy and an empty out/ (request.json too when
 * request_file); the request object (NULL when out of memory); the directory kept
 * (keep_work, into out->work_dir) or removed afterwards, dir freed. */
struct cJSON;
int pg__exec_case_dir(const struct pg_impl_request *req, int request_file, char **dir_out,
                      struct pg_error *err);
struct cJSON *pg__exec_request_json(const char *case_dir, const struct pg_impl_request *req);
void pg__exec_case_dir_done(const struct pg_impl_request *req, char *dir,
                            struct pg_impl_outcome *out);
/* The probe of a command adapter: the command is not blank. */
int pg__command_probe(struct pg_impl_probe *p, struct pg_error *err);

/* The worker adapter's call (impl/worker.c), shared with python: (impl/python.c): the
 * exec case directory and request object, `extend` (may be NULL) adding the adapter's
 * own fields to every request object it sends (PG_OK, or PG_ENOMEM), one line to the
 * pool's process of (mode, device), the answer read back (ok, unavailable, error,
 * structural) with the exec adapter's output checks. */
typedef int (*pg__worker_extend_fn)(const struct pg_impl_pending *p, struct cJSON *request);
int pg__worker_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                     pg__worker_extend_fn extend, struct pg_error *err);
int pg__worker_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                      struct pg_error *err);

/* The last non-empty line of text (shortened from the left to fit). */
void pg__last_line(const char *text, char *buf, size_t size);
/* Captured text (a worker's message, a line of its stderr) as a sentence of ours may
 * quote it: through impl->quote when the impl has a barrier (struct pg_impl), else as
 * written; at most size - 1 bytes, "(withheld)" when the barrier ran out of memory. */
void pg__impl_quote(const struct pg_impl *impl, const char *text, char *buf, size_t size);

/* The fact of a child that did not end normally (timeout, signal, sanitizer report) or
 * that said it ran out of memory; returns 1 when it filled `out`. `what` names the
 * code that ran ("the exec impl", the wrapper symbol). */
int pg__impl_abnormal(const struct pg_sandbox_result *sr, const struct pg_impl_request *req,
                      const char *what, struct pg_impl_outcome *out);

#endif
