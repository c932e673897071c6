set(m1 basic/M1/L1/a basic/M1/L2/b basic/M1/L2/c)
set(m2 basic/M2/L1/a basic/M2/L2/b basic/M2/L2/c)
set(m3 basic/M3/L1/a basic/M3/L2/b basic/M3/L2/c)

# ctest -L phase_M3 pulls in M1 and M2 (and their gates, and the contract) by fixtures,
# and the `phasegate serve` fixture pair every case requires (IMPL: a plugin).
pg_ctest_list(names "${BUILD}" -L phase_M3)
pg_expect_set("ctest -L phase_M3 -N" "${names}" basic/contract ${m1} basic/M1/gate
              ${m2} basic/M2/gate ${m3} basic/workers/start basic/workers/stop basic/report/session)
# -FA '.*' drops the gate on purpose, and the workers pair with it: the pair carries no
# phase label, so it is only ever pulled in as a fixture, never selected by -L phase_M3.
pg_ctest_list(names "${BUILD}" -L phase_M3 -FA ".*")
pg_expect_set("ctest -L phase_M3 -FA .* -N" "${names}" ${m3})
# The pair's own label.
pg_ctest_list(names "${BUILD}" -L "^workers$")
pg_expect_set("ctest -L workers -N" "${names}" basic/workers/start basic/workers/stop)

# An M1 failure: M1 runs first, M2 is reported as not run.
pg_run(r EXPECT_RC 8 ENV PHASEGATE_FAKE_FAIL=b@1
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M2
               --output-junit "${BUILD}/gate.xml")
pg_check(r_out MATCHES "basic/M1/L2/b [.]+[*]+Failed" MESSAGE "M1/b should fail:\n${r_out}")
pg_check(r_out MATCHES "basic/M1/L1/a [.]+ +Passed" MESSAGE "M1/a should pass:\n${r_out}")
foreach(t basic/M1/gate ${m2})
  pg_check(r_out MATCHES "${t} [.]+[*]+Not Run" MESSAGE "${t} should not run:\n${r_out}")
endforeach()
foreach(t basic/workers/start basic/workers/stop)
  pg_check(r_out MATCHES "${t} [.]+ +Passed" MESSAGE "${t} should pass:\n${r_out}")
endforeach()
pg_check(NOT r_out MATCHES "basic/M3/" MESSAGE "M3 must not be selected:\n${r_out}")
file(READ "${BUILD}/gate.xml" xml)
pg_check(xml MATCHES "<testcase name=\"basic/workers/start\"[^>]*status=\"run\""
         MESSAGE "the JUnit file should hold the workers tests:\n${xml}")
# The summary script reads the JUnit file: 1 failed; M1 gate, M2 gate and the M2 cases
# not run; the workers fixture pair is neither a row nor counted.
execute_process(COMMAND "${CMAKE_COMMAND}" -DPG_SUMMARY_ONLY=1 "-DPG_JUNIT=${BUILD}/gate.xml"
                -DPG_TITLE=gate -P "${PG_MODULE_DIR}/PhaseGateSummary.cmake"
                OUTPUT_VARIABLE s ERROR_VARIABLE s)
pg_summary(table "${s}")
string(CONCAT want
  "phasegate summary (gate): cells are passed/failed/skipped/not run\n"
  "  op     phase       L1          L2          gate/status\n"
  "  basic  contract    -           -           passed\n"
  "  basic  M1          1/0/0/0     1/1/0/0     not run\n"
  "  basic  M2          0/0/0/1     0/0/0/2     not run\n"
  "  total: 3 passed, 1 failed, 0 skipped, 5 not run\n")
pg_check(table STREQUAL want MESSAGE "summary table:\n${table}\nexpected:\n${want}")

# A skipped case (exit 77 + marker) does not block the gate.
pg_run(r ENV PHASEGATE_FAKE_SKIP=a COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M2)
pg_check(r_out MATCHES "basic/M1/L1/a [.]+[*]+Skipped" MESSAGE "M1/a should be skipped:\n${r_out}")
pg_check(r_out MATCHES "basic/M2/L2/b [.]+ +Passed" MESSAGE "M2/b should run:\n${r_out}")

# Properties of one case test.
pg_ctest_json(json "${BUILD}" -R "^basic/M2/L1/a$" -FA ".*")
pg_json_command(cmd "${json}" 0)
pg_expect_list("command of basic/M2/L1/a" "${cmd}" "${FAKE_RUNNER}" run --op-dir "${SRC}/ops/basic"
  --impl plugin:/nonexistent/libfake_impl.so --up-to-module 2 --case a --modes sim,npu
  --report-dir "${BUILD}/phasegate-reports"
  --report-name basic --report-session "${BUILD}/phasegate-reports/basic/.session" --timeout 10 --serve-control "${BUILD}/basic_serve")
pg_json_props(prop "${json}" 0)
pg_check(prop_LABELS STREQUAL [=[["extra_label","level_L1","op_basic","phase_M2","phasegate"]]=]
         MESSAGE "labels: ${prop_LABELS}")
pg_check(prop_TIMEOUT EQUAL 80 MESSAGE "ctest TIMEOUT = 10 s x 2 modes + 60: ${prop_TIMEOUT}")
pg_check(prop_SKIP_RETURN_CODE EQUAL 77 MESSAGE "SKIP_RETURN_CODE: ${prop_SKIP_RETURN_CODE}")
pg_check(prop_FIXTURES_REQUIRED STREQUAL [=[["basic_M1_gate","basic_report","basic_workers"]]=]
         MESSAGE "requires: ${prop_FIXTURES_REQUIRED}")
pg_check(prop_FIXTURES_SETUP STREQUAL [=[["basic_M2"]]=] MESSAGE "setup: ${prop_FIXTURES_SETUP}")
pg_check(prop_SKIP_REGULAR_EXPRESSION MATCHES "phasegate" MESSAGE "skip regex")
pg_check(prop_WORKING_DIRECTORY STREQUAL BUILD MESSAGE "working directory: ${prop_WORKING_DIRECTORY}")

# The `phasegate serve` fixture pair: start (setup) and stop (cleanup), label workers
# and the op's labels, no phase or level label; same working directory as the cases.
pg_ctest_json(json "${BUILD}" -L "^workers$")
pg_json_test(i "${json}" basic/workers/start)
pg_json_command(cmd "${json}" ${i})
pg_expect_list("command of basic/workers/start" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/basic_serve" --op-dir "${SRC}/ops/basic"
  --impl plugin:/nonexistent/libfake_impl.so --modes sim,npu)
pg_json_props(start "${json}" ${i})
pg_check(start_LABELS STREQUAL [=[["extra_label","op_basic","phasegate","workers"]]=]
         MESSAGE "labels of workers/start: ${start_LABELS}")
pg_check(start_FIXTURES_SETUP STREQUAL [=[["basic_workers"]]=] MESSAGE "start: ${start_FIXTURES_SETUP}")
pg_check(start_WORKING_DIRECTORY STREQUAL BUILD MESSAGE "start runs in ${start_WORKING_DIRECTORY}")
pg_check(start_SKIP_RETURN_CODE EQUAL 1 MESSAGE "a daemon that cannot start is a skip")
pg_check(NOT DEFINED start_FIXTURES_REQUIRED MESSAGE "start requires ${start_FIXTURES_REQUIRED}")
pg_json_test(i "${json}" basic/workers/stop)
pg_json_command(cmd "${json}" ${i})
pg_expect_list("command of basic/workers/stop" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/basic_serve" --stop)
pg_json_props(stop "${json}" ${i})
pg_check(stop_LABELS STREQUAL start_LABELS MESSAGE "labels of workers/stop: ${stop_LABELS}")
pg_check(stop_FIXTURES_CLEANUP STREQUAL [=[["basic_workers"]]=] MESSAGE "stop: ${stop_FIXTURES_CLEANUP}")
