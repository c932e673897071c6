set(one "^basic/M1/L1/a$")
# -R of one case pulls in what it requires: the contract (gate), the workers pair and
# the report session.
pg_ctest_list(names "${BUILD}" -R "${one}")
pg_expect_set("ctest -R one case -N" "${names}" basic/contract basic/workers/start
              basic/M1/L1/a basic/workers/stop basic/report/session)
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "${one}" -V)
pg_check(r_out MATCHES "fake phasegate: leased from [^\n]*/basic_serve\n"
         MESSAGE "the case should use the daemon:\n${r_out}")
pg_check(r_out MATCHES "100% tests passed, 0 tests failed out of 5" MESSAGE "${r_out}")

# -FA '.*': no fixture setup at all, so no daemon; the case runs standalone and passes.
pg_ctest_list(names "${BUILD}" -R "${one}" -FA ".*")
pg_expect_set("ctest -R one case -FA .* -N" "${names}" basic/M1/L1/a)
set(log "${BUILD}/argv.log")
pg_run(r ENV "PHASEGATE_FAKE_LOG=${log}"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -R "${one}" -FA ".*" -V)
pg_check(r_out MATCHES "fake phasegate: standalone\n" MESSAGE "no daemon expected:\n${r_out}")
pg_check(r_out MATCHES "fake phasegate: case a PASS at M1" MESSAGE "${r_out}")
pg_check(r_out MATCHES "100% tests passed, 0 tests failed out of 1" MESSAGE "${r_out}")
file(STRINGS "${log}" calls)
list(LENGTH calls n)
pg_check(n EQUAL 1 MESSAGE "one call (the run) expected: ${calls}")
pg_check(calls MATCHES "^\\[\"run\",.*\"--serve-control\",\"[^\"]*/basic_serve\","
         MESSAGE "the run still names the control directory: ${calls}")
# ... the same for the whole phase (the gate is dropped too).
pg_run(r COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L phase_M3 -FA ".*" -V)
string(REGEX MATCHALL "fake phasegate: standalone\n" s "${r_out}")
list(LENGTH s n)
pg_check(n EQUAL 3 MESSAGE "3 standalone M3 cases expected:\n${r_out}")
pg_check(NOT r_out MATCHES "workers/" MESSAGE "no workers test expected:\n${r_out}")

# By hand: the test's own command line, without ctest and without a daemon.
pg_ctest_json(json "${BUILD}" -R "^basic/M2/L2/b$" -FA ".*")
pg_json_command(cmd "${json}" 0)
string(REPLACE "<SEMI>" "\\;" cmd "${cmd}")
pg_run(r COMMAND ${cmd})
pg_check(r_out MATCHES "fake phasegate: standalone\nfake phasegate: case b PASS at M2"
         MESSAGE "by hand:\n${r_out}")

# A daemon that cannot start: workers/start is skipped (exit 1), every case still runs
# (standalone) and passes; the verify target passes and says so under the table.
pg_run(r ENV PHASEGATE_FAKE_SERVE_FAIL=start
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -V)
pg_check(r_out MATCHES "basic/workers/start [.]+[*]+Skipped" MESSAGE "start should skip:\n${r_out}")
pg_check(r_out MATCHES "basic/workers/stop [.]+ +Passed" MESSAGE "stop should pass:\n${r_out}")
string(REGEX MATCHALL "fake phasegate: standalone\n" s "${r_out}")
list(LENGTH s n)
pg_check(n EQUAL 9 MESSAGE "9 standalone cases expected:\n${r_out}")
pg_check(NOT r_out MATCHES "Not Run" MESSAGE "no test may be left out:\n${r_out}")
pg_run(r ENV PHASEGATE_FAKE_SERVE_FAIL=start
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic)
pg_summary(table "${r_out}")
string(CONCAT want
  "phasegate summary (verify_basic): cells are passed/failed/skipped/not run\n"
  "  op     phase       L1          L2          gate/status\n"
  "  basic  contract    -           -           passed\n"
  "  basic  composition -           -           passed\n"
  "  basic  M1          1/0/0/0     2/0/0/0     passed\n"
  "  basic  M2          1/0/0/0     2/0/0/0     passed\n"
  "  basic  M3          1/0/0/0     2/0/0/0\n"
  "  total: 13 passed, 0 failed, 0 skipped, 0 not run\n"
  "  workers: basic/workers/start skipped (phasegate serve did not start: the cases ran standalone)\n")
pg_check(table STREQUAL want MESSAGE "verify_basic table:\n${table}\nexpected:\n${want}")

# A stop that fails is a failure of the target (a daemon may be left behind), shown
# under the table and counted; the cases themselves passed.
pg_run(r EXPECT_RC 1 ENV PHASEGATE_FAKE_SERVE_FAIL=stop
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic)
pg_summary(table "${r_out}")
string(REPLACE "  workers: basic/workers/start skipped (phasegate serve did not start: the cases ran standalone)\n"
       "  workers: basic/workers/stop failed\n" want "${want}")
pg_check(table STREQUAL want MESSAGE "verify_basic table:\n${table}\nexpected:\n${want}")
pg_check(r_out MATCHES "verify_basic failed \\(ctest exit 8, 1 test\\(s\\) failed or not run\\)"
         MESSAGE "failure line:\n${r_out}")
