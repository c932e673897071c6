/* phasegate fuzz harness — the suite loader and its JSON position scanner.
 *
 *   clang -fsanitize=fuzzer,address,undefined (built by tools/fuzz/CMakeLists.txt)
 *   ./fuzz_suite tests/fuzz-corpus/suite
 *
 * Each input is loaded twice, without and with a small attention-like contract, and
 * the results are checked for consistency: PG_OK means no error finding; a failure
 * always carries a message; every loaded case has a valid id and level. Any violation
 * traps, so the fuzzer records the input. Sanitizers catch over-reads and leaks.
 * fuzz_json_vs_cjson.c checks the scanner's values against cJSON.
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opdir/opdir.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

/* A tiny contract (static storage, never reset): op attention, dims B S D, inputs q k,
 * module 1 -> scores, module 2 -> out. Enough to reach every contract check. */
static const struct pg_contract *contract(void) {
  static char *bsd[] = {"B", "S", "D"};
  static char *bss[] = {"B", "S", "S"};
  static struct pg_dim_value dims[] = {{"B", 1, {0, 0}}, {"S", 8, {0, 0}}, {"D", 4, {0, 0}}};
  static struct pg_tensor_decl primary[2], out1[1], out2[1], in1[2], in2[1];
  static struct pg_module modules[2];
  static struct pg_contract c;
  static int ready;
  if (ready) return &c;
  struct pg_tensor_decl *all[] = {&primary[0], &primary[1], &out1[0], &out2[0]};
  const char *names[] = {"q", "k", "scores", "out"};
  for (int i = 0; i < 4; i++) {
    memset(all[i], 0, sizeof *all[i]);
    all[i]->name = (char *)names[i];
    all[i]->ndim = 3;
    for (int a = 0; a < 3; a++) all[i]->dims[a] = i == 2 ? bss[a] : bsd[a];
    all[i]->dtype = i == 2 ? PG_DTYPE_F32 : PG_DTYPE_F16;
  }
  for (int i = 0; i < 2; i++) {
    memset(&in1[i], 0, sizeof in1[i]);
    in1[i].name = (char *)names[i];
    in1[i].ndim = -1;
  }
  memset(&in2[0], 0, sizeof in2[0]);
  in2[0].name = "scores";
  in2[0].ndim = -1;
  in2[0].source_module = 1;
  modules[0] = (struct pg_module){.id = 1, .name = "qk", .inputs = in1, .n_inputs = 2,
                                  .outputs = out1, .n_outputs = 1};
  modules[1] = (struct pg_module){.id = 2, .name = "rest", .inputs = in2, .n_inputs = 1,
                                  .outputs = out2, .n_outputs = 1};
  c.op = "attention";
  c.dims = (struct pg_bindings){dims, 3};
  c.primary_inputs = primary;
  c.n_primary = 2;
  c.modules = modules;
  c.n_modules = 2;
  ready = 1;
  return &c;
}

static int valid_id(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

static void load_once(const uint8_t *data, size_t size, const struct pg_contract *c) {
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  pg_error_clear(&err);
  int rc = pg_suite_load_buffer("fuzz.json", (const char *)data, size, c, &s, &d, &err);
  if (rc == PG_OK) {
    check(d.n_errors == 0);
    for (int i = 0; i < s.n_cases; i++) {
      check(valid_id(s.cases[i].id));
      check(s.cases[i].level >= 0 && s.cases[i].level <= 5);  /* L0: the seed's smoke level */
      check(s.cases[i].json != NULL);
      cJSON *again = cJSON_Parse(s.cases[i].json); /* the kept case text is valid JSON */
      check(cJSON_IsObject(again));
      cJSON_Delete(again);
    }
  } else {
    check(rc < 0);
    check(err.message[0] != '\0');
    /* No OOM here: the harness allocates little, so PG_ENOMEM would be a bug. */
    check(rc != PG_ENOMEM);
    check(d.n_errors > 0);
  }
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load_once(data, size, NULL);
  load_once(data, size, contract());
  /* The scanner alone with a tight cap, plus path lookups on whatever it built. */
  struct pg_json_pos p;
  struct pg_json_fail f;
  struct pg_json_limits lim = {8, 256};
  if (pg_json_pos_scan((const char *)data, size, &lim, &p, &f) == PG_OK) {
    check(p.n > 0 && p.n <= 256);
    for (int i = 0; i < p.n; i++) {
      check(p.nodes[i].off + p.nodes[i].len <= size);
      check(p.nodes[i].line >= 1 && p.nodes[i].col >= 1);
    }
    (void)pg_json_pos_find(&p, "cases[0].shape.S");
    (void)pg_json_pos_find(&p, "[1][2]");
  } else {
    check(f.line >= 1 && f.col >= 1 && f.offset <= size);
  }
  pg_json_pos_reset(&p);
  return 0;
}
