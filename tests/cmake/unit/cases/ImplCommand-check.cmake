set(ops "${SRC}/ops/basic")
foreach(op cmd rep)
  set(want ${op}/contract ${op}/composition ${op}/M1/gate ${op}/M2/gate ${op}/report/session)
  foreach(k 1 2 3)
    list(APPEND want ${op}/M${k}/L1/a ${op}/M${k}/L2/b ${op}/M${k}/L2/c)
  endforeach()
  pg_ctest_list(names "${BUILD}" -R "^${op}/")
  pg_expect_set("${op} tests (no workers pair)" "${names}" ${want})
endforeach()
pg_ctest_list(names "${BUILD}" -L "^workers$")
list(LENGTH names n)
pg_check(n EQUAL 0 MESSAGE "tests labelled workers: ${names}")

pg_ctest_json(json "${BUILD}" -R "^cmd/M2/L1/a$")
pg_json_test(i "${json}" cmd/M2/L1/a)
pg_json_command(c "${json}" ${i})
pg_expect_list("cmd/M2/L1/a command" "${c}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "exec:/bin/echo /nonexistent/libfake_impl.so" --up-to-module 2 --case a --modes sim
  --report-dir "${BUILD}/phasegate-reports"
  --report-name cmd --report-session "${BUILD}/phasegate-reports/cmd/.session")
pg_json_props(p "${json}" ${i})
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["cmd_M1_gate","cmd_report"]]=] MESSAGE "requires: ${p_FIXTURES_REQUIRED}")
pg_ctest_json(json "${BUILD}" -R "^rep/M1/L1/a$")
pg_json_test(i "${json}" rep/M1/L1/a)
pg_json_command(c "${json}" ${i})
pg_expect_list("rep/M1/L1/a command" "${c}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "replay:${SRC}/dumps" --up-to-module 1 --case a --report-dir "${BUILD}/phasegate-reports"
  --report-name rep --report-session "${BUILD}/phasegate-reports/rep/.session")
pg_json_props(p "${json}" ${i})
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["rep_contract","rep_report"]]=] MESSAGE "requires: ${p_FIXTURES_REQUIRED}")

# A whole run calls no `phasegate serve`.
set(log "${BUILD}/argv.log")
pg_run(r ENV "PHASEGATE_FAKE_LOG=${log}" COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -j2)
file(STRINGS "${log}" runs REGEX "^\\[\"run\"")
list(LENGTH runs n)
pg_check(n EQUAL 18 MESSAGE "18 runs expected, got ${n}")
file(STRINGS "${log}" serves REGEX "^\\[\"serve\"")
list(LENGTH serves n)
pg_check(n EQUAL 0 MESSAGE "serve was called: ${serves}")
pg_check(NOT r_out MATCHES "workers" MESSAGE "workers tests ran:\n${r_out}")
