# phasegate: a new report session for one registration (the <op>/report/session test
# that phasegate_add_op adds, the setup of the fixture every case test requires). Each
# ctest invocation runs it once, so the case tests of that invocation merge into one
# report per phase and an earlier invocation's cases never count (docs/report.md
# "One run, one verdict").
#   cmake -DPG_SESSION_FILE=<report dir>/<op>/.session -P PhaseGateSession.cmake
# Under `phasegate shard run` (PHASEGATE_REPORT_ROOT set) the file is
# $PHASEGATE_REPORT_ROOT/<op>/.session instead, where that shard's `phasegate run`
# reads it (docs/fleet.md "Running a shard").
if(NOT PG_SESSION_FILE)
  message(FATAL_ERROR "PhaseGateSession.cmake: PG_SESSION_FILE is not set")
endif()
set(file "${PG_SESSION_FILE}")
if(NOT "$ENV{PHASEGATE_REPORT_ROOT}" STREQUAL "")
  get_filename_component(op_dir "${PG_SESSION_FILE}" DIRECTORY)
  get_filename_component(op "${op_dir}" NAME)
  set(file "$ENV{PHASEGATE_REPORT_ROOT}/${op}/.session")
endif()
string(TIMESTAMP now "%Y%m%dT%H%M%S%fZ" UTC)
string(RANDOM LENGTH 16 ALPHABET "0123456789abcdef" id)
file(WRITE "${file}" "${now}-${id}\n")
