# Two npus in the spec: concurrent tests get distinct device ids (the fake holds a
# lock per device id for 300 ms and fails on a collision).
file(WRITE "${BUILD}/spec.json" [[
{"version": {"major": 1, "minor": 0},
 "local": [{"npus": [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]}]}
]])
file(MAKE_DIRECTORY "${BUILD}/locks")
set(log "${BUILD}/argv.log")
pg_run(r ENV "PHASEGATE_FAKE_DEVLOCK=${BUILD}/locks" "PHASEGATE_FAKE_LOG=${log}"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -j4 -L level_L
               --resource-spec-file "${BUILD}/spec.json" --output-on-failure)
file(STRINGS "${log}" runs REGEX "^\\[\"run\"")
set(devs "")
foreach(l IN LISTS runs)
  if(l MATCHES "\"device=([0-9-]+)\"")
    list(APPEND devs "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(LENGTH devs n)
pg_check(n EQUAL 9 MESSAGE "9 runs expected, got ${n}")
# -L level_L selects the cases; each requires the workers fixture, so the daemon starts
# once before them and stops once after them. It holds no resource group itself.
file(STRINGS "${log}" serves REGEX "^\\[\"serve\"")
list(LENGTH serves n)
pg_check(n EQUAL 2 MESSAGE "one serve start and one stop expected: ${serves}")
list(GET serves 0 start)
list(GET serves 1 stop)
pg_check(start MATCHES "\"--impl\",\"plugin:[^\"]*\",\"device=0\"" MESSAGE "serve start: ${start}")
pg_check(stop MATCHES "\"--stop\",\"device=0\"" MESSAGE "serve stop: ${stop}")
list(REMOVE_DUPLICATES devs)
pg_expect_set("device ids used" "${devs}" 0 1)
# The lock does catch sharing: without the spec every test gets device 0.
pg_run(r EXPECT_RC ANY ENV "PHASEGATE_FAKE_DEVLOCK=${BUILD}/locks"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -j9 -L level_L --output-on-failure)
pg_check(r_out MATCHES "device 0 is in use by another test" MESSAGE "no collision seen:\n${r_out}")
