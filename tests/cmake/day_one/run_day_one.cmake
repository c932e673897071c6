# phasegate tests — driver of cmake/day_one: configures and builds the project in
# tests/cmake/day_one (the toy op with impls of M1 only, PHASES 1) against this build's
# runner and checks that M2 and M3 are listed, skipped as not implemented yet (never a
# failure, the impl never called), reported so, and that verify_all is green with the
# phases shown as "not impl." in its table.
# Inputs: SRC, BIN, PG_SOURCE_DIR, PG_RUNNER, PYTHON, GENERATOR, C_COMPILER.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/../helpers.cmake")
set(BUILD "${BIN}/build")
file(REMOVE_RECURSE "${BIN}")
pg_run(r COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${BUILD}" -G "${GENERATOR}"
       "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DPG_SOURCE_DIR=${PG_SOURCE_DIR}"
       "-DPG_MODULE_DIR=${PG_SOURCE_DIR}/cmake" "-DPG_RUNNER=${PG_RUNNER}"
       "-DPHASEGATE_PYTHON=${PYTHON}")

set(all "")
set(later "")
foreach(op toy toy_py)
  foreach(k 1 2 3)
    set(cases_${op}_${k} ${op}/M${k}/L1/L1_shape ${op}/M${k}/L2/L2_values ${op}/M${k}/L2/L2_bug_at_m1)
    list(APPEND all ${cases_${op}_${k}})
    if(k GREATER 1)
      list(APPEND later ${cases_${op}_${k}})
    endif()
  endforeach()
  list(APPEND all ${op}/contract ${op}/composition ${op}/M1/gate ${op}/M2/gate
                  ${op}/workers/start ${op}/workers/stop ${op}/report/session)
endforeach()
# Every phase is listed (the runner exists: discovery at configure time).
pg_ctest_list(names "${BUILD}")
pg_expect_set("ctest -N" "${names}" ${all})
pg_ctest_list(names "${BUILD}" -L "^not_implemented$" -FA ".*")  # no fixtures pulled in
pg_expect_set("ctest -L not_implemented -N" "${names}" ${later})
pg_ctest_json(json "${BUILD}" -R "^toy_py/M3/L1/L1_shape$" -FA ".*")
pg_json_command(cmd "${json}" 0)
list(FIND cmd --implemented-phases at)
pg_check(at GREATER -1 MESSAGE "no --implemented-phases in ${cmd}")

# Day one: verify_all builds the plugin and is green.
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_all)
pg_summary(table "${r_out}")
string(CONCAT want
  "phasegate summary (verify_all): cells are passed/failed/skipped/not run; "
  "not impl.: a phase after the op's PHASES\n"
  "  op      phase       L1          L2          gate/status\n"
  "  toy     contract    -           -           passed\n"
  "  toy     composition -           -           passed\n"
  "  toy     M1          1/0/0/0     2/0/0/0     passed\n"
  "  toy     M2          not impl.   not impl.   not implemented yet\n"
  "  toy     M3          not impl.   not impl.   not implemented yet\n"
  "  toy_py  contract    -           -           passed\n"
  "  toy_py  composition -           -           passed\n"
  "  toy_py  M1          1/0/0/0     2/0/0/0     passed\n"
  "  toy_py  M2          not impl.   not impl.   not implemented yet\n"
  "  toy_py  M3          not impl.   not impl.   not implemented yet\n"
  "  total: 14 passed, 0 failed, 0 skipped, 0 not run, 12 not implemented yet\n")
pg_check(table STREQUAL want MESSAGE "verify_all table:\n${table}\nexpected:\n${want}")
foreach(t ${later})
  pg_check(r_out MATCHES "${t} [.]+[*]+Skipped" MESSAGE "${t} should be skipped:\n${r_out}")
endforeach()

# The reason, on the console of one case test.
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "^toy/M2/L2/L2_values$"
       -FA ".*" -V)
pg_check(r_out MATCHES "\\[SKIP\\] toy M2 L2_values  M2 not implemented yet \\(PHASES 1\\): the impl was not called"
         MESSAGE "the case line:\n${r_out}")

# The phase reports say so; M1's is a plain PASS.
# Reports are keyed by registration: toy's under toy/, toy_py's under toy_py/.
foreach(dir phasegate-reports/toy py-reports/toy_py)
  foreach(k 2 3)
    file(READ "${BUILD}/${dir}/M${k}/evaluation_report.json" rep)
    string(JSON status GET "${rep}" status)
    string(JSON ni GET "${rep}" not_implemented)
    string(JSON n GET "${rep}" cases_skipped)
    pg_check(status STREQUAL "SKIPPED" AND ni STREQUAL "ON" AND n EQUAL 3
             MESSAGE "${dir} M${k}: status ${status}, not_implemented ${ni}, ${n} skipped")
    foreach(i 0 1 2)
      string(JSON ms GET "${rep}" checks ${i} per_mode_status sim)
      string(JSON why GET "${rep}" checks ${i} modes 0 summary)
      pg_check(ms STREQUAL "SKIPPED" AND why STREQUAL "M${k} not implemented yet (PHASES 1)"
               MESSAGE "${dir} M${k} case ${i}: ${ms}: ${why}")
    endforeach()
  endforeach()
  file(READ "${BUILD}/${dir}/M1/evaluation_report.json" rep)
  string(JSON status GET "${rep}" status)
  string(JSON ni ERROR_VARIABLE jerr GET "${rep}" not_implemented)
  pg_check(status STREQUAL "PASS" AND jerr MATCHES "not found" MESSAGE "${dir} M1: ${status} ${ni}")
endforeach()

# Without PHASES the same impls are an ERROR at M2 (structural: no toy_module12_wrapper),
# so the green verify_all above never called them there.
pg_run(r EXPECT_RC 2 COMMAND "${PG_RUNNER}" run --op-dir "${PG_SOURCE_DIR}/tests/cmake/consumer/toy"
       --impl "plugin:${BUILD}/libtoy_m1.so" --up-to-module 2 --case L2_values --report "${BIN}/m2.json"
       --no-bisect)
pg_check(r_out MATCHES "structural.*toy_module12_wrapper" MESSAGE "M2 without PHASES:\n${r_out}")
message(STATUS "day_one: ok")
