# phasegate tests — driver of one cmake/unit/<Case> test (RunCMake style): configures
# unit/ with -DCASE=<Case>, compares the exit code with cases/<Case>-result.txt
# (default 0) and stderr (white space folded) with the regex in cases/<Case>-stderr.txt, then runs
# cases/<Case>-check.cmake (BUILD = the build dir) for what happens after configure.
# Inputs: CASE, SRC, BIN, PG_MODULE_DIR, FAKE_RUNNER, FAKE_SOURCE, GENERATOR, C_COMPILER.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/../helpers.cmake")
set(BUILD "${BIN}/${CASE}")
file(REMOVE_RECURSE "${BUILD}")
set(cases "${SRC}/cases")
if(EXISTS "${cases}/${CASE}-generator.txt")   # a case may need another generator
  file(STRINGS "${cases}/${CASE}-generator.txt" GENERATOR LIMIT_COUNT 1)
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${BUILD}" -G "${GENERATOR}"
          "-DCASE=${CASE}" "-DPG_MODULE_DIR=${PG_MODULE_DIR}" "-DFAKE_RUNNER=${FAKE_RUNNER}"
          "-DFAKE_SOURCE=${FAKE_SOURCE}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(expected_rc 0)
if(EXISTS "${cases}/${CASE}-result.txt")
  file(STRINGS "${cases}/${CASE}-result.txt" expected_rc LIMIT_COUNT 1)
endif()
if(NOT rc STREQUAL expected_rc)
  message(FATAL_ERROR "configure of case ${CASE} exited ${rc}, expected ${expected_rc}\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
if(EXISTS "${cases}/${CASE}-stderr.txt")
  file(READ "${cases}/${CASE}-stderr.txt" want)
  string(STRIP "${want}" want)
  # CMake word-wraps messages: compare with runs of white space folded to one space.
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")
  if(NOT flat MATCHES "${want}")
    message(FATAL_ERROR "stderr of case ${CASE} does not match\n  ${want}\nactual stderr:\n${err}")
  endif()
elseif(NOT expected_rc STREQUAL "0" AND err STREQUAL "")
  message(FATAL_ERROR "case ${CASE} failed without a message")
endif()
if(EXISTS "${cases}/${CASE}-check.cmake")
  include("${cases}/${CASE}-check.cmake")
endif()
message(STATUS "case ${CASE}: ok")
