/* phasegate runner — reading evaluation_report.json files back (see report.h): the
 * discovery of reports under directories, the parse, and the one check of the keys
 * the readers of a report (the HTML page, the JUnit rewrite) use, so they can trust
 * the types they find. A report written by an older or newer phasegate is accepted as
 * long as the keys present have the expected types; missing optional keys are fine.
 */
#include "report/report.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opdir/opdir.h"

#define REPORT_NAME "evaluation_report.json"
#define REPORT_MAX_BYTES ((size_t)512 * 1024 * 1024)
#define WALK_MAX_DEPTH 64
#define PG_REPORT_MAX_PHASES 1000 /* the matrix has a column per phase */

void pg_report_set_init(struct pg_report_set *set) { memset(set, 0, sizeof *set); }

void pg_report_set_reset(struct pg_report_set *set) {
  for (int i = 0; i < set->n; i++) {
    free(set->files[i].path);
    cJSON_Delete(set->files[i].json);
  }
  free(set->files);
  for (int i = 0; i < set->n_skipped; i++) free(set->skipped[i]);
  free(set->skipped);
  memset(set, 0, sizeof *set);
}

/* ---- the key check ---- */

enum { T_NULL = 1, T_BOOL = 2, T_NUM = 4, T_INT = 8, T_STR = 16, T_ARR = 32, T_OBJ = 64 };

struct vctx {
  const char *file, *text;
  size_t len;
  struct pg_error *err;
  char path[512]; /* the JSON path of the value being checked, "checks[2].status" */
  size_t plen;
};

static size_t push(struct vctx *v, const char *key, int index) {
  size_t old = v->plen;
  int n = key ? snprintf(v->path + old, sizeof v->path - old, "%s%s", old ? "." : "", key)
              : snprintf(v->path + old, sizeof v->path - old, "[%d]", index);
  if (n > 0) v->plen = old + (size_t)n < sizeof v->path ? old + (size_t)n : sizeof v->path - 1;
  return old;
}

static void pop(struct vctx *v, size_t old) {
  v->plen = old;
  v->path[old] = '\0';
}

/* "file:line:col: error: <path>: <what>", the position of the value at v->path, or
 * of the nearest enclosing value that exists (the object a key is missing from). */
static int fail(struct vctx *v, const char *what) {
  struct pg_json_pos pos;
  struct pg_json_fail jf;
  int line = 1, col = 1;
  pg_json_pos_init(&pos);
  if (pg_json_pos_scan(v->text, v->len, NULL, &pos, &jf) == PG_OK) {
    char path[sizeof v->path];
    snprintf(path, sizeof path, "%s", v->path);
    for (;;) {
      int node = pg_json_pos_find(&pos, path);
      if (node >= 0) {
        line = pos.nodes[node].line;
        col = pos.nodes[node].col;
        break;
      }
      char *cut = strrchr(path, '.'), *br = strrchr(path, '[');
      if (br && (!cut || br > cut)) cut = br;
      if (!cut) break;
      *cut = '\0';
    }
  }
  pg_json_pos_reset(&pos);
  return pg_error_set_at(v->err, PG_EVALIDATE, v->file, line, col, "%s%s%s",
                         v->path[0] ? v->path : "", v->path[0] ? ": " : "", what);
}

static const char *type_text(int types) {
  if (types & T_OBJ) return types & T_NULL ? "an object or null" : "an object";
  if (types & T_ARR) return "an array";
  if (types & T_STR) return types & T_NULL ? "a string or null" : "a string";
  if (types & T_INT) return types & T_NULL ? "an integer or null" : "an integer";
  if (types & T_NUM) return types & T_NULL ? "a number or null" : "a number";
  if (types & T_BOOL) return "true or false";
  return "null";
}

static int has_type(const cJSON *x, int types) {
  if (cJSON_IsNull(x)) return types & T_NULL;
  if (cJSON_IsBool(x)) return types & T_BOOL;
  if (cJSON_IsString(x)) return types & T_STR;
  if (cJSON_IsArray(x)) return types & T_ARR;
  if (cJSON_IsObject(x)) return types & T_OBJ;
  if (cJSON_IsNumber(x)) { /* cJSON reads 1e999 as inf: not a number a reader can draw */
    if (!isfinite(x->valuedouble)) return 0;
    if (types & T_NUM) return 1;
    return (types & T_INT) && isfinite(x->valuedouble) && x->valuedouble == floor(x->valuedouble) &&
           fabs(x->valuedouble) < 9.0e15;
  }
  return 0;
}

/* Member `key` of `o` has one of `types` (or is absent and not required). */
static int want(struct vctx *v, const cJSON *o, const char *key, int types, int required) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!x && !required) return PG_OK;
  size_t old = push(v, key, 0);
  char what[96];
  snprintf(what, sizeof what, x ? "expected %s" : "missing (expected %s)", type_text(types));
  int rc = x && has_type(x, types) ? PG_OK : fail(v, what);
  if (rc == PG_OK) pop(v, old);
  return rc;
}

#define WANT(o, key, types, req) PG_RETURN_IF_ERROR(want(v, o, key, types, req))

/* Every element of array member `key` (when present) has one of `types`. */
static int want_elems(struct vctx *v, const cJSON *o, const char *key, int types) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *e;
  size_t old = push(v, key, 0);
  int i = 0;
  cJSON_ArrayForEach(e, a) {
    size_t o2 = push(v, NULL, i++);
    if (!has_type(e, types)) {
      char what[64];
      snprintf(what, sizeof what, "expected %s", type_text(types));
      return fail(v, what);
    }
    pop(v, o2);
  }
  pop(v, old);
  return PG_OK;
}

static int int_of(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? (int)x->valuedouble : -1;
}

/* error_map (docs/report.md): shape [R, C], cells R rows of C numbers (null allowed),
 * mismatch_cells the same, the folding keys integers. */
static int check_map(struct vctx *v, const cJSON *m) {
  WANT(m, "shape", T_ARR, 1);
  WANT(m, "cells", T_ARR, 1);
  WANT(m, "mismatch_cells", T_ARR, 0);
  WANT(m, "row_axes", T_ARR, 0);
  PG_RETURN_IF_ERROR(want_elems(v, m, "row_axes", T_INT));
  WANT(m, "col_axis", T_INT, 0);
  WANT(m, "rows_per_cell", T_NUM, 0);
  WANT(m, "cols_per_cell", T_NUM, 0);
  WANT(m, "rows_total", T_NUM, 0);
  WANT(m, "cols_total", T_NUM, 0);
  WANT(m, "metric", T_STR, 0);
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, "shape");
  size_t old = push(v, "shape", 0);
  if (cJSON_GetArraySize(sh) != 2) return fail(v, "expected [rows, cols]");
  PG_RETURN_IF_ERROR(want_elems(v, m, "shape", T_INT));
  int R = (int)cJSON_GetArrayItem(sh, 0)->valuedouble, C = (int)cJSON_GetArrayItem(sh, 1)->valuedouble;
  if (R < 1 || C < 1 || R > 256 || C > 256) return fail(v, "rows and cols must be in 1..256");
  pop(v, old);
  const char *grids[] = {"cells", "mismatch_cells"};
  for (int g = 0; g < 2; g++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, grids[g]);
    if (!a) continue;
    old = push(v, grids[g], 0);
    char what[96];
    snprintf(what, sizeof what, "expected %d rows (shape)", R);
    if (cJSON_GetArraySize(a) != R) return fail(v, what);
    for (int r = 0; r < R; r++) {
      size_t o2 = push(v, NULL, r);
      const cJSON *row = cJSON_GetArrayItem(a, r), *e;
      snprintf(what, sizeof what, "expected an array of %d numbers (shape)", C);
      if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != C) return fail(v, what);
      cJSON_ArrayForEach(e, row) if (!has_type(e, T_NUM | T_NULL)) return fail(v, "expected numbers or null");
      pop(v, o2);
    }
    pop(v, old);
  }
  return PG_OK;
}

static int check_hist(struct vctx *v, const cJSON *h) {
  WANT(h, "buckets", T_ARR, 1);
  const cJSON *b;
  size_t old = push(v, "buckets", 0);
  int i = 0;
  cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(h, "buckets")) {
    size_t o2 = push(v, NULL, i++);
    if (!cJSON_IsObject(b)) return fail(v, "expected an object");
    WANT(b, "golden_abs_lo", T_NUM, 1);
    WANT(b, "golden_abs_hi", T_NUM | T_NULL, 0);
    WANT(b, "n", T_NUM, 1);
    WANT(b, "mismatches", T_NUM, 0);
    WANT(b, "max_abs_diff", T_NUM | T_NULL, 0);
    WANT(b, "max_err_over_tol", T_NUM | T_NULL, 0);
    pop(v, o2);
  }
  pop(v, old);
  return PG_OK;
}

static int check_hint(struct vctx *v, const cJSON *h) {
  if (!cJSON_IsObject(h)) return fail(v, "expected an object");
  WANT(h, "kind", T_STR, 1);
  WANT(h, "confidence", T_NUM, 0);
  WANT(h, "detail", T_STR, 0);
  WANT(h, "axis", T_INT | T_NULL, 0);
  WANT(h, "tile", T_INT | T_NULL, 0);
  return PG_OK;
}

static const char *const tensor_nums[] = {
    "n", "mismatches", "mismatch_ratio", "max_abs_diff", "max_rel_diff", "mean_abs_diff",
    "rmse", "cosine_similarity", "max_ulp", "nan_impl", "nan_ref", "inf_impl", "inf_ref",
    "atol", "rtol"};

static int check_tensor(struct vctx *v, const cJSON *t) {
  if (!cJSON_IsObject(t)) return fail(v, "expected an object");
  WANT(t, "name", T_STR, 1);
  WANT(t, "mode", T_STR, 0);
  WANT(t, "dtype", T_STR, 0);
  WANT(t, "rule", T_STR, 0);
  WANT(t, "structural", T_STR, 0);
  WANT(t, "shape", T_ARR, 0);
  PG_RETURN_IF_ERROR(want_elems(v, t, "shape", T_INT));
  WANT(t, "passed", T_BOOL, 0);
  WANT(t, "values_checked", T_BOOL, 0);
  for (size_t i = 0; i < sizeof tensor_nums / sizeof *tensor_nums; i++) WANT(t, tensor_nums[i], T_NUM | T_NULL, 0);
  WANT(t, "hints", T_ARR, 0);
  const cJSON *h;
  size_t old = push(v, "hints", 0);
  int i = 0;
  cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(t, "hints")) {
    size_t o2 = push(v, NULL, i++);
    PG_RETURN_IF_ERROR(check_hint(v, h));
    pop(v, o2);
  }
  pop(v, old);
  WANT(t, "error_map", T_OBJ | T_NULL, 0);
  WANT(t, "error_histogram", T_OBJ | T_NULL, 0);
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(t, "error_map");
  if (cJSON_IsObject(m)) {
    old = push(v, "error_map", 0);
    PG_RETURN_IF_ERROR(check_map(v, m));
    pop(v, old);
  }
  const cJSON *hi = cJSON_GetObjectItemCaseSensitive(t, "error_histogram");
  if (cJSON_IsObject(hi)) {
    old = push(v, "error_histogram", 0);
    PG_RETURN_IF_ERROR(check_hist(v, hi));
    pop(v, old);
  }
  return PG_OK;
}

static int check_mode(struct vctx *v, const cJSON *mo) {
  if (!cJSON_IsObject(mo)) return fail(v, "expected an object");
  WANT(mo, "mode", T_STR, 1);
  WANT(mo, "status", T_STR, 1);
  WANT(mo, "failure_category", T_STR | T_NULL, 0);
  WANT(mo, "summary", T_STR, 0);
  WANT(mo, "stdout", T_STR, 0);
  WANT(mo, "duration_ms", T_NUM | T_NULL, 0);
  return PG_OK;
}

/* An array member whose elements each pass `each`. */
static int check_list(struct vctx *v, const cJSON *o, const char *key,
                      int (*each)(struct vctx *, const cJSON *)) {
  WANT(o, key, T_ARR, 0);
  const cJSON *e;
  size_t old = push(v, key, 0);
  int i = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, key)) {
    size_t o2 = push(v, NULL, i++);
    PG_RETURN_IF_ERROR(each(v, e));
    pop(v, o2);
  }
  pop(v, old);
  return PG_OK;
}

static int check_case(struct vctx *v, const cJSON *c) {
  if (!cJSON_IsObject(c)) return fail(v, "expected an object");
  WANT(c, "id", T_STR, 1);
  WANT(c, "status", T_STR, 1);
  WANT(c, "level", T_INT, 0);
  WANT(c, "repro", T_STR, 0);
  WANT(c, "not_implemented", T_BOOL, 0);
  WANT(c, "per_mode_status", T_OBJ, 0);
  PG_RETURN_IF_ERROR(want_elems(v, c, "hints", T_STR | T_OBJ));
  WANT(c, "failure", T_OBJ | T_NULL, 0);
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "failure");
  if (cJSON_IsObject(f)) {
    size_t old = push(v, "failure", 0);
    WANT(f, "failing_module_boundary", T_INT | T_STR, 0); /* the seed's reports: "M<k>" */
    WANT(f, "earliest_failing_boundary", T_INT | T_NULL, 0);
    WANT(f, "failure_category", T_STR, 0);
    WANT(f, "divergence_fingerprint", T_STR, 0);
    WANT(f, "summary", T_STR, 0);
    pop(v, old);
  }
  PG_RETURN_IF_ERROR(check_list(v, c, "modes", check_mode));
  return check_list(v, c, "per_tensor", check_tensor);
}

static int check_report(struct vctx *v, const cJSON *r) {
  if (!cJSON_IsObject(r)) return fail(v, "not an evaluation report (expected a JSON object)");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(r, "op_name");
  if (!op) return fail(v, "not an evaluation report (no op_name)");
  if (!cJSON_GetObjectItemCaseSensitive(r, "up_to_module")) /* a pypto suite has op_name too */
    return fail(v, "not an evaluation report (no up_to_module)");
  WANT(r, "op_name", T_STR, 1);
  WANT(r, "up_to_module", T_INT, 1);
  if (int_of(r, "up_to_module") < 1 || int_of(r, "up_to_module") > PG_REPORT_MAX_PHASES) {
    push(v, "up_to_module", 0);
    return fail(v, "expected an integer in 1..1000");
  }
  WANT(r, "total_modules", T_INT, 0);
  const cJSON *tm = cJSON_GetObjectItemCaseSensitive(r, "total_modules");
  if (tm && (tm->valuedouble < 0 || tm->valuedouble > PG_REPORT_MAX_PHASES)) {
    push(v, "total_modules", 0);
    return fail(v, "expected an integer in 0..1000");
  }
  WANT(r, "status", T_STR, 0);
  WANT(r, "impl_file", T_STR, 0);
  WANT(r, "tool_version", T_STR, 0);
  WANT(r, "updated_at", T_STR, 0);
  WANT(r, "not_implemented", T_BOOL, 0);
  WANT(r, "per_mode_status", T_OBJ, 0);
  /* a phase declared not implemented yet may list no case at all */
  WANT(r, "checks", T_ARR, !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "not_implemented")));
  return check_list(v, r, "checks", check_case);
}

/* ---- reading files ---- */

/* The JSON text of `path` parsed, or an error with the position of the first syntax
 * error (the position-recording scanner of the opdir room says where; cJSON does not). */
static int parse_report(const char *path, const char *text, size_t len, cJSON **out,
                        struct pg_error *err) {
  struct pg_json_pos pos;
  struct pg_json_fail jf;
  pg_json_pos_init(&pos);
  int src = pg_json_pos_scan(text, len, NULL, &pos, &jf);
  pg_json_pos_reset(&pos);
  if (src == PG_EPARSE) return pg_error_set_at(err, PG_EPARSE, path, jf.line, jf.col, "%s", jf.message);
  if (src == PG_ENOMEM) return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  if (src == PG_OK) { /* valid JSON, nothing after it: cJSON fails only for memory or depth */
    *out = cJSON_ParseWithLength(text, len);
    return *out ? PG_OK : pg_error_set_at(err, PG_EPARSE, path, 1, 1, "out of memory or nested too deeply");
  }
  /* PG_ELIMIT (over a million values): cJSON alone decides, on a terminated copy */
  char *copy = malloc(len + 1);
  if (!copy) return pg_error_set(err, PG_ENOMEM, "%s: out of memory", path);
  memcpy(copy, text, len);
  copy[len] = '\0';
  const char *end = NULL;
  *out = memchr(copy, '\0', len) ? NULL : cJSON_ParseWithOpts(copy, &end, 1);
  int line = 1, col = 1;
  if (!*out && end && end >= copy) pg_json_linecol(copy, len, (size_t)(end - copy), &line, &col);
  free(copy);
  return *out ? PG_OK : pg_error_set_at(err, PG_EPARSE, path, line, col, "malformed JSON");
}

int pg__report_validate(const char *name, const char *text, size_t len, const cJSON *json,
                        struct pg_error *err) {
  struct vctx v = {.file = name, .text = text, .len = len, .err = err};
  return check_report(&v, json);
}

int pg_report_parse(const char *name, const char *text, size_t len, cJSON **out,
                    struct pg_error *err) {
  *out = NULL;
  cJSON *json = NULL;
  PG_RETURN_IF_ERROR(parse_report(name, text, len, &json, err));
  int rc = pg__report_validate(name, text, len, json, err);
  if (rc != PG_OK) cJSON_Delete(json);
  else *out = json;
  return rc;
}

static int add_file(struct pg_report_set *set, const char *path, struct pg_error *err) {
  char *text = NULL;
  size_t len = 0;
  cJSON *json = NULL;
  PG_RETURN_IF_ERROR(pg_read_file(path, REPORT_MAX_BYTES, &text, &len, err));
  int rc = pg_report_parse(path, text, len, &json, err);
  free(text);
  if (rc == PG_OK && set->n == set->cap) {
    int cap = set->cap ? set->cap * 2 : 16;
    struct pg_report_file *nf = realloc(set->files, (size_t)cap * sizeof *nf);
    if (!nf) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    else {
      set->files = nf;
      set->cap = cap;
    }
  }
  char *p = rc == PG_OK ? pg_strdup(path) : NULL;
  if (rc == PG_OK && !p) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc != PG_OK) {
    cJSON_Delete(json);
    return rc;
  }
  set->files[set->n++] = (struct pg_report_file){p, json};
  return PG_OK;
}

/* Files already loaded, by (device, inode): one report reached twice is one report. */
struct seen {
  dev_t *dev;
  ino_t *ino;
  int n, cap;
};

static int seen_add(struct seen *s, const struct stat *st, int *dup) {
  *dup = 0;
  for (int i = 0; i < s->n; i++)
    if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino) *dup = 1;
  if (*dup) return PG_OK;
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 32;
    dev_t *d = realloc(s->dev, (size_t)cap * sizeof *d);
    if (d) s->dev = d;
    ino_t *in = d ? realloc(s->ino, (size_t)cap * sizeof *in) : NULL;
    if (!in) return PG_ENOMEM;
    s->ino = in;
    s->cap = cap;
  }
  s->dev[s->n] = st->st_dev;
  s->ino[s->n++] = st->st_ino;
  return PG_OK;
}

static int load_one(struct pg_report_set *set, struct seen *seen, const char *path,
                    const struct stat *st, struct pg_error *err) {
  int dup;
  if (seen_add(seen, st, &dup) != PG_OK) return pg_error_set(err, PG_ENOMEM, "out of memory");
  return dup ? PG_OK : add_file(set, path, err);
}

static int name_order(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A report found under a directory that cannot be used: kept with its message. */
static int skip(struct pg_report_set *set, struct pg_error *err) {
  if (set->n_skipped == set->cap_skipped) {
    int cap = set->cap_skipped ? set->cap_skipped * 2 : 8;
    char **ns = realloc(set->skipped, (size_t)cap * sizeof *ns);
    if (!ns) return pg_error_set(err, PG_ENOMEM, "out of memory");
    set->skipped = ns;
    set->cap_skipped = cap;
  }
  if (!(set->skipped[set->n_skipped] = pg_strdup(err->message)))
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  set->n_skipped++;
  pg_error_clear(err);
  return PG_OK;
}

/* Every evaluation_report.json under `dir` (sorted walk, symlinked directories not
 * followed); *found counts them. */
static int walk(struct pg_report_set *set, struct seen *seen, const char *dir, int depth,
                int *found, struct pg_error *err) {
  if (depth > WALK_MAX_DEPTH) return PG_OK;
  DIR *d = opendir(dir);
  if (!d) return pg_error_set(err, PG_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
  char **names = NULL;
  int n = 0, cap = 0, rc = PG_OK;
  struct dirent *e;
  while (rc == PG_OK && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **nn = realloc(names, (size_t)cap * sizeof *nn);
      if (!nn) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
      else names = nn;
    }
    if (rc == PG_OK && !(names[n++] = pg_strdup(e->d_name)))
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  closedir(d);
  if (rc == PG_OK && n > 1) /* names is NULL when the directory is empty */
    qsort(names, (size_t)n, sizeof *names, name_order);
  for (int i = 0; rc == PG_OK && i < n; i++) {
    char *p = pg_path_join(dir, names[i]);
    struct stat st;
    if (!p) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    else if (lstat(p, &st) != 0) rc = PG_OK; /* vanished while walking */
    else if (S_ISDIR(st.st_mode)) rc = walk(set, seen, p, depth + 1, found, err);
    else if (strcmp(names[i], REPORT_NAME) == 0 && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      (*found)++;
      rc = load_one(set, seen, p, &st, err);
      if (rc != PG_OK && rc != PG_ENOMEM) rc = skip(set, err);
    }
    free(p);
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}

static int file_order(const void *a, const void *b) {
  const struct pg_report_file *x = a, *y = b;
  const cJSON *ox = cJSON_GetObjectItemCaseSensitive(x->json, "op_name");
  const cJSON *oy = cJSON_GetObjectItemCaseSensitive(y->json, "op_name");
  int c = strcmp(ox->valuestring, oy->valuestring);
  if (c) return c;
  int kx = int_of(x->json, "up_to_module"), ky = int_of(y->json, "up_to_module");
  if (kx != ky) return kx < ky ? -1 : 1;
  return strcmp(x->path, y->path);
}

int pg_report_set_load(const char *const *paths, int n, struct pg_report_set *set,
                       struct pg_error *err) {
  struct seen seen = {0};
  int rc = PG_OK;
  for (int i = 0; rc == PG_OK && i < n; i++) {
    struct stat st;
    const char *p = paths[i];
    if (stat(p, &st) != 0)
      rc = pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: cannot open: %s", p,
                        strerror(errno));
    else if (S_ISDIR(st.st_mode)) {
      int found = 0;
      rc = walk(set, &seen, p, 0, &found, err);
      if (rc == PG_OK && found == 0)
        rc = pg_error_set(err, PG_ENOTFOUND, "%s: no %s under this directory", p, REPORT_NAME);
    } else if (!S_ISREG(st.st_mode))
      rc = pg_error_set(err, PG_EIO, "%s: not a regular file or a directory", p);
    else
      rc = load_one(set, &seen, p, &st, err);
  }
  free(seen.dev);
  free(seen.ino);
  if (rc == PG_OK && set->n == 0 && set->n_skipped > 0)
    rc = pg_error_set(err, PG_EVALIDATE, "%s", set->skipped[0]);
  if (rc == PG_OK && set->n > 1) qsort(set->files, (size_t)set->n, sizeof *set->files, file_order);
  return rc;
}
