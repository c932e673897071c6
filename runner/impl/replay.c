/* phasegate runner — the replay adapter: `replay:DIR`.
 *
 * Outputs dumped by an earlier device run, laid out as DIR/<case>/<mode>/<name>.npy
 * (or DIR/<case>/<mode>/outputs.safetensors), or as `run --save-data DIR` saves them,
 * DIR/<case>/impl/<mode>/<name>.npy. A missing <mode> directory means that
 * mode was not run on the device: the fact is UNAVAILABLE (a SKIPPED mode), not a
 * failure.
 * Nothing is executed, so no sandbox is needed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "impl/adapter.h"
#include "base/base.h"

/* The whole call happens in start: nothing runs, so there is no finish step. */
static int replay_start(struct pg_impl_pending *p, struct pg_impl_outcome *out,
                        struct pg_error *err) {
  const struct pg_impl *impl = p->impl;
  const struct pg_impl_request *req = p->req;
  if (!pg_is_dir(impl->target))
    return pg__impl_fact(out, PG_IMPL_FACT_NOT_FOUND, "replay directory '%s' does not exist",
                         impl->target), PG_OK;
  char *dir = pg_path_fmt("%s/%s/%s", impl->target, req->case_id, req->mode);
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (!pg_is_dir(dir)) { /* what `run --save-data DIR` wrote: DIR/<case>/impl/<mode>/ */
    char *saved = pg_path_fmt("%s/%s/impl/%s", impl->target, req->case_id, req->mode);
    if (!saved) {
      free(dir);
      return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    if (pg_is_dir(saved)) {
      free(dir);
      dir = saved;
    } else {
      free(saved);
    }
  }
  int rc = PG_OK;
  if (!pg_is_dir(dir))
    pg__impl_fact(out, PG_IMPL_FACT_UNAVAILABLE, "mode '%s' has no dumped outputs (%.400s)",
                  req->mode, dir);
  else
    rc = pg__collect_outputs(dir, req, out, err);
  free(dir);
  return rc;
}

static int replay_probe_start(struct pg_impl_probe *p, struct pg_error *err) {
  const char *dir = p->impl->target;
  struct stat st;
  if (stat(dir, &st) != 0)
    return pg_error_set(err, PG_ENOENT, "replay directory '%s' does not exist (%s)", dir,
                        strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "replay directory '%s' is not a directory", dir);
  return PG_OK;
}

const struct pg_impl_ops pg__replay_ops = {
    .name = "replay",
    .usage = "replay:DIR",
    .probe_start = replay_probe_start,
    .start = replay_start,
};
