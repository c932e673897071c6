# phasegate tests — driver of cmake/consumer_<MODE>: builds the consumer project in
# tests/cmake/consumer against phasegate consumed as MODE (package: installed into a
# temporary prefix first; subdir: add_subdirectory; fetch: FetchContent from a local
# SOURCE_DIR) and checks discovery, the gate, json-v1, verify_all + JUnit and resource groups
# with the real runner and the toy op; vendored (subdir, fetch), that the consumer gets
# only its own tests (none of phasegate's, no bundled example op) and may name its own op
# `attention` like a bundled one (the toy op registered again under that name, L1 only).
# Inputs: MODE, SRC, BIN, PG_SOURCE_DIR, PG_BUILD_DIR, GENERATOR, C_COMPILER,
# BUILD_TYPE, SAN_FLAGS.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/../helpers.cmake")
set(BUILD "${BIN}/build")
file(REMOVE_RECURSE "${BIN}")
file(MAKE_DIRECTORY "${BIN}")

set(cfg -S "${SRC}" -B "${BUILD}" -G "${GENERATOR}" "-DPG_CONSUME=${MODE}"
        "-DPG_SOURCE_DIR=${PG_SOURCE_DIR}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
        "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(SAN_FLAGS)
  list(APPEND cfg "-DCMAKE_C_FLAGS=${SAN_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SAN_FLAGS}"
                  "-DCMAKE_MODULE_LINKER_FLAGS=${SAN_FLAGS}" "-DCMAKE_SHARED_LINKER_FLAGS=${SAN_FLAGS}")
endif()
if(MODE STREQUAL "package")
  pg_run(r COMMAND "${CMAKE_COMMAND}" --install "${PG_BUILD_DIR}" --prefix "${BIN}/prefix")
  foreach(f bin/phasegate include/phasegate/impl.h include/phasegate/runner/tensors/tensors.h
            lib/cmake/PhaseGate/PhaseGateConfig.cmake lib/cmake/PhaseGate/PhaseGateConfigVersion.cmake
            lib/cmake/PhaseGate/PhaseGate.cmake lib/cmake/PhaseGate/PhaseGateDiscover.cmake
            lib/cmake/PhaseGate/PhaseGateQuote.cmake lib/cmake/PhaseGate/PhaseGateSummary.cmake
            lib/cmake/PhaseGate/PhaseGateSession.cmake lib/cmake/PhaseGate/PhaseGateDashboard.cmake)
    pg_check(EXISTS "${BIN}/prefix/${f}" MESSAGE "not installed: ${f}")
  endforeach()
  list(APPEND cfg "-DCMAKE_PREFIX_PATH=${BIN}/prefix")
endif()
pg_run(r COMMAND "${CMAKE_COMMAND}" ${cfg})
# A vendored phasegate builds no benchmarks into its consumer's all (PHASEGATE_BUILD_BENCH
# defaults to PROJECT_IS_TOP_LEVEL).
if(NOT MODE STREQUAL "package")
  pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target help)
  pg_check(NOT r_out MATCHES "bench_(compare|golden|persist|diagnosis|matmul)"
           MESSAGE "bench targets in a consumer's build:\n${r_out}")
  # ... nor the bundled example ops' impls and goldens (PHASEGATE_BUILD_EXAMPLES defaults
  # to PROJECT_IS_TOP_LEVEL), nor phasegate's own tests (PHASEGATE_BUILD_TESTS).
  pg_check(NOT r_out MATCHES "(attention|swiglu_ffn|rmsnorm)_(impl|golden)|attention_cuda|pg_test_main|test-[a-z]"
           MESSAGE "example or test targets in a consumer's build:\n${r_out}")
endif()

set(m1 toy/M1/L1/L1_shape toy/M1/L2/L2_values toy/M1/L2/L2_bug_at_m1)
set(m2 toy/M2/L1/L1_shape toy/M2/L2/L2_values toy/M2/L2/L2_bug_at_m1)
set(m3 toy/M3/L1/L1_shape toy/M3/L2/L2_values toy/M3/L2/L2_bug_at_m1)
# IMPL is a plugin: the `phasegate serve` fixture pair keeps its host warm.
set(workers toy/workers/start toy/workers/stop)
# Every case test needs this invocation's report session (docs/runner.md "One run, one
# verdict").
set(session toy/report/session)
set(all toy/contract toy/composition toy/M1/gate toy/M2/gate ${workers} ${session} ${m1} ${m2}
        ${m3})
# Vendored, the consumer's own `attention` (the toy contract, L1 only) and nothing else.
set(own_ops toy)
set(att_m1 "")
set(att_m2 "")
set(att_m3 "")
set(att_all "")
if(NOT MODE STREQUAL "package")
  list(APPEND own_ops attention)
  set(att_m1 attention/M1/L1/L1_shape)
  set(att_m2 attention/M2/L1/L1_shape)
  set(att_m3 attention/M3/L1/L1_shape)
  set(att_workers attention/workers/start attention/workers/stop attention/report/session)
  set(att_all attention/contract attention/composition attention/M1/gate attention/M2/gate
              ${att_workers} ${att_m1} ${att_m2} ${att_m3})
  list(APPEND all ${att_all})
endif()

# pg_only_own_tests(<what> <names>): no test of phasegate itself or of a bundled example op
# (only the consumer's ops, by prefix), and every test labelled phasegate is one of the
# consumer's (label op_<own op>).
function(pg_only_own_tests what names)
  list(JOIN own_ops "|" own_re)
  foreach(n IN LISTS names)
    # (swiglu_ffn/, rmsnorm/, attention_torch/, ln_ffn_silu/, cli/, cmake/, ...: not its own)
    pg_check(n MATCHES "^(${own_re})/" MESSAGE "${what}: '${n}' is not one of the consumer's tests")
  endforeach()
  pg_ctest_json(json "${BUILD}")
  string(JSON n LENGTH "${json}" tests)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON name GET "${json}" tests ${i} name)
      string(JSON props ERROR_VARIABLE jerr GET "${json}" tests ${i} properties)
      string(REGEX REPLACE "[ \t\n]" "" props "${props}")
      if(props MATCHES "\"LABELS\",\"value\":\\[[^]]*\"phasegate\"")
        pg_check(props MATCHES "\"LABELS\",\"value\":\\[[^]]*\"op_(${own_re})\""
                 AND name MATCHES "^(${own_re})/"
                 MESSAGE "${what}: '${name}' is labelled phasegate but is no op of the consumer: ${props}")
      endif()
    endforeach()
  endif()
endfunction()

# An installed runner lists the cases at configure time; a runner built by the project
# only after the build (NOT_BUILT placeholder until then).
pg_ctest_list(names "${BUILD}")
if(MODE STREQUAL "package")
  pg_expect_set("tests right after configure" "${names}" ${all})
else()
  set(placeholders toy/NOT_BUILT)
  if(att_all)
    list(APPEND placeholders attention/NOT_BUILT)
  endif()
  pg_expect_set("tests before the build" "${names}" ${placeholders})
endif()
pg_only_own_tests("tests after configure" "${names}")
set(targets toy_impl phasegate_discover_toy)
if(MODE STREQUAL "package")
  list(APPEND targets uses_compare)
else()
  list(APPEND targets phasegate_discover_attention)
endif()
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target ${targets})
if(MODE STREQUAL "package")
  pg_run(r COMMAND "${BUILD}/uses_compare")
endif()
pg_ctest_list(names "${BUILD}")
pg_expect_set("tests after the build" "${names}" ${all})
pg_only_own_tests("tests after the build" "${names}")

# The gate: -L phase_M3 lists exactly M1..M3 and the gates between them, and the workers
# pair the cases require (a fixture: -FA '.*' drops it with the gate).
pg_ctest_list(names "${BUILD}" -L phase_M3)
set(att_phase_m3 "")
if(att_all)
  set(att_phase_m3 attention/contract ${att_m1} attention/M1/gate ${att_m2} attention/M2/gate
                   ${att_m3} ${att_workers})
endif()
pg_expect_set("ctest -L phase_M3 -N" "${names}" toy/contract ${m1} toy/M1/gate ${m2}
              toy/M2/gate ${m3} ${workers} ${session} ${att_phase_m3})
pg_ctest_list(names "${BUILD}" -L phase_M3 -FA ".*")
pg_expect_set("ctest -L phase_M3 -FA .* -N" "${names}" ${m3} ${att_m3})

# -L phase_M2 runs M1 first; L2_bug_at_m1 fails at M1, so M2 is not run.
pg_run(r EXPECT_RC 8 COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M2 -j2)
pg_check(r_out MATCHES "toy/M1/L2/L2_bug_at_m1 [.]+[*]+Failed" MESSAGE "M1 bug case:\n${r_out}")
pg_check(r_out MATCHES "toy/M1/L2/L2_values [.]+ +Passed" MESSAGE "M1 values:\n${r_out}")
pg_check(r_out MATCHES "toy/contract [.]+ +Passed" MESSAGE "contract:\n${r_out}")
foreach(t toy/M1/gate ${m2})
  pg_check(r_out MATCHES "${t} [.]+[*]+Not Run" MESSAGE "${t} should not run:\n${r_out}")
endforeach()
foreach(t ${workers})
  pg_check(r_out MATCHES "${t} [.]+ +Passed" MESSAGE "${t} should pass:\n${r_out}")
endforeach()
# ... and workers/stop left no daemon behind.
pg_ctest_json(json "${BUILD}" -R "^toy/workers/start$")
string(JSON runner GET "${json}" tests 0 command 0)
set(control "${BUILD}/toy_serve")
pg_run(r EXPECT_RC 1 COMMAND "${runner}" serve --control "${control}" --status)
pg_check(r_out MATCHES "not running" MESSAGE "the daemon should be stopped:\n${r_out}")

# The daemon's prestarted plugin host is the one the case tests lease: workers/start
# runs where the cases run (same key), so a case finds it warm and nothing else starts.
# Step by step: the start test alone leaves the daemon up; one case, even with -FA '.*',
# leases from it because it answers; --status counts; the stop test ends it.
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "^toy/workers/start$")
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "^toy/M2/L1/L1_shape$"
       -FA ".*" --output-on-failure)
pg_run(r COMMAND "${runner}" serve --control "${control}" --status)
set(status "${r_out}")
foreach(field starts leases)
  string(JSON v ERROR_VARIABLE jerr GET "${status}" ${field})
  pg_check(NOT jerr AND v EQUAL 1 MESSAGE "serve --status: ${field} = ${v} (want 1):\n${status}")
endforeach()
string(JSON v GET "${status}" processes 0 calls)
pg_check(v EQUAL 1 MESSAGE "the warm host should have served the case's one call:\n${status}")
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "^toy/workers/stop$")
pg_run(r EXPECT_RC 1 COMMAND "${runner}" serve --control "${control}" --status)

# json-v1 is valid JSON and every case carries its labels.
pg_ctest_json(json "${BUILD}")
string(JSON n LENGTH "${json}" tests)
math(EXPR last "${n} - 1")
set(cases_seen 0)
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  if(name MATCHES "^toy/M([1-3])/L([1-5])/")
    set(k "${CMAKE_MATCH_1}")
    set(l "${CMAKE_MATCH_2}")
    math(EXPR cases_seen "${cases_seen} + 1")
    string(JSON props GET "${json}" tests ${i} properties)
    string(REGEX REPLACE "[ \t\n]" "" props "${props}")
    pg_check(props MATCHES "\"name\":\"LABELS\",\"value\":\\[\"level_L${l}\",\"op_toy\",\"phase_M${k}\",\"phasegate\"\\]"
             MESSAGE "labels of ${name}: ${props}")
    pg_check(props MATCHES "\"name\":\"RESOURCE_GROUPS\"" MESSAGE "resource groups of ${name}")
  endif()
endforeach()
pg_check(cases_seen EQUAL 9 MESSAGE "json-v1 lists ${cases_seen} case tests, expected 9")

# verify_all fails the build on the bug case, prints the table and writes JUnit.
set(junit "${BUILD}/phasegate-junit/verify_all.xml")
pg_run(r EXPECT_RC 1 COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_all)
# The workers pair ran (fixture of every case) but is no row and no case of the table.
# Vendored, the consumer's own `attention` (L1 only, no bug case) is all passed, and no
# other op has a row.
pg_summary(table "${r_out}")
if(MODE STREQUAL "package")
  string(CONCAT want
    "phasegate summary (verify_all): cells are passed/failed/skipped/not run\n"
    "  op   phase       L1          L2          gate/status\n"
    "  toy  contract    -           -           passed\n"
    "  toy  composition -           -           passed\n"
    "  toy  M1          1/0/0/0     1/1/0/0     not run\n"
    "  toy  M2          0/0/0/1     0/0/0/2     not run\n"
    "  toy  M3          0/0/0/1     0/0/0/2\n"
    "  total: 4 passed, 1 failed, 0 skipped, 8 not run\n")
else()
  string(CONCAT want
    "phasegate summary (verify_all): cells are passed/failed/skipped/not run\n"
    "  op         phase       L1          L2          gate/status\n"
    "  toy        contract    -           -           passed\n"
    "  toy        composition -           -           passed\n"
    "  toy        M1          1/0/0/0     1/1/0/0     not run\n"
    "  toy        M2          0/0/0/1     0/0/0/2     not run\n"
    "  toy        M3          0/0/0/1     0/0/0/2\n"
    "  attention  contract    -           -           passed\n"
    "  attention  composition -           -           passed\n"
    "  attention  M1          1/0/0/0     -           passed\n"
    "  attention  M2          1/0/0/0     -           passed\n"
    "  attention  M3          1/0/0/0     -\n"
    "  total: 11 passed, 1 failed, 0 skipped, 8 not run\n")
endif()
pg_check(table STREQUAL want MESSAGE "verify_all table:\n${table}\nexpected:\n${want}")
pg_check(r_out MATCHES "toy/workers/stop [.]+ +Passed" MESSAGE "verify_all:\n${r_out}")
pg_check(EXISTS "${junit}" MESSAGE "no JUnit at ${junit}")
file(READ "${junit}" xml)
pg_check(xml MATCHES "<testcase name=\"toy/M1/L2/L2_bug_at_m1\"[^>]*status=\"fail\"" MESSAGE "JUnit:\n${xml}")
if(NOT MODE STREQUAL "package")
  # The consumer's `attention` ran (its own REPORT_DIR) and passed.
  set(att_report "${BUILD}/attention-reports/attention/M1/evaluation_report.json")
  pg_check(EXISTS "${att_report}" MESSAGE "no M1 report of the consumer's attention op")
  file(READ "${att_report}" rep)
  string(JSON st GET "${rep}" status)
  pg_check(st STREQUAL "PASS" MESSAGE "the consumer's attention M1: ${st}")
endif()
set(m1_report "${BUILD}/phasegate-reports/toy/M1/evaluation_report.json")
pg_check(EXISTS "${m1_report}" MESSAGE "no M1 report")
# Every case test carries where it ran (JUnit <properties>: host, device, run id).
string(FIND "${xml}" "<testcase name=\"toy/M1/L2/L2_values\"" at)
string(SUBSTRING "${xml}" ${at} -1 tc)
string(FIND "${tc}" "</testcase>" tc_end)
string(SUBSTRING "${tc}" 0 ${tc_end} tc)
pg_check(at GREATER -1 AND tc MATCHES "<property name=\"host\" value=\"[^\"]+\"/>"
         AND tc MATCHES "<property name=\"device\" value=\"[a-z]+:[0-9]+\"/>"
         MESSAGE "no host/device <properties> for toy/M1/L2/L2_values:\n${tc}")
# One invocation, one report: verify_all's M1 report holds its 3 cases; a later
# invocation of one case (its session test runs too) starts a new one holding that case
# alone, its status that of the run, and the old one is in history/.
file(READ "${m1_report}" rep)
string(JSON n GET "${rep}" cases_total)
string(JSON st GET "${rep}" status)
pg_check(n EQUAL 3 AND st STREQUAL "FAIL" MESSAGE "verify_all's M1 report: ${n} cases, ${st}")
string(JSON host GET "${rep}" run host)
string(JSON kind GET "${rep}" run device kind)
pg_check(host MATCHES "." AND kind MATCHES "." MESSAGE "no host/device in the report")
pg_run(one COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "^toy/M1/L2/L2_values$")
pg_check(one_out MATCHES "toy/report/session [.]+ +Passed" MESSAGE "no session test ran:\n${one_out}")
file(READ "${m1_report}" rep)
string(JSON n GET "${rep}" cases_total)
string(JSON st GET "${rep}" status)
string(JSON complete GET "${rep}" selection complete)
pg_check(n EQUAL 1 AND st STREQUAL "PASS" AND NOT complete
         MESSAGE "a one-case invocation's M1 report: ${n} cases, ${st}, complete ${complete}")
file(GLOB hist "${BUILD}/phasegate-reports/toy/M1/history/evaluation_report.*.json")
pg_check(hist MESSAGE "the previous M1 report was not kept in history/")
# The failed case's JUnit message says what the report says (`phasegate report --junit`):
# category, boundary, the hint (the bug is a sign flip), the repro line.
string(REGEX MATCH "<testcase name=\"toy/M1/L2/L2_bug_at_m1\"[^>]*>[ \t\r\n]*<failure message=\"([^\"]*)\""
       m "${xml}")
set(msg "${CMAKE_MATCH_1}")
foreach(want "category: precision; boundary: M1 \\(earliest failing: M1\\)"
             "hints: sign_flip \\(confidence 1.00, y\\)"
             "; repro: [^;]*phasegate run --op-dir [^;]* --up-to-module 1 --case L2_bug_at_m1")
  pg_check(msg MATCHES "${want}" MESSAGE "JUnit message of toy/M1/L2/L2_bug_at_m1 lacks '${want}':\n${msg}")
endforeach()
# The summary's last line names the HTML page (`phasegate report --out`) beside the
# JUnit file.
set(html "${BUILD}/phasegate-junit/verify_all.html")
pg_check(r_out MATCHES "  JUnit: [^\n]*\n  HTML report: file://[^\n]*/phasegate-junit/verify_all[.]html\n"
         MESSAGE "HTML line:\n${r_out}")
pg_check(EXISTS "${html}" MESSAGE "no HTML page at ${html}")
file(READ "${html}" page)
pg_check(page MATCHES "L2_bug_at_m1" AND page MATCHES "sign_flip" MESSAGE "the page lacks the failed case")
pg_check(NOT r_out MATCHES "phasegate: warning" MESSAGE "verify_all warned:\n${r_out}")

# Resource groups: with two npus concurrent cases get distinct device ids (the toy
# impl holds a lock per device id while it runs, and fails on a collision).
file(WRITE "${BIN}/spec.json" [[
{"version": {"major": 1, "minor": 0},
 "local": [{"npus": [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]}]}
]])
file(MAKE_DIRECTORY "${BIN}/locks")
set(good "^toy/M[123]/L[12]/L[12]_(shape|values)$")
pg_run(r ENV "PHASEGATE_TOY_DEVLOCK=${BIN}/locks"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "${good}" -FA ".*" -j4
               --resource-spec-file "${BIN}/spec.json" --output-on-failure)
file(STRINGS "${BIN}/locks/devices.log" devs)
list(LENGTH devs n)
pg_check(n EQUAL 6 MESSAGE "6 impl calls expected: ${devs}")
list(REMOVE_DUPLICATES devs)
pg_expect_set("device ids the impl got" "${devs}" device=0 device=1)
pg_run(r EXPECT_RC ANY ENV "PHASEGATE_TOY_DEVLOCK=${BIN}/locks"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "${good}" -FA ".*" -j6
               --output-on-failure)
pg_check(r_out MATCHES "device 0 is in use by another test" MESSAGE
         "without the spec all cases share device 0, the lock should have seen it:\n${r_out}")
# Opting in (subdir): PHASEGATE_BUILD_EXAMPLES=ON registers the bundled example ops in
# the consumer's project, under their names (so the consumer's own `attention` is left out).
if(MODE STREQUAL "subdir")
  set(cfg_ex ${cfg})
  list(FIND cfg_ex -B i)
  math(EXPR i "${i} + 1")
  list(REMOVE_AT cfg_ex ${i})
  list(INSERT cfg_ex ${i} "${BIN}/examples")
  pg_run(r COMMAND "${CMAKE_COMMAND}" ${cfg_ex} -DPHASEGATE_BUILD_EXAMPLES=ON
                   -DPG_OWN_ATTENTION=OFF)
  pg_ctest_list(names "${BIN}/examples")
  foreach(t toy/NOT_BUILT attention/NOT_BUILT swiglu_ffn/NOT_BUILT rmsnorm/NOT_BUILT)
    pg_check(t IN_LIST names MESSAGE "PHASEGATE_BUILD_EXAMPLES=ON: no ${t} in ${names}")
  endforeach()
  pg_check(NOT names MATCHES "(^|;)(cli|cmake|repo|docs|unit)/"
           MESSAGE "PHASEGATE_BUILD_EXAMPLES=ON: phasegate's own tests in ${names}")
endif()
message(STATUS "consumer ${MODE}: ok")
