/* Fault-zoo checker: asserts facts about an evaluation_report.json (and that some
 * strings never appear in it or in captured console output).
 *
 *   fz_check REPORT [ASSERTION…]
 *     status=FAIL                     top-level key (string or number) equals value
 *     cases_passed=2
 *     first.failure_category=precision  first_failure.<key> equals value
 *     first.summary~=timed out        first_failure.<key> contains value
 *     case.L2_basic=PASS              checks[id=L2_basic].status
 *     mode.sim=PASS                   per_mode_status.sim
 *     absent=123456.7                 the text never occurs in REPORT or any file=…
 *     file=console.txt                extra file searched by absent=
 * Exits 0 when every assertion holds, 1 otherwise (printing each failure).
 *
 *   fz_check --write-npy PATH float32 VALUE DIM…   writes a constant tensor (for the
 *                                                  barrier test's --golden-data)
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/tensor.h"
#include "tensors/tensors.h"

static int write_npy(int argc, char **argv) {
  if (argc < 5) return 2;
  enum pg_dtype dt = pg_dtype_parse(argv[3]);
  double value = strtod(argv[4], NULL);
  int64_t shape[PG_MAX_NDIM];
  int nd = argc - 5;
  if (nd > PG_MAX_NDIM) return 2;
  for (int i = 0; i < nd; i++) shape[i] = strtoll(argv[5 + i], NULL, 10);
  struct pg_tensor t;
  pg_tensor_init(&t);
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_tensor_alloc(&t, dt, nd, shape, &err) != PG_OK) return 1;
  for (int64_t i = 0; i < t.numel; i++) pg_store_f64(t.dl.data, dt, (size_t)i, value);
  int rc = pg_npy_write(argv[2], &t, &err);
  if (rc != PG_OK) fprintf(stderr, "fz_check: %s\n", err.message);
  pg_tensor_reset(&t);
  return rc == PG_OK ? 0 : 1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (!b) {
    fclose(f);
    return NULL;
  }
  size_t got = fread(b, 1, (size_t)(n > 0 ? n : 0), f);
  b[got] = '\0';
  fclose(f);
  return b;
}

/* Value of a JSON item as text (strings as is, numbers as %g, null as "null"). */
static void as_text(const cJSON *v, char *buf, size_t size) {
  if (cJSON_IsString(v)) snprintf(buf, size, "%s", v->valuestring);
  else if (cJSON_IsNumber(v)) snprintf(buf, size, "%g", v->valuedouble);
  else if (cJSON_IsBool(v)) snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
  else if (cJSON_IsNull(v)) snprintf(buf, size, "null");
  else snprintf(buf, size, "<missing>");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fz_check REPORT [ASSERTION...]\n");
    return 2;
  }
  if (strcmp(argv[1], "--write-npy") == 0) return write_npy(argc, argv);
  char *text = slurp(argv[1]);
  if (!text) {
    fprintf(stderr, "fz_check: cannot read %s\n", argv[1]);
    return 1;
  }
  cJSON *r = cJSON_Parse(text);
  if (!r) {
    fprintf(stderr, "fz_check: %s is not valid JSON\n", argv[1]);
    return 1;
  }
  const char *files[16];
  int n_files = 0;
  for (int i = 2; i < argc; i++)
    if (strncmp(argv[i], "file=", 5) == 0 && n_files < 16) files[n_files++] = argv[i] + 5;
  int bad = 0;
  for (int i = 2; i < argc; i++) {
    char key[256];
    const char *a = argv[i];
    const char *eq = strchr(a, '=');
    if (!eq) {
      fprintf(stderr, "fz_check: bad assertion '%s'\n", a);
      return 2;
    }
    int contains = eq > a && eq[-1] == '~';
    size_t kl = (size_t)(eq - a) - (contains ? 1 : 0);
    snprintf(key, sizeof key, "%.*s", (int)kl, a);
    const char *want = eq + 1;
    if (strcmp(key, "file") == 0) continue;
    if (strcmp(key, "absent") == 0) {
      if (strstr(text, want)) {
        fprintf(stderr, "FAIL: '%s' occurs in the report %s\n", want, argv[1]);
        bad = 1;
      }
      for (int f = 0; f < n_files; f++) {
        char *t = slurp(files[f]);
        if (t && strstr(t, want)) {
          fprintf(stderr, "FAIL: '%s' occurs in %s\n", want, files[f]);
          bad = 1;
        }
        free(t);
      }
      continue;
    }
    const cJSON *v = NULL;
    if (strncmp(key, "first.", 6) == 0) {
      v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "first_failure"),
                                           key + 6);
    } else if (strncmp(key, "mode.", 5) == 0) {
      v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "per_mode_status"),
                                           key + 5);
    } else if (strncmp(key, "case.", 5) == 0) {
      const cJSON *c;
      cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "checks")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (cJSON_IsString(id) && strcmp(id->valuestring, key + 5) == 0)
          v = cJSON_GetObjectItemCaseSensitive(c, "status");
      }
    } else {
      v = cJSON_GetObjectItemCaseSensitive(r, key);
    }
    char got[4096];
    as_text(v, got, sizeof got);
    int ok = contains ? strstr(got, want) != NULL : strcmp(got, want) == 0;
    if (!ok) {
      fprintf(stderr, "FAIL: %s %s '%s', got '%s'\n", key, contains ? "should contain" : "==",
              want, got);
      bad = 1;
    } else {
      printf("ok: %s %s '%s'\n", key, contains ? "contains" : "==", want);
    }
  }
  cJSON_Delete(r);
  free(text);
  return bad;
}
