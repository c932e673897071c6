/* phasegate runner — the ops table of the impl adapters: --impl parsing (the row is
 * picked by prefix, the one place that reads the prefix), the persistent program of an
 * impl, the one-time check and the two-step call dispatched through the row. What the
 * adapters share lies below them, in outcome.c. Never decides a verdict. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "impl/adapter.h"
#include "base/base.h"
#include "tensors/tensors.h"

/* The adapters, one row each, in the order the usage message lists them. */
#define PG_IMPL_ADAPTERS(X) \
  X(plugin)                 \
  X(exec)                   \
  X(worker)                 \
  X(python)                 \
  X(replay)

#define PG_IMPL_DECLARE(name) extern const struct pg_impl_ops pg__##name##_ops;
PG_IMPL_ADAPTERS(PG_IMPL_DECLARE)
#define PG_IMPL_ROW(name) &pg__##name##_ops,
static const struct pg_impl_ops *const adapters[] = {PG_IMPL_ADAPTERS(PG_IMPL_ROW)};
#define PG_N_ADAPTERS (sizeof adapters / sizeof *adapters)

/* "plugin:PATH.so, exec:COMMAND or replay:DIR; a bare PATH.so is plugin:", the bare
 * suffixes from the rows too */
static void usage_list(char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < PG_N_ADAPTERS && used < size; i++) {
    const char *sep = i == 0 ? "" : i + 1 == PG_N_ADAPTERS ? " or " : ", ";
    int n = snprintf(buf + used, size - used, "%s%s", sep, adapters[i]->usage);
    if (n < 0) break;
    used += (size_t)n;
  }
  for (size_t i = 0, k = 0; i < PG_N_ADAPTERS && used < size; i++) {
    if (!adapters[i]->bare_suffix) continue;
    int n = snprintf(buf + used, size - used, "%s PATH%s is %s:", k++ ? "," : "; a bare",
                     adapters[i]->bare_suffix, adapters[i]->name);
    if (n < 0) break;
    used += (size_t)n;
  }
}

static int take_target(struct pg_impl *impl, const struct pg_impl_ops *ops, const char *target,
                       struct pg_error *err) {
  if (strlen(target) >= sizeof impl->target)
    return pg_error_set(err, PG_ELIMIT, "--impl: spec too long");
  impl->ops = ops;
  memcpy(impl->target, target, strlen(target) + 1);
  return PG_OK;
}

int pg_impl_parse(const char *spec, struct pg_impl *impl, struct pg_error *err) {
  memset(impl, 0, sizeof *impl);
  if (!spec || !*spec) return pg_error_set(err, PG_EINVAL, "empty --impl");
  for (size_t i = 0; i < PG_N_ADAPTERS; i++) {
    size_t n = strlen(adapters[i]->name);
    if (strncmp(spec, adapters[i]->name, n) == 0 && spec[n] == ':') {
      if (!spec[n + 1])
        return pg_error_set(err, PG_EINVAL, "--impl '%s': nothing after '%s:'", spec,
                            adapters[i]->name);
      return take_target(impl, adapters[i], spec + n + 1, err);
    }
  }
  size_t len = strlen(spec);
  for (size_t i = 0; i < PG_N_ADAPTERS; i++) {
    const char *suf = adapters[i]->bare_suffix;
    size_t sl = suf ? strlen(suf) : 0;
    if (suf && len > sl && strcmp(spec + len - sl, suf) == 0 && len < sizeof impl->target)
      return take_target(impl, adapters[i], spec, err);
  }
  char forms[512];
  usage_list(forms, sizeof forms);
  size_t scheme = strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
  if (scheme > 0 && spec[scheme] == ':')
    return pg_error_set(err, PG_EINVAL, "--impl '%s': unknown scheme '%.*s:'; expected %s", spec,
                        (int)scheme, spec, forms);
  return pg_error_set(err, PG_EINVAL, "--impl '%s': expected %s", spec, forms);
}

int pg_impl_worker(const char *command, struct pg_impl *impl, struct pg_error *err) {
  memset(impl, 0, sizeof *impl);
  if (!command || !*command) return pg_error_set(err, PG_EINVAL, "an empty worker command");
  return take_target(impl, &pg__worker_ops, command, err);
}

const char *pg_impl_kind(const struct pg_impl *impl) {
  return impl && impl->ops ? impl->ops->name : "";
}

int pg_impl_process(const struct pg_impl *impl, struct pg_proc_program *out,
                    struct pg_error *err) {
  memset(out, 0, sizeof *out);
  if (!impl || !impl->ops || !impl->ops->process)
    return pg_error_set(err, PG_EINVAL, "'%s:' impls run no persistent process",
                        pg_impl_kind(impl));
  return impl->ops->process(impl, out, err);
}

void pg_impl_close(struct pg_impl *impl) {
  if (!impl || !impl->ops) return;
  if (impl->ops->close) impl->ops->close(impl);
  impl->state = NULL;
}

/* ------------------------------------------------------------------ the one-time check */

void pg_impl_prestart(struct pg_impl *impl, const char *mode, int device, uint64_t rlimit_as,
                      double timeout_s) {
  if (impl && impl->ops && impl->ops->prestart)
    impl->ops->prestart(impl, mode, device, rlimit_as, timeout_s);
}

int pg_impl_check_start(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                        struct pg_impl_probe *p, struct pg_error *err) {
  memset(p, 0, sizeof *p);
  p->impl = impl;
  p->timeout_s = timeout_s;
  p->rlimit_as = rlimit_as;
  if (!impl->ops) return pg_error_set(err, PG_EINVAL, "--impl was not parsed");
  return impl->ops->probe_start ? impl->ops->probe_start(p, err) : PG_OK;
}

int pg_impl_check_finish(struct pg_impl_probe *p, struct pg_error *err) {
  if (!p->running) return PG_OK;
  int rc = p->impl->ops->probe_finish(p, err);
  p->running = 0;
  return rc;
}

void pg_impl_check_cancel(struct pg_impl_probe *p) {
  if (!p->running) return;
  p->impl->ops->probe_cancel(p);
  p->running = 0;
}

int pg_impl_check(const struct pg_impl *impl, double timeout_s, uint64_t rlimit_as,
                  struct pg_error *err) {
  struct pg_impl_probe p;
  int rc = pg_impl_check_start(impl, timeout_s, rlimit_as, &p, err);
  return rc == PG_OK ? pg_impl_check_finish(&p, err) : rc;
}

/* ------------------------------------------------------------------ one call */

int pg_impl_start(const struct pg_impl *impl, const struct pg_impl_request *req,
                  struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err) {
  memset(p, 0, sizeof *p);
  p->impl = impl;
  p->req = req;
  pg_impl_outcome_init(out);
  if (req->n_outputs > PG_IMPL_MAX_OUTPUTS)
    p->rc = pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", PG_IMPL_MAX_OUTPUTS);
  else if (!impl->ops)
    p->rc = pg_error_set(err, PG_EINVAL, "--impl was not parsed");
  else
    p->rc = impl->ops->start(p, out, err);
  return p->rc;
}

int pg_impl_finish(struct pg_impl_pending *p, struct pg_impl_outcome *out, struct pg_error *err) {
  if (p->running) p->rc = p->impl->ops->finish(p, out, err);
  p->running = 0;
  return p->rc;
}

int pg_impl_invoke(const struct pg_impl *impl, const struct pg_impl_request *req,
                   struct pg_impl_outcome *out, struct pg_error *err) {
  struct pg_impl_pending p;
  pg_impl_start(impl, req, &p, out, err);
  return pg_impl_finish(&p, out, err);
}
