/* goldens/kernels_registry.c — the constant table of built-in reference kernels
 * (pg_kernel_find / pg_kernel_list, sorted by name) and the small conveniences of
 * kernels.h: attribute lookup, defaults, and infer+allocate+run in one call.
 */
#include <string.h>

#include "kernels_internal.h"

#define PG__KERNEL_PTR(n) &pg__kdef_##n,
static const struct pg_kernel_def *const kernel_table[] = {PG__KERNEL_NAMES(PG__KERNEL_PTR)};
#undef PG__KERNEL_PTR

#define N_KERNELS ((int)(sizeof kernel_table / sizeof kernel_table[0]))

const struct pg_kernel_def *pg_kernel_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < N_KERNELS; i++)
    if (strcmp(kernel_table[i]->name, name) == 0) return kernel_table[i];
  return NULL;
}

int pg_kernel_list(const struct pg_kernel_def *const **defs) {
  if (defs) *defs = kernel_table;
  return N_KERNELS;
}

int pg_kernel_attr_index(const struct pg_kernel_def *def, const char *name) {
  if (!def || !name || !def->attrs) return -1;
  for (int i = 0; def->attrs[i].name; i++)
    if (strcmp(def->attrs[i].name, name) == 0) return i;
  return -1;
}

int pg_kernel_attrs_default(const struct pg_kernel_def *def,
                            struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS]) {
  int n = 0;
  if (!def || !def->attrs) return 0;
  for (; def->attrs[n].name && n < PG_KERNEL_MAX_ATTRS; n++) {
    attrs[n] = def->attrs[n].default_value;
    /* a required attr stays absent (type 0) until the caller sets it */
    attrs[n].type = def->attrs[n].required ? (enum pg_attr_type)0 : def->attrs[n].type;
  }
  return n;
}

int pg_kernel_invoke(const struct pg_kernel_def *def, const struct pg_tensor *const *inputs,
                     int n_inputs, const struct pg_attr_value *attrs, int n_attrs,
                     int n_threads, struct pg_tensor *outputs, struct pg_error *err) {
  if (!def) return pg_error_set(err, PG_EINVAL, "no kernel given");
  if (n_inputs < 0 || n_inputs > PG_KERNEL_MAX_INPUTS)
    return pg_error_set(err, PG_EINVAL, "%s: %d inputs is out of range", def->name, n_inputs);
  if (def->n_outputs > PG_KERNEL_MAX_OUTPUTS)
    return pg_error_set(err, PG_EINTERNAL, "%s: too many outputs", def->name);
  struct pg_kernel_args args;
  memset(&args, 0, sizeof args);
  int n_decls = 0;
  while (def->attrs && def->attrs[n_decls].name) n_decls++;
  if (n_attrs < 0 || n_attrs > n_decls || (n_attrs > 0 && !attrs))
    return pg_error_set(err, PG_EINVAL, "%s: %d attributes given, %d declared", def->name,
                        n_attrs, n_decls);
  for (int i = 0; i < n_decls; i++)
    args.attrs[i] = i < n_attrs && attrs[i].type != 0 ? attrs[i] : def->attrs[i].default_value;
  args.n_attrs = n_decls;
  args.n_inputs = n_inputs;
  args.n_threads = n_threads;
  struct pg_tensor_meta in[PG_KERNEL_MAX_INPUTS], out[PG_KERNEL_MAX_OUTPUTS];
  for (int i = 0; i < n_inputs; i++) {
    if (!inputs || !inputs[i])
      return pg_error_set(err, PG_EINVAL, "%s: input %d is NULL", def->name, i + 1);
    const struct pg_tensor *t = inputs[i];
    args.inputs[i] = t;
    in[i].dtype = t->dtype != PG_DTYPE_INVALID ? t->dtype : pg_dtype_from_dl(t->dl.dtype);
    in[i].ndim = t->dl.ndim;
    if (in[i].ndim < 0 || in[i].ndim > PG_MAX_NDIM)
      return pg_error_set(err, PG_EINVAL, "%s: input %d has rank %d", def->name, i + 1,
                          in[i].ndim);
    for (int d = 0; d < in[i].ndim; d++) in[i].shape[d] = t->dl.shape ? t->dl.shape[d] : t->shape[d];
  }
  PG_RETURN_IF_ERROR(def->infer(in, n_inputs, args.attrs, out, err));
  struct pg_tensor *outp[PG_KERNEL_MAX_OUTPUTS];
  int rc = PG_OK;
  for (int o = 0; o < def->n_outputs && rc == PG_OK; o++) {
    rc = pg_tensor_alloc(&outputs[o], out[o].dtype, out[o].ndim, out[o].shape, err);
    outp[o] = &outputs[o];
  }
  if (rc == PG_OK) rc = def->run(&args, outp, err);
  if (rc != PG_OK)
    for (int o = 0; o < def->n_outputs; o++) pg_tensor_reset(&outputs[o]);
  return rc;
}
