/* phasegate runner — reading evaluation_report.json files back (see report.h): the
 * discovery of reports under directories, the parse, and the one check of the keys
 * the readers of a report (the HTML page, the JUnit rewrite) use, so they can trust
 * the types they find; the check is generated from the key lists of report_keys.h, the
 * ones the writer spells its keys from. A report written by an older or newer phasegate
 * is accepted as long as the keys present have the expected types; missing optional
 * keys are fine.
 */
#include "report/report.h"
#include "report/report_keys.h"
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

/* The lists of report_keys.h as data: the check below is generated from them. */
struct keys {
  const struct pg__report_key *k;
  size_t n;
};
#define KEYS(list) ((struct keys){list, sizeof list / sizeof *list})
static const struct pg__report_key top_keys[] = {PG__REPORT_KEYS_TOP(PG__RK_ENTRY)};
static const struct pg__report_key check_keys[] = {PG__REPORT_KEYS_CHECK(PG__RK_ENTRY)};
static const struct pg__report_key failure_keys[] = {PG__REPORT_KEYS_FAILURE(PG__RK_ENTRY)};
static const struct pg__report_key mode_keys[] = {PG__REPORT_KEYS_MODE(PG__RK_ENTRY)};
static const struct pg__report_key tensor_keys[] = {PG__REPORT_KEYS_TENSOR(PG__RK_ENTRY)};
static const struct pg__report_key hint_keys[] = {PG__REPORT_KEYS_HINT(PG__RK_ENTRY)};
static const struct pg__report_key map_keys[] = {PG__REPORT_KEYS_ERROR_MAP(PG__RK_ENTRY)};
static const struct pg__report_key hist_keys[] = {PG__REPORT_KEYS_HISTOGRAM(PG__RK_ENTRY)};
static const struct pg__report_key bucket_keys[] = {PG__REPORT_KEYS_BUCKET(PG__RK_ENTRY)};
static const struct pg__report_key run_keys[] = {PG__REPORT_KEYS_RUN(PG__RK_ENTRY)};
static const struct pg__report_key device_keys[] = {PG__REPORT_KEYS_DEVICE(PG__RK_ENTRY)};
static const struct pg__report_key selection_keys[] = {PG__REPORT_KEYS_SELECTION(PG__RK_ENTRY)};
static const struct pg__report_key finding_keys[] = {PG__REPORT_KEYS_FINDING(PG__RK_ENTRY)};
static const struct pg__report_key inspection_keys[] = {PG__REPORT_KEYS_INSPECTION(PG__RK_ENTRY)};
static const struct pg__report_key per_iter_keys[] = {PG__REPORT_KEYS_PER_ITER(PG__RK_ENTRY)};

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

/* "an integer or null", "an object or a string": the set in words. */
static void type_text(int types, char *buf, size_t size) {
  static const struct {
    int type;
    const char *text;
  } words[] = {{PG__J_OBJ, "an object"},   {PG__J_ARR, "an array"}, {PG__J_STR, "a string"},
               {PG__J_INT, "an integer"},  {PG__J_NUM, "a number"}, {PG__J_BOOL, "true or false"},
               {PG__J_NULL, "null"}};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
    if (!(types & words[i].type) || used >= size) continue;
    int n = snprintf(buf + used, size - used, "%s%s", used ? " or " : "", words[i].text);
    if (n > 0) used += (size_t)n;
  }
}

static int has_type(const cJSON *x, int types) {
  if (cJSON_IsNull(x)) return types & PG__J_NULL;
  if (cJSON_IsBool(x)) return types & PG__J_BOOL;
  if (cJSON_IsString(x)) return types & PG__J_STR;
  if (cJSON_IsArray(x)) return types & PG__J_ARR;
  if (cJSON_IsObject(x)) return types & PG__J_OBJ;
  if (cJSON_IsNumber(x)) { /* cJSON reads 1e999 as inf: not a number a reader can draw */
    if (!isfinite(x->valuedouble)) return 0;
    if (types & PG__J_NUM) return 1;
    return (types & PG__J_INT) && x->valuedouble == floor(x->valuedouble) &&
           fabs(x->valuedouble) < 9.0e15;
  }
  return 0;
}

/* Member `key` of `o` has one of `types` (or is absent and not required). */
static int want(struct vctx *v, const cJSON *o, const char *key, int types, int required) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!x && !required) return PG_OK;
  size_t old = push(v, key, 0);
  char what[128], t[96];
  type_text(types, t, sizeof t);
  snprintf(what, sizeof what, x ? "expected %s" : "missing (expected %s)", t);
  int rc = x && has_type(x, types) ? PG_OK : fail(v, what);
  if (rc == PG_OK) pop(v, old);
  return rc;
}

/* Every element of array member `key` (when present) has one of `types`. */
static int want_elems(struct vctx *v, const cJSON *o, const char *key, int types) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *e;
  if (!cJSON_IsArray(a)) return PG_OK;
  size_t old = push(v, key, 0);
  int i = 0;
  cJSON_ArrayForEach(e, a) {
    size_t o2 = push(v, NULL, i++);
    if (!has_type(e, types)) {
      char what[128], t[96];
      type_text(types, t, sizeof t);
      snprintf(what, sizeof what, "expected %s", t);
      return fail(v, what);
    }
    pop(v, o2);
  }
  pop(v, old);
  return PG_OK;
}

/* Every key of the list that `o` has is of its type, an array's elements too; every
 * required one is there ("checks": unless the report is not implemented yet). */
static int want_keys(struct vctx *v, const cJSON *o, struct keys ks) {
  for (size_t i = 0; i < ks.n; i++) {
    const struct pg__report_key *k = &ks.k[i];
    int required = k->need == PG__RK_NEED_REQ ||
                   (k->need == PG__RK_NEED_UNLESS_NOT_IMPL &&
                    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, PG__RK_TOP_NOT_IMPLEMENTED)));
    PG_RETURN_IF_ERROR(want(v, o, k->name, k->types, required));
    if (k->elems != PG__J_NONE) PG_RETURN_IF_ERROR(want_elems(v, o, k->name, k->elems));
  }
  return PG_OK;
}

/* An object (at the current path) with the keys of the list. */
static int want_object(struct vctx *v, const cJSON *o, struct keys ks) {
  if (!cJSON_IsObject(o)) return fail(v, "expected an object");
  return want_keys(v, o, ks);
}

/* Member `key` of `o`, when it is an object, with the keys of the list. */
static int want_member(struct vctx *v, const cJSON *o, const char *key, struct keys ks) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsObject(m)) return PG_OK;
  size_t old = push(v, key, 0);
  PG_RETURN_IF_ERROR(want_keys(v, m, ks));
  pop(v, old);
  return PG_OK;
}

/* Every element of array member `key` (when present) passes `each`. */
static int want_list(struct vctx *v, const cJSON *o, const char *key,
                     int (*each)(struct vctx *, const cJSON *)) {
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

static int int_of(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? (int)x->valuedouble : -1;
}

/* error_map beyond its keys' types (docs/report.md): shape [R, C] in 1..256, cells and
 * mismatch_cells R rows of C numbers (null allowed). */
static int check_map(struct vctx *v, const cJSON *m) {
  PG_RETURN_IF_ERROR(want_keys(v, m, KEYS(map_keys)));
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, PG__RK_ERROR_MAP_SHAPE);
  size_t old = push(v, PG__RK_ERROR_MAP_SHAPE, 0);
  if (cJSON_GetArraySize(sh) != 2) return fail(v, "expected [rows, cols]");
  int R = (int)cJSON_GetArrayItem(sh, 0)->valuedouble, C = (int)cJSON_GetArrayItem(sh, 1)->valuedouble;
  if (R < 1 || C < 1 || R > 256 || C > 256) return fail(v, "rows and cols must be in 1..256");
  pop(v, old);
  const char *grids[] = {PG__RK_ERROR_MAP_CELLS, PG__RK_ERROR_MAP_MISMATCH_CELLS};
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
      cJSON_ArrayForEach(e, row) {
        if (!has_type(e, PG__J_NUM_NULL)) return fail(v, "expected numbers or null");
      }
      pop(v, o2);
    }
    pop(v, old);
  }
  return PG_OK;
}

static int check_bucket(struct vctx *v, const cJSON *b) {
  return want_object(v, b, KEYS(bucket_keys));
}

static int check_hint(struct vctx *v, const cJSON *h) { return want_object(v, h, KEYS(hint_keys)); }

static int check_tensor(struct vctx *v, const cJSON *t) {
  PG_RETURN_IF_ERROR(want_object(v, t, KEYS(tensor_keys)));
  PG_RETURN_IF_ERROR(want_list(v, t, PG__RK_TENSOR_HINTS, check_hint));
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(t, PG__RK_TENSOR_ERROR_MAP);
  if (cJSON_IsObject(m)) {
    size_t old = push(v, PG__RK_TENSOR_ERROR_MAP, 0);
    PG_RETURN_IF_ERROR(check_map(v, m));
    pop(v, old);
  }
  const cJSON *hi = cJSON_GetObjectItemCaseSensitive(t, PG__RK_TENSOR_ERROR_HISTOGRAM);
  if (cJSON_IsObject(hi)) {
    size_t old = push(v, PG__RK_TENSOR_ERROR_HISTOGRAM, 0);
    PG_RETURN_IF_ERROR(want_keys(v, hi, KEYS(hist_keys)));
    PG_RETURN_IF_ERROR(want_list(v, hi, PG__RK_HISTOGRAM_BUCKETS, check_bucket));
    pop(v, old);
  }
  return PG_OK;
}

static int check_mode(struct vctx *v, const cJSON *mo) {
  return want_object(v, mo, KEYS(mode_keys));
}

/* A run object (the report's or a check's) and its device. */
static int check_run(struct vctx *v, const cJSON *o, const char *key) {
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsObject(run)) return PG_OK;
  PG_RETURN_IF_ERROR(want_member(v, o, key, KEYS(run_keys)));
  size_t old = push(v, key, 0);
  PG_RETURN_IF_ERROR(want_member(v, run, PG__RK_RUN_DEVICE, KEYS(device_keys)));
  pop(v, old);
  return PG_OK;
}

static int check_finding(struct vctx *v, const cJSON *f) {
  return want_object(v, f, KEYS(finding_keys));
}

static int check_per_iter(struct vctx *v, const cJSON *it) {
  return want_object(v, it, KEYS(per_iter_keys));
}

/* checks[].inspection: phasegate's array, or the pypto workflow's object. */
static int check_inspection(struct vctx *v, const cJSON *c) {
  const cJSON *ins = cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_INSPECTION);
  if (!cJSON_IsObject(ins)) return PG_OK;
  PG_RETURN_IF_ERROR(want_member(v, c, PG__RK_CHECK_INSPECTION, KEYS(inspection_keys)));
  size_t old = push(v, PG__RK_CHECK_INSPECTION, 0);
  int rc = want_list(v, ins, PG__RK_INSPECTION_PER_ITER, check_per_iter);
  pop(v, old);
  return rc;
}

static int check_case(struct vctx *v, const cJSON *c) {
  PG_RETURN_IF_ERROR(want_object(v, c, KEYS(check_keys)));
  PG_RETURN_IF_ERROR(check_inspection(v, c));
  PG_RETURN_IF_ERROR(want_member(v, c, PG__RK_CHECK_FAILURE, KEYS(failure_keys)));
  PG_RETURN_IF_ERROR(check_run(v, c, PG__RK_CHECK_RUN));
  PG_RETURN_IF_ERROR(want_list(v, c, PG__RK_CHECK_MODES, check_mode));
  return want_list(v, c, PG__RK_CHECK_PER_TENSOR, check_tensor);
}

/* An integer key's range, once its type is known to be right. */
static int want_range(struct vctx *v, const cJSON *r, const char *key, int lo) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, key);
  if (!x || (x->valuedouble >= lo && x->valuedouble <= PG_REPORT_MAX_PHASES)) return PG_OK;
  push(v, key, 0);
  char what[64];
  snprintf(what, sizeof what, "expected an integer in %d..%d", lo, PG_REPORT_MAX_PHASES);
  return fail(v, what);
}

static int check_report(struct vctx *v, const cJSON *r) {
  if (!cJSON_IsObject(r)) return fail(v, "not an evaluation report (expected a JSON object)");
  if (!cJSON_GetObjectItemCaseSensitive(r, PG__RK_TOP_OP_NAME))
    return fail(v, "not an evaluation report (no op_name)");
  /* a pypto suite has op_name too */
  if (!cJSON_GetObjectItemCaseSensitive(r, PG__RK_TOP_UP_TO_MODULE))
    return fail(v, "not an evaluation report (no up_to_module)");
  PG_RETURN_IF_ERROR(want_keys(v, r, KEYS(top_keys)));
  PG_RETURN_IF_ERROR(want_range(v, r, PG__RK_TOP_UP_TO_MODULE, 1));
  PG_RETURN_IF_ERROR(want_range(v, r, PG__RK_TOP_TOTAL_MODULES, 0));
  PG_RETURN_IF_ERROR(want_member(v, r, PG__RK_TOP_FIRST_FAILURE, KEYS(failure_keys)));
  PG_RETURN_IF_ERROR(check_run(v, r, PG__RK_TOP_RUN));
  PG_RETURN_IF_ERROR(want_member(v, r, PG__RK_TOP_SELECTION, KEYS(selection_keys)));
  PG_RETURN_IF_ERROR(want_list(v, r, PG__RK_TOP_FINDINGS, check_finding));
  return want_list(v, r, PG__RK_TOP_CHECKS, check_case);
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

const char *pg_report_name(const cJSON *report) {
  const cJSON *reg = cJSON_GetObjectItemCaseSensitive(report, PG__RK_TOP_REGISTRATION);
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(report, PG__RK_TOP_OP_NAME);
  if (cJSON_IsString(reg) && reg->valuestring[0]) return reg->valuestring;
  return cJSON_IsString(op) ? op->valuestring : "";
}

static int file_order(const void *a, const void *b) {
  const struct pg_report_file *x = a, *y = b;
  int c = strcmp(pg_report_name(x->json), pg_report_name(y->json));
  if (c) return c;
  int kx = int_of(x->json, PG__RK_TOP_UP_TO_MODULE), ky = int_of(y->json, PG__RK_TOP_UP_TO_MODULE);
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
