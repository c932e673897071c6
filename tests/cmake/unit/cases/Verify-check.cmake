# A failing case fails the build of verify_basic, after printing the table.
set(junit "${BUILD}/phasegate-junit/verify_basic.xml")
pg_run(r EXPECT_RC 1 ENV PHASEGATE_FAKE_FAIL=a@2
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic)
pg_check(r_out MATCHES "phasegate summary \\(verify_basic\\)" MESSAGE "no table:\n${r_out}")
pg_check(r_out MATCHES "basic +M2 +0/1/0/0 +2/0/0/0 +not run" MESSAGE "M2 row:\n${r_out}")
pg_check(r_out MATCHES "basic +M3 +0/0/0/1 +0/0/0/1\n" MESSAGE "M3 row (c left out by PHASEGATE_VERIFY_CTEST_ARGS):\n${r_out}")
pg_check(r_out MATCHES "verify_basic failed" MESSAGE "no failure line:\n${r_out}")
pg_check(EXISTS "${junit}" MESSAGE "no JUnit at ${junit}")
file(READ "${junit}" xml)
pg_check(xml MATCHES "<testcase name=\"basic/M2/L1/a\"[^>]*status=\"fail\"" MESSAGE "JUnit: ${xml}")
# Per-phase target, passing.
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic_M1)
pg_check(r_out MATCHES "total: 5 passed, 0 failed" MESSAGE "verify_basic_M1:\n${r_out}")
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_all)
pg_check(r_out MATCHES "total: 12 passed, 0 failed, 0 skipped, 0 not run" MESSAGE "verify_all:\n${r_out}")
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target help)
pg_check(r_out MATCHES "verify_basic_M3" MESSAGE "no verify_basic_M3 target:\n${r_out}")
