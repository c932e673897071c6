/* phasegate-plugin-host — the persistent plugin host (docs/design.md §6 "Persistent by
 * default"): a small program the runner starts by exec (posix_spawn), never a fork of
 * the threaded runner, so a CUDA or NPU context is created here once and never
 * inherited. It dlopen()s one impl plugin and serves calls over the worker protocol
 * (docs/worker_protocol.md) on the fds named by PHASEGATE_WORKER_FDS:
 *
 *   runner → host: one JSON line per call; the call memory (a memfd holding a header
 *                  page and the tensors) comes with the first call and whenever the
 *                  runner replaced it (SCM_RIGHTS), and is kept mapped in between; {"symbol", "size", "inputs": [{name,
 *                  dtype, shape, offset}], "outputs": [...], "mode", "device_id",
 *                  "case", "dims", "knobs", "op", "suffix", "up_to_module",
 *                  "total_modules", "id"}
 *   host → runner: {"id": n, "status": "ok"} once the wrapper returned; how far the
 *                  call got and its return code are in the header page
 *                  (plugin_shm.h), so the runner judges a persistent call exactly as
 *                  a forked one. A crash ends this process: the runner sees EOF,
 *                  classifies the call and starts a fresh host.
 *
 * stdout and stderr are the runner's log of this process (never the protocol). Usage:
 *   phasegate-plugin-host PLUGIN.so     (with PHASEGATE_WORKER_FDS=R,W set)
 *   phasegate-plugin-host --exec PROGRAM [ARG...]
 * With PHASEGATE_DIE_WITH=<pid> set (the runner sets it on what it spawns itself), the
 * host dies with that process (PR_SET_PDEATHSIG, SIGKILL) and exits at once when it is
 * not its parent any more. `--exec` is the runner's exec shim for `worker:` commands
 * (posix_spawn runs no code in the child): the same, then execv(PROGRAM); the death
 * signal survives the exec (docs/runner.md "Nothing outlives the runner").
 * Exit: 0 at end of input, 2 usage, 3 the plugin cannot be loaded, 127 --exec failed,
 * 0 at once when the runner is already gone.
 */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/plugin_shm.h"
#include "impl/proc.h"
#include "impl/sandbox.h"
#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define HOST_MAX_TENSORS 64
#define HOST_MAX_DIMS 64
#define HOST_MAX_LINE (4u << 20)

struct host {
  int rfd, wfd;
  void *plugin;
  char *buf;
  size_t len, cap;
  int pending_fd; /* the memory fd that came with the line being read */
  char *mem;      /* the call memory, mapped (kept from call to call) */
  size_t mem_size;
};

/* Takes a newly passed call memory fd: the old mapping goes, the new one is mapped
 * whole. 0, or -1 with a reason. */
static int take_memory(struct host *h, int fd, char *why, size_t why_size) {
  if (h->mem) munmap(h->mem, h->mem_size);
  h->mem = NULL;
  h->mem_size = 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return snprintf(why, why_size, "call memory of no size"), -1;
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd); /* the mapping stays */
  if (m == MAP_FAILED) return snprintf(why, why_size, "mmap: %s", strerror(errno)), -1;
  h->mem = m;
  h->mem_size = (size_t)st.st_size;
  return 0;
}

/* A memory fd passed with the request bytes: the newest wins (an older one is closed). */
static void keep_fd(void *ctx, int fd) {
  struct host *h = ctx;
  if (h->pending_fd >= 0) close(h->pending_fd);
  h->pending_fd = fd;
}

/* One line (malloc'ed, no '\n') or NULL at EOF / error. Memory fds arriving with the
 * bytes are kept in h->pending_fd (the newest wins; an older one is closed). */
static char *read_line(struct host *h) {
  for (;;) {
    char *nl = h->len ? memchr(h->buf, '\n', h->len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - h->buf);
      char *line = malloc(n + 1);
      if (!line) return NULL;
      memcpy(line, h->buf, n);
      line[n] = '\0';
      memmove(h->buf, nl + 1, h->len - n - 1);
      h->len -= n + 1;
      return line;
    }
    if (h->len >= HOST_MAX_LINE) return NULL;
    if (h->cap - h->len < 65536) {
      size_t cap = h->cap ? h->cap * 2 : 131072;
      char *b = realloc(h->buf, cap);
      if (!b) return NULL;
      h->buf = b, h->cap = cap;
    }
    ssize_t got = pg__recv_fds(h->rfd, h->buf + h->len, h->cap - h->len, keep_fd, h);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return NULL;
    h->len += (size_t)got;
  }
}

static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w, n -= (size_t)w;
  }
  return 0;
}

static int answer(struct host *h, double id, const char *status, const char *message) {
  char line[1400];
  int n = message ? snprintf(line, sizeof line, "{\"id\": %.0f, \"status\": \"%s\", "
                             "\"message\": \"%s\"}\n", id, status, message)
                  : snprintf(line, sizeof line, "{\"id\": %.0f, \"status\": \"%s\"}\n", id,
                             status);
  return write_all(h->wfd, line, (size_t)n);
}

/* Tensors of a request: data inside the mapping, shapes in `shapes`. 0, or -1 with a
 * reason in why. */
static int bind_tensors(const cJSON *arr, char *base, size_t size, DLTensor *t, int64_t *shapes,
                        int *n, char *why, size_t why_size) {
  *n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    if (*n >= HOST_MAX_TENSORS) return snprintf(why, why_size, "too many tensors"), -1;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "offset");
    enum pg_dtype d = cJSON_IsString(dt) ? pg_dtype_parse(dt->valuestring) : PG_DTYPE_INVALID;
    int nd = cJSON_GetArraySize(sh);
    if (d == PG_DTYPE_INVALID || !cJSON_IsArray(sh) || nd > PG_MAX_NDIM || !cJSON_IsNumber(off))
      return snprintf(why, why_size, "malformed tensor entry"), -1;
    int64_t *s = shapes + (size_t)*n * PG_MAX_NDIM, numel = 1;
    for (int a = 0; a < nd; a++) {
      s[a] = (int64_t)cJSON_GetArrayItem(sh, a)->valuedouble;
      numel *= s[a];
    }
    size_t o = (size_t)off->valuedouble, nbytes = (size_t)numel * pg_dtype_size(d);
    if (o > size || nbytes > size - o) return snprintf(why, why_size, "tensor outside memory"), -1;
    memset(&t[*n], 0, sizeof t[*n]);
    t[*n].data = base + o;
    t[*n].device.device_type = kDLCPU;
    t[*n].ndim = nd;
    t[*n].dtype = pg_dtype_to_dl(d);
    t[*n].shape = s;
    (*n)++;
  }
  return 0;
}

static void fill_call(pg_call *call, const cJSON *req, struct pg_plugin_shm_hdr *hdr,
                      const char **dim_names, int64_t *dim_values, char **knobs) {
  memset(call, 0, sizeof *call);
  call->abi_version = PG_IMPL_ABI_VERSION;
  call->struct_size = (uint32_t)sizeof *call;
  call->op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "op"));
  call->suffix = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "suffix"));
  call->up_to_module = (int32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(req, "up_to_module"));
  call->total_modules = (int32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(req, "total_modules"));
  call->mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "mode"));
  call->device_id = (int32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(req, "device_id"));
  call->case_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "case"));
  const cJSON *d;
  cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(req, "dims")) {
    if (call->n_dims >= HOST_MAX_DIMS) break;
    dim_names[call->n_dims] = d->string;
    dim_values[call->n_dims++] = (int64_t)d->valuedouble;
  }
  call->dim_names = dim_names;
  call->dim_values = dim_values;
  *knobs = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(req, "knobs"));
  call->knobs_json = *knobs ? *knobs : "{}";
  call->log = pg__impl_log;
  call->user = hdr;
  call->device_name = pg__impl_device_name;
}

/* Serves one request line. 0 to go on, -1 to stop (the runner is gone). */
static int serve(struct host *h, const char *line) {
  cJSON *req = cJSON_Parse(line);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
  if (!cJSON_IsNumber(id)) {
    fprintf(stderr, "phasegate-plugin-host: malformed request line\n");
    cJSON_Delete(req);
    return -1; /* the runner treats the missing answer as a protocol failure */
  }
  int fd = h->pending_fd;
  h->pending_fd = -1;
  size_t size = (size_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(req, "size"));
  const char *symbol = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "symbol"));
  char why[200] = "";
  int rc = 0;
  char *base = MAP_FAILED;
  if (fd >= 0 && take_memory(h, fd, why, sizeof why) != 0) {
    /* why says it */
  } else if (!h->mem || size < sizeof(struct pg_plugin_shm_hdr) || size > h->mem_size ||
             !symbol) {
    snprintf(why, sizeof why, "request without its memory, size or symbol");
  } else {
    base = h->mem;
    size = h->mem_size;
  }
  if (base == MAP_FAILED) {
    rc = answer(h, id->valuedouble, "error", why);
    cJSON_Delete(req);
    return rc;
  }
  struct pg_plugin_shm_hdr *hdr = (struct pg_plugin_shm_hdr *)base;
  static DLTensor in[HOST_MAX_TENSORS], out[HOST_MAX_TENSORS];
  static int64_t in_shapes[HOST_MAX_TENSORS * PG_MAX_NDIM], out_shapes[HOST_MAX_TENSORS * PG_MAX_NDIM];
  int n_in = 0, n_out = 0;
  if (bind_tensors(cJSON_GetObjectItemCaseSensitive(req, "inputs"), base, size, in, in_shapes,
                   &n_in, why, sizeof why) != 0 ||
      bind_tensors(cJSON_GetObjectItemCaseSensitive(req, "outputs"), base, size, out, out_shapes,
                   &n_out, why, sizeof why) != 0) {
    rc = answer(h, id->valuedouble, "error", why);
    cJSON_Delete(req);
    return rc;
  }
  dlerror();
  void *sym = dlsym(h->plugin, symbol);
  if (!sym) {
    hdr->stage = PG_PLUGIN_STAGE_NOSYM;
  } else {
    pg_wrapper_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    const char *dim_names[HOST_MAX_DIMS];
    int64_t dim_values[HOST_MAX_DIMS];
    char *knobs = NULL;
    pg_call call;
    fill_call(&call, req, hdr, dim_names, dim_values, &knobs);
    hdr->stage = PG_PLUGIN_STAGE_CALLING;
    int wrc = fn(in, n_in, out, n_out, &call);
    hdr->rc = wrc;
    hdr->stage = PG_PLUGIN_STAGE_RETURNED;
    free(knobs);
  }
  fflush(NULL);
  rc = answer(h, id->valuedouble, "ok", NULL);
  cJSON_Delete(req);
  return rc;
}

/* PHASEGATE_DIE_WITH: die with that process; 0, or -1 when it is gone already. */
static int die_with_runner(void) {
  const char *v = getenv(PG_DIE_WITH_ENV);
  char *end = NULL;
  long parent = v && *v ? strtol(v, &end, 10) : 0;
  if (parent <= 0 || !end || *end) return 0;
  return pg__die_with(parent);
}

int main(int argc, char **argv) {
  if (die_with_runner() != 0) return 0; /* the runner is gone: nobody to serve */
  if (argc >= 3 && strcmp(argv[1], "--exec") == 0) {
    execv(argv[2], argv + 2);
    fprintf(stderr, "phasegate-plugin-host --exec: cannot run %s: %s\n", argv[2], strerror(errno));
    return 127;
  }
  unsetenv(PG_DIE_WITH_ENV); /* what the plugin starts is not the runner's child */
  pg_sandbox_default_signals(); /* a crash of the impl ends the host with its signal */
  const char *fds = getenv("PHASEGATE_WORKER_FDS");
  struct host h;
  memset(&h, 0, sizeof h);
  h.pending_fd = -1;
  if (argc != 2 || !fds || sscanf(fds, "%d,%d", &h.rfd, &h.wfd) != 2) {
    fprintf(stderr, "usage: PHASEGATE_WORKER_FDS=R,W phasegate-plugin-host PLUGIN.so\n"
                    "(started by `phasegate run`; not meant to be run by hand)\n");
    return 2;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s%s", strchr(argv[1], '/') ? "" : "./", argv[1]);
  h.plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h.plugin) {
    const char *e = dlerror();
    fprintf(stderr, "cannot load impl plugin: %s\n", e ? e : "dlopen failed");
    return 3;
  }
  static const char hello[] = "{\"phasegate_worker\": 1}\n";
  if (write_all(h.wfd, hello, sizeof hello - 1) != 0) return 0;
  for (;;) {
    char *line = read_line(&h);
    if (!line) break; /* EOF: the runner is done with this host */
    int stop = serve(&h, line);
    free(line);
    if (stop) break;
  }
  free(h.buf);
  return 0;
}
