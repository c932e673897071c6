/* Rule texts at the edge of the syntax (docs/compare.md "Rule text") with the verdict
 * every reader must give: the compare unit test runs them through pg_cmp_rule_parse,
 * the suite loader's test through a suite's "rule" keys, so the two cannot drift. */
#ifndef PG_TEST_RULE_EDGES_H
#define PG_TEST_RULE_EDGES_H

static const struct {
  const char *text;
  int ok;
} pg_rule_edges[] = {
    {"allclose", 1},     {"exact", 1},           {"ulp:0", 1},
    {"ulp:4", 1},        {"ulp:0004", 1},        {"ulp:9223372036854775807", 1},
    {"ratio:0", 1},      {"ratio:1", 1},         {"ratio:0.5", 1},
    {"ratio:.5", 1},     {"ratio:5e-1", 1},      {"ratio:1.0", 1},
    {"ratio:1e0", 1},    {"ratio:0.", 1},
    /* no whitespace anywhere: after the colon, around it, before or after the rule */
    {"ratio: 0.5", 0},   {"ratio:0.5 ", 0},      {" ratio:0.5", 0},
    {"ratio :0.5", 0},   {"ratio:\t0.5", 0},     {"ulp: 4", 0},
    {"ulp:4 ", 0},       {"exact ", 0},          {"allclose\n", 0},
    /* R: a decimal number in [0, 1], unsigned; N: digits only, within int64 */
    {"ratio:+0.5", 0},   {"ratio:-0", 0},        {"ratio:0x0.8", 0},
    {"ratio:inf", 0},    {"ratio:nan", 0},       {"ratio:1.5", 0},
    {"ratio:", 0},       {"ratio:1e400", 0},     {"ratio:0.5.1", 0},
    {"ratio:0.5x", 0},   {"ulp:+4", 0},          {"ulp:-0", 0},
    {"ulp:4.0", 0},      {"ulp:9223372036854775808", 0}, {"ulp:", 0},
    {"ulp:0x4", 0},      {"Exact", 0},           {"", 0},
    {"close", 0},
};

#endif
