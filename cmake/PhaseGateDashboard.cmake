# phasegate: one shard of a fleet run, submitted to CDash (docs/fleet.md "CDash").
# A `ctest -S` script: it runs `phasegate shard run` (the fingerprint check, the
# shard's own report root, the manifest) with ctest in dashboard mode, then submits
# the Test part.
#
#   ctest -S PhaseGateDashboard.cmake -DPG_RUNNER=<phasegate> -DPG_PLAN=<plan.json>
#         -DPG_OUT=<shard dir> -DPG_SUBMIT_URL=<https://cdash/submit.php?project=P>
#         [-DPG_INDEX=K] [-DPG_SUITE=name] [-DPG_STAMP=<run id>] [-DPG_BUILD_DIR=B]
#
# site = this host; build name = <suite>-<device kind>-shard<K> (device kind: the
# manifest's, `host` without visible devices); the build stamp is derived from
# PG_STAMP (default: the plan's fingerprint), so every shard of one fleet run shares
# it and a retried shard reuses its first attempt's (site, build name, stamp): CDash
# replaces that build's results instead of counting the shard twice. PG_INDEX: else
# the scheduler's variable (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, ...), as
# `phasegate shard run` reads it. The script's exit is the shard's.
cmake_minimum_required(VERSION 3.25)
foreach(v PG_RUNNER PG_PLAN PG_OUT PG_SUBMIT_URL)
  if(NOT ${v})
    message(FATAL_ERROR "PhaseGateDashboard.cmake: ${v} is not set")
  endif()
endforeach()
file(READ "${PG_PLAN}" plan)
string(JSON fingerprint GET "${plan}" fingerprint)
if(NOT PG_BUILD_DIR)
  string(JSON PG_BUILD_DIR GET "${plan}" build_dir)
endif()
if(NOT PG_STAMP)
  set(PG_STAMP "${fingerprint}")
endif()
if(NOT PG_SUITE)
  set(PG_SUITE phasegate)
endif()
set(index_args "")
if(DEFINED PG_INDEX)
  set(index_args --index "${PG_INDEX}")
endif()

# The stamp: a date-like tag CTest accepts (YYYYMMDD-hhmm), the same for every
# attempt of every shard of this run.
string(MD5 h "${PG_STAMP}")
string(SUBSTRING "${h}" 0 8 hx)
math(EXPR n "0x${hx} % 10000")
string(LENGTH "${n}" len)
while(len LESS 4)
  string(PREPEND n "0")
  string(LENGTH "${n}" len)
endwhile()
set(tag "20000101-${n}")
set(CTEST_SOURCE_DIRECTORY "${PG_BUILD_DIR}")
set(CTEST_BINARY_DIRECTORY "${PG_BUILD_DIR}")
set(CTEST_SUBMIT_URL "${PG_SUBMIT_URL}")
cmake_host_system_information(RESULT CTEST_SITE QUERY HOSTNAME)

# The tests run once, by `phasegate shard run` (ctest -T Test writes Test.xml under a
# new tag of its own choosing).
file(REMOVE "${PG_BUILD_DIR}/Testing/TAG")
execute_process(COMMAND "${PG_RUNNER}" shard run --plan "${PG_PLAN}" ${index_args} --out "${PG_OUT}"
                        --build-dir "${PG_BUILD_DIR}" -- -T Test
                RESULT_VARIABLE shard_rc)
if(NOT EXISTS "${PG_OUT}/manifest.json")
  message(FATAL_ERROR "PhaseGateDashboard.cmake: phasegate shard run wrote no manifest (exit ${shard_rc})")
endif()
file(READ "${PG_OUT}/manifest.json" manifest)
string(JSON status GET "${manifest}" status)
if(NOT status STREQUAL "ran" OR NOT EXISTS "${PG_BUILD_DIR}/Testing/TAG")
  message(FATAL_ERROR "PhaseGateDashboard.cmake: the shard did not run (${status}, exit ${shard_rc}): nothing submitted")
endif()
string(JSON shard GET "${manifest}" shard)
string(JSON device ERROR_VARIABLE no_device GET "${manifest}" devices kind)
if(no_device OR device STREQUAL "")
  set(device host)
endif()
set(CTEST_BUILD_NAME "${PG_SUITE}-${device}-shard${shard}")

# Test.xml moved under the run's tag, its <Site> naming this site, build and stamp:
# what CDash keys a build on, so a retry replaces instead of adding.
file(STRINGS "${PG_BUILD_DIR}/Testing/TAG" ran_tag LIMIT_COUNT 1)
file(READ "${PG_BUILD_DIR}/Testing/${ran_tag}/Test.xml" xml)
string(REGEX REPLACE "<Site BuildName=\"[^\"]*\"[ \t\r\n]*BuildStamp=\"[^\"]*\"[ \t\r\n]*Name=\"[^\"]*\""
       "<Site BuildName=\"${CTEST_BUILD_NAME}\"\n\tBuildStamp=\"${tag}-Experimental\"\n\tName=\"${CTEST_SITE}\""
       xml "${xml}")
file(REMOVE_RECURSE "${PG_BUILD_DIR}/Testing/${tag}")
file(WRITE "${PG_BUILD_DIR}/Testing/${tag}/Test.xml" "${xml}")
file(WRITE "${PG_BUILD_DIR}/Testing/TAG" "${tag}\nExperimental\n")
ctest_start(Experimental APPEND QUIET)
ctest_submit(PARTS Test RETURN_VALUE submit_rc)
if(NOT submit_rc EQUAL 0)
  message(FATAL_ERROR "PhaseGateDashboard.cmake: ctest_submit failed (${submit_rc})")
endif()
message(STATUS "phasegate dashboard: ${CTEST_SITE} ${CTEST_BUILD_NAME} ${tag}: submitted (shard exit ${shard_rc})")
if(NOT shard_rc EQUAL 0)
  message(FATAL_ERROR "PhaseGateDashboard.cmake: the shard's ctest exited ${shard_rc}")
endif()
