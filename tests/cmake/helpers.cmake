# phasegate tests — helpers for the CMake-module test drivers (cmake -P scripts):
# run a command and capture it, fail with context, read ctest's JSON listing.

# pg_run(<prefix> [EXPECT_RC <rc>|ANY] [ENV k=v...] COMMAND <cmd...>)
# Runs the command; sets <prefix>_rc, <prefix>_out (stdout+stderr); fails unless the
# exit code matches EXPECT_RC (default 0).
function(pg_run prefix)
  cmake_parse_arguments(PARSE_ARGV 1 a "" "EXPECT_RC" "ENV;COMMAND")
  set(cmd ${a_COMMAND})
  if(a_ENV)
    set(cmd "${CMAKE_COMMAND}" -E env ${a_ENV} ${a_COMMAND})
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT DEFINED a_EXPECT_RC)
    set(a_EXPECT_RC 0)
  endif()
  if(NOT a_EXPECT_RC STREQUAL "ANY" AND NOT rc STREQUAL a_EXPECT_RC)
    list(JOIN a_COMMAND " " shown)
    message(FATAL_ERROR "command exited ${rc}, expected ${a_EXPECT_RC}:\n  ${shown}\n${out}")
  endif()
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

# pg_check(<condition...> MESSAGE <text>) — if() the condition, fail with the text.
# A function, not a macro: a macro would re-parse the backslashes of regexes.
function(pg_check)
  cmake_parse_arguments(PARSE_ARGV 0 c "" "" "MESSAGE")
  if(NOT (${c_UNPARSED_ARGUMENTS}))
    message(FATAL_ERROR "check failed: ${c_MESSAGE}")
  endif()
endfunction()

# pg_ctest_names(<out> <build> [ctest args...]): test names of `ctest --show-only=json-v1`
# as a list with ';' '[' ']' escaped as <SEMI> <LB> <RB>; fails when the output is not
# valid JSON.
function(pg_ctest_json out build)
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${build}" --show-only=json-v1 ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest --show-only=json-v1 failed (${rc}): ${err}")
  endif()
  string(JSON kind ERROR_VARIABLE jerr GET "${json}" kind)
  if(jerr OR NOT kind STREQUAL "ctestInfo")
    message(FATAL_ERROR "ctest --show-only=json-v1 is not valid JSON: ${jerr}")
  endif()
  set(${out} "${json}" PARENT_SCOPE)
endfunction()

# pg_escape(<out> <text>): ';' '[' ']' made list-safe for comparisons.
function(pg_escape out text)
  string(REPLACE ";" "<SEMI>" text "${text}")
  string(REPLACE "[" "<LB>" text "${text}")
  string(REPLACE "]" "<RB>" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# pg_test_names(<out> <json>): escaped names of every test in a json-v1 document.
function(pg_test_names out json)
  string(JSON n LENGTH "${json}" tests)
  set(names "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON name GET "${json}" tests ${i} name)
      pg_escape(name "${name}")
      list(APPEND names "${name}")
    endforeach()
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# pg_ctest_list(<out> <build> [ctest args]): names printed by `ctest -N` (escaped).
function(pg_ctest_list out build)
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${build}" -N ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest -N failed (${rc}): ${err}${text}")
  endif()
  pg_escape(text "${text}")
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]*" lines "${text}")
  set(names "")
  foreach(l IN LISTS lines)
    string(REGEX REPLACE "^Test +#[0-9]+: " "" l "${l}")
    list(APPEND names "${l}")
  endforeach()
  list(SORT names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# pg_expect_list(<actual list> <expected...>): same elements, any order.
function(pg_expect_set what actual)
  set(expected ${ARGN})
  list(SORT expected)
  list(SORT actual)
  if(NOT actual STREQUAL expected)
    string(REPLACE ";" "\n    " a "${actual}")
    string(REPLACE ";" "\n    " e "${expected}")
    message(FATAL_ERROR "${what}:\n  expected:\n    ${e}\n  actual:\n    ${a}")
  endif()
endfunction()
