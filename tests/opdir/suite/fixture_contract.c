/* phasegate tests — the hand-built attention contract of fixture_contract.h. Built
 * once per call into static storage (tests are single-threaded per process). */
#include "fixture_contract.h"

#include <string.h>

static struct pg_dim_value dims[4];
static struct pg_tensor_decl primary[3], in1[2], out1[1], in2[1], out2[1], in3[2], out3[1],
    finals[1];
static struct pg_module modules[3];
static struct pg_contract contract;

static void decl(struct pg_tensor_decl *d, const char *name, int ndim, const char *const *shape,
                 enum pg_dtype dtype, int source) {
  memset(d, 0, sizeof *d);
  d->name = (char *)name;
  d->ndim = ndim;
  for (int i = 0; i < ndim; i++) d->dims[i] = (char *)shape[i];
  d->dtype = dtype;
  d->source_module = source;
}

const struct pg_contract *pg_test_attention_contract(void) {
  static const char *const bhsd[] = {"B", "H", "S", "D"};
  static const char *const bhss[] = {"B", "H", "S", "S"};
  static const char *const names[] = {"B", "H", "S", "D"};
  static const int64_t values[] = {2, 4, 128, 64};
  for (int i = 0; i < 4; i++) dims[i] = (struct pg_dim_value){(char *)names[i], values[i], {0, 0}};
  decl(&primary[0], "q", 4, bhsd, PG_DTYPE_F16, 0);
  decl(&primary[1], "k", 4, bhsd, PG_DTYPE_F16, 0);
  decl(&primary[2], "v", 4, bhsd, PG_DTYPE_F16, 0);
  decl(&in1[0], "q", -1, NULL, PG_DTYPE_INVALID, 0);
  decl(&in1[1], "k", -1, NULL, PG_DTYPE_INVALID, 0);
  decl(&out1[0], "scores", 4, bhss, PG_DTYPE_F32, 0);
  decl(&in2[0], "scores", -1, NULL, PG_DTYPE_INVALID, 1);
  decl(&out2[0], "probs", 4, bhss, PG_DTYPE_F16, 0);
  decl(&in3[0], "probs", -1, NULL, PG_DTYPE_INVALID, 2);
  decl(&in3[1], "v", -1, NULL, PG_DTYPE_INVALID, 0);
  decl(&out3[0], "out", 4, bhsd, PG_DTYPE_F16, 0);
  decl(&finals[0], "out", -1, NULL, PG_DTYPE_INVALID, 3);
  memset(modules, 0, sizeof modules);
  modules[0] = (struct pg_module){.id = 1, .name = (char *)"qk_scores", .inputs = in1,
                                  .n_inputs = 2, .outputs = out1, .n_outputs = 1};
  modules[1] = (struct pg_module){.id = 2, .name = (char *)"softmax", .inputs = in2,
                                  .n_inputs = 1, .outputs = out2, .n_outputs = 1};
  modules[2] = (struct pg_module){.id = 3, .name = (char *)"pv", .inputs = in3, .n_inputs = 2,
                                  .outputs = out3, .n_outputs = 1};
  memset(&contract, 0, sizeof contract);
  contract.path = (char *)"attention/module_interfaces.yaml";
  contract.schema_version = 1;
  contract.op = (char *)"attention";
  contract.dims = (struct pg_bindings){dims, 4};
  contract.primary_inputs = primary;
  contract.n_primary = 3;
  contract.modules = modules;
  contract.n_modules = 3;
  contract.final_outputs = finals;
  contract.n_final = 1;
  return &contract;
}
