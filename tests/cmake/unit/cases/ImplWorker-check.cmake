set(ops "${SRC}/ops/basic")
set(spec "worker:python3 -u run_case.cmake /nonexistent/libfake_impl.so")
set(cases "")
foreach(k 1 2 3)
  list(APPEND cases wrk/M${k}/L1/a wrk/M${k}/L2/b wrk/M${k}/L2/c)
endforeach()
pg_ctest_list(names "${BUILD}" -R "^wrk/")
pg_expect_set("wrk tests" "${names}" wrk/contract wrk/composition wrk/workers/start
              wrk/workers/stop wrk/M1/gate wrk/M2/gate ${cases} wrk/report/session)

# The fixture pair around `phasegate serve`: the worker: spec, the modes, the memory limit.
pg_ctest_json(json "${BUILD}" -R "^wrk/workers/")
pg_json_test(i "${json}" wrk/workers/start)
pg_json_command(cmd "${json}" ${i})
pg_expect_list("wrk/workers/start command" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/wrk_serve" --op-dir "${ops}" --impl "${spec}" --modes sim,npu
  --memory-limit 512M)
pg_json_props(p "${json}" ${i})
pg_check(p_FIXTURES_SETUP STREQUAL [=[["wrk_workers"]]=] MESSAGE "start: ${p_FIXTURES_SETUP}")
pg_check(p_LABELS STREQUAL [=[["op_wrk","phasegate","workers"]]=] MESSAGE "start labels: ${p_LABELS}")
pg_check(p_WORKING_DIRECTORY STREQUAL BUILD MESSAGE "start runs in ${p_WORKING_DIRECTORY}")
pg_json_test(i "${json}" wrk/workers/stop)
pg_json_command(cmd "${json}" ${i})
pg_expect_list("wrk/workers/stop command" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/wrk_serve" --stop)
pg_json_props(p "${json}" ${i})
pg_check(p_FIXTURES_CLEANUP STREQUAL [=[["wrk_workers"]]=] MESSAGE "stop: ${p_FIXTURES_CLEANUP}")

# Each case passes the same spec and --serve-control, and requires the pair.
pg_ctest_json(json "${BUILD}" -R "^wrk/M2/L2/b$" -FA ".*")
pg_json_command(cmd "${json}" 0)
pg_expect_list("wrk/M2/L2/b command" "${cmd}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "${spec}" --up-to-module 2 --case b --modes sim,npu
  --report-dir "${BUILD}/phasegate-reports"
  --report-name wrk --report-session "${BUILD}/phasegate-reports/wrk/.session" --memory-limit=512M
  --serve-control "${BUILD}/wrk_serve")
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["wrk_M1_gate","wrk_report","wrk_workers"]]=]
         MESSAGE "requires: ${p_FIXTURES_REQUIRED}")
pg_check(p_WORKING_DIRECTORY STREQUAL BUILD MESSAGE "case runs in ${p_WORKING_DIRECTORY}")

# --fresh-process: the runner never leases, so no pair and no --serve-control.
pg_ctest_list(names "${BUILD}" -R "^fresh/(workers|contract|composition)")
pg_expect_set("fresh: no workers pair" "${names}" fresh/contract fresh/composition)
pg_ctest_json(json "${BUILD}" -R "^fresh/M1/L1/a$" -FA ".*")
string(JSON n LENGTH "${json}" tests)
pg_check(n EQUAL 1 MESSAGE "fresh/M1/L1/a alone expected")
pg_json_command(cmd "${json}" 0)
pg_expect_list("fresh/M1/L1/a command" "${cmd}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "worker:/bin/true" --up-to-module 1 --case a
  --report-dir "${BUILD}/phasegate-reports"
  --report-name fresh --report-session "${BUILD}/phasegate-reports/fresh/.session" --fresh-process)
pg_json_props(p "${json}" 0)
pg_check(p_FIXTURES_REQUIRED STREQUAL [=[["fresh_report"]]=]
         MESSAGE "fresh requires the report session only (GATE OFF, no workers pair): ${p_FIXTURES_REQUIRED}")

# A memory limit serve cannot read (run takes 1.5G, serve whole numbers) is not passed on.
pg_ctest_json(json "${BUILD}" -R "^frac/workers/start$")
pg_json_command(cmd "${json}" 0)
pg_expect_list("frac/workers/start command" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/frac_serve" --op-dir "${ops}" --impl plugin:/nonexistent/libfake_impl.so)

# Running: the daemon starts first, every case leases from it, it stops last.
set(log "${BUILD}/argv.log")
pg_run(r ENV "PHASEGATE_FAKE_LOG=${log}" COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}"
       -R "^wrk/" -j2 -V)
pg_check(NOT r_out MATCHES "fake phasegate: standalone" MESSAGE "a case ran standalone:\n${r_out}")
string(REGEX MATCHALL "fake phasegate: leased from [^\n]*/wrk_serve\n" leased "${r_out}")
list(LENGTH leased n)
pg_check(n EQUAL 9 MESSAGE "9 cases should lease from the daemon:\n${r_out}")
pg_fake_calls(calls "${log}")
string(JSON ncalls LENGTH "${calls}")
math(EXPR last "${ncalls} - 1")
set(verbs "")
foreach(i RANGE ${last})
  string(JSON v GET "${calls}" ${i} 0)
  if(v STREQUAL "serve" OR v STREQUAL "run")
    pg_fake_call(c "${calls}" ${i})
    if(v STREQUAL "serve" AND c_argv MATCHES "--stop")
      set(v "stop")
    endif()
    list(APPEND verbs "${v}")
  endif()
endforeach()
pg_expect_list("serve/run order" "${verbs}" serve run run run run run run run run run stop)
