/* phasegate fuzz harness — differential: the suite loader's own JSON scanner
 * (runner/opdir/json_pos.c) against cJSON as the oracle.
 *
 * The suite loader decodes strings and numbers with its position scanner (one parse,
 * docs/suite.md "Performance"), so cJSON no longer checks its values. Here every text
 * the scanner accepts must parse with cJSON to the same tree: same kinds, same keys in
 * the same order, byte-identical strings, bit-identical numbers. Any difference traps,
 * so libFuzzer records the input.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

#include "opdir/opdir.h"
#include "phasegate/error.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static void walk(const struct pg_json_pos *p, int n, const cJSON *v, int in_object) {
  const struct pg_json_node *node = &p->nodes[n];
  if (in_object) {
    check(v->string && strcmp(v->string, pg_json_pos_key(p, n)) == 0);
    check(strlen(v->string) == node->key_len);
  }
  switch (node->type) {
    case PG_JSON_STRING:
      check(cJSON_IsString(v) && strcmp(v->valuestring, pg_json_pos_string(p, n)) == 0);
      break;
    case PG_JSON_NUMBER: {
      double ours = pg_json_pos_number(p, n), theirs = v->valuedouble;
      check(cJSON_IsNumber(v) && memcmp(&ours, &theirs, sizeof ours) == 0);
      break;
    }
    case PG_JSON_TRUE: check(cJSON_IsTrue(v)); break;
    case PG_JSON_FALSE: check(cJSON_IsFalse(v)); break;
    case PG_JSON_NULL: check(cJSON_IsNull(v)); break;
    default: {
      check(node->type == PG_JSON_OBJECT ? cJSON_IsObject(v) : cJSON_IsArray(v));
      const cJSON *child = v->child;
      int k = node->first_child;
      for (; child && k >= 0; child = child->next, k = p->nodes[k].next_sibling)
        walk(p, k, child, node->type == PG_JSON_OBJECT);
      check(!child && k < 0);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pg_json_pos p;
  struct pg_json_fail fail;
  if (pg_json_pos_scan((const char *)data, size, NULL, &p, &fail) != PG_OK) return 0;
  /* cJSON skips a UTF-8 byte-order mark only in some cases; the loader always does. */
  size_t bom = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  cJSON *root = cJSON_ParseWithLengthOpts((const char *)data + bom, size - bom, NULL, 0);
  check(root != NULL);
  walk(&p, 0, root, 0);
  cJSON_Delete(root);
  pg_json_pos_reset(&p);
  return 0;
}
