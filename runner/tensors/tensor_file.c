/* phasegate runner — one tensor from a file, whatever its format: pg_tensor_file_read()
 * dispatches on the extension to the .npy reader (npy.c) or the safetensors reader
 * (safetensors.c), above both so neither calls the other. */
#include <string.h>

#include "tensors/tensors.h"


static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int pg_tensor_file_read(const char *path, const char *name, struct pg_tensor *out,
                        struct pg_error *err) {
  return pg_tensor_file_read_ex(path, name, 0, out, err);
}

int pg_tensor_file_read_ex(const char *path, const char *name, unsigned npy_flags,
                           struct pg_tensor *out, struct pg_error *err) {
  if (ends_with(path, ".safetensors")) {
    struct pg_tensor *list = NULL;
    int count = 0;
    PG_RETURN_IF_ERROR(pg_safetensors_read(path, &list, &count, err));
    int pick = -1;
    for (int i = 0; i < count; i++)
      if (name ? strcmp(list[i].name, name) == 0 : count == 1) pick = i;
    if (pick < 0) {
      int rc = name ? pg_error_set(err, PG_ENOTFOUND, "%s: no tensor named '%s'", path, name)
                    : pg_error_set(err, PG_EINVAL, "%s: holds %d tensors; name the one to read",
                                   path, count);
      pg_tensor_list_free(list, count);
      return rc;
    }
    pg_tensor_move(out, &list[pick]);
    pg_tensor_list_free(list, count);
    return PG_OK;
  }
  int rc = pg_npy_read_ex(path, npy_flags, out, err);
  if (rc == PG_OK && name) pg_tensor_set_name(out, name);
  return rc;
}
