/* tests/serve: a worker (docs/design.md §6 "Worker protocol, version 1") that does on each
 * request what its "action" says, for the daemon's tests and the throughput bench.
 *
 *   serve_worker [--tag T] [--start-ms N] [--fail-start CODE] [--garbage-start]
 *
 * Actions: ok (answer ok, message = "<pid> <calls>"), echo (message = the request's
 * "token"), env (message = getenv(request "name") or "(unset)"), cwd, umask, device
 * (PHASEGATE_DEVICE_ID and PHASEGATE_MODE), print (writes "out <n>" to stdout and
 * "err <n>" to stderr, then answers ok), crash (SIGSEGV), abort (SIGABRT), exit
 * (exit with request "code"), hang (never answers), twice (answers twice: a protocol
 * break between calls), spawn (starts a background `sleep 300` in its group, answers
 * with its pid). End of input: exit 0. --tag only marks the command line.
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Under ASan the worker's exit status is what the tests check: no leak report. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return 1; }

static int rfd = 3, wfd = 4;
static char buf[1 << 20];
static size_t len;

static char *read_line(void) {
  for (;;) {
    char *nl = memchr(buf, '\n', len);
    if (nl) {
      size_t n = (size_t)(nl - buf);
      char *line = malloc(n + 1);
      memcpy(line, buf, n);
      line[n] = '\0';
      memmove(buf, nl + 1, len - n - 1);
      len -= n + 1;
      return line;
    }
    if (len == sizeof buf) return NULL;
    ssize_t got = read(rfd, buf + len, sizeof buf - len);
    if (got <= 0) return NULL;
    len += (size_t)got;
  }
}

static void send_line(const char *text) {
  size_t n = strlen(text), off = 0;
  while (off < n) {
    ssize_t w = write(wfd, text + off, n - off);
    if (w <= 0) exit(9);
    off += (size_t)w;
  }
}

static void reply(double id, const char *status, const char *message) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", id);
  cJSON_AddStringToObject(o, "status", status);
  if (message) cJSON_AddStringToObject(o, "message", message);
  char *t = cJSON_PrintUnformatted(o);
  char *line = malloc(strlen(t) + 2);
  sprintf(line, "%s\n", t);
  send_line(line);
  free(line);
  free(t);
  cJSON_Delete(o);
}

int main(int argc, char **argv) {
  int start_ms = 0, fail_start = -1, garbage = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--start-ms") == 0 && i + 1 < argc) start_ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "--fail-start") == 0 && i + 1 < argc) fail_start = atoi(argv[++i]);
    else if (strcmp(argv[i], "--garbage-start") == 0) garbage = 1;
    else if (strcmp(argv[i], "--tag") == 0 && i + 1 < argc) i++;
  }
  const char *fds = getenv("PHASEGATE_WORKER_FDS");
  if (!fds || sscanf(fds, "%d,%d", &rfd, &wfd) != 2) {
    fprintf(stderr, "serve_worker: PHASEGATE_WORKER_FDS is not set\n");
    return 2;
  }
  printf("serve_worker starting\n");
  fflush(stdout);
  if (start_ms > 0) usleep((useconds_t)start_ms * 1000);
  if (fail_start >= 0) {
    fprintf(stderr, "serve_worker: failing before the handshake\n");
    return fail_start;
  }
  send_line(garbage ? "hello there\n" : "{\"phasegate_worker\": 1}\n");
  int calls = 0;
  for (char *line; (line = read_line()) != NULL; free(line)) {
    cJSON *req = cJSON_Parse(line);
    double id = cJSON_GetNumberValue(cJSON_GetObjectItem(req, "id"));
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItem(req, "action"));
    char msg[4096];
    calls++;
    if (!action || strcmp(action, "ok") == 0) {
      snprintf(msg, sizeof msg, "%d %d", (int)getpid(), calls);
      reply(id, "ok", msg);
    } else if (strcmp(action, "echo") == 0) {
      const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(req, "token"));
      reply(id, "ok", t ? t : "");
    } else if (strcmp(action, "env") == 0) {
      const char *v = getenv(cJSON_GetStringValue(cJSON_GetObjectItem(req, "name")));
      reply(id, "ok", v ? v : "(unset)");
    } else if (strcmp(action, "cwd") == 0) {
      if (!getcwd(msg, sizeof msg)) strcpy(msg, "?");
      reply(id, "ok", msg);
    } else if (strcmp(action, "umask") == 0) {
      mode_t m = umask(0);
      umask(m);
      snprintf(msg, sizeof msg, "%03o", (unsigned)m);
      reply(id, "ok", msg);
    } else if (strcmp(action, "device") == 0) {
      snprintf(msg, sizeof msg, "%s %s", getenv("PHASEGATE_MODE"), getenv("PHASEGATE_DEVICE_ID"));
      reply(id, "ok", msg);
    } else if (strcmp(action, "print") == 0) {
      printf("out %d\n", calls);
      fflush(stdout);
      fprintf(stderr, "err %d\n", calls);
      reply(id, "ok", NULL);
    } else if (strcmp(action, "crash") == 0) {
      fprintf(stderr, "crashing\n");
      signal(SIGSEGV, SIG_DFL); /* past a sanitizer's handler: a plain SIGSEGV */
      raise(SIGSEGV);
    } else if (strcmp(action, "abort") == 0) {
      abort();
    } else if (strcmp(action, "exit") == 0) {
      exit((int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "code")));
    } else if (strcmp(action, "hang") == 0) {
      for (;;) pause();
    } else if (strcmp(action, "twice") == 0) {
      reply(id, "ok", NULL);
      reply(id, "ok", NULL);
    } else if (strcmp(action, "spawn") == 0) {
      pid_t c = fork();
      if (c == 0) {
        close(rfd);
        close(wfd);
        execl("/bin/sleep", "sleep", "300", (char *)NULL);
        _exit(127);
      }
      snprintf(msg, sizeof msg, "%d", (int)c);
      reply(id, "ok", msg);
    } else {
      reply(id, "error", "unknown action");
    }
    cJSON_Delete(req);
  }
  return 0;
}
