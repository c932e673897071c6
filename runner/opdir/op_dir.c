/* phasegate runner — finds an op's contract and suite in DIR or DIR/eval (the pypto
 * layout custom/<op>/eval/), the op directory implied by the current directory (the
 * seed's runner run from eval/), and applies the CLI's --op-dir / --contract / --suite
 * precedence in one place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opdir/opdir.h"
#include "base/base.h"

static const char *const subdirs[] = {"", "/eval"}; /* in enum pg_op_layout order */

/* The layout of dir (PG_OP_LAYOUT_NONE also when out of memory: *oom set). */
static enum pg_op_layout layout_of(const char *dir, int *oom) {
  for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
    char *c = pg_path_fmt("%s%s/module_interfaces.yaml", dir, subdirs[i]);
    if (!c) {
      *oom = 1;
      return PG_OP_LAYOUT_NONE;
    }
    int found = pg_is_file(c);
    free(c);
    if (found) return (enum pg_op_layout)i;
  }
  return PG_OP_LAYOUT_NONE;
}

enum pg_op_layout pg_op_dir_layout(const char *dir) {
  int oom = 0;
  return layout_of(dir, &oom);
}

/* Why layout_of found nothing, as " (…)" for the message: the directory itself missing,
 * not a directory or a symlink loop, or a candidate that is there but cannot be read as
 * a file. "" when simply neither file exists. */
static void why_missing(const char *dir, char *why, size_t size) {
  struct stat st;
  why[0] = '\0';
  if (stat(dir, &st) != 0) {
    snprintf(why, size, " (%s)", errno == ENOENT ? "no such directory" : strerror(errno));
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, size, " (not a directory)");
    return;
  }
  for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
    char *c = pg_path_fmt("%s%s/module_interfaces.yaml", dir, subdirs[i]);
    int e = !c ? 0 : stat(c, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EISDIR;
    if (e && e != ENOENT && e != ENOTDIR)
      snprintf(why, size, " (%s: %s)", c, e == EISDIR ? "not a regular file" : strerror(e));
    free(c);
    if (why[0]) return;
  }
}

/* Finds module_interfaces.yaml and adversarial_suite.json in dir or dir/eval.
 * Writes absolute-or-as-given paths into the buffers (suite_path may be NULL). */
static int op_dir_resolve(const char *dir, char *contract_path, size_t contract_size,
                          char *suite_path, size_t suite_size, struct pg_error *err) {
  int oom = 0;
  enum pg_op_layout l = layout_of(dir, &oom);
  if (oom) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (l == PG_OP_LAYOUT_NONE) {
    char why[600];
    why_missing(dir, why, sizeof why);
    return pg_error_set(err, PG_ENOENT,
                        "%s: no module_interfaces.yaml in the directory or its eval/ subdirectory%s",
                        dir, why);
  }
  int fits = (size_t)snprintf(contract_path, contract_size, "%s%s/module_interfaces.yaml", dir,
                              subdirs[l]) < contract_size;
  if (fits && suite_path)
    fits = (size_t)snprintf(suite_path, suite_size, "%s%s/adversarial_suite.json", dir,
                            subdirs[l]) < suite_size;
  if (!fits) return pg_error_set(err, PG_ELIMIT, "%.200s…: --op-dir path too long", dir);
  return PG_OK;
}

int pg_op_paths_resolve(const char *op_dir, const char *contract, const char *suite,
                        char *contract_path, size_t contract_size, char *suite_path,
                        size_t suite_size, struct pg_error *err) {
  if (!contract && !op_dir)
    return pg_error_set(err, PG_EINVAL, "give --op-dir DIR or --contract FILE");
  if (contract) {
    if ((size_t)snprintf(contract_path, contract_size, "%s", contract) >= contract_size)
      return pg_error_set(err, PG_EINVAL, "--contract: path too long");
    const char *slash = strrchr(contract, '/');
    int dir_len = slash ? (int)(slash - contract) + 1 : 0;
    if ((size_t)snprintf(suite_path, suite_size, "%.*sadversarial_suite.json", dir_len,
                         contract) >= suite_size)
      return pg_error_set(err, PG_EINVAL, "--contract: path too long");
  } else {
    int rc = op_dir_resolve(op_dir, contract_path, contract_size, suite_path, suite_size, err);
    if (rc != PG_OK) return rc;
  }
  if (suite && (size_t)snprintf(suite_path, suite_size, "%s", suite) >= suite_size)
    return pg_error_set(err, PG_EINVAL, "--suite: path too long");
  return PG_OK;
}

/* The op directory for contract directory d (d/module_interfaces.yaml is a file): its
 * parent when d is the eval/ of a pypto op directory (one --op-dir would read d's
 * contract from: none in the parent itself), else d. NULL: out of memory. */
static char *op_dir_of(const char *d) {
  struct stat sd, se;
  char *eval = pg_path_fmt("%s/../eval", d);
  char *flat = pg_path_fmt("%s/../module_interfaces.yaml", d);
  int pypto = eval && flat && stat(d, &sd) == 0 && stat(eval, &se) == 0 &&
              sd.st_dev == se.st_dev && sd.st_ino == se.st_ino && !pg_is_file(flat);
  int oom = !eval || !flat;
  free(eval);
  free(flat);
  if (oom) return NULL;
  if (!pypto) return pg_strdup(d);
  if (strcmp(d, ".") == 0) return pg_strdup("..");
  size_t n = strlen(d);
  while (n > 1 && d[n - 1] == '/') n--;
  if (n == 4 && strncmp(d, "eval", 4) == 0) return pg_strdup(".");
  if (n >= 5 && strncmp(d + n - 5, "/eval", 5) == 0)
    return pg_path_fmt("%.*s", n == 5 ? 1 : (int)(n - 5), d);
  return pg_path_fmt("%.*s/..", (int)n, d);
}

int pg_op_dir_implied(const char *suite, char *dir, size_t size, struct pg_error *err) {
  const char *slash = suite ? strrchr(suite, '/') : NULL;
  char *cand[2] = {NULL, NULL};
  int n = 0;
  if (slash) cand[n++] = pg_path_fmt("%.*s", slash == suite ? 1 : (int)(slash - suite), suite);
  if (!slash || !cand[0] || strcmp(cand[0], ".") != 0) cand[n++] = pg_strdup(".");
  int rc = PG_OK, found = 0;
  for (int i = 0; i < n && rc == PG_OK && !found; i++) {
    char *c = cand[i] ? pg_path_fmt("%s/module_interfaces.yaml", cand[i]) : NULL;
    if (!c) {
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
      break;
    }
    if (pg_is_file(c)) {
      char *d = op_dir_of(cand[i]);
      found = 1;
      if (!d) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
      else if ((size_t)snprintf(dir, size, "%s", d) >= size)
        rc = pg_error_set(err, PG_ELIMIT, "%.200s…: path too long", d);
      free(d);
    }
    free(c);
  }
  if (rc == PG_OK && !found) {
    if (n == 2 && cand[0])
      rc = pg_error_set(err, PG_ENOENT, "no module_interfaces.yaml in --suite's directory %s/ "
                        "nor in the current directory", cand[0]);
    else
      rc = pg_error_set(err, PG_ENOENT, "no module_interfaces.yaml in the current directory");
  }
  free(cand[0]);
  free(cand[1]);
  return rc;
}
