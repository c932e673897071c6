set(ops "${SRC}/ops/basic")
set(spec "python:${SRC}/impls/impl.py")
pg_ctest_list(names "${BUILD}" -R "^py/")
set(cases "")
foreach(k 1 2 3)
  list(APPEND cases py/M${k}/L1/a py/M${k}/L2/b py/M${k}/L2/c)
endforeach()
pg_expect_set("py tests" "${names}" py/contract py/composition py/workers/start
              py/workers/stop py/M1/gate py/M2/gate ${cases} py/report/session)

# The fixture pair around `phasegate serve`: the python: spec and the interpreter.
pg_ctest_json(json "${BUILD}" -R "^py/workers/start$")
pg_json_command(cmd "${json}" 0)
pg_expect_list("py/workers/start command" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/py_serve" --op-dir "${ops}" --impl "${spec}" --modes sim,npu
  --python "/opt/my py/bin/python3")
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_SETUP STREQUAL [=[["py_workers"]]=] MESSAGE "start: ${p_FIXTURES_SETUP}")

# Each case: the same spec and interpreter, --serve-control, requires the pair.
pg_ctest_json(json "${BUILD}" -R "^py/M2/L2/b$" -FA ".*")
pg_json_command(cmd "${json}" 0)
pg_expect_list("py/M2/L2/b command" "${cmd}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "${spec}" --up-to-module 2 --case b --modes sim,npu
  --report-dir "${BUILD}/phasegate-reports"
  --report-name py --report-session "${BUILD}/phasegate-reports/py/.session" --python "/opt/my py/bin/python3"
  --serve-control "${BUILD}/py_serve")
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["py_M1_gate","py_report","py_workers"]]=]
         MESSAGE "requires: ${p_FIXTURES_REQUIRED}")

# FUNCTION, and Python3_EXECUTABLE when PHASEGATE_PYTHON is empty.
pg_ctest_json(json "${BUILD}" -R "^pyfn/M1/L1/a$" -FA ".*")
pg_json_command(cmd "${json}" 0)
pg_expect_list("pyfn/M1/L1/a command" "${cmd}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "${spec}::my_wrapper" --up-to-module 1 --case a
  --report-dir "${BUILD}/phasegate-reports"
  --report-name pyfn --report-session "${BUILD}/phasegate-reports/pyfn/.session" --python /usr/bin/python3
  --serve-control "${BUILD}/pyfn_serve")
