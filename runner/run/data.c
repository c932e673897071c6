/* phasegate runner — a case's tensors on disk (docs/design.md §6 "Data for humans"):
 * --golden-data replays inputs and references saved earlier (DIR/<case>/{in,out}/, or
 * the pypto layout DIR/{in,out} for a single case), checked against the case so a
 * wrong file is an ERROR of the case, never blamed on the impl; --save-data writes
 * them, the reference inspection probes next to the goldens, and each mode's impl
 * outputs as the runner compared them (DIR/<case>/impl/<mode>/). Paths are built on
 * the heap (base/), never truncated. No verdicts: failures come back as error codes
 * with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"
#include "base/base.h"

/* dir/<name>.npy into t, named. */
static int load_named(const char *dir, const char *name, struct pg_tensor *t,
                      struct pg_error *err) {
  char *p = pg_path_fmt("%s/%s.npy", dir, name);
  if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int r = pg_npy_read(p, t, err);
  free(p);
  if (r == PG_OK) pg_tensor_set_name(t, name);
  return r;
}

/* dir/<name>.npy for t. */
static int save_one(const char *dir, const char *name, const struct pg_tensor *t,
                    struct pg_error *err) {
  char *p = pg_path_fmt("%s/%s.npy", dir, name);
  int r = p ? pg_npy_write(p, t, err) : pg_error_set(err, PG_ENOMEM, "out of memory");
  free(p);
  return r;
}

static int make_dir(const char *dir, struct pg_error *err) {
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (pg_mkdir_p(dir) != 0)
    return pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO, "%s: %s", dir, strerror(errno));
  return PG_OK;
}

static int save_tensors(const char *dir, const struct pg_tensor *t, int n, struct pg_error *err) {
  PG_RETURN_IF_ERROR(make_dir(dir, err));
  for (int i = 0; i < n; i++) PG_RETURN_IF_ERROR(save_one(dir, t[i].name, &t[i], err));
  return PG_OK;
}

static int same_shape(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b) {
  int same = ndim_a == ndim_b;
  for (int i = 0; same && i < ndim_a; i++) same = a[i] == b[i];
  return same;
}

char *pg__golden_data_dir(const struct pg__run *rc, const struct pg_case *cs) {
  const char *gd = rc->o->golden_data;
  char *in = pg_path_fmt("%s/%s/in", gd, cs->id);
  int per_case = in && pg_is_dir(in);
  free(in);
  return per_case ? pg_path_join(gd, cs->id) : pg_strdup(gd); /* pypto layout: DIR/in */
}

int pg__golden_data_inputs(struct pg__run *rc, const struct pg_case *cs, const char *dir,
                           struct pg_case_data *d, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  char *in = pg_path_join(dir, "in");
  if (!in) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int r = PG_OK;
  for (int i = 0; r == PG_OK && i < c->n_primary; i++) {
    const struct pg_tensor_decl *pd = &c->primary_inputs[i];
    struct pg_tensor *t = &d->inputs[i];
    struct pg_error e;
    pg_error_clear(&e);
    int lr = load_named(in, pd->name, t, &e);
    if (lr != PG_OK) {
      r = pg_error_set(err, lr, "--golden-data: input '%s': %.700s", pd->name, e.message);
      break;
    }
    int nd;
    int64_t sh[PG_MAX_NDIM];
    if (pg_decl_shape(pd, &d->dims, &nd, sh, &e) == PG_OK &&
        !same_shape(t->dl.ndim, t->shape, nd, sh)) {
      char got[160], want[160];
      pg_shape_format(t->dl.ndim, t->shape, got, sizeof got);
      pg_shape_format(nd, sh, want, sizeof want);
      r = pg_error_set(err, PG_EINVAL, "--golden-data: input '%s' has shape %s, case '%s' "
                       "declares %s", pd->name, got, cs->id, want);
    } else if (t->dtype != pg_case_dtype(cs, pd)) {
      pg__line(rc, 1, "phasegate: warning: --golden-data: input '%s' is %s, case '%s' declares "
               "%s; the impl gets it as stored", pd->name, pg_dtype_name(t->dtype), cs->id,
               pg_dtype_name(pg_case_dtype(cs, pd)));
    }
  }
  char *args = r == PG_OK ? pg_path_join(in, "arguments.json") : NULL;
  size_t len = 0;
  if (args && pg_is_file(args)) r = pg_read_file(args, 1 << 20, &d->arguments, &len, err);
  free(args);
  free(in);
  return r;
}

int pg__golden_data_refs(int k, const struct pg_case *cs, const char *dir,
                         const struct pg_impl_output_spec *specs, int n_out,
                         struct pg_tensor *goldens, struct pg_error *err) {
  char *out = pg_path_join(dir, "out");
  if (!out) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int r = PG_OK;
  for (int i = 0; r == PG_OK && i < n_out; i++) {
    struct pg_error e;
    pg_error_clear(&e);
    int lr = load_named(out, specs[i].name, &goldens[i], &e);
    if (lr != PG_OK)
      r = pg_error_set(err, lr, "--golden-data: reference '%s': %.700s", specs[i].name,
                       e.message);
  }
  free(out);
  /* A reference that does not match the boundary would be blamed on the impl. */
  for (int i = 0; r == PG_OK && i < n_out; i++) {
    const struct pg_tensor *g = &goldens[i];
    if (g->dtype == specs[i].dtype && same_shape(g->dl.ndim, g->shape, specs[i].ndim,
                                                 specs[i].shape))
      continue;
    char got[160], want[160];
    pg_shape_format(g->dl.ndim, g->shape, got, sizeof got);
    pg_shape_format(specs[i].ndim, specs[i].shape, want, sizeof want);
    r = pg_error_set(err, PG_EINVAL, "--golden-data: reference '%s' is %s %s, the M%d boundary "
                     "of case '%s' is %s %s", specs[i].name, pg_dtype_name(g->dtype), got, k,
                     cs->id, pg_dtype_name(specs[i].dtype), want);
  }
  return r;
}

int pg__save_data(const struct pg__run *rc, const struct pg_case *cs, const struct pg_case_data *d,
                  const struct pg_tensor *goldens, int n_out, const struct pg__probes *probes,
                  const struct pg_tensor *probe_refs, struct pg_error *err) {
  const char *sd = rc->o->save_data;
  char *in = pg_path_fmt("%s/%s/in", sd, cs->id), *out = pg_path_fmt("%s/%s/out", sd, cs->id);
  int r = save_tensors(in, d->inputs, rc->contract.n_primary, err);
  /* make_inputs's argument order and non-tensor inputs, which --golden-data replays */
  char *args = d->arguments && in ? pg_path_join(in, "arguments.json") : NULL;
  FILE *f = args ? fopen(args, "w") : NULL;
  if (r == PG_OK && d->arguments && (!f || fputs(d->arguments, f) < 0))
    r = pg_error_set(err, PG_EIO, "%s: %s", args ? args : in, strerror(errno));
  if (f && fclose(f) != 0 && r == PG_OK) r = pg_error_set(err, PG_EIO, "%s: write failed", args);
  free(args);
  if (r == PG_OK) r = save_tensors(out, goldens, n_out, err);
  /* the reference probes under the name the impl's probes have: impl/<mode>/ and out/
   * pair file by file */
  for (int i = 0; r == PG_OK && probes && i < probes->n; i++)
    r = save_one(out, probes->names[i], &probe_refs[i], err);
  free(in);
  free(out);
  return r;
}

int pg__save_impl_data(const struct pg__run *rc, const struct pg_case *cs, const char *mode,
                       const struct pg_impl_output_spec *specs, const struct pg_tensor *outs,
                       int n, const char *why_not, struct pg_error *err) {
  char *dir = pg_path_fmt("%s/%s/impl/%s", rc->o->save_data, cs->id, mode);
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  pg_remove_tree(dir); /* an earlier run's outputs would pass for this run's */
  int r = outs || why_not ? make_dir(dir, err) : PG_OK, kept = 0;
  /* a failed call: only the tensors the adapter kept (a wrong shape or dtype) */
  for (int i = 0; r == PG_OK && outs && i < n; i++)
    if (!why_not || outs[i].dl.data) {
      r = save_one(dir, specs[i].name, &outs[i], err);
      kept++;
    }
  if (r == PG_OK && why_not) {
    char *p = pg_path_join(dir, "not_compared.txt");
    FILE *f = p ? fopen(p, "w") : NULL;
    if (!f || fprintf(f, "no outputs of mode '%s' were compared: %s\n%s", mode, why_not,
                      kept ? "the .npy files here are what the impl wrote, as read before "
                             "the call was rejected\n" : "") < 0)
      r = pg_error_set(err, PG_EIO, "%s: %s", p ? p : dir, strerror(errno));
    if (f && fclose(f) != 0 && r == PG_OK)
      r = pg_error_set(err, PG_EIO, "%s: %s", p, strerror(errno));
    free(p);
  }
  free(dir);
  return r;
}
