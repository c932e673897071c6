/* phasegate runner — the replay adapter: `replay:DIR`.
 *
 * Outputs dumped by an earlier device run, laid out as DIR/<case>/<mode>/<name>.npy
 * (or DIR/<case>/<mode>/outputs.safetensors). A missing <mode> directory means that
 * mode was not run on the device: the call is unavailable (SKIPPED), not a failure.
 * Nothing is executed, so no sandbox is needed.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "impl/impl.h"

int pg__replay_invoke(const struct pg_impl *impl, const struct pg_impl_request *req,
                      struct pg_impl_outcome *out, struct pg_error *err) {
  struct stat st;
  if (stat(impl->target, &st) != 0 || !S_ISDIR(st.st_mode))
    return pg__outcome_fail(out, PG_CAT_INFRA, "replay directory '%s' does not exist",
                            impl->target),
           PG_OK;
  char dir[4600];
  snprintf(dir, sizeof dir, "%s/%s/%s", impl->target, req->case_id, req->mode);
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    out->status = PG_IMPL_UNAVAILABLE;
    snprintf(out->summary, sizeof out->summary, "mode '%s' has no dumped outputs (%.400s)",
             req->mode, dir);
    return PG_OK;
  }
  return pg__collect_outputs(dir, req, out, err);
}
