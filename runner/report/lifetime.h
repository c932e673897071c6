/* phasegate runner — a report's lifetime (docs/report.md "One run, one verdict"): which
 * run wrote a report, when an existing report is merged into and when it goes to the
 * history, and the objects that say so (run, selection, findings). Private to the
 * report room: report.c calls it; it calls nothing of report.c.
 */
#ifndef PHASEGATE_REPORT_LIFETIME_H
#define PHASEGATE_REPORT_LIFETIME_H

#include <cjson/cJSON.h>

#include "run/run.h"

#define PG__REPORT_HISTORY_KEEP 5 /* reports kept in <dir>/history/, newest first */

/* 1 when the existing report `prev` was written by the run (same run id) or the ctest
 * invocation (same session) that writes now, so its checks are merged; 0 when it
 * belongs to another run and must not count. A phase without an identity (no run id,
 * no session: a caller of the API, not pg_run) merges as reports always did. */
int pg__report_same_run(const cJSON *prev, const struct pg_run_phase *m);

/* Moves the report at `path` (written by another run) into <dir>/history/ as
 * <name>.<its start>.<its run id>.json and keeps the newest PG__REPORT_HISTORY_KEEP
 * there. PG_OK, or PG_EIO with err naming what failed (the report is then left where
 * it was, and replaced). */
int pg__report_to_history(const char *path, const cJSON *prev, struct pg_error *err);

/* The report's `run` object: this run, merged with `prev_run` (the same session's
 * earlier runs: the earliest start is kept); its device name is the first the checks
 * know. NULL: out of memory. */
cJSON *pg__report_run_json(const struct pg_run_phase *m, const cJSON *prev_run,
                           const cJSON *checks);
/* A check's `run` object: the run, its host and device, the case's own start and end. */
cJSON *pg__report_case_run_json(const struct pg_run_phase *m, const struct pg_case_result *r);
/* `selection`: the levels and case ids `checks` hold, the modes, and whether that is
 * the whole suite. */
cJSON *pg__report_selection_json(const struct pg_run_phase *m, const cJSON *checks);
/* Sorts checks[] in suite order (suite_index, then id), stably: a report assembled from
 * several runs of one session reads as one run's. 0, or -1: out of memory (a check that
 * could not be put back is dropped). */
int pg__report_sort_checks(cJSON *checks);
/* `findings[]` of a refused run (warnings and errors; notes are validate's). */
cJSON *pg__report_findings_json(const struct pg_diags *d);

#endif
