# Without the gate -L phase_M3 selects the M3 cases only; the `phasegate serve` fixture
# pair comes with them (FIXTURES_REQUIRED <op>_workers), never by label.
pg_ctest_list(names "${BUILD}" -L phase_M3)
pg_expect_set("ctest -L phase_M3 -N without gate" "${names}" basic/M3/L1/a basic/M3/L2/b
              basic/M3/L2/c basic/workers/start basic/workers/stop basic/report/session)
pg_ctest_list(names "${BUILD}" -L phase_M3 -FA ".*")
pg_expect_set("ctest -L phase_M3 -FA .* -N without gate" "${names}" basic/M3/L1/a
              basic/M3/L2/b basic/M3/L2/c)
pg_run(r EXPECT_RC 8 ENV PHASEGATE_FAKE_FAIL=b@1 COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}")
pg_check(r_out MATCHES "basic/M2/L2/b [.]+ +Passed" MESSAGE "without gate M2 runs:\n${r_out}")
# Without the gate a case still requires exactly the report session and the workers.
pg_ctest_json(json "${BUILD}" -R "^basic/M2/L1/a$" -FA ".*")
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["basic_report","basic_workers"]]=] MESSAGE "requires: ${p_FIXTURES_REQUIRED}")
pg_check(NOT DEFINED p_FIXTURES_SETUP MESSAGE "GATE OFF: no case sets up a fixture: ${p_FIXTURES_SETUP}")
