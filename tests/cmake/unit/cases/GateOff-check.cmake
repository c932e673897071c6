pg_ctest_list(names "${BUILD}" -L phase_M3)
pg_expect_set("ctest -L phase_M3 -N without gate" "${names}" basic/M3/L1/a basic/M3/L2/b basic/M3/L2/c)
pg_run(r EXPECT_RC 8 ENV PHASEGATE_FAKE_FAIL=b@1 COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}")
pg_check(r_out MATCHES "basic/M2/L2/b [.]+ +Passed" MESSAGE "without gate M2 runs:\n${r_out}")
