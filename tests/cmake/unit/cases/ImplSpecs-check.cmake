pg_ctest_json(json "${BUILD}" -R "^(plug|exec|replay)/M1/L1/a$|^plug/composition$" -FA ".*")
string(JSON n LENGTH "${json}" tests)
pg_check(n EQUAL 4 MESSAGE "4 tests expected")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  pg_json_command(cmd_${name} "${json}" ${i})
endforeach()
set(ops "${SRC}/ops/basic")
# plugin: golden, EXTRA_ARGS, then the daemon's control directory (a persistent impl).
pg_expect_list("plugin case command" "${cmd_plug/M1/L1/a}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl plugin:/nonexistent/libfake_impl.so --up-to-module 1 --case a
  --report-dir "${BUILD}/phasegate-reports"
  --report-name plug --report-session "${BUILD}/phasegate-reports/plug/.session" --golden-lib /nonexistent/libfake_golden.so
  --no-bisect --serve-control "${BUILD}/plug_serve")
pg_expect_list("selftest command" "${cmd_plug/composition}" "${FAKE_RUNNER}" selftest
  --op-dir "${ops}" --golden-lib /nonexistent/libfake_golden.so --suite-strength)
# exec: and replay: keep no process between calls: no --serve-control, no fixture.
pg_expect_list("exec case command" "${cmd_exec/M1/L1/a}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "exec:python3 run_case.cmake /nonexistent/libfake_impl.so" --up-to-module 1 --case a
  --report-dir "${BUILD}/phasegate-reports"
  --report-name exec --report-session "${BUILD}/phasegate-reports/exec/.session")
pg_expect_list("replay case command" "${cmd_replay/M1/L1/a}" "${FAKE_RUNNER}" run --op-dir "${ops}"
  --impl "replay:${SRC}/dumps" --up-to-module 1 --case a --report-dir "${BUILD}/my-reports"
  --report-name replay --report-session "${BUILD}/my-reports/replay/.session")
file(READ "${BUILD}/list.log" log)
pg_check(log MATCHES [=["list","--op-dir","[^"]*/basic","--format","json","--levels","L1,L2"]=] MESSAGE "list args: ${log}")
# Only the plugin op has the `phasegate serve` fixture pair.
pg_ctest_list(names "${BUILD}" -R "/workers/")
pg_expect_set("workers tests" "${names}" plug/workers/start plug/workers/stop)
pg_ctest_json(json "${BUILD}" -R "^plug/workers/start$")
pg_json_command(cmd "${json}" 0)
pg_expect_list("plug/workers/start command" "${cmd}" "${FAKE_RUNNER}" serve
  --control "${BUILD}/plug_serve" --op-dir "${ops}" --impl plugin:/nonexistent/libfake_impl.so)
