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

# pg_expect_set(<what> <actual list> <expected...>): same elements, any order.
function(pg_expect_set what actual)
  set(expected ${ARGN})
  list(SORT expected)
  list(SORT actual)
  pg_expect_list("${what}" "${actual}" ${expected})
endfunction()

# pg_summary(<out> <text>): the table a verify target printed (PhaseGateSummary.cmake),
# from its title line up to the "  JUnit:" line (excluded); fails when there is none.
function(pg_summary out text)
  string(FIND "${text}" "phasegate summary (" a)
  if(a EQUAL -1)
    message(FATAL_ERROR "no phasegate summary in:\n${text}")
  endif()
  string(SUBSTRING "${text}" ${a} -1 rest)
  string(FIND "${rest}" "  JUnit: " b)
  if(b EQUAL -1)
    message(FATAL_ERROR "the summary has no JUnit line:\n${rest}")
  endif()
  string(SUBSTRING "${rest}" 0 ${b} block)
  set(${out} "${block}" PARENT_SCOPE)
endfunction()

# pg_fake_calls(<out> <log>): the fake runner's PHASEGATE_FAKE_LOG file as one JSON
# array of calls; each call is the argv array followed by "device=<id>", "cwd=<dir>".
function(pg_fake_calls out log)
  file(READ "${log}" lines)
  string(STRIP "${lines}" lines)
  string(REPLACE "\n" "," lines "${lines}")
  set(${out} "[${lines}]" PARENT_SCOPE)
endfunction()

# pg_fake_call(<prefix> <calls> <i>): call i of pg_fake_calls(): <prefix>_argv (escaped
# list, without the verb's program), <prefix>_cwd, <prefix>_device.
function(pg_fake_call prefix calls i)
  string(JSON n LENGTH "${calls}" ${i})
  math(EXPR last "${n} - 3")
  set(argv "")
  foreach(j RANGE ${last})
    string(JSON a GET "${calls}" ${i} ${j})
    pg_escape(a "${a}")
    list(APPEND argv "${a}")
  endforeach()
  math(EXPR jd "${n} - 2")
  math(EXPR jc "${n} - 1")
  string(JSON d GET "${calls}" ${i} ${jd})
  string(JSON c GET "${calls}" ${i} ${jc})
  string(REGEX REPLACE "^device=" "" d "${d}")
  string(REGEX REPLACE "^cwd=" "" c "${c}")
  set(${prefix}_argv "${argv}" PARENT_SCOPE)
  set(${prefix}_device "${d}" PARENT_SCOPE)
  set(${prefix}_cwd "${c}" PARENT_SCOPE)
endfunction()

# pg_json_props(<prefix> <json> <i>): properties of test i of a json-v1 document as
# <prefix>_<NAME> (list values as JSON text with white space removed); the usual
# properties the test does not have are unset.
function(pg_json_props prefix json i)
  foreach(name LABELS FIXTURES_REQUIRED FIXTURES_SETUP FIXTURES_CLEANUP WORKING_DIRECTORY
               SKIP_RETURN_CODE SKIP_REGULAR_EXPRESSION TIMEOUT RESOURCE_GROUPS DEF_SOURCE_LINE)
    unset(${prefix}_${name} PARENT_SCOPE)   # no value left over from another test
  endforeach()
  string(JSON props GET "${json}" tests ${i} properties)
  string(JSON np LENGTH "${props}")
  if(np GREATER 0)
    math(EXPR last "${np} - 1")
    foreach(k RANGE ${last})
      string(JSON name GET "${props}" ${k} name)
      string(JSON type TYPE "${props}" ${k} value)
      string(JSON v GET "${props}" ${k} value)
      if(type STREQUAL "ARRAY")
        string(REGEX REPLACE "[ \n\t]" "" v "${v}")
      endif()
      set(${prefix}_${name} "${v}" PARENT_SCOPE)
    endforeach()
  endif()
endfunction()

# pg_json_test(<out> <json> <name>): the index of test <name> in a json-v1 document, or
# -1.
function(pg_json_test out json name)
  string(JSON n LENGTH "${json}" tests)
  set(found -1)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON t GET "${json}" tests ${i} name)
      if(t STREQUAL name)
        set(found ${i})
        break()
      endif()
    endforeach()
  endif()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# pg_json_command(<out> <json> <i>): the command of test i as an escaped list.
function(pg_json_command out json i)
  string(JSON cmd GET "${json}" tests ${i} command)
  string(JSON n LENGTH "${cmd}")
  set(words "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(j RANGE ${last})
      string(JSON a GET "${cmd}" ${j})
      pg_escape(a "${a}")
      list(APPEND words "${a}")
    endforeach()
  endif()
  set(${out} "${words}" PARENT_SCOPE)
endfunction()

# pg_expect_list(<what> <actual> <expected...>): same elements in the same order.
function(pg_expect_list what actual)
  set(expected ${ARGN})
  if(NOT actual STREQUAL expected)
    string(REPLACE ";" "\n    " a "${actual}")
    string(REPLACE ";" "\n    " e "${expected}")
    message(FATAL_ERROR "${what}:\n  expected:\n    ${e}\n  actual:\n    ${a}")
  endif()
endfunction()
