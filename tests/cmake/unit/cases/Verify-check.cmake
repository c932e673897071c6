# A failing case fails the build of verify_basic, after printing the table.
set(junit "${BUILD}/phasegate-junit/verify_basic.xml")
pg_run(r EXPECT_RC 1 ENV PHASEGATE_FAKE_FAIL=a@2 "PHASEGATE_FAKE_LOG=${BUILD}/fake.log"
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic)
# M3/L2/c is left out by PHASEGATE_VERIFY_CTEST_ARGS; the `phasegate serve` fixture pair
# (basic/workers/start|stop) runs but is no row and no case of the table.
pg_summary(table "${r_out}")
string(CONCAT want
  "phasegate summary (verify_basic): cells are passed/failed/skipped/not run\n"
  "  op     phase       L1          L2          gate/status\n"
  "  basic  contract    -           -           passed\n"
  "  basic  composition -           -           passed\n"
  "  basic  M1          1/0/0/0     2/0/0/0     passed\n"
  "  basic  M2          0/1/0/0     2/0/0/0     not run\n"
  "  basic  M3          0/0/0/1     0/0/0/1\n"
  "  total: 8 passed, 1 failed, 0 skipped, 3 not run\n")
pg_check(table STREQUAL want MESSAGE "verify_basic table:\n${table}\nexpected:\n${want}")
pg_check(r_out MATCHES "verify_basic failed \\(ctest exit 8, 4 test\\(s\\) failed or not run\\)"
         MESSAGE "no failure line:\n${r_out}")
pg_check(EXISTS "${junit}" MESSAGE "no JUnit at ${junit}")
file(READ "${junit}" xml)
pg_check(xml MATCHES "<testcase name=\"basic/M2/L1/a\"[^>]*status=\"fail\"" MESSAGE "JUnit: ${xml}")
foreach(t start stop)
  pg_check(xml MATCHES "<testcase name=\"basic/workers/${t}\"[^>]*status=\"run\""
           MESSAGE "JUnit lacks basic/workers/${t}: ${xml}")
endforeach()
# After ctest, `phasegate report` on the op's report directory fills the JUnit failure
# messages and writes the HTML page beside the JUnit file; the table's last line names it.
set(html "${BUILD}/phasegate-junit/verify_basic.html")
pg_check(r_out MATCHES "  JUnit: [^\n]*/verify_basic[.]xml\n  HTML report: file://[^\n]*/phasegate-junit/verify_basic[.]html\n"
         MESSAGE "no HTML line after the JUnit line:\n${r_out}")
pg_check(EXISTS "${html}" MESSAGE "no HTML page at ${html}")
file(READ "${BUILD}/fake.log" log)
foreach(call "\"report\",\"--junit\",\"${junit}\",\"${BUILD}/phasegate-reports\""
             "\"report\",\"--out\",\"${html}\",\"${BUILD}/phasegate-reports\"")
  string(FIND "${log}" "${call}" at)
  pg_check(NOT at EQUAL -1 MESSAGE "no call [${call}] in the fake runner's log:\n${log}")
endforeach()
# A renderer that fails warns and never changes the verdict (ctest's), failing or not.
pg_run(r EXPECT_RC 1 ENV PHASEGATE_FAKE_FAIL=a@2 PHASEGATE_FAKE_REPORT_FAIL=1
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic)
foreach(want "phasegate: warning: the JUnit failure messages were not filled \\(phasegate report --junit exited 2\\): phasegate report: error: fake failure"
             "phasegate: warning: no HTML report \\(phasegate report --out exited 2\\)"
             "  JUnit: [^\n]*\n  HTML report: not written"
             "verify_basic failed \\(ctest exit 8")
  pg_check(r_out MATCHES "${want}" MESSAGE "verify_basic, renderer failing: no '${want}':\n${r_out}")
endforeach()
pg_check(NOT EXISTS "${html}" MESSAGE "a stale HTML page survived: ${html}")
pg_run(r ENV PHASEGATE_FAKE_REPORT_FAIL=1
       COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic_M1)
pg_check(r_out MATCHES "phasegate: warning: no HTML report" MESSAGE "verify_basic_M1:\n${r_out}")
# Per-phase target, passing: contract, the M1 cases and the M1 gate (the workers pair
# comes with them as a fixture and is not counted).
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_basic_M1)
pg_check(r_out MATCHES "basic/workers/start [.]+ +Passed" MESSAGE "verify_basic_M1:\n${r_out}")
pg_summary(table "${r_out}")
string(CONCAT want
  "phasegate summary (verify_basic_M1): cells are passed/failed/skipped/not run\n"
  "  op     phase       L1          L2          gate/status\n"
  "  basic  contract    -           -           passed\n"
  "  basic  M1          1/0/0/0     2/0/0/0     passed\n"
  "  total: 5 passed, 0 failed, 0 skipped, 0 not run\n")
pg_check(table STREQUAL want MESSAGE "verify_basic_M1 table:\n${table}\nexpected:\n${want}")
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target verify_all)
pg_summary(table "${r_out}")
string(CONCAT want
  "phasegate summary (verify_all): cells are passed/failed/skipped/not run\n"
  "  op     phase       L1          L2          gate/status\n"
  "  basic  contract    -           -           passed\n"
  "  basic  composition -           -           passed\n"
  "  basic  M1          1/0/0/0     2/0/0/0     passed\n"
  "  basic  M2          1/0/0/0     2/0/0/0     passed\n"
  "  basic  M3          1/0/0/0     1/0/0/0\n"
  "  total: 12 passed, 0 failed, 0 skipped, 0 not run\n")
pg_check(table STREQUAL want MESSAGE "verify_all table:\n${table}\nexpected:\n${want}")
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --target help)
pg_check(r_out MATCHES "verify_basic_M3" MESSAGE "no verify_basic_M3 target:\n${r_out}")
