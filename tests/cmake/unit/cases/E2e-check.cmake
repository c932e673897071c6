set(ops "${BUILD}/whole")
pg_ctest_list(names "${BUILD}" -R "/e2e$" -FA ".*")
pg_expect_set("e2e tests" "${names}" py/e2e)
pg_ctest_json(json "${BUILD}" -R "^py/e2e$" -FA ".*")
pg_json_command(cmd "${json}" 0)
pg_expect_list("py/e2e command" "${cmd}" "${FAKE_RUNNER}" run --e2e --op-dir "${ops}"
  --modes sim,npu --report-dir "${BUILD}/phasegate-reports" --report-name py
  --report-session "${BUILD}/phasegate-reports/py/.session" --timeout 30
  --python /usr/bin/python3 --serve-control "${BUILD}/py_serve")
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["py_report","py_workers"]]=]
         MESSAGE "requires: ${p_FIXTURES_REQUIRED}")
pg_check(p_LABELS STREQUAL [=[["e2e","op_py","phasegate"]]=] MESSAGE "labels: ${p_LABELS}")
