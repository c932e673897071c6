/* phasegate run — runs one phase of an op against an impl (docs/design.md §6, §8, §9;
 * docs/interfaces.md pins the options, the skip marker and the exit codes the CMake
 * layer relies on). Parses options, wires the report room's hooks (report, console
 * lines, the information barrier) into pg_run, prints the console lines, exits
 * 0 PASS / 1 FAIL / 2 ERROR / 77 all SKIPPED. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report/report.h"
#include "run/run.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate run --op-dir DIR --impl SPEC --up-to-module K [options]\n"
          "\n"
          "Runs phase K (modules M1..MK) of the op's impl against cumulative golden K for\n"
          "every selected case and mode, and merges the results into\n"
          "<report-dir>/<op>/M<K>/evaluation_report.json (a pypto op directory, DIR/eval/:\n"
          "DIR/eval/evaluation_report.json, as the seed's runner).\n"
          "\n"
          "  --op-dir DIR               module_interfaces.yaml + adversarial_suite.json (or DIR/eval);\n"
          "                             default: --suite's directory, else ./, holding the\n"
          "                             contract (custom/<op>/eval/ means custom/<op>, as the seed)\n"
          "  --contract FILE            the contract, explicitly (suite defaults to its directory)\n"
          "  --suite FILE               the suite, explicitly\n"
          "  --impl SPEC                plugin:PATH.so | exec:COMMAND | worker:COMMAND |\n"
          "                             python:FILE.py[::FUNCTION] | python:DIR | replay:DIR\n"
          "                             (a bare PATH.so is plugin:, a bare PATH.py python:)\n"
          "  --python PATH              interpreter of python: impls (default $PHASEGATE_PYTHON,\n"
          "                             else python3)\n"
          "  --up-to-module K           the phase (1..N, N = the op's module count)\n"
          "  --implemented-phases P     the impl implements phases 1..P so far (CMake PHASES):\n"
          "                             a phase K > P is SKIPPED as not implemented yet,\n"
          "                             reported, the impl never touched (exit 77)\n"
          "  --case ID[,ID…]            only these cases\n"
          "  --levels L1,L2             only these levels\n"
          "  --modes sim,npu            modes to run, in order (default: sim)\n"
          "  --report PATH              report file (default: <report-dir>/<op>/M<K>/evaluation_report.json,\n"
          "                             or DIR/eval/evaluation_report.json for a pypto --op-dir DIR)\n"
          "  --report-dir DIR           default ./phasegate-reports (given: also for pypto op dirs);\n"
          "                             PHASEGATE_REPORT_ROOT set (a fleet shard) replaces it\n"
          "  --report-name NAME         <report-dir>/NAME/M<K>/ instead of the op's name (the CMake\n"
          "                             registration: two registrations of one op never share a report)\n"
          "  --report-session FILE      merge into the report of the session FILE names (one ctest\n"
          "                             invocation); without it a run's report holds that run alone\n"
          "  --timeout S                per impl call (default 120)\n"
          "  --save-data DIR            write DIR/<case>/in/*.npy, DIR/<case>/out/*.npy (golden) and\n"
          "                             DIR/<case>/impl/<mode>/*.npy (the impl's outputs as compared)\n"
          "  --golden-data DIR          use inputs and references saved by --save-data\n"
          "                             (with --impl replay:DIR: the saved impl outputs too)\n"
          "  --reference-precision P    fp32 (default) or fp64\n"
          "  --golden-lib SO            golden plugin library\n"
          "  --no-golden-cache          always recompute goldens\n"
          "  --max-bytes N              input byte budget per case\n"
          "  --memory-limit N           RLIMIT_AS for impl calls, bytes (suffix K/M/G allowed)\n"
          "  --device-id N              else CTEST_RESOURCE_GROUP_0_<TYPE>, else\n"
          "                             TILE_FWK_DEVICE_ID, else 0\n"
          "  --work-dir DIR             where exec case directories go (default $TMPDIR)\n"
          "  --keep-work                keep exec case directories\n"
          "  --fresh-process            one impl process per call (default: plugin and worker\n"
          "                             impls start once per mode and device and serve every call)\n"
          "  --worker-max-calls N       replace a persistent impl process after N calls\n"
          "  --serve-control DIR        lease warm impl processes from `phasegate serve` there\n"
          "  --no-bisect                do not look for the earliest failing boundary\n"
          "  --jobs N                   run cases in N worker processes (default 1)\n"
          "  --inspect NAME             print every metric of output NAME per case and mode\n"
          "  --diagnose-budget S        seconds of counterfactual goldens per case (default 4x\n"
          "                             the case's own time, 2..30 s; 0 = no diagnosis;\n"
          "                             docs/diagnosis.md)\n"
          "  --diagnose-max-mib N       diagnose failing outputs up to N MiB each (default 512)\n"
          "  --suite-strength-max-elems N  suite strength for outputs up to N elements\n"
          "                             (default 65536, 0 = off)\n"
          "  --repeat N                 call the impl N times per case and mode on the same\n"
          "                             inputs and compare the outputs bitwise (a warning,\n"
          "                             hint nondeterministic; default 1)\n"
          "  --no-progress              no live progress line (drawn on a terminal once a\n"
          "                             run takes a second, ticking while a case runs; never\n"
          "                             on a pipe, under CTest or with --jobs)\n"
          "  --show-values              print impl and golden values at the worst and first\n"
          "                             mismatches on the console (never in the report): breaks\n"
          "                             the information barrier on this terminal\n"
          "\n"
          "Exit: 0 PASS, 1 FAIL, 2 ERROR, 77 every requested mode SKIPPED\n"
          "(prints a line starting with \"[phasegate] SKIPPED\").\n");
}

/* user: the progress line, erased before every console line. */
static void on_line(void *user, int to_stderr, const char *line) {
  pg_report_progress_line(user, to_stderr ? stderr : stdout, line);
}

static void on_progress(void *user, const struct pg_run_progress *p) {
  pg_report_progress_update(user, p);
}

static int parse_levels(const char *s, unsigned *mask) {
  *mask = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*t == 'L' || *t == 'l') t++;
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v < 0 || v > 9) return -1;
    *mask |= 1u << v;
  }
  return *mask ? 0 : -1;
}

/* One `--name VALUE` option into o: 0, or the exit code of a usage error. */
static int set_option(struct pg_run_opts *o, const char *name, const char *val) {
  char *end;
  if (strcmp(name, "--op-dir") == 0) o->op_dir = val;
  else if (strcmp(name, "--contract") == 0) o->contract_path = val;
  else if (strcmp(name, "--suite") == 0) o->suite_path = val;
  else if (strcmp(name, "--impl") == 0) o->impl_spec = val;
  else if (strcmp(name, "--up-to-module") == 0) {
    /* Checked against the op's module count once the contract is loaded, so the
     * message can name the valid range; -1 marks "given but not a number". */
    size_t digits = strspn(val, "0123456789");
    o->up_to_module = digits > 0 && digits <= 6 && !val[digits] ? atoi(val) : -1;
    o->up_to_module_arg = val;
  } else if (strcmp(name, "--implemented-phases") == 0) {
    /* 1..N; the upper bound is checked against the contract (run.c) */
    size_t digits = strspn(val, "0123456789");
    int p = digits > 0 && digits <= 6 && !val[digits] ? atoi(val) : 0;
    if (p < 1)
      return pg_cli_usage_error("run", "--implemented-phases: expected a phase number >= 1 "
                                "(the phases implemented so far), got '%s'", val);
    o->implemented_phases = p;
  } else if (strcmp(name, "--case") == 0) o->case_ids = val;
  else if (strcmp(name, "--levels") == 0) {
    if (parse_levels(val, &o->levels_mask) != 0)
      return pg_cli_usage_error("run", "--levels: expected e.g. L1,L2, got '%s'", val);
  } else if (strcmp(name, "--modes") == 0) o->modes = val;
  else if (strcmp(name, "--report") == 0) o->report_path = val;
  else if (strcmp(name, "--report-dir") == 0) o->report_dir = val;
  else if (strcmp(name, "--report-name") == 0) {
    size_t ok = strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    if (!*val || val[ok] || strcmp(val, ".") == 0 || strcmp(val, "..") == 0)
      return pg_cli_usage_error("run", "--report-name: '%s' is not a name ([A-Za-z0-9_.-]+)", val);
    o->report_name = val;
  } else if (strcmp(name, "--report-session") == 0) o->report_session = val;
  else if (strcmp(name, "--timeout") == 0) {
    o->timeout_s = strtod(val, &end);
    if (end == val || *end || !(o->timeout_s > 0) || !isfinite(o->timeout_s) || o->timeout_s > 1e7)
      return pg_cli_usage_error("run", "--timeout: expected seconds > 0 (at most 1e7), got '%s'", val);
  } else if (strcmp(name, "--save-data") == 0) o->save_data = val;
  else if (strcmp(name, "--golden-data") == 0) o->golden_data = val;
  else if (strcmp(name, "--reference-precision") == 0) {
    if (strcmp(val, "fp32") == 0) o->reference_bits = 32;
    else if (strcmp(val, "fp64") == 0) o->reference_bits = 64;
    else return pg_cli_usage_error("run", "--reference-precision: fp32 or fp64, got '%s'", val);
  } else if (strcmp(name, "--golden-lib") == 0) o->golden_lib = val;
  else if (strcmp(name, "--max-bytes") == 0) {
    if (pg_cli_parse_bytes(val, &o->max_bytes) != 0)
      return pg_cli_usage_error("run", "--max-bytes: expected a byte count, got '%s'", val);
  } else if (strcmp(name, "--memory-limit") == 0) {
    if (pg_cli_parse_bytes(val, &o->rlimit_as) != 0)
      return pg_cli_usage_error("run", "--memory-limit: expected a byte count, got '%s'", val);
  } else if (strcmp(name, "--device-id") == 0) {
    long d = strtol(val, &end, 10);
    if (*end || d < 0 || d > 1000000)
      return pg_cli_usage_error("run", "--device-id: expected an integer, got '%s'", val);
    o->device_id = (int)d;
  } else if (strcmp(name, "--work-dir") == 0) o->work_dir = val;
  else if (strcmp(name, "--jobs") == 0) {
    long j = strtol(val, &end, 10);
    if (*end || j < 0 || j > 64)
      return pg_cli_usage_error("run", "--jobs: expected 0..64, got '%s'", val);
    o->jobs = (int)j;
  } else if (strcmp(name, "--worker-max-calls") == 0) {
    char *end;
    long m = strtol(val, &end, 10);
    if (*end || end == val || m < 0 || m > 1000000000)
      return pg_cli_usage_error("run", "--worker-max-calls: expected a count >= 0, got '%s'", val);
    o->worker_max_calls = (int)m;
  } else if (strcmp(name, "--serve-control") == 0) o->serve_control = val;
  else if (strcmp(name, "--python") == 0) o->python = val;
  else if (strcmp(name, "--inspect") == 0) o->inspect = val;
  else if (strcmp(name, "--diagnose-budget") == 0 || strcmp(name, "--diagnose-max-mib") == 0 ||
           strcmp(name, "--suite-strength-max-elems") == 0) {
    double v = strtod(val, &end);
    if (end == val || *end || !(v >= 0) || !isfinite(v) || v > 1e12)
      return pg_cli_usage_error("run", "%s: expected a number >= 0, got '%s'", name, val);
    /* 0 turns the diagnosis (or suite strength) off; the run options keep 0 = default */
    if (name[2] == 's') o->strength_max_elems = v == 0 ? -1 : (int64_t)v;
    else if (strcmp(name, "--diagnose-budget") == 0) o->diagnose_budget_s = v == 0 ? -1 : v;
    else o->diagnose_max_mib = v == 0 ? 1e-9 : v;
  }
  else if (strcmp(name, "--repeat") == 0) {
    long r = strtol(val, &end, 10);
    if (*end || end == val || r < 1 || r > 1000)
      return pg_cli_usage_error("run", "--repeat: expected 1..1000, got '%s'", val);
    o->repeat = (int)r;
  } else return pg_cli_usage_error("run", "unknown option '%s' (see --help)", name);
  return 0;
}

int pg_cmd_run(int argc, char **argv) {
  struct pg_run_opts o;
  memset(&o, 0, sizeof o);
  o.device_id = -1;
  o.reference_bits = 32;
  o.timeout_s = 120;
  o.tool_version = pg_cli_version;
  o.on_line = on_line;
  o.on_progress = on_progress;
  o.hooks = pg_report_hooks();
  int no_progress = 0;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self);
  if (n > 0 && (size_t)n < sizeof self) { /* a longer path: repro lines say "phasegate" */
    self[n] = '\0';
    o.self_exe = self;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return PG_EXIT_PASS;
    }
    if (strncmp(a, "--", 2) != 0) return pg_cli_usage_error("run", "unexpected argument '%s'", a);
    /* --opt=value or --opt value */
    char name[64];
    const char *val = NULL;
    const char *eq = strchr(a, '=');
    if (eq) {
      snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", a);
    }
    static const char *const flags[] = {"--no-golden-cache", "--keep-work", "--no-bisect",
                                        "--fresh-process", "--show-values", "--no-progress"};
    int is_flag = 0;
    for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) is_flag |= strcmp(name, flags[f]) == 0;
    if (is_flag) {
      if (val) return pg_cli_usage_error("run", "%s takes no value", name);
      if (strcmp(name, "--no-golden-cache") == 0) o.no_golden_cache = 1;
      else if (strcmp(name, "--keep-work") == 0) o.keep_work = 1;
      else if (strcmp(name, "--fresh-process") == 0) o.fresh_process = 1;
      else if (strcmp(name, "--show-values") == 0) o.show_values = 1;
      else if (strcmp(name, "--no-progress") == 0) no_progress = 1;
      else o.no_bisect = 1;
      continue;
    }
    if (!val) {
      if (i + 1 >= argc) return pg_cli_usage_error("run", "%s needs a value", name);
      val = argv[++i];
    }
    int bad = set_option(&o, name, val);
    if (bad) return bad;
  }
  char implied[4096];
  const char *op_dir = o.op_dir;
  int bad = pg_cli_op_dir("run", &op_dir, o.contract_path, o.suite_path, implied,
                          sizeof implied);
  if (bad) return bad;
  o.op_dir = op_dir;
  if (!o.impl_spec) return pg_cli_usage_error("run", "--impl SPEC is required");
  /* A fleet shard reports into its own root (docs/fleet.md "Running a shard"): the
   * CMake layer's --report-dir, and the session file under it, move there. */
  const char *root = getenv("PHASEGATE_REPORT_ROOT");
  char *moved_session = NULL;
  if (root && *root && o.report_dir) {
    o.report_dir = root;
    if (o.report_session && o.report_name &&
        !(o.report_session = moved_session = pg_path_fmt("%s/%s/.session", root, o.report_name)))
      return pg_cli_usage_error("run", "out of memory");
  }

  /* A closed stdout (`| head`) must not kill the run before the report is written. */
  signal(SIGPIPE, SIG_IGN);
  /* The progress line: on a terminal only, never on a pipe or under CTest, and only
   * once the run has taken a second (short runs do not flicker). */
  struct pg_report_progress progress;
  pg_report_progress_init(&progress, pg_report_progress_wanted(no_progress) && o.jobs <= 1
                                         ? stderr : NULL, 1000);
  o.user = &progress;
  struct pg_run_summary s;
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_run(&o, &s, &err);
  pg_report_progress_end(&progress);
  free(moved_session);
  int exit_code = s.exit_code;
  pg_run_summary_reset(&s);
  if (rc != PG_OK) {
    if (s.diagnosed) return PG_EXIT_ERROR; /* the findings were the message */
    fprintf(stderr, "phasegate run: error: %s\n", err.message[0] ? err.message : pg_strerror(rc));
    return PG_EXIT_ERROR;
  }
  return exit_code;
}
