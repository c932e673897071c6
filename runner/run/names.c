/* phasegate runner — the names the report and the console give a run's values: verdicts,
 * failure categories, hint kinds (docs/report.md). Names only: what a fact means is
 * decided in run/classify.c.
 */
#include <string.h>

#include "run/run_internal.h"

const char *pg_verdict_name(enum pg_verdict v) {
  switch (v) {
    case PG_VERDICT_PASS: return "PASS";
    case PG_VERDICT_FAIL: return "FAIL";
    case PG_VERDICT_ERROR: return "ERROR";
    default: return "SKIPPED";
  }
}

enum pg_verdict pg_verdict_parse(const char *s) {
  if (!s) return PG_VERDICT_SKIPPED;
  if (strcmp(s, "PASS") == 0) return PG_VERDICT_PASS;
  if (strcmp(s, "FAIL") == 0) return PG_VERDICT_FAIL;
  if (strcmp(s, "ERROR") == 0) return PG_VERDICT_ERROR;
  return PG_VERDICT_SKIPPED;
}

const char *pg_category_name(enum pg_category c) {
  static const char *const names[] = {
      [PG_CAT_PRECISION] = "precision", [PG_CAT_STRUCTURAL] = "structural",
      [PG_CAT_RUNTIME] = "runtime",     [PG_CAT_INFRA] = "infra",
      [PG_CAT_OTHER] = "other"};
  return c > PG_CAT_NONE && (size_t)c < sizeof names / sizeof *names ? names[c] : NULL;
}

const char *pg_hint_kind_name(enum pg_hint_kind kind) {
  static const char *const names[] = {
      [PG_HINT_TRANSPOSED] = "transposed",
      [PG_HINT_SCALED] = "scaled",
      [PG_HINT_WRONG_AXIS] = "wrong_axis",
      [PG_HINT_REDUCTION_TAIL_DROPPED] = "reduction_tail_dropped",
      [PG_HINT_TILE_EDGE] = "tile_edge",
      [PG_HINT_PERIODIC] = "periodic",
      [PG_HINT_SHIFTED] = "shifted",
      [PG_HINT_SIGN_FLIP] = "sign_flip",
      [PG_HINT_ZEROS] = "zeros",
      [PG_HINT_UNWRITTEN] = "unwritten",
      [PG_HINT_INPUT_ECHO] = "input_echo",
      [PG_HINT_LOW_PRECISION_INPUTS] = "low_precision_inputs",
      [PG_HINT_LOW_PRECISION_ACCUMULATION] = "low_precision_accumulation",
      [PG_HINT_NAN_ORIGIN] = "nan_origin",
      [PG_HINT_SUITE_CALIBRATION] = "suite_calibration",
      [PG_HINT_GOLDEN_FALLBACK] = "golden_fallback",
      [PG_HINT_NONDETERMINISTIC] = "nondeterministic",
      [PG_HINT_APPROXIMATION] = "approximation",
  };
  _Static_assert(sizeof names / sizeof *names == PG_HINT_KIND_COUNT,
                 "every hint kind has a report name");
  return (unsigned)kind < PG_HINT_KIND_COUNT ? names[kind] : "unknown";
}
