/* phasegate runner — the information barrier (docs/design.md §8), both halves in one file:
 * no golden tensor values, no golden source and no raw input contents ever reach the
 * report or the console.
 *
 *   pg_redact_text      text the impl wrote (captured stdout/stderr, summaries that
 *                       quote it): every number that spells a value of the case's
 *                       inputs or goldens becomes "<redacted>"; run/ applies it through
 *                       the redact hook before anything is stored or shown
 *   pg_redact_numbers   what a Python golden's worker wrote (its message, a line, its
 *                       stderr's last line), one captured piece at a time, before the
 *                       impl room quotes it in a sentence of its own (struct pg_impl's
 *                       quote): every number becomes "<redacted>" (its values are no
 *                       tensor we hold) but those inside paths and Python source
 *                       positions (source_line_number); phasegate's sentence
 *                       around it never passes here, so its numbers stay
 *   pg_report_sanitize  the report as JSON, on every write: keys that could carry tensor
 *                       contents are dropped, tensor-sized numeric arrays (over 16
 *                       numbers; over 64 in an `error_map`'s rows of cells) and huge
 *                       strings cut
 *
 * faultzoo/barrier and barrier_golden_data prove it end to end.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

#define PG_REPORT_STRING_MAX (64 * 1024)
#define PG_REPORT_NUM_ARRAY_MAX 16
/* Inside `error_map` a row of cells may be as long as the map is wide: metrics (errors
 * over tolerance, mismatch counts) downsampled to at most 64 x 64, never a value. */
#define PG_REPORT_MAP_ARRAY_MAX PG_CMP_MAP_MAX
#define PG_REDACT_MIN_SIG_DIGITS 4
#define PG_REDACT_MAX_VALUES (16u * 1024u * 1024u)

/* ------------------------------------------------------------------ captured text */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct value_set {
  double *v;
  size_t n;
  int built, too_big;
};

static void value_set_build(struct value_set *s, const struct pg_tensor *const *t, int n) {
  s->built = 1;
  size_t total = 0;
  for (int i = 0; i < n; i++)
    if (t[i] && t[i]->dl.data) total += (size_t)t[i]->numel;
  if (total > PG_REDACT_MAX_VALUES) {
    s->too_big = 1;
    return;
  }
  s->v = malloc((total ? total : 1) * sizeof *s->v);
  if (!s->v) {
    s->too_big = 1;
    return;
  }
  for (int i = 0; i < n; i++) {
    if (!t[i] || !t[i]->dl.data) continue;
    for (int64_t j = 0; j < t[i]->numel; j++) {
      double x = pg_load_f64(t[i]->dl.data, t[i]->dtype, (size_t)j);
      if (isfinite(x) && x != 0.0) s->v[s->n++] = fabs(x);
    }
  }
  qsort(s->v, s->n, sizeof *s->v, cmp_double);
}

static int value_set_has(const struct value_set *s, double v, double tol) {
  if (s->too_big) return 1;
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->v[mid] < v - tol) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n && s->v[lo] <= v + tol;
}

char *pg_redact_text(const char *text, const struct pg_tensor *const *tensors, int n) {
  if (!text) return NULL;
  size_t len = strlen(text);
  char *out = malloc(len * 3 + 16); /* "<redacted>" is at most ~3x a 4-char token */
  if (!out) return NULL;
  struct value_set set = {0};
  size_t o = 0, i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)text[i];
    int starts = isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]));
    int prev_ok = i == 0 || !(isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_' ||
                              text[i - 1] == '.');
    if (!starts || !prev_ok) {
      out[o++] = (char)c;
      i++;
      continue;
    }
    size_t j = i;
    int sig = 0, seen_nonzero = 0;
    while (j < len && (isdigit((unsigned char)text[j]) || text[j] == '.')) {
      if (isdigit((unsigned char)text[j])) {
        if (text[j] != '0') seen_nonzero = 1;
        if (seen_nonzero) sig++;
      }
      j++;
    }
    if (j < len && (text[j] == 'e' || text[j] == 'E')) {
      size_t k = j + 1;
      if (k < len && (text[k] == '+' || text[k] == '-')) k++;
      if (k < len && isdigit((unsigned char)text[k])) {
        while (k < len && isdigit((unsigned char)text[k])) k++;
        j = k;
      }
    }
    int redact = 0;
    if (sig >= PG_REDACT_MIN_SIG_DIGITS) {
      char num[128];
      size_t tl = j - i < sizeof num - 1 ? j - i : sizeof num - 1;
      memcpy(num, text + i, tl);
      num[tl] = '\0';
      double v = strtod(num, NULL);
      if (!set.built) value_set_build(&set, tensors, n);
      double rel = 0.5 * pow(10.0, 1 - sig);
      if (rel < 1e-7) rel = 1e-7;
      if (v != 0.0 && value_set_has(&set, v, v * rel)) redact = 1;
    }
    if (redact) {
      memcpy(out + o, "<redacted>", 10);
      o += 10;
    } else {
      memcpy(out + o, text + i, j - i);
      o += j - i;
    }
    i = j;
  }
  out[o] = '\0';
  free(set.v);
  return out;
}

/* A path starts with '/' at the start of the text or after a space, quote, '(' or
 * '=' and runs to the next space, quote, ')' or ','. */
static int path_start(const char *text, size_t i) {
  if (text[i] != '/') return 0;
  if (i == 0) return 1;
  char p = text[i - 1];
  return p == ' ' || p == '\t' || p == '\n' || p == '"' || p == '\'' || p == '(' || p == '=';
}

static int path_end(char c) {
  return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == ')' ||
         c == ',';
}

/* A Python source position in what a worker wrote — "(test_inputs.py, line 3)", "at
 * test_inputs.py:12" (docs/pypto.md "Inputs from make_inputs") — is where the error is,
 * not a value: a plain integer of at most 5 digits right after ", line " or ".py:"
 * survives. Nothing else in captured text does: phasegate's own sentence around it
 * never passes here. */
static int source_line_number(const char *text, size_t i, size_t end) {
  static const char *const before[] = {", line ", ".py:"};
  if (end - i > 5) return 0;
  for (size_t j = i; j < end; j++)
    if (!isdigit((unsigned char)text[j])) return 0;
  for (size_t b = 0; b < sizeof before / sizeof *before; b++) {
    size_t n = strlen(before[b]);
    if (i >= n && strncmp(text + i - n, before[b], n) == 0) return 1;
  }
  return 0;
}

char *pg_redact_numbers(const char *text) {
  if (!text) return NULL;
  size_t len = strlen(text);
  char *out = malloc(len * 10 + 1); /* each digit may become "<redacted>" */
  if (!out) return NULL;
  size_t o = 0, i = 0;
  while (i < len) {
    if (path_start(text, i)) {
      while (i < len && !path_end(text[i])) out[o++] = text[i++];
      continue;
    }
    unsigned char c = (unsigned char)text[i];
    int starts = isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]));
    /* digits inside a word (float32, fp16, x_module123_golden) are names, not values */
    int in_word = i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_');
    if (!starts || in_word) {
      out[o++] = (char)c;
      i++;
      continue;
    }
    size_t start = i;
    while (i < len && (isalnum((unsigned char)text[i]) || text[i] == '.' ||
                       ((text[i] == '+' || text[i] == '-') && (text[i - 1] == 'e' ||
                                                                text[i - 1] == 'E'))))
      i++;
    if (source_line_number(text, start, i)) {
      memcpy(out + o, text + start, i - start);
      o += i - start;
      continue;
    }
    memcpy(out + o, "<redacted>", 10);
    o += 10;
  }
  out[o] = '\0';
  return out;
}

/* ------------------------------------------------------------------ the report */

/* Keys that would carry reference or input contents. */
static int forbidden_key(const char *k) {
  static const char *const bad[] = {"golden", "golden_value", "golden_values", "reference",
                                    "ref_value", "ref_values", "expected", "expected_value",
                                    "expected_values", "data", "values", "input_values",
                                    "golden_source", "tensor"};
  if (!k) return 0;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (strcmp(k, bad[i]) == 0) return 1;
  return 0;
}

/* `max_numbers`: the longest numeric array allowed below node. */
static int sanitize(cJSON *node, int max_numbers, int *oom) {
  int changed = 0;
  if (!node) return 0;
  cJSON *c = node->child;
  while (c) {
    cJSON *next = c->next;
    if (cJSON_IsObject(node) && forbidden_key(c->string)) {
      cJSON_Delete(cJSON_DetachItemViaPointer(node, c));
      changed++;
    } else if (cJSON_IsArray(c) && cJSON_GetArraySize(c) > max_numbers &&
               c->child && cJSON_IsNumber(c->child)) {
      cJSON *repl = cJSON_CreateString("<removed: tensor-sized array>");
      if (repl && cJSON_IsObject(node) && c->string) {
        /* keep the key: ReplaceItemViaPointer would leave it empty */
        repl->string = c->string;
        c->string = NULL;
      }
      if (repl) cJSON_ReplaceItemViaPointer(node, c, repl);
      else cJSON_Delete(cJSON_DetachItemViaPointer(node, c)); /* the barrier holds */
      *oom |= !repl;
      changed++;
    } else if (cJSON_IsString(c) && c->valuestring &&
               strlen(c->valuestring) > PG_REPORT_STRING_MAX) {
      c->valuestring[PG_REPORT_STRING_MAX] = '\0';
      changed++;
    } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
      int map = cJSON_IsObject(node) && c->string && strcmp(c->string, "error_map") == 0 &&
                cJSON_IsObject(c);
      changed += sanitize(c, map ? PG_REPORT_MAP_ARRAY_MAX : max_numbers, oom);
    }
    c = next;
  }
  return changed;
}

int pg_report_sanitize(cJSON *node) {
  int oom = 0;
  int changed = sanitize(node, PG_REPORT_NUM_ARRAY_MAX, &oom);
  return oom ? -1 : changed;
}
