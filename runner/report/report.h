/* phasegate runner — evaluation_report.json (DESIGN.md §8): building the JSON from
 * case results, the information-barrier sanitize step, and the atomic, locked
 * read-merge-write that keeps one report per phase correct when the cases of a phase
 * run as separate concurrent processes. Schema: docs/runner.md. */
#ifndef PHASEGATE_REPORT_H
#define PHASEGATE_REPORT_H

#include <cjson/cJSON.h>

#include "phasegate/error.h"
#include "run/run.h"

#define PG_REPORT_SCHEMA_VERSION 1

struct pg_report_meta {
  const char *op;
  const char *impl_spec;
  int up_to_module, total_modules;
  const char *tool_version;
  const char *contract_path, *suite_path;
  const char *modes;          /* comma-separated, as requested */
};

/* One entry of checks[] for a case. */
cJSON *pg_report_check_json(const struct pg_case_result *r);
/* Adds the metrics of one comparison to `o` (report and `phasegate diff --json` keys). */
void pg_report_add_metrics(cJSON *o, const struct pg_cmp_result *c);

/* Builds the whole report around `checks` (an array it takes ownership of), computing
 * cases_total/passed, status, per_mode_status, first_failure and stdout. */
cJSON *pg_report_build(const struct pg_report_meta *m, cJSON *checks);

/* The information barrier, applied on every write: drops keys that could carry
 * reference or input contents (golden, reference, expected, ref_value, data, values,
 * …), replaces numeric arrays longer than 16 elements (tensor dumps) and truncates
 * strings longer than 64 KiB. Returns the number of items removed or changed. */
int pg_report_sanitize(cJSON *node);

/* Locks <path>.lock, reads an existing report for the same op and phase, replaces or
 * adds the checks of `cases` by case id, rebuilds the aggregates, sanitizes, writes
 * <path> atomically (temp + rename). Creates parent directories. */
int pg_report_merge_write(const char *path, const struct pg_report_meta *m,
                          const struct pg_case_result *cases, int n, struct pg_error *err);

#endif
