/* tests/goldens/kernels_npy_driver.c — the C half of the numpy differential
 * test: reads a manifest of kernel calls, runs each through the kernel table on
 * inputs read from .npy files, and writes each result as .npy for
 * diff_numpy.py to compare against numpy formulas.
 *
 * Manifest: one call per line, tab-separated:
 *   <op> TAB <attrs: k=v;k=v or -> TAB <in.npy,in.npy,...> TAB <out.npy>
 * Ints lists are written "0,2,1". The harness's own .npy reader/writer
 * (tests/harness/pg_npy_mini.c) keeps this test independent of runner/tensors/npy.c.
 * Usage: kernels_npy_driver MANIFEST   (exit 0 when every call succeeded)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_npy_mini.h"
#include "phasegate/kernels.h"
#include "phasegate/tensor.h"

static int set_attr(const struct pg_kernel_def *def, struct pg_attr_value *attrs, char *kv) {
  char *eq = strchr(kv, '=');
  if (!eq) return -1;
  *eq = '\0';
  int i = pg_kernel_attr_index(def, kv);
  if (i < 0) return -1;
  const char *v = eq + 1;
  struct pg_attr_value *a = &attrs[i];
  a->type = def->attrs[i].type;
  switch (a->type) {
    case PG_ATTR_FLOAT: a->f = strtod(v, NULL); break;
    case PG_ATTR_INT: a->i = strtoll(v, NULL, 10); break;
    case PG_ATTR_BOOL: a->b = strcmp(v, "true") == 0 || strcmp(v, "1") == 0; break;
    case PG_ATTR_STRING: snprintf(a->s, sizeof a->s, "%s", v); break;
    case PG_ATTR_INTS: {
      a->n_ints = 0;
      while (*v) {
        char *end;
        long long x = strtoll(v, &end, 10);
        if (end == v || a->n_ints == PG_MAX_NDIM) return -1;
        a->ints[a->n_ints++] = x;
        v = *end == ',' ? end + 1 : end;
      }
      break;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MANIFEST\n", argv[0]);
    return 2;
  }
  FILE *m = fopen(argv[1], "r");
  if (!m) {
    fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  char line[4096];
  int failures = 0, lineno = 0;
  while (fgets(line, sizeof line, m)) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    char *op = strtok(line, "\t"), *attrs = strtok(NULL, "\t"), *ins = strtok(NULL, "\t"),
         *outp = strtok(NULL, "\t");
    if (!op || !attrs || !ins || !outp) {
      fprintf(stderr, "manifest:%d: malformed\n", lineno);
      failures++;
      continue;
    }
    const struct pg_kernel_def *def = pg_kernel_find(op);
    if (!def) {
      fprintf(stderr, "manifest:%d: unknown op %s\n", lineno, op);
      failures++;
      continue;
    }
    struct pg_attr_value av[PG_KERNEL_MAX_ATTRS];
    int na = pg_kernel_attrs_default(def, av);
    for (int i = 0; i < na; i++)
      if (def->attrs[i].required) av[i].type = 0; /* absent unless the manifest sets it */
    int bad = 0;
    if (strcmp(attrs, "-") != 0)
      for (char *save = NULL, *kv = strtok_r(attrs, ";", &save); kv; kv = strtok_r(NULL, ";", &save))
        if (set_attr(def, av, kv) != 0) bad = 1;
    struct pg_tensor in[PG_KERNEL_MAX_INPUTS];
    const struct pg_tensor *inp[PG_KERNEL_MAX_INPUTS];
    int n_in = 0;
    for (char *save = NULL, *p = strtok_r(ins, ",", &save); p && n_in < PG_KERNEL_MAX_INPUTS;
         p = strtok_r(NULL, ",", &save)) {
      pg_tensor_init(&in[n_in]);
      char why[1200];
      if (pg_test_npy_read(p, &in[n_in], why, sizeof why) != 0) {
        fprintf(stderr, "manifest:%d: cannot read %s\n", lineno, why);
        bad = 1;
        break;
      }
      inp[n_in] = &in[n_in];
      n_in++;
    }
    if (!bad) {
      struct pg_tensor out;
      pg_tensor_init(&out);
      struct pg_error err;
      pg_error_clear(&err);
      if (pg_kernel_invoke(def, inp, n_in, av, na, 0, &out, &err) != PG_OK) {
        fprintf(stderr, "manifest:%d: %s\n", lineno, err.message);
        bad = 1;
      } else if (pg_test_npy_write(outp, &out) != 0) {
        fprintf(stderr, "manifest:%d: cannot write %s\n", lineno, outp);
        bad = 1;
      }
      pg_tensor_reset(&out);
    } else {
      fprintf(stderr, "manifest:%d: bad attributes or inputs\n", lineno);
    }
    for (int i = 0; i < n_in; i++) pg_tensor_reset(&in[i]);
    failures += bad;
  }
  fclose(m);
  return failures ? 1 : 0;
}
