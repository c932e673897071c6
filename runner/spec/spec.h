/* phasegate runner — the spec room (DESIGN.md §2): the contract and suite model and
 * their loaders (contract_yaml.c + contract_schema.c, suite_json.c), op directory
 * resolution, and the strict position-recording JSON scanner the suite loader and the
 * report merger share. Never generates data. */
#ifndef PHASEGATE_RUNNER_SPEC_H
#define PHASEGATE_RUNNER_SPEC_H

#include "phasegate/spec.h"
#include "spec/json_pos.h"

#endif
