/* phasegate goldens/ — a plan's problems: the first finding of each kind kept with its
 * code and offset, so the plan reports it when a step is used, not when it is compiled.
 * Below plan.c and plan_attrs.c, which both record problems. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

int pg__problem_set(struct pg__problem *pr, int code, int offset, const char *fmt, ...) {
  char msg[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = strlen(msg) + 1;
  free(pr->message);
  pr->message = malloc(n);
  if (!pr->message) {
    pr->code = 0;
    return PG_ENOMEM;
  }
  memcpy(pr->message, msg, n);
  pr->code = code;
  pr->offset = offset;
  return PG_OK;
}
