/* phasegate runner — --jobs N: the selected cases of a phase in N forked worker
 * processes (case i in worker i % N). Each worker runs its cases like the serial loop,
 * hands them to the persist hook (the report room's locked merge, so workers cannot
 * lose each other's cases) and sends the parent one fixed-size record per case: what
 * the summary needs. A worker that dies leaves its cases as runner errors. Forked
 * before any thread exists (the caller joins the BLAS preload first), from the run's
 * main thread: each worker dies with the runner (PR_SET_PDEATHSIG fires when the
 * forking *thread* ends, and this one lives as long as the runner), kill -9 included,
 * and never starts a case for a runner that is gone (docs/runner.md "Nothing outlives
 * the runner").
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/run_internal.h"

/* What a worker sends back per case: enough for the summary (the full result went
 * into the report). Smaller than PIPE_BUF, so concurrent writes stay whole. */
struct case_record {
  int32_t slot, status, category, earliest_boundary, report_ok, strength, strength_undetected;
  char id[PG_NAME_MAX];
  char fingerprint[32];
  char summary[640];
  char report_error[256];
};

/* The worker's life: its cases, persisted, one record each to fd; never returns. */
static void worker(struct pg__run *rc, const int *sel, int n_sel, int jobs, int w, int fd) {
  struct pg_case_result *loc = calloc((size_t)n_sel, sizeof *loc);
  int n = 0;
  if (!loc) _exit(3);
  for (int i = w; i < n_sel; i += jobs) pg__run_case(rc, &rc->suite.cases[sel[i]], &loc[n++]);
  struct pg_error we;
  pg_error_clear(&we);
  const struct pg_run_hooks *h = &rc->o->hooks;
  int ok = !h->persist || h->persist(rc->report_path, &rc->phase, loc, n, &we) == PG_OK;
  for (int i = w, j = 0; i < n_sel; i += jobs, j++) {
    struct case_record cr;
    memset(&cr, 0, sizeof cr);
    cr.slot = i;
    cr.status = (int32_t)loc[j].status;
    cr.category = (int32_t)loc[j].category;
    cr.earliest_boundary = loc[j].earliest_boundary;
    cr.report_ok = ok;
    cr.strength = (int32_t)loc[j].strength;
    cr.strength_undetected = loc[j].strength_undetected;
    snprintf(cr.id, sizeof cr.id, "%s", loc[j].id);
    snprintf(cr.fingerprint, sizeof cr.fingerprint, "%s", loc[j].fingerprint);
    snprintf(cr.summary, sizeof cr.summary, "%s", loc[j].summary);
    snprintf(cr.report_error, sizeof cr.report_error, "%.250s", we.message);
    if (write(fd, &cr, sizeof cr) != (ssize_t)sizeof cr) _exit(4);
  }
  pg_impl_close(&rc->impl); /* what this worker's calls kept (the parent closes its own) */
  pg_py_golden_worker_close(rc->py); /* this worker's golden process (started after the fork) */
  fflush(NULL);
  _exit(0);
}

/* Reads the workers' records into results until every worker closed the pipe; marks
 * the slots seen. Returns 0 when a worker could not write its report (err set). */
static int collect(int fd, int n_sel, struct pg_case_result *results, char *seen,
                   struct pg_error *err) {
  int report_ok = 1;
  struct case_record cr;
  for (;;) {
    ssize_t got = read(fd, &cr, sizeof cr);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)sizeof cr) break;
    if (cr.slot < 0 || cr.slot >= n_sel) continue;
    struct pg_case_result *r = &results[cr.slot];
    snprintf(r->id, sizeof r->id, "%s", cr.id);
    r->status = (enum pg_verdict)cr.status;
    r->category = (enum pg_category)cr.category;
    r->earliest_boundary = cr.earliest_boundary;
    r->strength = cr.strength >= 0 && cr.strength <= PG_STRENGTH_NOT_COMPUTED
                      ? (enum pg_strength_source)cr.strength : PG_STRENGTH_NA;
    r->strength_undetected = cr.strength_undetected;
    snprintf(r->fingerprint, sizeof r->fingerprint, "%s", cr.fingerprint);
    snprintf(r->summary, sizeof r->summary, "%s", cr.summary);
    if (!cr.report_ok && report_ok) {
      report_ok = 0;
      pg_error_set(err, PG_EIO, "%s", cr.report_error);
    } else if (report_ok && cr.report_error[0] && !err->message[0]) {
      snprintf(err->message, sizeof err->message, "%s", cr.report_error); /* a warning */
    }
    if (seen) seen[cr.slot] = 1;
  }
  return report_ok;
}

int pg__run_parallel(struct pg__run *rc, const int *sel, int n_sel, int jobs,
                     struct pg_case_result *results, struct pg_error *err) {
  int p[2];
  if (pipe(p) != 0) return pg_error_set(err, PG_EIO, "pipe: %s", strerror(errno));
  pid_t pids[64];
  int n_pids = 0;
  fflush(NULL);
  pid_t runner = getpid();
  for (int w = 0; w < jobs && w < n_sel && n_pids < 64; w++) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      /* dies with the runner; a runner gone before the prctl: no case is started */
      prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
      if (getppid() != runner) _exit(5);
      close(p[0]);
      worker(rc, sel, n_sel, jobs, w, p[1]);
    }
    pids[n_pids++] = pid;
  }
  close(p[1]);
  char *seen = calloc((size_t)n_sel, 1);
  int report_ok = collect(p[0], n_sel, results, seen, err);
  close(p[0]);
  for (int i = 0; i < n_pids; i++) waitpid(pids[i], NULL, 0);
  for (int i = 0; i < n_sel; i++)
    if (!seen || !seen[i]) {
      struct pg_case_result *r = &results[i];
      snprintf(r->id, sizeof r->id, "%s", rc->suite.cases[sel[i]].id);
      pg__classify_case_error(r, PG_RUN_FACT_RUNNER, "the worker process running this case died");
    }
  free(seen);
  return report_ok ? PG_OK : PG_EIO;
}
