/* phasegate runner — the console of `phasegate run` (docs/design.md §8): one status line per
 * case and mode while running (metrics of the worst output, or the category and
 * summary of a failure; every metric of --inspect's output), the tail of a failing
 * mode's captured output (already redacted by run/), the repro and hint lines, the
 * cancellation-stress note, and the summary lines after the last case. tests/run/faultzoo
 * console_lines pins the format. On a terminal, a live progress line between them
 * (pg_report_progress_*), never in the lines themselves.
 *
 * These are the case_lines and summary_lines hooks of pg_run (see pg_report_hooks).
 * Only metrics and indices are printed, never tensor values; nothing is decided here.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"
#include "base/base.h"

/* "  (atol 1e-3 rtol 1e-3)": the tolerance the verdict of output t used. */
static void tolerance_text(const struct pg_tensor_check *t, char *buf, size_t size) {
  char a[40], r[40];
  pg_num_short(t->atol, a, sizeof a);
  pg_num_short(t->rtol, r, sizeof r);
  struct pg_cmp_rule rule; /* the rule's text read by compare/'s one parser */
  int known = pg_cmp_rule_parse(t->rule, &rule, NULL) == PG_OK;
  if (known && (rule.kind == PG_RULE_EXACT || rule.kind == PG_RULE_ULP))
    snprintf(buf, size, "  (%s)", t->rule); /* no tolerance takes part */
  else if (known && rule.kind == PG_RULE_ALLCLOSE)
    snprintf(buf, size, "  (atol %s rtol %s)", a, r);
  else
    snprintf(buf, size, "  (%s atol %s rtol %s)", t->rule, a, r);
}

/* The status line of one mode, plus every metric of --inspect's output. */
static void mode_line(const struct pg_run_phase *ph, const struct pg_case_result *r,
                      const struct pg_mode_result *m, pg_run_line_fn line, void *user) {
  const char *tag = m->status == PG_VERDICT_PASS    ? "PASS"
                    : m->status == PG_VERDICT_FAIL  ? "FAIL"
                    : m->status == PG_VERDICT_ERROR ? "ERROR"
                                                    : "SKIP";
  char detail[900] = "", tol[128] = "";
  const struct pg_tensor_check *shown = NULL; /* the output the line is about */
  if (m->status == PG_VERDICT_PASS) {
    /* The output with the largest error relative to its allowance. */
    const struct pg_tensor_check *w = NULL;
    double worst = -1;
    for (int i = 0; i < m->n_tensors; i++) {
      const struct pg_tensor_check *t = &m->tensors[i];
      if (!t->compared) continue;
      double s = t->cmp.max_abs_diff / (t->atol > 0 ? t->atol : 1e-30);
      if (!(s <= worst)) worst = s, w = t;
    }
    if (!r->precision_checked)
      snprintf(detail, sizeof detail, "structure ok (values not checked)");
    else if (m->structure_only && w)
      snprintf(detail, sizeof detail, "structure ok, values not gating (%s policy): %s%smax_abs "
               "%.2g  max_rel %.2g", m->policy_from, m->n_tensors > 1 ? w->name : "",
               m->n_tensors > 1 ? ": " : "", w->cmp.max_abs_diff, w->cmp.max_rel_diff);
    else if (m->structure_only)
      snprintf(detail, sizeof detail, "structure ok, values not gating (%s policy)",
               m->policy_from);
    else if (w)
      snprintf(detail, sizeof detail, "%s%smax_abs %.2g  max_rel %.2g",
               m->n_tensors > 1 ? w->name : "", m->n_tensors > 1 ? ": " : "",
               w->cmp.max_abs_diff, w->cmp.max_rel_diff);
    if (r->precision_checked) shown = w;
  } else {
    const char *cat = pg_category_name(m->category);
    /* "infra/shared_library: …", "runtime/aicore: …" (docs/report.md) */
    snprintf(detail, sizeof detail, "%s%s%s%s%.700s", cat ? cat : "",
             cat && m->subcategory ? "/" : "", cat && m->subcategory ? m->subcategory : "",
             cat ? ": " : "", m->summary);
    if (m->fact_output >= 0 && m->fact_output < m->n_tensors) shown = &m->tensors[m->fact_output];
  }
  /* Every verdict on values says what it allowed (docs/design.md §7); a line without
   * compared values (a crash, a skip, structure only) has no tolerance to show. */
  if (shown && shown->compared && !shown->cmp.structural) tolerance_text(shown, tol, sizeof tol);
  pg_run_linef(line, user, 0, "[%s] %s M%d %s %s  %s%s  %.1f ms", tag, ph->op, ph->up_to_module,
               r->id, m->mode, detail, tol, m->impl_ms);
  for (int i = 0; ph->inspect && i < m->n_tensors; i++) {
    const struct pg_tensor_check *t = &m->tensors[i];
    if (strcmp(t->name, ph->inspect) != 0 || !t->compared || t->cmp.structural) continue;
    const struct pg_cmp_result *c = &t->cmp;
    char ai[160], ri[160];
    pg_shape_format(c->ndim, c->max_abs_index, ai, sizeof ai);
    pg_shape_format(c->ndim, c->max_rel_index, ri, sizeof ri);
    pg_run_linef(line, user, 0, "    %s: n %lld  mismatches %lld (%.3g)  max_abs %.3g at %s  "
                 "max_rel %.3g at %s  mean_abs %.3g  rmse %.3g  cosine %.6f  max_ulp %.3g  "
                 "balance %+.3f  within 1e-3 %.4f  5e-3 %.4f  nan impl/ref %lld/%lld  inf "
                 "impl/ref %lld/%lld  zero share %.3f",
                 t->name, (long long)c->n, (long long)c->mismatches, c->mismatch_ratio,
                 c->max_abs_diff, ai, c->max_rel_diff, ri, c->mean_abs_diff, c->rmse,
                 c->cosine_similarity, c->max_ulp, c->error_balance, c->share_within_1e3,
                 c->share_within_5e3, (long long)c->nan_impl, (long long)c->nan_ref,
                 (long long)c->inf_impl, (long long)c->inf_ref, c->zero_share_ref);
    for (int j = 0; j < c->n_first; j++) {
      char ix[160];
      pg_shape_format(c->ndim, c->first[j].index, ix, sizeof ix);
      pg_run_linef(line, user, 0, "      mismatch %s  impl %.6g  abs_diff %.3g  rel_diff %.3g", ix,
                   c->first[j].impl_value, c->first[j].abs_diff, c->first[j].rel_diff);
    }
  }
}

/* One line per inspection probe of a mode (and, with --inspect <probe>, one per
 * iteration): where the drift starts, metrics only. */
static void probe_lines(const struct pg_run_phase *ph, const struct pg_mode_result *m,
                        pg_run_line_fn line, void *user) {
  for (int i = 0; i < m->n_probes; i++) {
    const struct pg_probe_check *p = &m->probes[i];
    if (!p->compared) {
      if (p->problem[0])
        pg_run_linef(line, user, 1, "    inspection %s: not compared: %s", p->name, p->problem);
      continue;
    }
    const struct pg_probe_iter *last = &p->iters[p->n_iters - 1];
    if (p->drift_onset_iter >= 0) {
      const struct pg_probe_iter *at = &p->iters[p->drift_onset_iter];
      pg_run_linef(line, user, 1, "    inspection %s: drifts from iteration %d of %d (%lld of "
                   "%lld outside there, max_abs %.3g; last iteration max_abs %.3g)", p->name,
                   p->drift_onset_iter, p->n_iters, (long long)at->mismatches, (long long)at->n,
                   at->max_abs_diff, last->max_abs_diff);
    } else {
      pg_run_linef(line, user, 0, "    inspection %s: no drift over %d iterations (last max_abs "
                   "%.3g)", p->name, p->n_iters, last->max_abs_diff);
    }
    int asked = ph->inspect && (strcmp(ph->inspect, p->name) == 0 ||
                                (strncmp(ph->inspect, "inspection_", 11) == 0 &&
                                 strcmp(ph->inspect + 11, p->name) == 0));
    for (int it = 0; asked && it < p->n_iters; it++)
      pg_run_linef(line, user, 0, "      iter %d: mismatches %lld of %lld  max_abs %.3g  max_rel "
                   "%.3g%s", it, (long long)p->iters[it].mismatches, (long long)p->iters[it].n,
                   p->iters[it].max_abs_diff, p->iters[it].max_rel_diff,
                   p->iters[it].passed ? "" : "  (outside)");
  }
}

/* The last 20 lines of a failing mode's captured output (already redacted). */
static void captured_tail(const struct pg_mode_result *m, pg_run_line_fn line, void *user) {
  if (!m->captured || !*m->captured) return;
  const char *s = m->captured;
  size_t len = strlen(s);
  int lines = 0;
  size_t start = len;
  while (start > 0) {
    if (s[start - 1] == '\n' && start != len && ++lines >= 20) break;
    start--;
  }
  const char *p = s + start;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    pg_run_linef(line, user, 1, "    | %.*s", (int)(n > 1000 ? 1000 : n), p);
    p = e ? e + 1 : p + n;
  }
}

/* What a failing tensor's mask shows first: the signs, the worst elements by absolute
 * and by relative error above the tolerance floor, where the mismatches concentrate. */
static void evidence_lines(const struct pg_tensor_check *t, pg_run_line_fn line, void *user) {
  const struct pg_cmp_result *c = &t->cmp;
  const struct pg_cmp_mask *mk = &t->mask;
  char ai[160], ri[160], worst_rel[320] = "", fl[40];
  int64_t fin = mk->above + mk->below;
  pg_shape_format(c->ndim, c->max_abs_index, ai, sizeof ai);
  pg_num_short(mk->rel_floor, fl, sizeof fl);
  if (mk->worst_rel_flat >= 0) {
    pg_shape_format(c->ndim, mk->worst_rel_index, ri, sizeof ri);
    snprintf(worst_rel, sizeof worst_rel, "; worst rel where |golden| > %s: %.3g at %s (abs %.3g, "
             "impl %s)", fl, mk->worst_rel, ri, mk->worst_rel_abs,
             mk->worst_rel_signed < 0 ? "below" : "above");
  } else if (isfinite(mk->rel_floor)) {
    snprintf(worst_rel, sizeof worst_rel, "; no golden cell above |golden| > %s", fl);
  }
  if (fin > 0)
    pg_run_linef(line, user, 0, "    %s: evidence: impl above golden at %lld, below at %lld of %lld "
                 "finite mismatches (mean signed diff %+.3g); worst abs %+.3g at %s%s", t->name,
                 (long long)mk->above, (long long)mk->below, (long long)fin,
                 mk->mean_signed_diff, c->max_signed_diff, ai, worst_rel);
  else
    pg_run_linef(line, user, 0, "    %s: evidence: all %lld mismatches are non-finite (NaN/Inf on "
                 "one side)", t->name, (long long)mk->mismatches);
  char axes[600] = "";
  size_t at = 0;
  for (int d = 0; d < mk->ndim && at < sizeof axes; d++) {
    const struct pg_cmp_axis_marginal *ax = &mk->axes[d];
    if (!ax->analyzed || ax->hit == 0 || ax->hit == ax->length) continue;
    at += (size_t)snprintf(axes + at, sizeof axes - at, "%saxis %d: %lld of %lld indices hit "
                           "(%lld..%lld, busiest %lld with %.0f%%)", at ? "; " : "", d,
                           (long long)ax->hit, (long long)ax->length, (long long)ax->first,
                           (long long)ax->last, (long long)ax->top, 100.0 * ax->top_share);
  }
  if (axes[0]) pg_run_linef(line, user, 0, "    %s: mismatch mask: %s", t->name, axes);
}

/* Lines of text (a block ending in newlines) one by one. */
static void text_lines(const char *s, pg_run_line_fn line, void *user) {
  while (s && *s) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    pg_run_linef(line, user, 0, "%.*s", (int)(n > 1500 ? 1500 : n), s);
    s = e ? e + 1 : s + n;
  }
}

void pg_report_case_lines(const struct pg_run_phase *ph, const struct pg_case_result *r,
                          pg_run_line_fn line, void *user) {
  if (r->not_implemented) { /* one line per case: no mode ran */
    pg_run_linef(line, user, 0, "[SKIP] %s M%d %s  %s: the impl was not called", ph->op,
                 ph->up_to_module, r->id, r->summary);
    return;
  }
  for (int mi = 0; mi < r->n_modes; mi++) {
    const struct pg_mode_result *m = &r->modes[mi];
    mode_line(ph, r, m, line, user);
    probe_lines(ph, m, line, user);
    /* the evidence first, then the diagnosis, strongest first, right under the line it
     * explains */
    for (int i = 0; i < m->n_tensors; i++)
      if (m->tensors[i].analyzed) evidence_lines(&m->tensors[i], line, user);
    text_lines(m->local_values, line, user);
    for (int i = 0; i < m->n_tensors; i++) {
      const struct pg_tensor_check *t = &m->tensors[i];
      if (t->one_sided)
        pg_run_linef(line, user, 1, "    warning: %s: PASS with one-sided errors: error_balance "
                     "%+.3f over %lld elements (the impl is %s the golden more often than not): "
                     "a formula, rounding or approximation difference the tolerance hides",
                     t->name, t->cmp.error_balance, (long long)t->cmp.n,
                     t->cmp.error_balance > 0 ? "above" : "below");
    }
    for (int i = 0; i < m->n_tensors; i++)
      for (int h = 0; h < m->tensors[i].n_hints; h++) {
        const struct pg_hint *hint = &m->tensors[i].hints[h];
        pg_run_linef(line, user, 1, "    %s: looks %s (confidence %.2f): %s", m->tensors[i].name,
                     pg_hint_kind_name(hint->kind), hint->confidence, hint->detail);
      }
    if (m->status == PG_VERDICT_FAIL || m->status == PG_VERDICT_ERROR)
      captured_tail(m, line, user);
  }
  if (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR)
    pg_run_linef(line, user, 1, "    repro: %s", r->repro ? r->repro : "");
  if (r->hint[0]) pg_run_linef(line, user, 1, "    hint: %s", r->hint);
  /* Suite strength: what this case could not have seen (the same in every mode). */
  for (int i = 0; r->n_modes > 0 && i < r->modes[0].n_tensors; i++) {
    const struct pg_tensor_check *t = &r->modes[0].tensors[i];
    if (!t->n_undetected) continue;
    char list[1024];
    size_t at = 0;
    list[0] = '\0';
    for (int u = 0; u < t->n_undetected && at + 4 < sizeof list; u++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", u ? "; " : "", t->undetected[u]);
    pg_run_linef(line, user, 1, "    warning: %s: weak suite, %d mutant%s would pass this case: %s",
                 t->name, t->n_undetected, t->n_undetected == 1 ? "" : "s", list);
  }
  /* Whether the stress found cancelling inputs decides how much a PASS means. */
  if (r->cancel.present) pg_run_linef(line, user, 0, "    %s", r->cancel.note);
}

void pg_report_summary_lines(const struct pg_run_phase *ph, const struct pg_run_summary *s,
                             const struct pg_case_result *cases, int n, pg_run_line_fn line,
                             void *user) {
  int k = ph->up_to_module;
  int not_impl = 0;
  for (int i = 0; i < n; i++) not_impl += cases[i].not_implemented;
  /* even when writing the report failed (status ERROR) */
  if (n > 0 && not_impl == n)
    pg_run_linef(line, user, 0, "[phasegate] SKIPPED %s M%d: %s; %d case(s) listed, not run",
                 ph->op, k, cases[0].summary, n);
  else if (n > 0 && s->skipped == n)
    pg_run_linef(line, user, 0, "[phasegate] SKIPPED %s M%d: every requested mode (%s) is "
                 "unavailable for %d case(s)", ph->op, k, ph->modes, n);
  pg_run_linef(line, user, 0, "[phasegate] %s M%d: %s  %d passed, %d failed, %d errors, %d "
               "skipped of %d case(s); report: %s", ph->op, k, pg_verdict_name(s->status),
               s->passed, s->failed, s->errors, s->skipped, n,
               s->report_path ? s->report_path : "");
  if (s->failed + s->errors == 0) return;
  for (int i = 0; i < n; i++) {
    const struct pg_case_result *r = &cases[i];
    if (r->status != PG_VERDICT_FAIL && r->status != PG_VERDICT_ERROR) continue;
    char early[48] = ""; /* bisection's finding, when it is news */
    if (r->earliest_boundary > 0 && r->earliest_boundary < k)
      snprintf(early, sizeof early, ", earliest failing M%d", r->earliest_boundary);
    const char *cat = pg_category_name(r->category);
    pg_run_linef(line, user, 0, "[phasegate] first failure: %s (%s%s%s, boundary M%d%s%s%s): "
                 "%.600s", r->id, cat ? cat : "other", r->subcategory ? "/" : "",
                 r->subcategory ? r->subcategory : "", k, early, r->fingerprint[0] ? ", " : "",
                 r->fingerprint, r->summary);
    return;
  }
}

/* ---- the live progress line ---- */

int pg_report_progress_wanted(int off) {
  const char *term = getenv("TERM");
  return !off && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) && term && *term &&
         strcmp(term, "dumb") != 0 && !getenv("CTEST_INTERACTIVE_DEBUG_MODE") &&
         !getenv("DASHBOARD_TEST_FROM_CTEST");
}

/* "0:42", "1:02:03" */
static void clock_text(double ms, char *buf, size_t size) {
  long s = ms > 0 && ms < 1e12 ? (long)(ms / 1000.0 + 0.5) : 0;
  if (s >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

/* All bytes to the terminal with write(2): the ticker never holds a stdio lock (a
 * fork of the runner, --fresh-process, must not inherit one held). */
static void put(FILE *out, const char *text, size_t n) {
  int fd = fileno(out);
  while (n > 0) {
    ssize_t w = write(fd, text, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    text += w, n -= (size_t)w;
  }
}

/* The line as of now_ms: the last update moved on by the time since it. p->mu held. */
static void draw_locked(struct pg_report_progress *p, double now_ms) {
  const struct pg_run_progress *r = &p->last;
  double since = now_ms - p->last_ms;
  char el[32], eta[48] = "", text[256];
  clock_text(r->elapsed_ms + since, el, sizeof el);
  if (r->done > 0 && r->done < r->total) {
    char t[32];
    double left = r->elapsed_ms / r->done * (r->total - r->done) - since;
    clock_text(left > 0 ? left : 0, t, sizeof t);
    snprintf(eta, sizeof eta, ", ETA %s", t);
  }
  int n = snprintf(text, sizeof text, "\r[phasegate] progress: %d/%d case-modes, %d failed, %s "
                   "elapsed%s", r->done, r->total, r->failed, el, eta);
  if (n < 0) return;
  if ((size_t)n >= sizeof text) n = (int)sizeof text - 1;
  /* A line wider than the terminal wraps, and \r would then redraw only its tail. */
  struct winsize ws;
  if (ioctl(fileno(p->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && n > ws.ws_col)
    n = ws.ws_col; /* the \r and ws_col - 1 characters */
  put(p->out, text, (size_t)n);
  put(p->out, "\033[K", 3);
  p->shown = 1;
}

static void clear_locked(struct pg_report_progress *p) {
  if (!p->out || !p->shown) return;
  put(p->out, "\r\033[K", 4);
  p->shown = 0;
}

/* Redraws the clock once a second between updates, while cases are left. */
static void *ticker(void *arg) {
  struct pg_report_progress *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&p->wake, &p->mu, &ts);
    double now = pg_now_ms();
    if (!p->stop && p->have_last && p->last.done < p->last.total &&
        now - p->t0_ms >= p->delay_ms)
      draw_locked(p, now);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

void pg_report_progress_init(struct pg_report_progress *p, FILE *out, double delay_ms) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->t0_ms = pg_now_ms();
  p->delay_ms = delay_ms;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  if (out) p->ticking = pthread_create(&p->tid, NULL, ticker, p) == 0;
}

void pg_report_progress_update(struct pg_report_progress *p, const struct pg_run_progress *r) {
  if (!p->out) return;
  pthread_mutex_lock(&p->mu);
  p->last = *r;
  p->last_ms = pg_now_ms();
  p->have_last = 1;
  if (p->last_ms - p->t0_ms >= p->delay_ms) draw_locked(p, p->last_ms);
  pthread_mutex_unlock(&p->mu);
}

/* Erases the line if one is shown. */
static void progress_clear(struct pg_report_progress *p) {
  if (!p->out) return;
  pthread_mutex_lock(&p->mu);
  clear_locked(p);
  pthread_mutex_unlock(&p->mu);
}

void pg_report_progress_line(struct pg_report_progress *p, FILE *f, const char *line) {
  if (p->out) pthread_mutex_lock(&p->mu);
  clear_locked(p);
  fputs(line, f);
  fputc('\n', f);
  fflush(f);
  if (p->out) pthread_mutex_unlock(&p->mu);
}

void pg_report_progress_end(struct pg_report_progress *p) {
  if (p->ticking) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->tid, NULL);
    p->ticking = 0;
  }
  progress_clear(p);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
}
