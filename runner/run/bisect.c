/* phasegate runner — boundary bisection (docs/design.md §8 `earliest_failing_boundary`):
 * when phase k fails on precision, phases j = 1..k-1 of the same case and mode are
 * run again (impl call and cumulative golden j, overlapped as in a case) to find the
 * first boundary that already diverges. What each phase's outcome means is
 * classify.c's decision (pg__classify_boundary); this file only runs them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* Phase j of the case in `mode`: 1 diverges, 0 holds, -1 cannot tell. */
static int boundary_verdict(struct pg__run *rc, int j, const struct pg_case *cs,
                            const struct pg_case_data *d, int n_threads, const char *mode) {
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS];
  struct pg_error e;
  pg_error_clear(&e);
  int n = pg__phase_outputs(&rc->contract, j, cs, &d->dims, decls, specs, &e);
  if (n < 0 || d->dims.count > PG_MAX_DIMS) return -1;
  /* phase j's impl is called as phase j always is: with module j's probes */
  struct pg__probes probes;
  if (pg__phase_probes(&rc->contract, j, cs, &d->dims, n, &probes, specs + n, &e) < 0) return -1;
  struct pg_tensor gold[PG_IMPL_MAX_OUTPUTS];
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&gold[i]);
  struct pg__call call;
  struct pg_impl_pending pend;
  struct pg_impl_outcome out;
  struct pg_error ie;
  pg_error_clear(&ie);
  /* the impl runs while the golden of phase j is computed, as in a case */
  pg__call_init(rc, j, cs, d, specs, n + probes.n, mode, &call);
  pg_impl_start(&rc->impl, &call.req, &pend, &out, &ie);
  int cached = 0, verdict = -1;
  int grc = pg__golden(rc, j, cs, d, specs, n, n_threads, gold, &cached, &e);
  int irc = pg_impl_finish(&pend, &out, &ie);
  if (grc == PG_OK && irc == PG_OK) {
    struct pg_mode_result m;
    memset(&m, 0, sizeof m);
    snprintf(m.mode, sizeof m.mode, "%s", mode);
    if (out.status == PG_IMPL_DONE)
      pg__compare_outputs(rc, j, cs, decls, specs, n, out.outputs, gold, n_threads, &m);
    else
      pg__classify_impl(&m, &out, j);
    verdict = pg__classify_boundary(&m);
    free(m.tensors);
  }
  pg_impl_outcome_reset(&out);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&gold[i]);
  return verdict;
}

int pg__find_earliest_boundary(struct pg__run *rc, int k, const struct pg_case *cs,
                              const struct pg_case_data *d, int n_threads, const char *mode) {
  for (int j = 1; j < k; j++) {
    int v = boundary_verdict(rc, j, cs, d, n_threads, mode);
    if (v < 0) return 0;
    if (v == 1) return j;
  }
  return k;
}
