/* phasegate gen — writes one case's generated primary inputs as <out>/<name>.npy, the
 * exact tensors `phasegate run` feeds the impl and the goldens (same seed, fills,
 * dtypes and shapes), so a kernel developer can load them in numpy or a debugger. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "base/base.h"
#include "report/report.h"
#include "run/run.h"
#include "opdir/opdir.h"
#include "tensors/tensors.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate gen (--op-dir DIR | --contract FILE [--suite FILE]) --case ID\n"
          "                     --out DIR [--up-to-module K] [--max-bytes N] [--threads N]\n"
          "\n"
          "Generates the primary inputs of one case (deterministic: Philox-4x32-10 keyed by\n"
          "the case seed and the input name) and writes them as OUT/<name>.npy.\n"
          "\n"
          "  --op-dir DIR        module_interfaces.yaml + adversarial_suite.json in DIR or DIR/eval\n"
          "  --contract FILE     the contract, explicitly (wins over --op-dir)\n"
          "  --suite FILE        the suite (default: adversarial_suite.json next to the contract)\n"
          "  --case ID           the case id from the suite\n"
          "  --out DIR           output directory (created if missing)\n"
          "  --up-to-module K    only the primary inputs that modules 1..K consume\n"
          "  --max-bytes N       refuse when the inputs need more (suffixes K, M, G: powers of 1024)\n"
          "  --threads N         generator threads (default: all cores; output is identical)\n"
          "  --python PATH       interpreter of eval/test_inputs.py: an op that has one gets its\n"
          "                      inputs from make_inputs(case), as `run` does (OUT/arguments.json\n"
          "                      holds its argument order and non-tensor inputs, if any)\n"
          "\n"
          "bfloat16 inputs are written as '<u2' (view them with ml_dtypes.bfloat16 or\n"
          "torch.uint16 -> .view(torch.bfloat16)). Exit: 0 written, 2 error.\n");
}

/* The inputs from the op's make_inputs (docs/pypto.md "Inputs from make_inputs"), through
 * the Python worker `run` uses: the same tensors, bit for bit. */
static int make_inputs(const struct pg_contract *c, const struct pg_case *cs, const char *python,
                       struct pg_case_data *d, struct pg_error *err) {
  struct pg_py_golden_worker *w = NULL;
  struct pg_py_golden_worker_opts o = {python, NULL, NULL, 0, "", pg_redact_numbers};
  PG_RETURN_IF_ERROR(pg_case_data_init(d, c, err));
  PG_RETURN_IF_ERROR(pg_case_data_bind(d, c, cs, err));
  PG_RETURN_IF_ERROR(pg_py_golden_worker_open(&o, &w, err));
  int rc = pg_py_make_inputs(w, c, cs, d, NULL, 0, err);
  pg_py_golden_worker_close(w);
  return rc;
}

/* The case's inputs into inputs[0..n_primary): from make_inputs when the op has
 * test_inputs.py (its arguments left in made), else phasegate's generator. */
static int case_inputs(const struct pg_contract *c, const struct pg_case *cs,
                       const struct pg_bindings *dims, const struct pg_materialize_opts *opts,
                       const char *python, struct pg_case_data *made, struct pg_tensor *inputs,
                       struct pg_error *err) {
  if (!c->test_inputs) return pg_case_generate_inputs(c, cs, dims, opts, inputs, err);
  PG_RETURN_IF_ERROR(make_inputs(c, cs, python, made, err)); /* the op's code wins, as in run */
  for (int i = 0; i < c->n_primary; i++) pg_tensor_move(&inputs[i], &made->inputs[i]);
  return PG_OK;
}

/* OUT/arguments.json: make_inputs's argument order and non-tensor inputs, when it has any. */
static int write_arguments(const char *out_dir, const char *arguments, struct pg_error *err) {
  if (!arguments) return PG_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s/arguments.json", out_dir);
  FILE *f = fopen(path, "w");
  int ok = f && fputs(arguments, f) >= 0;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) return pg_error_set(err, PG_EIO, "%s: %s", path, strerror(errno));
  printf("%s (argument order and non-tensor inputs)\n", path);
  return PG_OK;
}

static void print_done(const struct pg_contract *c, const struct pg_case *cs, int written,
                       const char *out_dir) {
  char from[4200];
  if (c->test_inputs) snprintf(from, sizeof from, "make_inputs of %s", c->test_inputs);
  else snprintf(from, sizeof from, "seed %llu", (unsigned long long)pg_case_seed(cs));
  printf("phasegate gen: case %s (%s): %d input%s written to %s\n", cs->id, from, written,
         written == 1 ? "" : "s", out_dir);
}

static int used_by(const struct pg_contract *c, const char *name, int k) {
  for (int m = 0; m < c->n_modules; m++) {
    if (c->modules[m].id > k) continue;
    for (int i = 0; i < c->modules[m].n_inputs; i++) {
      const struct pg_tensor_decl *in = &c->modules[m].inputs[i];
      if (in->source_module == 0 && in->name && strcmp(in->name, name) == 0) return 1;
    }
  }
  return 0;
}

int pg_cmd_gen(int argc, char **argv) {
  const char *op_dir = NULL, *contract_arg = NULL, *suite_arg = NULL, *case_id = NULL,
             *out_dir = NULL, *up_to = NULL, *max_bytes = NULL, *threads = NULL,
             *python = NULL;
  const struct pg_cli_opt cli_opts[] = {{"--op-dir", &op_dir},
                                        {"--contract", &contract_arg},
                                        {"--suite", &suite_arg},
                                        {"--case", &case_id},
                                        {"--out", &out_dir},
                                        {"--up-to-module", &up_to},
                                        {"--max-bytes", &max_bytes},
                                        {"--threads", &threads},
                                        {"--python", &python},
                                        {NULL, NULL}};
  int parsed = pg_cli_parse_opts("gen", argc, argv, cli_opts, usage);
  if (parsed) return parsed < 0 ? PG_EXIT_PASS : parsed;
  if (!case_id || !out_dir)
    return pg_cli_usage_error("gen", "--op-dir DIR (or --contract FILE), --case ID and --out DIR "
                                     "are required (see --help)");
  char implied[4096];
  int bad = pg_cli_op_dir("gen", &op_dir, contract_arg, suite_arg, implied, sizeof implied);
  if (bad) return bad;
  struct pg_materialize_opts opts = {0, 0};
  if (max_bytes && pg_cli_parse_bytes(max_bytes, &opts.max_bytes) != 0)
    return pg_cli_usage_error("gen", "--max-bytes: '%s' is not a size (e.g. 2G, 512M)", max_bytes);
  if (threads) {
    char *end = NULL;
    long t = strtol(threads, &end, 10);
    if (!end || *end || t < 1 || t > 1024)
      return pg_cli_usage_error("gen", "--threads: '%s' is not a count in 1..1024", threads);
    opts.n_threads = (int)t;
  }

  char contract_path[4096], suite_path[4096];
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_op_paths_resolve(op_dir, contract_arg, suite_arg, contract_path, sizeof contract_path,
                          suite_path, sizeof suite_path, &err) != PG_OK)
    return pg_cli_usage_error("gen", "%s", err.message);

  int exit_code = PG_EXIT_ERROR;
  struct pg_diags diags;
  struct pg_contract c;
  struct pg_suite s;
  struct pg_bindings dims = {0};
  pg_diags_init(&diags);
  pg_contract_init(&c);
  pg_suite_init(&s);
  struct pg_tensor *inputs = NULL;
  struct pg_case_data made;
  memset(&made, 0, sizeof made);
  if (pg_cli_load_op("gen", contract_path, suite_path, &c, &s, &diags) != PG_EXIT_PASS) goto out;
  int k = c.n_modules;
  if (up_to) {
    char *end = NULL;
    long v = strtol(up_to, &end, 10);
    if (!end || *end || v < 1 || v > c.n_modules) {
      pg_cli_usage_error("gen", "--up-to-module: '%s' is not in 1..%d", up_to, c.n_modules);
      goto out;
    }
    k = (int)v;
  }
  const struct pg_case *cs = NULL;
  for (int i = 0; i < s.n_cases; i++)
    if (s.cases[i].id && strcmp(s.cases[i].id, case_id) == 0) cs = &s.cases[i];
  if (!cs) {
    fprintf(stderr, "phasegate gen: error: %s: no case '%s'\n", suite_path, case_id);
    goto out;
  }
  if (pg_case_bind_dims(&c, cs, &dims, &err) != PG_OK) {
    fprintf(stderr, "phasegate gen: error: %s\n", err.message);
    goto out;
  }
  inputs = calloc((size_t)(c.n_primary ? c.n_primary : 1), sizeof *inputs);
  if (!inputs) {
    fprintf(stderr, "phasegate gen: error: out of memory\n");
    goto out;
  }
  for (int i = 0; i < c.n_primary; i++) pg_tensor_init(&inputs[i]);
  if (case_inputs(&c, cs, &dims, &opts, python, &made, inputs, &err) != PG_OK) {
    fprintf(stderr, "phasegate gen: error: %s\n", err.message);
    goto out;
  }
  if (pg_mkdir_p(out_dir) != 0) {
    fprintf(stderr, "phasegate gen: error: %s: cannot create directory: %s\n", out_dir,
            strerror(errno));
    goto out;
  }
  if (write_arguments(out_dir, made.arguments, &err) != PG_OK) {
    fprintf(stderr, "phasegate gen: error: %s\n", err.message);
    goto out;
  }
  int written = 0;
  for (int i = 0; i < c.n_primary; i++) {
    if (k < c.n_modules && !used_by(&c, inputs[i].name, k)) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", out_dir, inputs[i].name);
    if (pg_npy_write(path, &inputs[i], &err) != PG_OK) {
      fprintf(stderr, "phasegate gen: error: %s\n", err.message);
      goto out;
    }
    printf("%s %s [", path, pg_dtype_name(inputs[i].dtype));
    for (int d = 0; d < inputs[i].dl.ndim; d++)
      printf("%s%lld", d ? ", " : "", (long long)inputs[i].shape[d]);
    printf("]\n");
    written++;
  }
  print_done(&c, cs, written, out_dir);
  exit_code = PG_EXIT_PASS;
out:
  if (inputs)
    for (int i = 0; i < c.n_primary; i++) pg_tensor_reset(&inputs[i]);
  free(inputs);
  pg_case_data_reset(&made);
  pg_bindings_reset(&dims);
  pg_suite_reset(&s);
  pg_contract_reset(&c);
  pg_diags_reset(&diags);
  return exit_code;
}
