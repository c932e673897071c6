/* phasegate tests — a hand-built attention contract (docs/design.md §3) for suite tests,
 * so they do not depend on the YAML contract loader. Static storage: never reset it. */
#ifndef PG_TEST_FIXTURE_CONTRACT_H
#define PG_TEST_FIXTURE_CONTRACT_H

#include "opdir/opdir.h"

/* op attention, dims {B: 2, H: 4, S: 128, D: 64}, primary inputs q, k, v
 * [B, H, S, D] float16; M1 qk_scores -> scores [B, H, S, S] float32; M2 softmax ->
 * probs float16; M3 pv -> out [B, H, S, D] float16; final output out. */
const struct pg_contract *pg_test_attention_contract(void);

#endif
