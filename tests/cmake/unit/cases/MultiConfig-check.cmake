pg_ctest_list(names "${BUILD}" -C Debug)
pg_expect_set("before the build" "${names}" basic/NOT_BUILT pre/NOT_BUILT)
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --config Debug)
# contract, composition, workers/start|stop (IMPL: a plugin), 2 gates, 9 cases
set(basic_tests basic/contract basic/composition basic/workers/start basic/workers/stop
    basic/M1/gate basic/M2/gate basic/report/session)
set(pre_tests pre/contract pre/composition pre/workers/start pre/workers/stop pre/report/session)
foreach(k 1 2 3)
  list(APPEND basic_tests basic/M${k}/L1/a basic/M${k}/L2/b basic/M${k}/L2/c)
  list(APPEND pre_tests pre/M${k}/L1/a pre/M${k}/L2/b pre/M${k}/L2/c)
endforeach()
pg_ctest_list(names "${BUILD}" -C Debug -R "^basic/" -N)
pg_expect_set("Debug: basic tests" "${names}" ${basic_tests})
pg_ctest_list(names "${BUILD}" -C Debug -R "^pre/")
pg_expect_set("Debug: pre tests (GATE OFF)" "${names}" ${pre_tests})
# The daemon's control directory is the binary directory's <op>_serve in every
# configuration; the start test runs with the runner of the configuration.
pg_ctest_json(json "${BUILD}" -C Debug -R "^basic/workers/start$")
pg_json_command(cmd "${json}" 0)
pg_expect_list("Debug: command of basic/workers/start" "${cmd}" "${BUILD}/Debug/fake_phasegate"
  serve --control "${BUILD}/basic_serve" --op-dir "${SRC}/ops/basic"
  --impl plugin:/nonexistent/libfake_impl.so)
# Release is not built yet: its own placeholders.
pg_ctest_list(names "${BUILD}" -C Release)
pg_expect_set("Release before its build" "${names}" basic/NOT_BUILT pre/NOT_BUILT)
pg_run(r COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" --config Debug --target verify_basic)
pg_check(r_out MATCHES "total: 13 passed, 0 failed, 0 skipped, 0 not run\n  JUnit:"
         MESSAGE "verify_basic (Debug):\n${r_out}")
pg_check(r_out MATCHES "basic/workers/stop [.]+ +Passed" MESSAGE "verify_basic (Debug):\n${r_out}")
