/* phasegate runner — finds an op's contract and suite in DIR or DIR/eval (the pypto
 * layout custom/<op>/eval/), and applies the CLI's --op-dir / --contract / --suite
 * precedence in one place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spec/spec.h"
#include "base/base.h"

int pg_op_dir_resolve(const char *dir, char *contract_path, size_t contract_size,
                      char *suite_path, size_t suite_size, struct pg_error *err) {
  static const char *const subdirs[] = {"", "/eval"};
  for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
    char *c = pg_path_fmt("%s%s/module_interfaces.yaml", dir, subdirs[i]);
    if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory");
    int found = pg_is_file(c);
    int fits = (size_t)snprintf(contract_path, contract_size, "%s", c) < contract_size;
    free(c);
    if (!found) continue;
    if (fits && suite_path)
      fits = (size_t)snprintf(suite_path, suite_size, "%s%s/adversarial_suite.json", dir,
                              subdirs[i]) < suite_size;
    if (!fits) return pg_error_set(err, PG_ELIMIT, "%.200s…: --op-dir path too long", dir);
    return PG_OK;
  }
  return pg_error_set(err, PG_ENOENT,
                      "%s: no module_interfaces.yaml in the directory or its eval/ subdirectory",
                      dir);
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
    int rc = pg_op_dir_resolve(op_dir, contract_path, contract_size, suite_path, suite_size, err);
    if (rc != PG_OK) return rc;
  }
  if (suite && (size_t)snprintf(suite_path, suite_size, "%s", suite) >= suite_size)
    return pg_error_set(err, PG_EINVAL, "--suite: path too long");
  return PG_OK;
}
