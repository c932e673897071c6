set(ops "${SRC}/ops/basic")
foreach(op witharg viavar plain)
  pg_ctest_json(json "${BUILD}" -R "^${op}/M1/L1/a$" -FA ".*")
  pg_json_command(cmd_${op} "${json}" 0)
endforeach()
pg_expect_list("INSPECT acc" "${cmd_witharg}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl exec:true --up-to-module 1 --case a --report-dir "${BUILD}/phasegate-reports"
  --report-name witharg --report-session "${BUILD}/phasegate-reports/witharg/.session"
  --inspect acc)
pg_expect_list("PHASEGATE_viavar_INSPECT h" "${cmd_viavar}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl exec:true --up-to-module 1 --case a --report-dir "${BUILD}/phasegate-reports"
  --report-name viavar --report-session "${BUILD}/phasegate-reports/viavar/.session"
  --inspect h)
pg_expect_list("no INSPECT" "${cmd_plain}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl exec:true --up-to-module 1 --case a --report-dir "${BUILD}/phasegate-reports"
  --report-name plain --report-session "${BUILD}/phasegate-reports/plain/.session")
