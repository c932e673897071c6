/* phasegate runner — reading evaluation reports back for `phasegate report` (see
 * report.h, pg_report_set_load): files as given, directories searched recursively for
 * evaluation_report.json, sorted by op_name, up_to_module, path.
 *
 * A minimal loader for the JUnit rewrite (report/junit.c): it checks only the keys
 * the readers rely on (op_name, up_to_module, checks[] with id and status). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
#include "base/base.h"

void pg_report_set_init(struct pg_report_set *set) { memset(set, 0, sizeof *set); }

void pg_report_set_reset(struct pg_report_set *set) {
  for (int i = 0; i < set->n; i++) {
    free(set->files[i].path);
    cJSON_Delete(set->files[i].json);
  }
  free(set->files);
  pg_report_set_init(set);
}

static char *read_text(const char *path, struct pg_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      char *nb = realloc(buf, cap = cap ? cap * 2 : 131072);
      if (!nb) {
        free(buf);
        fclose(f);
        pg_error_set(err, PG_ENOMEM, "out of memory reading %s", path);
        return NULL;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, 65536, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    pg_error_set(err, PG_EIO, "%s: read error", path);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* The keys the readers rely on: "" when present with their types, else the first
 * that is not. */
static const char *bad_key(const cJSON *root) {
  if (!cJSON_IsObject(root)) return "the report (not a JSON object)";
  if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "op_name"))) return "op_name";
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "up_to_module");
  if (!cJSON_IsNumber(k) || k->valuedouble < 1) return "up_to_module";
  const cJSON *checks = cJSON_GetObjectItemCaseSensitive(root, "checks"), *c;
  if (!cJSON_IsArray(checks)) return "checks";
  cJSON_ArrayForEach(c, checks) {
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "id")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "status")))
      return "checks[].id / checks[].status";
  }
  return "";
}

static int add_file(struct pg_report_set *set, const char *path, struct pg_error *err) {
  char *text = read_text(path, err);
  if (!text) return err->code;
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!root) return pg_error_set(err, PG_EPARSE, "%s: error: not valid JSON", path);
  const char *bad = bad_key(root);
  if (*bad) {
    cJSON_Delete(root);
    return pg_error_set(err, PG_EVALIDATE, "%s: error: %s missing or of the wrong type", path, bad);
  }
  if (set->n == set->cap) {
    int cap = set->cap ? set->cap * 2 : 16;
    struct pg_report_file *nf = realloc(set->files, (size_t)cap * sizeof *nf);
    if (!nf) {
      cJSON_Delete(root);
      return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    set->files = nf;
    set->cap = cap;
  }
  char *p = pg_strdup(path);
  if (!p) {
    cJSON_Delete(root);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  set->files[set->n++] = (struct pg_report_file){p, root};
  return PG_OK;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every evaluation_report.json under dir; symbolic links to directories are not
 * followed. */
static int walk(struct pg_report_set *set, const char *dir, int depth, struct pg_error *err) {
  if (depth > 32) return PG_OK;
  DIR *d = opendir(dir);
  if (!d) return pg_error_set(err, PG_EIO, "%s: %s", dir, strerror(errno));
  char **names = NULL;
  int n = 0, cap = 0, rc = PG_OK;
  struct dirent *e;
  while (rc == PG_OK && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      char **nn = realloc(names, (size_t)(cap = cap ? cap * 2 : 32) * sizeof *nn);
      if (!nn) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        break;
      }
      names = nn;
    }
    if (!(names[n] = pg_strdup(e->d_name))) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    else n++;
  }
  closedir(d);
  if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_names);
  for (int i = 0; i < n; i++) {
    char *p = rc == PG_OK ? pg_path_join(dir, names[i]) : NULL;
    struct stat st;
    if (rc == PG_OK && !p) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    if (p && lstat(p, &st) == 0) {
      if (S_ISDIR(st.st_mode)) rc = walk(set, p, depth + 1, err);
      else if (S_ISREG(st.st_mode) && strcmp(names[i], "evaluation_report.json") == 0)
        rc = add_file(set, p, err);
    }
    free(p);
    free(names[i]);
  }
  free(names);
  return rc;
}

static int cmp_files(const void *a, const void *b) {
  const struct pg_report_file *x = a, *y = b;
  const cJSON *ox = cJSON_GetObjectItemCaseSensitive(x->json, "op_name");
  const cJSON *oy = cJSON_GetObjectItemCaseSensitive(y->json, "op_name");
  int c = strcmp(ox->valuestring, oy->valuestring);
  if (c) return c;
  double kx = cJSON_GetObjectItemCaseSensitive(x->json, "up_to_module")->valuedouble;
  double ky = cJSON_GetObjectItemCaseSensitive(y->json, "up_to_module")->valuedouble;
  if (kx != ky) return kx < ky ? -1 : 1;
  return strcmp(x->path, y->path);
}

int pg_report_set_load(const char *const *paths, int n, struct pg_report_set *set,
                       struct pg_error *err) {
  for (int i = 0; i < n; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0)
      return pg_error_set(err, errno == ENOENT ? PG_ENOENT : PG_EIO, "%s: %s", paths[i],
                          strerror(errno));
    if (S_ISDIR(st.st_mode)) {
      int before = set->n;
      PG_RETURN_IF_ERROR(walk(set, paths[i], 0, err));
      if (set->n == before)
        return pg_error_set(err, PG_ENOTFOUND, "%s: no evaluation_report.json under it", paths[i]);
    } else {
      PG_RETURN_IF_ERROR(add_file(set, paths[i], err));
    }
  }
  if (set->n > 1) qsort(set->files, (size_t)set->n, sizeof *set->files, cmp_files);
  return PG_OK;
}
