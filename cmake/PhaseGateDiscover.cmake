# phasegate — test discovery for phasegate_add_op(): runs `phasegate list --format json`
# for one op and writes <op>_tests.cmake, the file CTest includes (one add_test per
# phase and case, the phase gates, labels, fixtures, skip rules).
#
# Used three ways: `cmake -P` from the POST_BUILD custom command (PG_* given with -D),
# include()d at configure time or by CTest itself (PRE_TEST), and `cmake -P` as the
# command of the <op>/NOT_BUILT placeholder test (PHASEGATE_NOT_BUILT given).
# Inputs (variables): PG_OP, PG_RUNNER, PG_OP_DIR, PG_LEVELS (L1,L2), PG_TESTS_FILE,
# PG_GATE, PG_CTEST_TIMEOUT, PG_RESOURCES and PG_LABELS (lists joined with "|"),
# PG_SIGNATURE, PG_DISCOVERY_TIMEOUT, PG_WORKERS_FIXTURE (the fixture of `phasegate serve`
# every case test requires, or empty), PG_PHASES (PHASES k: the cases of later phases get
# the label not_implemented; empty: all implemented); PG_CONTRACT and PG_SUITE for the
# stale check.
# Case tests (and `phasegate list`) run in the directory of PG_TESTS_FILE.

include_guard(GLOBAL)
# Functions keep the policies of their definition: CTest (PRE_TEST) and `cmake -P`
# start with none set.
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)

# Stops with the context a user needs to reproduce a failed discovery by hand.
function(_phasegate_discovery_error what rc output)
  string(REPLACE "\n" "\n    " output "    ${output}")
  message(FATAL_ERROR
    "phasegate: discovering the tests of op '${PG_OP}' failed: ${what}\n"
    "  Path: ${PG_RUNNER}\n"
    "  Command: ${PG_RUNNER} list --op-dir ${PG_OP_DIR} --format json${_pg_levels_arg}\n"
    "  Working directory: ${_pg_workdir}\n"
    "  Result: ${rc}\n"
    "  Output:\n${output}")
endfunction()

# _phasegate_bracket(<out> <text>): the bracket quoting, shared with PhaseGate.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/PhaseGateQuote.cmake")

# Splits the JSON array text ARR (COUNT elements) into a CMake list of element texts
# in linear time. string(JSON GET arr i) reparses the whole array per element, which
# is quadratic for 10 000 cases; instead ';', '[' and ']' (list syntax) are swapped
# for control bytes that valid JSON text cannot contain raw, flat objects are cut out
# with one regex, and callers swap the bytes back per element. Falls back to the slow
# exact path when the elements are not flat objects.
function(_phasegate_split_array arr count out)
  string(ASCII 1 soh)
  string(ASCII 2 stx)
  string(ASCII 3 etx)
  string(REPLACE ";" "${soh}" enc "${arr}")
  string(REPLACE "[" "${stx}" enc "${enc}")
  string(REPLACE "]" "${etx}" enc "${enc}")
  set(object_re [=[{([^"{}]|"([^"\\]|\\.)*")*}]=])
  string(REGEX MATCHALL "${object_re}" objs "${enc}")
  list(LENGTH objs n)
  # Exact only if nothing but separators is left around the objects (a nested
  # object would leave its outer braces behind).
  string(REGEX REPLACE "${object_re}" "" rest "${enc}")
  if(NOT n EQUAL count OR NOT rest MATCHES "^[ \t\r\n]*${stx}[ \t\r\n,]*${etx}[ \t\r\n]*$")
    set(objs "")
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON o GET "${arr}" ${i})
      string(REPLACE ";" "${soh}" o "${o}")
      string(REPLACE "[" "${stx}" o "${o}")
      string(REPLACE "]" "${etx}" o "${o}")
      list(APPEND objs "${o}")
    endforeach()
  endif()
  set(${out} "${objs}" PARENT_SCOPE)
endfunction()

# ---- the steps of phasegate__discover() -------------------------------------------------
# They read the PG_* inputs (above) and return their results with PARENT_SCOPE in the
# variables their comment names. phasegate__discover() sets _pg_workdir (the directory
# of PG_TESTS_FILE) and _pg_levels_arg for _phasegate_discovery_error(), which they call.

# Runs `phasegate list` and checks the listing (docs/interfaces.md): the op's module
# count in OUT_MODULES, the number of tests in OUT_COUNT, the test objects in OUT_OBJS
# (_phasegate_split_array: ';', '[' and ']' swapped for the bytes 1, 2, 3).
function(_phasegate_list out_modules out_count out_objs)
  set(cmd "${PG_RUNNER}" list --op-dir "${PG_OP_DIR}" --format json)
  if(PG_LEVELS)
    list(APPEND cmd --levels "${PG_LEVELS}")
  endif()
  if(NOT PG_DISCOVERY_TIMEOUT)
    set(PG_DISCOVERY_TIMEOUT 60)
  endif()
  execute_process(COMMAND ${cmd}
    WORKING_DIRECTORY "${_pg_workdir}"
    TIMEOUT ${PG_DISCOVERY_TIMEOUT}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    _phasegate_discovery_error("phasegate list did not succeed" "${rc}" "${err}${out}")
  endif()

  string(JSON schema ERROR_VARIABLE jerr GET "${out}" schema_version)
  if(jerr)
    _phasegate_discovery_error("the output is not the JSON listing (${jerr})" "${rc}" "${out}")
  endif()
  if(NOT schema EQUAL 1)
    _phasegate_discovery_error(
      "unsupported listing schema_version ${schema} (this PhaseGate.cmake reads 1)" "${rc}" "")
  endif()
  string(JSON n_modules ERROR_VARIABLE jerr GET "${out}" module_count)
  if(jerr OR NOT n_modules MATCHES "^[1-9][0-9]*$")
    _phasegate_discovery_error("module_count missing or not a positive integer" "${rc}" "")
  endif()
  if(PG_PHASES AND (NOT PG_PHASES MATCHES "^[1-9][0-9]*$" OR PG_PHASES GREATER n_modules))
    _phasegate_discovery_error("PHASES ${PG_PHASES} is not valid: the phases implemented so far must be a whole number in 1..${n_modules} (the op's module count)" 0 "")
  endif()
  string(JSON n_tests ERROR_VARIABLE jerr LENGTH "${out}" tests)
  if(jerr)
    _phasegate_discovery_error("no 'tests' array (${jerr})" "${rc}" "")
  endif()
  set(objs "")
  if(n_tests GREATER 0)
    string(JSON arr GET "${out}" tests)
    _phasegate_split_array("${arr}" ${n_tests} objs)
  endif()
  set(${out_modules} "${n_modules}" PARENT_SCOPE)
  set(${out_count} "${n_tests}" PARENT_SCOPE)
  set(${out_objs} "${objs}" PARENT_SCOPE)
endfunction()

# The pieces every case test shares, for N_TESTS tests: the properties after its own in
# OUT_PROPS, ";<label>..." of PG_LABELS in OUT_LABEL_TAIL, and in OUT_SOURCE_LINES
# whether the tests get DEF_SOURCE_LINE.
function(_phasegate_case_common n_tests out_props out_label_tail out_source_lines)
  string(REPLACE "|" ";" resources "${PG_RESOURCES}")
  string(REPLACE "|" ";" extra_labels "${PG_LABELS}")
  set(common_props " SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION [==[\\[phasegate\\] SKIPPED]==]")
  if(PG_CTEST_TIMEOUT)
    string(APPEND common_props " TIMEOUT ${PG_CTEST_TIMEOUT}")
  endif()
  if(resources)
    _phasegate_bracket(q "${resources}")
    string(APPEND common_props " RESOURCE_GROUPS ${q}")
  endif()
  set(label_tail "")
  foreach(l IN LISTS extra_labels)
    string(APPEND label_tail ";${l}")
  endforeach()
  # Source lines cost one more linear scan per test inside CTest (set_tests_properties
  # searches every test by name), so only smaller suites get them.
  set(with_source_lines FALSE)
  if(n_tests LESS_EQUAL 2000)
    set(with_source_lines TRUE)
  endif()
  set(${out_props} "${common_props}" PARENT_SCOPE)
  set(${out_label_tail} "${label_tail}" PARENT_SCOPE)
  set(${out_source_lines} ${with_source_lines} PARENT_SCOPE)
endfunction()

# The start of the tests file, in OUT: its header, the op directory and the gates of
# phases 1..N_MODULES-1 (PG_GATE). Gates first: CTest resolves dependencies by a
# linear search from the start of its test list, so tests that many others depend on
# belong at the front.
function(_phasegate_tests_head n_modules label_tail out)
  set(op "${PG_OP}")
  _phasegate_bracket(q_op_dir "${PG_OP_DIR}")
  string(CONCAT head
    "# Generated by PhaseGateDiscover.cmake from `phasegate list` for op '${op}': do not edit.\n"
    "# signature: ${PG_SIGNATURE}\n"
    "set(_pg_op_dir ${q_op_dir})\n")
  if(PG_GATE)
    math(EXPR last_gate "${n_modules} - 1")
    if(last_gate GREATER 0)
      foreach(k RANGE 1 ${last_gate})
        math(EXPR next "${k} + 1")
        string(APPEND head
          "add_test([==[${op}/M${k}/gate]==] \"\${_pg_cmake}\" -E echo "
          "[==[phasegate: every case of ${op} M${k} passed or was skipped: M${next} may run]==])\n"
          "set_tests_properties([==[${op}/M${k}/gate]==] PROPERTIES "
          "LABELS [==[phasegate;op_${op};phase_M${k};gate${label_tail}]==] "
          "FIXTURES_REQUIRED [==[${op}_M${k}]==] FIXTURES_SETUP [==[${op}_M${k}_gate]==])\n")
      endforeach()
    endif()
  endif()
  set(${out} "${head}" PARENT_SCOPE)
endfunction()

# Checks test object O (entry INDEX of the listing; CTL: the control characters) and
# returns its phase (1..N_MODULES), level digit and case id.
function(_phasegate_case_entry o index n_modules ctl out_phase out_level out_case)
  string(JSON phase ERROR_VARIABLE jerr GET "${o}" phase)
  if(jerr OR NOT phase MATCHES "^[1-9][0-9]*$" OR phase GREATER n_modules)
    _phasegate_discovery_error("test entry ${index} has no valid 'phase' (1..${n_modules}): ${o}" 0 "")
  endif()
  string(JSON level ERROR_VARIABLE jerr GET "${o}" level)
  if(jerr OR NOT level MATCHES "^[Ll]?([0-9])$")
    _phasegate_discovery_error("test entry ${index} has no valid 'level' (0..9): ${o}" 0 "")
  endif()
  set(level "${CMAKE_MATCH_1}")
  string(JSON case ERROR_VARIABLE jerr GET "${o}" case)
  if(jerr OR case STREQUAL "")
    _phasegate_discovery_error("test entry ${index} has no 'case': ${o}" 0 "")
  endif()
  if(case MATCHES "[${ctl}]")
    _phasegate_discovery_error("case id of test entry ${index} holds control characters: ${o}" 0 "")
  endif()
  set(${out_phase} "${phase}" PARENT_SCOPE)
  set(${out_level} "${level}" PARENT_SCOPE)
  set(${out_case} "${case}" PARENT_SCOPE)
endfunction()

# The properties of the case test of phase PHASE (test object O) before the common
# ones, in OUT: its fixtures (PG_GATE, PG_WORKERS_FIXTURE) and, with WITH_SOURCE_LINES,
# the suite line that defines the case.
function(_phasegate_case_props o phase with_source_lines out)
  set(op "${PG_OP}")
  set(props "")
  set(req "")
  if(PG_GATE)
    if(phase EQUAL 1)
      set(req "${op}_contract")
    else()
      math(EXPR prev "${phase} - 1")
      set(req "${op}_M${prev}_gate")
    endif()
    string(APPEND props " FIXTURES_SETUP [==[${op}_M${phase}]==]")
  endif()
  if(PG_WORKERS_FIXTURE)
    # warm impl processes from `phasegate serve` (the test runs standalone without)
    list(APPEND req "${PG_WORKERS_FIXTURE}")
  endif()
  list(APPEND req "${op}_report") # this invocation's report session (<op>/report/session)
  if(req)
    string(APPEND props " FIXTURES_REQUIRED [==[${req}]==]")
  endif()
  if(with_source_lines)
    string(JSON file ERROR_VARIABLE jerr GET "${o}" file)
    string(JSON line ERROR_VARIABLE jerr2 GET "${o}" line)
    if(NOT jerr AND NOT jerr2)
      _phasegate_bracket(q_src "${file}:${line}")
      string(APPEND props " DEF_SOURCE_LINE ${q_src}")
    endif()
  endif()
  set(${out} "${props}" PARENT_SCOPE)
endfunction()

# Runs the listing and (re)writes PG_TESTS_FILE atomically: the head (gates first), then
# one CTest subdirectory per (phase, level) holding its case tests.
function(phasegate__discover)
  get_filename_component(_pg_workdir "${PG_TESTS_FILE}" DIRECTORY)
  set(_pg_levels_arg "")
  if(PG_LEVELS)
    set(_pg_levels_arg " --levels ${PG_LEVELS}")
  endif()
  _phasegate_list(n_modules n_tests objs)
  _phasegate_case_common("${n_tests}" common_props label_tail with_source_lines)
  # Every case runs in the directory of the tests file (the op's binary directory),
  # not in its CTest subdirectory below: one working directory for all cases, the
  # one <op>/workers/start runs in, so the warm processes of `phasegate serve` (keyed
  # by working directory, docs/serve.md) serve every case. CTest applies a directory's
  # LABELS to the tests whose working directory is that directory, so the
  # WORKING_DIRECTORY is set after the labels (same cost as one more property).
  _phasegate_bracket(q_workdir "${_pg_workdir}")

  string(ASCII 1 soh)
  string(ASCII 2 stx)
  string(ASCII 3 etx)
  set(ctl "")
  foreach(c RANGE 1 31)
    string(ASCII ${c} ch)
    string(APPEND ctl "${ch}")
  endforeach()

  set(op "${PG_OP}")
  # The case tests go to one CTest subdirectory per (phase, level), whose directory
  # LABELS property labels them all in one pass: CTest's set_tests_properties()
  # searches the whole test list for every property of every test, so each
  # per-test property costs O(tests) and per-test LABELS would double-count.
  string(REGEX REPLACE "[.]cmake$" "" groups_dir "${PG_TESTS_FILE}")
  set(groups_dir "${groups_dir}.d")
  file(REMOVE_RECURSE "${groups_dir}")
  _phasegate_tests_head("${n_modules}" "${label_tail}" head)

  set(groups "")
  set(count 0)
  foreach(o IN LISTS objs)
    string(REPLACE "${soh}" ";" o "${o}")
    string(REPLACE "${stx}" "[" o "${o}")
    string(REPLACE "${etx}" "]" o "${o}")
    _phasegate_case_entry("${o}" ${count} ${n_modules} "${ctl}" phase level case)
    set(name "${op}/M${phase}/L${level}/${case}")
    string(MD5 key "${phase}/${case}")
    if(DEFINED _pg_seen_${key})
      _phasegate_discovery_error("duplicate test name '${name}' (phase ${phase} lists case '${case}' twice)" 0 "")
    endif()
    set(_pg_seen_${key} 1)

    _phasegate_bracket(q_name "${name}")
    _phasegate_bracket(q_case "${case}")
    _phasegate_case_props("${o}" ${phase} ${with_source_lines} props)
    set(g "M${phase}_L${level}")
    if(NOT DEFINED content_${g})
      list(APPEND groups "${g}")
      set(content_${g} "# ${op}: the cases of phase M${phase}, level L${level} (labels below).\n")
      set(names_${g} "")
    endif()
    string(APPEND content_${g}
      "add_test(${q_name} \"\${_pg_runner}\" run --op-dir \"\${_pg_op_dir}\" --impl \"\${_pg_impl}\" "
      "--up-to-module ${phase} --case ${q_case} \${_pg_run_extra})\n"
      "set_tests_properties(${q_name} PROPERTIES${props}${common_props})\n")
    string(APPEND names_${g} " ${q_name}")
    math(EXPR count "${count} + 1")
  endforeach()

  set(subdirs "")
  foreach(g IN LISTS groups)
    string(REGEX MATCH "^M([0-9]+)_L([0-9]+)$" m "${g}")
    set(ni "")
    if(PG_PHASES AND CMAKE_MATCH_1 GREATER PG_PHASES)
      set(ni ";not_implemented") # run skips them: "M<k> not implemented yet (PHASES k)"
    endif()
    file(WRITE "${groups_dir}/${g}/CTestTestfile.cmake" "${content_${g}}"
      "set_directory_properties(PROPERTIES LABELS "
      "[==[phasegate;op_${op};phase_M${CMAKE_MATCH_1};level_L${CMAKE_MATCH_2}${ni}${label_tail}]==])\n"
      "set_tests_properties(${names_${g}} PROPERTIES WORKING_DIRECTORY ${q_workdir})\n")
    _phasegate_bracket(q_dir "${groups_dir}/${g}")
    string(APPEND subdirs "subdirs(${q_dir})\n")
  endforeach()
  set(tmp "${PG_TESTS_FILE}.tmp")
  file(WRITE "${tmp}" "${head}${subdirs}")
  file(RENAME "${tmp}" "${PG_TESTS_FILE}")
endfunction()

# Rediscovers when the tests file is missing, older than the runner, contract, suite
# or this script, or was generated with other options (signature).
function(phasegate__discover_if_stale)
  set(stale FALSE)
  if(NOT EXISTS "${PG_TESTS_FILE}")
    set(stale TRUE)
  else()
    foreach(f "${PG_RUNNER}" "${PG_CONTRACT}" "${PG_SUITE}" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
              "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/PhaseGateQuote.cmake")
      if(f AND EXISTS "${f}" AND "${f}" IS_NEWER_THAN "${PG_TESTS_FILE}")
        set(stale TRUE)
      endif()
    endforeach()
    if(NOT stale)
      file(READ "${PG_TESTS_FILE}" head LIMIT 400)
      string(FIND "${head}" "# signature: ${PG_SIGNATURE}\n" pos)
      if(pos EQUAL -1)
        set(stale TRUE)
      endif()
    endif()
  endif()
  if(stale)
    phasegate__discover()
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(DEFINED PHASEGATE_NOT_BUILT)
    message(FATAL_ERROR "phasegate: the tests of op '${PHASEGATE_NOT_BUILT}' are not "
      "registered yet: build the project first (cmake --build ${PHASEGATE_BUILD_DIR}), "
      "then run ctest again")
  endif()
  phasegate__discover()
endif()
cmake_policy(POP)
