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
list(REMOVE_DUPLICATES devs)
pg_expect_set("device ids used" "${devs}" 0 1)
# The lock does catch sharing: without the spec every test gets device 0.
pg_run(r EXPECT_RC ANY ENV "PHASEGATE_FAKE_DEVLOCK=${BUILD}/locks"
       COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -j9 -L level_L --output-on-failure)
pg_check(r_out MATCHES "device 0 is in use by another test" MESSAGE "no collision seen:\n${r_out}")
