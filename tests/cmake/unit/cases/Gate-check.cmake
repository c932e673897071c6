set(m1 basic/M1/L1/a basic/M1/L2/b basic/M1/L2/c)
set(m2 basic/M2/L1/a basic/M2/L2/b basic/M2/L2/c)
set(m3 basic/M3/L1/a basic/M3/L2/b basic/M3/L2/c)

# ctest -L phase_M3 pulls in M1 and M2 (and their gates, and the contract) by fixtures.
pg_ctest_list(names "${BUILD}" -L phase_M3)
pg_expect_set("ctest -L phase_M3 -N" "${names}" basic/contract ${m1} basic/M1/gate
              ${m2} basic/M2/gate ${m3})
# -FA '.*' drops the gate on purpose.
pg_ctest_list(names "${BUILD}" -L phase_M3 -FA ".*")
pg_expect_set("ctest -L phase_M3 -FA .* -N" "${names}" ${m3})

# An M1 failure: M1 runs first, M2 is reported as not run.
pg_run(r EXPECT_RC 8 ENV PHASEGATE_FAKE_FAIL=b@1
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M2
               --output-junit "${BUILD}/gate.xml")
pg_check(r_out MATCHES "basic/M1/L2/b [.]+[*]+Failed" MESSAGE "M1/b should fail:\n${r_out}")
pg_check(r_out MATCHES "basic/M1/L1/a [.]+ +Passed" MESSAGE "M1/a should pass:\n${r_out}")
foreach(t basic/M1/gate ${m2})
  pg_check(r_out MATCHES "${t} [.]+[*]+Not Run" MESSAGE "${t} should not run:\n${r_out}")
endforeach()
pg_check(NOT r_out MATCHES "basic/M3/" MESSAGE "M3 must not be selected:\n${r_out}")
# The summary script reads the JUnit file: 1 failed; M1 gate, M2 gate and the M2 cases not run.
execute_process(COMMAND "${CMAKE_COMMAND}" -DPG_SUMMARY_ONLY=1 "-DPG_JUNIT=${BUILD}/gate.xml"
                -DPG_TITLE=gate -P "${PG_MODULE_DIR}/PhaseGateSummary.cmake"
                OUTPUT_VARIABLE s ERROR_VARIABLE s)
pg_check(s MATCHES "basic +M1 +1/0/0/0 +1/1/0/0 +not run" MESSAGE "M1 row:\n${s}")
pg_check(s MATCHES "basic +M2 +0/0/0/1 +0/0/0/2" MESSAGE "M2 row:\n${s}")
pg_check(s MATCHES "total: 3 passed, 1 failed, 0 skipped, 5 not run" MESSAGE "totals:\n${s}")

# A skipped case (exit 77 + marker) does not block the gate.
pg_run(r ENV PHASEGATE_FAKE_SKIP=a COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M2)
pg_check(r_out MATCHES "basic/M1/L1/a [.]+[*]+Skipped" MESSAGE "M1/a should be skipped:\n${r_out}")
pg_check(r_out MATCHES "basic/M2/L2/b [.]+ +Passed" MESSAGE "M2/b should run:\n${r_out}")

# Properties of one case test.
pg_ctest_json(json "${BUILD}" -R "^basic/M2/L1/a$" -FA ".*")
string(JSON cmd GET "${json}" tests 0 command)
string(JSON props GET "${json}" tests 0 properties)
string(REPLACE "\n" " " cmd "${cmd}")
foreach(want [["run",]] [["--impl", *"plugin:/nonexistent/libfake_impl.so"]]
             [["--up-to-module", *"2"]] [["--case", *"a"]] [["--modes", *"sim,npu"]]
             [["--report-dir", *"[^"]*/phasegate-reports"]] [["--timeout", *"10"]])
  pg_check(cmd MATCHES "${want}" MESSAGE "command lacks ${want}: ${cmd}")
endforeach()
string(JSON np LENGTH "${props}")
math(EXPR last "${np} - 1")
foreach(i RANGE ${last})
  string(JSON k GET "${props}" ${i} name)
  string(JSON v GET "${props}" ${i} value)
  set(prop_${k} "${v}")
endforeach()
string(REGEX REPLACE "[ \n\t]" "" labels "${prop_LABELS}")
pg_check(labels STREQUAL [=[["extra_label","level_L1","op_basic","phase_M2","phasegate"]]=]
         MESSAGE "labels: ${labels}")
pg_check(prop_TIMEOUT EQUAL 80 MESSAGE "ctest TIMEOUT = 10 s x 2 modes + 60: ${prop_TIMEOUT}")
pg_check(prop_SKIP_RETURN_CODE EQUAL 77 MESSAGE "SKIP_RETURN_CODE: ${prop_SKIP_RETURN_CODE}")
pg_check(prop_FIXTURES_REQUIRED MATCHES "basic_M1_gate" MESSAGE "requires: ${prop_FIXTURES_REQUIRED}")
pg_check(prop_FIXTURES_SETUP MATCHES "basic_M2" MESSAGE "setup: ${prop_FIXTURES_SETUP}")
pg_check(prop_SKIP_REGULAR_EXPRESSION MATCHES "phasegate" MESSAGE "skip regex")
