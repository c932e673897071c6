/* phasegate runner — the impl room (docs/design.md §2, §6): how one (case, mode) call reaches
 * the code under test, and the FACTS of what came back.
 *
 *   plugin:PATH.so   <op>_module<suffix>_wrapper called in the persistent plugin host
 *                    (impl/plugin_host.c; --fresh-process: a forked child per call);
 *                    outputs come back through shared memory, NaN-prefilled,
 *                    canary-guarded
 *   exec:COMMAND     /bin/sh -c COMMAND with a fresh case directory (in/, out/,
 *                    request.json) and PHASEGATE_* environment variables
 *   worker:COMMAND   the same request to a persistent process over the worker protocol
 *                    (impl/worker.c, impl/proc.h)
 *   python:FILE.py[::FUNCTION]  a pypto-workflow impl module called by phasegate's own
 *                    Python worker (tools/python/phasegate/worker.py) over the same
 *                    protocol: <op>_module<suffix>_wrapper(*primary_inputs), or FUNCTION;
 *                    python:DIR takes phase <suffix> from DIR/<op>_module<suffix>_impl.py
 *   replay:DIR       DIR/<case>/<mode>/<name>.npy dumped by an earlier device run
 *
 * Each adapter is one file and one row of the ops table in impl/adapter.c (see
 * impl/adapter.h). An outcome says what happened (enum pg_impl_fact plus its details and
 * a one-sentence summary); it never says what that means: status, failure category and
 * hints are decided in run/classify.c. A negative return code means the runner itself
 * could not do its part.
 */
#ifndef PHASEGATE_RUNNER_IMPL_H
#define PHASEGATE_RUNNER_IMPL_H

#include <stdint.h>

#include "phasegate/error.h"
#include "base/base.h"
#include "phasegate/tensor.h"
#include "impl/sandbox.h"
#include "impl/proc.h" /* persistent processes: the protocol engine and its programs */

#define PG_IMPL_MAX_OUTPUTS 32
#define PG_CANARY_BYTES 64
#define PG_CANARY_BYTE 0xCB   /* guard bytes after every plugin output buffer */
#define PG_INT_PREFILL 0xA5   /* integer outputs start as 0xA5A5… */

struct pg_impl_ops; /* one row per adapter (impl/adapter.h) */

/* A parsed --impl. `state` belongs to the adapter (persistent processes kept between
 * calls); it stays NULL for adapters that keep nothing. Release with pg_impl_close. */
struct pg_impl {
  const struct pg_impl_ops *ops;
  char target[4096]; /* the path, command or directory after the "kind:" prefix (checked) */
  void *state;
  /* Persistent processes (plugin host, worker:), set by the caller after parsing. */
  int fresh_process;          /* one process per call (--fresh-process) */
  int max_calls;              /* replace a process after this many calls; 0 = never */
  const char *serve_control;  /* lease processes from `phasegate serve` there (or NULL:
                                 $PHASEGATE_SERVE_CONTROL, else none) */
  const char *log_dir;        /* where process logs go (NULL: $TMPDIR) */
  const char *python;         /* python: the interpreter (--python; NULL: $PHASEGATE_PYTHON,
                                 else python3) */
  /* The information barrier for what this impl's processes write (docs/design.md §8):
   * applied to each piece of *captured* text — a worker's message, a line it wrote, the
   * last line of its stderr — before the impl room quotes it in a sentence of its own,
   * so phasegate's skeleton around it is never redacted. Returns a malloc()ed copy
   * (NULL: out of memory: the text is withheld). NULL: quoted as written (impls: their
   * text is redacted against the case's tensors where the run stores it). */
  char *(*quote)(const char *captured);
};

/* Parses "plugin:PATH", "exec:COMMAND", "worker:COMMAND", "python:FILE.py[::FUNCTION]",
 * "replay:DIR" (the prefixes of the ops table); a
 * bare path ending in .so is a plugin. PG_EINVAL / PG_ELIMIT with a message listing the
 * accepted forms. */
int pg_impl_parse(const char *spec, struct pg_impl *impl, struct pg_error *err);

/* The adapter's name: "plugin", "exec", "worker", "python", "replay" ("" for an unparsed
 * impl). */
const char *pg_impl_kind(const struct pg_impl *impl);

/* The bits every element of an output of dtype t holds before the impl writes it
 * (plugin, and worker/python calls in call memory, protocol v1.1: a distinctive NaN,
 * integers 0xA5 bytes), in the dtype's width: 1 with *bits set, 0 when the impl's
 * adapter prefills nothing (exec, replay). */
int pg_impl_prefill_bits(const struct pg_impl *impl, enum pg_dtype t, uint64_t *bits);

/* The program of the persistent process behind the impl (plugin: the host on the .so;
 * worker: the command; python: the Python worker's command, built from impl->python),
 * as the pool starts it and `phasegate serve` prestarts it, into *out (free it with
 * pg_proc_program_reset). PG_EINVAL when the impl's calls use no persistent process. */
int pg_impl_process(const struct pg_impl *impl, struct pg_proc_program *out,
                    struct pg_error *err);

/* The interpreter of the Python worker: `python` if given, else $PHASEGATE_PYTHON, else
 * "python3". */
const char *pg_python_interpreter(const char *python);

/* The command that runs phasegate's Python worker (`python -m phasegate.worker`,
 * PYTHONPATH = the package dir ahead of the caller's): the persistent process of
 * python: impls and of Python goldens (each request then carries a "call" object,
 * docs/worker_protocol.md). `python` as for pg_python_interpreter. PG_OK and a
 * malloc'd *command; PG_ENOENT when the package is not found; PG_ENOMEM. */
int pg_python_worker_command(const char *python, char **command, struct pg_error *err);

/* Before any case: can the interpreter (`python` as for pg_python_interpreter) run
 * phasegate's Python worker for `what` (a phrase: "the python: impl FILE", "the Python
 * goldens of op X")? It runs `python -m phasegate.preflight PATHS…` (numpy and torch
 * looked up, not imported: the cost of an interpreter start): PG_OK, or one error that
 * names the interpreter, what it lacks (numpy; torch where a file in paths imports it
 * at module level) and how to choose another (--python, PHASEGATE_PYTHON, the CMake
 * cache variable) — also when it is not found or gives no answer. `about` (may be
 * NULL): what the interpreter is, for the report's provenance, as a JSON object text
 * {"interpreter", "version", "numpy", "torch", "torch_npu", "pypto"}, plus "missing_env": the
 * environment lines a mode needs that are not set, "ASCEND_HOME_PATH (npu)" (only when
 * some are missing; phasegate/preflight.py ENV_LINES) ("" when unknown). */
#define PG_PYTHON_ABOUT_MAX 512
int pg_python_preflight(const char *python, const char *what, const char *const *paths,
                        int n_paths, char *about, struct pg_error *err);

/* The first transcendental function (exp, sigmoid, softmax, …) the Python file `path`
 * calls, read from its syntax tree by `python -m phasegate.preflight --uses` (nothing
 * imported), into name ("" when none, or when the interpreter cannot say). For a
 * Python golden's golden_fallback check (docs/diagnosis.md). */
int pg_python_golden_uses(const char *python, const char *path, char *name, size_t size,
                          struct pg_error *err);

/* An impl of the worker adapter running `command` (what pg_impl_parse makes of
 * "worker:COMMAND", without a string to parse): Python goldens run in one. */
int pg_impl_worker(const char *command, struct pg_impl *impl, struct pg_error *err);

/* Lets a persistent adapter start the process of (mode, device) ahead of the first call
 * (its start-up overlaps the caller's work). A no-op for the others; never fails (a
 * start that goes wrong is reported by the first call). Not before a fork that must not
 * inherit it (--jobs). */
void pg_impl_prestart(struct pg_impl *impl, const char *mode, int device, uint64_t rlimit_as,
                      double timeout_s);

/* Ends whatever the adapter keeps between calls (persistent processes). Called once at
 * the end of a run; safe on an impl that never started anything, or was never parsed. */
void pg_impl_close(struct pg_impl *impl);

/* What happened in one call. Facts, not verdicts: run/classify.c maps each to a status,
 * a failure category and a hint. */
enum pg_impl_fact {
  PG_IMPL_FACT_OK = 0,             /* every declared output came back, written, as declared */
  PG_IMPL_FACT_UNAVAILABLE,        /* the impl says the mode cannot run here (PG_UNAVAILABLE,
                                      exit 77, no dumped outputs for the mode) */
  PG_IMPL_FACT_NOT_FOUND,          /* the plugin file or replay directory is not there */
  PG_IMPL_FACT_LOAD_FAILED,        /* dlopen() refused the plugin in the call's process */
  PG_IMPL_FACT_MISSING_SYMBOL,     /* no <op>_module<suffix>_wrapper in the plugin */
  PG_IMPL_FACT_TIMEOUT,            /* killed after the timeout (with its process group) */
  PG_IMPL_FACT_SIGNAL,             /* killed by signal `signo` */
  PG_IMPL_FACT_SANITIZER_REPORT,   /* a sanitizer's crash report and a non-zero exit */
  PG_IMPL_FACT_OOM,                /* ran out of memory (signal, exit, return or before the call) */
  PG_IMPL_FACT_EXIT_NONZERO,       /* the process exited with `code` (exec: the command;
                                      plugin: the wrapper called exit() instead of returning) */
  PG_IMPL_FACT_RETURNED_ERROR,     /* the wrapper returned `code` (not 0, not PG_UNAVAILABLE) */
  PG_IMPL_FACT_CANARY_HIT,         /* a guard byte after output `output` was overwritten */
  PG_IMPL_FACT_UNWRITTEN_OUTPUT,   /* output `output` still holds the prefill */
  PG_IMPL_FACT_WRONG_OUTPUT_COUNT, /* an output file too many or too few */
  PG_IMPL_FACT_WRONG_OUTPUT_NAME,  /* outputs.safetensors names a tensor wrongly */
  PG_IMPL_FACT_WRONG_OUTPUT_SHAPE, /* output `output` has another shape */
  PG_IMPL_FACT_WRONG_OUTPUT_DTYPE, /* output `output` is `got` instead of `expected` */
  PG_IMPL_FACT_PROTOCOL_ERROR,     /* an answer the runner cannot read (a malformed .npy or
                                      outputs.safetensors) */
  PG_IMPL_FACT_RUNNER_FAILURE,     /* the call's process ended before the call for a reason
                                      of the runner's, not the impl's */
  PG_IMPL_FACT_WORKER_PROTOCOL,    /* a persistent process broke the worker protocol: no
                                      handshake, a line that is not the answer, an unknown
                                      status, its protocol fds closed */
  PG_IMPL_FACT_WORKER_ERROR,       /* a worker answered "error" (message in the summary) */
  PG_IMPL_FACT_WORKER_STRUCTURAL,  /* a worker answered "structural": the impl lacks the
                                      function the phase calls, returned the wrong number of
                                      outputs, … (message in the summary) */
  PG_IMPL_FACT_UNSAFE_OUTPUT,      /* out/ or an output is not a file the impl wrote in its
                                      case directory (a symlink, a hard link, a FIFO, a
                                      device, out/ removed): never read */
  PG_IMPL_FACT_IMPORT_FAILED,      /* a worker answered "error" with "stage": "import": the
                                      impl module raised while being imported (exc_type and
                                      exc_message say what) */
  PG_IMPL_FACT_MISSING_FUNCTION,   /* a worker answered "structural" with "missing": the
                                      impl lacks the function (or staged file) the phase
                                      calls (python: <op>_module<suffix>_wrapper) */
  PG_IMPL_FACT_COUNT
};

struct pg_impl_output_spec {
  const char *name;
  enum pg_dtype dtype;
  int ndim;                  /* < 0: any shape, the callee's (a worker call only: the pypto
                                workflow's inspection companion, whose probe shapes no file
                                declares; docs/pypto.md "Inspection probes") */
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
  /* The Python worker's "call" object (tools/python/phasegate/worker.py): the file and
   * function to call; cast_outputs: cast each returned leaf to its declared dtype (the
   * goldens do, impls do not). call_file NULL: no "call" in the request. */
  const char *call_file, *call_function;
  int call_cast_outputs;
  /* "kind" and "result_file" of the call object: kind "make_inputs" calls the op's own
   * input code, the outputs being the primary inputs, and the worker writes what it
   * learnt (keys read, argument order, scalars) as JSON to call_result_file (docs/pypto.md
   * "Inputs from make_inputs"). NULL: an ordinary call. */
  const char *call_kind, *call_result_file;
  /* The request's "arguments" ({"order": [...], "scalars": {...}}, JSON text): the
   * positional order of the call and its non-tensor inputs, as make_inputs gave them.
   * NULL: the inputs in contract order. */
  const char *arguments_json;
  const char *call_precision; /* goldens' CPU reproducer: the worker casts the floating
                                 inputs to this dtype first ("float64"); NULL: as given */
  /* The pypto workflow's inspection protocol (docs/pypto.md "Inspection probes"), in the
   * "call" object: call_probe names the entry of the dict a golden companion
   * `module_<k>_inspect` returns (the one output); n_kwarg_outputs counts the trailing
   * outputs a python: impl takes as keyword buffers (`inspection_<name>=`) instead of
   * returning them. NULL / 0: neither. */
  const char *call_probe;
  int n_kwarg_outputs;
};

/* Coarse form of the fact: DONE = PG_IMPL_FACT_OK, UNAVAILABLE, FAILED = any other. */
enum pg_impl_status { PG_IMPL_DONE = 0, PG_IMPL_UNAVAILABLE, PG_IMPL_FAILED };

struct pg_impl_outcome {
  enum pg_impl_status status;
  enum pg_impl_fact fact;
  int output;                /* the output the fact is about (CANARY_HIT, UNWRITTEN_OUTPUT,
                                WRONG_OUTPUT_*), else -1 */
  int code;                  /* EXIT_NONZERO: exit status; RETURNED_ERROR: the return value */
  int expected, got;         /* WRONG_OUTPUT_COUNT: output counts; _DTYPE: enum pg_dtype */
  char summary[512];         /* one sentence saying what happened; UNAVAILABLE: the reason */
  /* The impl's own words about its failure, as data (a worker's "exc_type" and
   * "exc_message", docs/worker_protocol.md): what run/classify.c matches against its
   * table of environment failures, never the summary. "" when the impl said nothing. */
  char exc_type[64];         /* the exception's type, e.g. "ModuleNotFoundError" */
  char exc_message[1024];    /* its message */
  struct pg_tensor outputs[PG_IMPL_MAX_OUTPUTS]; /* DONE: in declared order; WRONG_OUTPUT_
                                SHAPE/_DTYPE: those read up to the rejected one (never
                                compared), else empty */
  int n_outputs;
  struct pg_sandbox_result sandbox; /* captured stdout/stderr, exit status, signal, wall time */
  double wall_ms;            /* the call alone (persistent: from request to answer) */
  double startup_ms;         /* persistent: the start-up of the process this call was the
                                first of (exec, import, device context, handshake); 0 when
                                the process had served calls before */
  char *work_dir;            /* exec with keep_work: the case directory (owned), else NULL */
  char device_name[128];     /* the device the impl said it ran on (plugin: through
                                pg_call_device_name; worker: the answer's "device_name"),
                                else "" */
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
 * `out`; `req` and everything it points to must stay valid until then. `call` is the
 * adapter's (freed by finish). */
struct pg_impl_pending {
  const struct pg_impl *impl;
  const struct pg_impl_request *req;
  int rc;                    /* the result when nothing is running */
  int running;               /* the adapter's finish still has to run */
  void *call;                /* the adapter's per-call state */
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
 * and may leave a probe running; then exactly one of finish (waits, returns the
 * verdict) or cancel (kills and reaps it; for error paths) must follow. Both are no-ops
 * when nothing runs. `impl` must stay valid until then. */
struct pg_impl_probe {
  const struct pg_impl *impl;
  double timeout_s;
  uint64_t rlimit_as;
  int running;
  void *priv;                /* the adapter's probe state */
  char python[PG_PYTHON_ABOUT_MAX]; /* python: the interpreter the probe asked (JSON), or "" */
};
int pg_impl_check_start(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                        struct pg_impl_probe *p, struct pg_error *err);
int pg_impl_check_finish(struct pg_impl_probe *p, struct pg_error *err);
void pg_impl_check_cancel(struct pg_impl_probe *p);

/* Starts the watchdog that ends, when this process ends (kill -9 included), every
 * process the impl room started and did not reap — the forks of impl processes
 * included, which the death signal does not reach (docs/runner.md "Nothing outlives the
 * runner"). Call once, from the thread that lives as long as the process, before any
 * other thread or impl process starts; later calls, and calls from a forked job
 * process (which shares its parent's), do nothing. PG_OK, or PG_EIO with err when it
 * cannot be started (then the runner goes on without it). */
int pg_impl_watchdog_start(struct pg_error *err);

/* The wrapper symbol a plugin must export: "<op>_module<suffix>_wrapper". */
void pg_impl_symbol(const char *op, const char *suffix, char *buf, size_t size);

/* The rest of the room's API, for the rooms above (one header to include): the client
 * half of `phasegate serve` with the control protocol's wire. */
#include "impl/serve_client.h"

#endif
