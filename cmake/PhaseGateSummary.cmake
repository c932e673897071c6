# phasegate — the command of the verify_* targets (cmake -P): runs ctest on the tests
# whose labels match PG_LABEL_1 [and PG_LABEL_2], writes JUnit to PG_JUNIT, prints a
# phase x level table (passed/failed/skipped/not run, and "not impl." for the phases
# after an op's PHASES) from the JUnit file and fails when ctest did. The table is
# printed even when tests fail.
# Between ctest and the table, `PG_RUNNER report` reads the reports under
# PG_REPORT_DIRS: `--junit PG_JUNIT` fills the failure messages of the failed cases,
# `--out <PG_JUNIT dir>/<PG_TITLE>.html` writes the HTML page the table's last line
# names. Either failing prints a warning and never changes the verdict (ctest's).
# Inputs: PG_CTEST, PG_TEST_DIR, PG_JUNIT, PG_TITLE, PG_CONFIG (multi-config only),
# PG_LABEL_<i>, PG_EXTRA_ARGS (a list of extra ctest arguments), PG_RUNNER,
# PG_REPORT_DIRS (a list).
# With PG_SUMMARY_ONLY set it only prints the table of an existing PG_JUNIT (tests).

cmake_minimum_required(VERSION 3.25)

# Pads TEXT with spaces to WIDTH characters.
function(_pg_pad text width out)
  string(LENGTH "${text}" l)
  while(l LESS width)
    string(APPEND text " ")
    math(EXPR l "${l} + 1")
  endwhile()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The result of one test, from its element C of the JUnit file (phasegate_summary's
# encoding: ';', '[' and ']' as the bytes 1, 2, 3): its name in OUT_NAME and in OUT_R
# p passed, f failed, s skipped, x not implemented yet (a skip for the op's PHASES) or
# n not run; OUT_R is empty when C names no test.
function(_pg_case_result c out_name out_r)
  set(${out_r} "" PARENT_SCOPE)
  if(NOT c MATCHES "<testcase name=\"([^\"]*)\"")
    return()
  endif()
  set(name "${CMAKE_MATCH_1}")
  string(ASCII 1 soh)
  string(ASCII 2 stx)
  string(ASCII 3 etx)
  foreach(pair "&lt;|<" "&gt;|>" "&quot;|\"" "&apos;|'" "${soh}|;" "${stx}|[" "${etx}|]" "&amp;|&")
    string(REPLACE "|" ";" pair "${pair}")
    list(GET pair 0 from)
    list(GET pair 1 to)
    string(REPLACE "${from}" "${to}" name "${name}")
  endforeach()
  set(status notrun)
  if(c MATCHES "status=\"([a-z]+)\"")
    set(status "${CMAKE_MATCH_1}")
  endif()
  if(status STREQUAL "run")
    set(r p)
  elseif(status STREQUAL "fail")
    set(r f)
  elseif(c MATCHES "message=\"SKIP_" AND c MATCHES "<system-out>[^<]*not implemented yet [(]PHASES [0-9]+[)]")
    set(r x)   # the op's PHASES: the phase is not implemented yet (not run on purpose)
  elseif(c MATCHES "message=\"SKIP_")
    set(r s)   # SKIP_RETURN_CODE=77 or SKIP_REGULAR_EXPRESSION_MATCHED
  else()
    set(r n)   # fixture dependency failed, disabled, not found
  endif()
  set(${out_name} "${name}" PARENT_SCOPE)
  set(${out_r} "${r}" PARENT_SCOPE)
endfunction()

# The table cell of test NAME: its op, row (M<k>, or contract, composition, NOT_BUILT)
# and column (L<n>, or gate, status).
function(_pg_cell name out_op out_row out_col)
  # <op>/M<k>/L<n>/<case>, <op>/M<k>/gate, <op>/contract, <op>/composition, <op>/e2e,
  # <op>/NOT_BUILT
  if(name MATCHES "^([A-Za-z0-9_.-]+)/M([0-9]+)/L([0-9]+)/")
    set(op "${CMAKE_MATCH_1}")
    set(row "M${CMAKE_MATCH_2}")
    set(col "L${CMAKE_MATCH_3}")
  elseif(name MATCHES "^([A-Za-z0-9_.-]+)/M([0-9]+)/gate$")
    set(op "${CMAKE_MATCH_1}")
    set(row "M${CMAKE_MATCH_2}")
    set(col "gate")
  elseif(name MATCHES "^([A-Za-z0-9_.-]+)/([A-Za-z0-9_]+)$") # contract, composition, e2e
    set(op "${CMAKE_MATCH_1}")
    set(row "${CMAKE_MATCH_2}")
    set(col "status")
  else()
    set(op "(other)")
    set(row "-")
    set(col "status")
  endif()
  set(${out_op} "${op}" PARENT_SCOPE)
  set(${out_row} "${row}" PARENT_SCOPE)
  set(${out_col} "${col}" PARENT_SCOPE)
endfunction()

# The table line of row ROW of op OP (op column OPW wide, a cell per level of LEVELS),
# in OUT. Reads the counters of phasegate_summary: cnt_<p|f|s|n|x>_<op>|<row>|<col> and
# row_x_<op>|<row>, row_other_<op>|<row>.
function(_pg_table_row op row opw levels out)
  _pg_pad("${op}" ${opw} c1)
  _pg_pad("${row}" 12 c2)
  set(line "  ${c1}  ${c2}")
  foreach(l IN LISTS levels)
    set(k "${op}|${row}|${l}")
    if(DEFINED cnt_p_${k})
      set(text "${cnt_p_${k}}/${cnt_f_${k}}/${cnt_s_${k}}/${cnt_n_${k}}")
      if(cnt_x_${k} GREATER 0 AND text STREQUAL "0/0/0/0")
        set(text "not impl.")
      elseif(cnt_x_${k} GREATER 0)
        string(APPEND text " +${cnt_x_${k}} not impl.")
      endif()
      _pg_pad("${text}" 12 cell)
    else()
      _pg_pad("-" 12 cell)
    endif()
    string(APPEND line "${cell}")
  endforeach()
  set(rk "${op}|${row}")
  set(not_impl FALSE)
  if(DEFINED row_x_${rk} AND row_x_${rk} GREATER 0 AND row_other_${rk} EQUAL 0)
    set(not_impl TRUE)
  endif()
  set(state "")
  foreach(col gate status)
    set(k "${op}|${row}|${col}")
    if(DEFINED cnt_p_${k})
      if(cnt_f_${k} GREATER 0)
        set(state "failed")
      elseif(cnt_n_${k} GREATER 0)
        set(state "not run")
      elseif(cnt_s_${k} GREATER 0)
        set(state "skipped")
      else()
        set(state "passed")
      endif()
    endif()
  endforeach()
  if(not_impl AND state MATCHES "^(passed|)$")
    set(state "not implemented yet") # its gate (a barrier, if any) passed
  endif()
  string(APPEND line "${state}")
  string(REGEX REPLACE " +$" "" line "${line}")
  set(${out} "${line}" PARENT_SCOPE)
endfunction()

# The table of OPS (header, then per op its named rows and its phases in numeric
# order) with a column per level of LEVELS, in OUT. Reads the rows_<op> lists and the
# counters of phasegate_summary (see _pg_table_row).
function(_pg_table ops levels out)
  # Column widths: op names vary, cells are "p/f/s/n".
  set(opw 2)
  foreach(op IN LISTS ops)
    string(LENGTH "${op}" l)
    if(l GREATER opw)
      set(opw ${l})
    endif()
  endforeach()
  set(lines "")
  _pg_pad("op" ${opw} h)
  _pg_pad("phase" 12 h2)
  set(header "  ${h}  ${h2}")
  foreach(l IN LISTS levels)
    _pg_pad("${l}" 12 cell)
    string(APPEND header "${cell}")
  endforeach()
  string(APPEND header "gate/status")
  string(APPEND lines "${header}\n")
  foreach(op IN LISTS ops)
    # contract / composition / NOT_BUILT first, then phases in numeric order.
    set(named "")
    set(phases "")
    foreach(row IN LISTS rows_${op})
      if(row MATCHES "^M([0-9]+)$")
        list(APPEND phases "${CMAKE_MATCH_1}")
      else()
        list(APPEND named "${row}")
      endif()
    endforeach()
    list(SORT phases COMPARE NATURAL)
    set(ordered "${named}")
    foreach(k IN LISTS phases)
      list(APPEND ordered "M${k}")
    endforeach()
    foreach(row IN LISTS ordered)
      _pg_table_row("${op}" "${row}" ${opw} "${levels}" line)
      string(APPEND lines "${line}\n")
    endforeach()
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# Prints the table for JUnit file JUNIT, ending with a line naming the HTML page (HTML:
# its path, or "" when none was written); sets <out_failed> to the number of tests that
# failed or did not run. The <op>/workers/start|stop and <op>/report/session fixture
# tests are no cases: they
# are left out of the table and the totals, and get a line of their own when they did
# not pass. A case skipped because its phase is after the op's PHASES (its output says
# "not implemented yet (PHASES k)", run --implemented-phases) counts apart from other
# skips: such a cell reads "not impl.", such a row "not implemented yet".
# The counters (cnt_*, row_x_*, row_other_*) and rows_<op> lists are variables of this
# function that _pg_table and _pg_table_row read.
function(phasegate_summary junit title html out_failed)
  file(READ "${junit}" xml)
  string(ASCII 1 soh)
  string(ASCII 2 stx)
  string(ASCII 3 etx)
  string(REPLACE ";" "${soh}" xml "${xml}")
  string(REPLACE "[" "${stx}" xml "${xml}")
  string(REPLACE "]" "${etx}" xml "${xml}")
  # One element per test: the <testcase ...> tag and the element right after it (and,
  # after an empty <skipped .../> or <failure .../>, the test's output).
  string(REGEX MATCHALL
    "<testcase [^>]*>[ \t\r\n]*<[a-z-]+( message=\"[^\"]*\")?(/>[ \t\r\n]*<system-out>[^<]*)?"
    cases "${xml}")

  set(ops "")
  set(levels "")
  set(totals_p 0)
  set(totals_f 0)
  set(totals_s 0)
  set(totals_n 0)
  set(totals_x 0)
  set(workers_notes "")
  set(workers_bad 0)
  foreach(c IN LISTS cases)
    _pg_case_result("${c}" name r)
    if(r STREQUAL "")
      continue()
    endif()
    if(name MATCHES "^[A-Za-z0-9_.-]+/report/session$")
      # The report session (a new report per ctest invocation): no case, no row; when
      # it did not pass, the cases did not run (their fixture) and say so themselves.
      if(NOT r STREQUAL "p")
        list(APPEND workers_notes "${name} did not pass: the cases that need it did not run")
        math(EXPR workers_bad "${workers_bad} + 1")
      endif()
      continue()
    endif()
    if(name MATCHES "^[A-Za-z0-9_.-]+/workers/(start|stop)$")
      # The `phasegate serve` fixture (label `workers`): no case, not in the table or
      # the totals. Shown below only when it did not pass; failed / not run still
      # fail the target.
      if(r STREQUAL "s")
        list(APPEND workers_notes "${name} skipped (phasegate serve did not start: the cases ran standalone)")
      elseif(r STREQUAL "f")
        list(APPEND workers_notes "${name} failed")
        math(EXPR workers_bad "${workers_bad} + 1")
      elseif(r STREQUAL "n")
        list(APPEND workers_notes "${name} not run")
        math(EXPR workers_bad "${workers_bad} + 1")
      endif()
      continue()
    endif()
    math(EXPR totals_${r} "${totals_${r}} + 1")

    _pg_cell("${name}" op row col)
    if(NOT op IN_LIST ops)
      list(APPEND ops "${op}")
      set(rows_${op} "")
    endif()
    if(NOT row IN_LIST rows_${op})
      list(APPEND rows_${op} "${row}")
    endif()
    if(col MATCHES "^L" AND NOT col IN_LIST levels)
      list(APPEND levels "${col}")
    endif()
    set(k "${op}|${row}|${col}")
    foreach(t p f s n x)
      if(NOT DEFINED cnt_${t}_${k})
        set(cnt_${t}_${k} 0)
      endif()
    endforeach()
    math(EXPR cnt_${r}_${k} "${cnt_${r}_${k}} + 1")
    if(col MATCHES "^L") # a row of cases all not implemented yet reads so
      set(rk "${op}|${row}")
      if(NOT DEFINED row_x_${rk})
        set(row_x_${rk} 0)
        set(row_other_${rk} 0)
      endif()
      if(r STREQUAL "x")
        math(EXPR row_x_${rk} "${row_x_${rk}} + 1")
      else()
        math(EXPR row_other_${rk} "${row_other_${rk}} + 1")
      endif()
    endif()
  endforeach()
  list(SORT levels)
  _pg_table("${ops}" "${levels}" lines)

  set(notes "")
  foreach(w IN LISTS workers_notes)
    string(APPEND notes "  workers: ${w}\n")
  endforeach()
  if(html STREQUAL "")
    set(html_line "  HTML report: not written\n")
  else()
    set(html_line "  HTML report: file://${html}\n")
  endif()
  set(legend "")
  set(not_impl_total "")
  if(totals_x GREATER 0)
    set(legend "; not impl.: a phase after the op's PHASES")
    set(not_impl_total ", ${totals_x} not implemented yet")
  endif()
  message("\nphasegate summary (${title}): cells are passed/failed/skipped/not run${legend}\n"
          "${lines}"
          "  total: ${totals_p} passed, ${totals_f} failed, ${totals_s} skipped, "
          "${totals_n} not run${not_impl_total}\n"
          "${notes}"
          "  JUnit: ${junit}\n"
          "${html_line}")
  math(EXPR bad "${totals_f} + ${totals_n} + ${workers_bad}")
  set(${out_failed} ${bad} PARENT_SCOPE)
endfunction()

if(NOT CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  return()
endif()

if(PG_SUMMARY_ONLY)
  phasegate_summary("${PG_JUNIT}" "${PG_TITLE}" "${PG_HTML}" bad)
  return()
endif()

# `PG_RUNNER report` on the report directories that exist (a phase that never ran has
# none): fills the JUnit failure messages, writes the HTML page; sets <out_html> to the
# page's path, "" when it was not written. Warnings only: the verdict stays ctest's.
function(_pg_reports junit title out_html)
  set(${out_html} "" PARENT_SCOPE)
  set(dirs "")
  foreach(d IN LISTS PG_REPORT_DIRS)
    if(IS_DIRECTORY "${d}" AND NOT d IN_LIST dirs)
      list(APPEND dirs "${d}")
    endif()
  endforeach()
  if(PG_RUNNER STREQUAL "" OR NOT dirs)
    message("phasegate: warning: no evaluation reports under ${PG_REPORT_DIRS}: JUnit failure "
            "messages left empty, no HTML report")
    return()
  endif()
  execute_process(COMMAND "${PG_RUNNER}" report --junit "${junit}" ${dirs}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(STRIP "${out}${err}" msg)
    message("phasegate: warning: the JUnit failure messages were not filled "
            "(phasegate report --junit exited ${rc}): ${msg}")
  elseif(NOT err STREQUAL "")
    string(STRIP "${err}" msg)
    message("${msg}")   # its warnings (a report it skipped), once: not again for --out
  endif()
  get_filename_component(dir "${junit}" DIRECTORY)
  set(html "${dir}/${title}.html")
  file(REMOVE "${html}")
  execute_process(COMMAND "${PG_RUNNER}" report --out "${html}" ${dirs}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${html}")
    string(STRIP "${out}${err}" msg)
    message("phasegate: warning: no HTML report (phasegate report --out exited ${rc}): ${msg}")
    return()
  endif()
  set(${out_html} "${html}" PARENT_SCOPE)
endfunction()

set(args --test-dir "${PG_TEST_DIR}" --output-on-failure --no-tests=error
         --output-junit "${PG_JUNIT}")
if(PG_CONFIG)
  list(APPEND args -C "${PG_CONFIG}")
endif()
foreach(i RANGE 1 9)
  if(DEFINED PG_LABEL_${i})
    list(APPEND args -L "${PG_LABEL_${i}}")
  endif()
endforeach()
list(APPEND args ${PG_EXTRA_ARGS})
get_filename_component(junit_dir "${PG_JUNIT}" DIRECTORY)
file(MAKE_DIRECTORY "${junit_dir}")
file(REMOVE "${PG_JUNIT}")
execute_process(COMMAND "${PG_CTEST}" ${args} RESULT_VARIABLE rc)

set(bad 0)
if(EXISTS "${PG_JUNIT}")
  _pg_reports("${PG_JUNIT}" "${PG_TITLE}" html)
  phasegate_summary("${PG_JUNIT}" "${PG_TITLE}" "${html}" bad)
else()
  message("phasegate: ctest wrote no JUnit file (${PG_JUNIT})")
endif()
if(NOT rc EQUAL 0 OR bad GREATER 0)
  message(FATAL_ERROR "phasegate: ${PG_TITLE} failed (ctest exit ${rc}, ${bad} test(s) failed or not run)")
endif()
