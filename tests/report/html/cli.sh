#!/bin/sh
# `phasegate report`: the error experience (each bad input exits 2 with one stderr
# line naming the file, with line:col for JSON syntax and key errors; nothing is
# written; a bad report found under a directory among good ones is a warning) and the page's ground rules on a fixture tree (fixtures.py): written where
# --out says (default ./phasegate-report.html, its absolute path printed), '-' for
# stdout, a report reached twice counted once, every report string escaped, nothing
# that would load a resource or run a script.
#   cli.sh PHASEGATE PYTHON FIXTURES_PY OUT_DIR
set -u
pg=$1 py=$2 fixtures=$3 out=$4
rm -rf "$out" && mkdir -p "$out/empty" "$out/adir" "$out/tree/bad/M1" && cd "$out" || exit 1
"$py" "$fixtures" fx || { echo "FAIL: fixtures.py"; exit 1; }
: >afile
fails=0
# expect CODE NEEDLE ARGS...: exit CODE, stderr is one line containing NEEDLE, no page
expect() {
  code=$1 needle=$2
  shift 2
  rm -f phasegate-report.html
  "$pg" report "$@" >stdout.txt 2>stderr.txt </dev/null
  got=$?
  lines=$(wc -l <stderr.txt)
  if [ "$got" -ne "$code" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$needle" stderr.txt ||
     [ -e phasegate-report.html ] || [ -s stdout.txt ]; then
    echo "FAIL: phasegate report $* -> exit $got (want $code), $lines stderr line(s) (want 1 with '$needle'), stdout:"
    cat stdout.txt
    echo "stderr:"
    cat stderr.txt
    fails=1
  else
    echo "ok: phasegate report $*: $(cat stderr.txt)"
  fi
}
fail() {
  echo "FAIL: $*"
  fails=1
}

printf '{\n  "op_name": "x",\n  "checks": [1,,2]\n}\n' >syntax.json
printf '{"op_name": "x", "up_to_module": "2", "checks": []}' >schema.json
printf '{"a": 1}' >notreport.json
printf '[]' >array.json
printf '{"op_name": "x", "test_cases": []}' >suite.json
: >empty.json
printf '{"op_name": "x", "up_to_module": 1, "checks": [{"id": "c", "status": "FAIL",\n "per_tensor": [{"name": "y",\n   "error_map": {"shape": [2, 2], "cells": [[1, 2]]}}]}]}' >map.json
printf '{"op_name": "x", "up_to_module": 1, "checks": [{"id": "c", "status": "FAIL",\n "per_tensor": [{"name": "y", "hints": [{"kind": "tile_edge", "axis": "2"}]}]}]}' >hint.json
printf '{"op_name": "x", "up_to_module": 1}' >nochecks.json
printf '{"op_name": "x", "up_to_module": 1, "checks": [{"status": "PASS"}]}' >noid.json
cp syntax.json tree/bad/M1/evaluation_report.json
good=fx/attention/M1/evaluation_report.json

expect 2 "give one or more reports or directories"
expect 2 "unknown option '--bogus'" --bogus fx
expect 2 "--out needs a value" fx --out
expect 2 "nowhere.json: cannot open: No such file or directory" nowhere.json
expect 2 "empty: no evaluation_report.json under this directory" empty
expect 2 "syntax.json:3:16: error: " syntax.json
expect 2 "tree/bad/M1/evaluation_report.json:3:16: error: " tree
expect 2 "schema.json:1:34: error: up_to_module: expected an integer" schema.json
expect 2 "notreport.json:1:1: error: not an evaluation report (no op_name)" notreport.json
expect 2 "suite.json:1:1: error: not an evaluation report (no up_to_module)" suite.json
expect 2 "array.json:1:1: error: not an evaluation report (expected a JSON object)" array.json
expect 2 "empty.json:1:1: error: " empty.json
expect 2 "map.json:3:44: error: checks[0].per_tensor[0].error_map.cells: expected 2 rows (shape)" map.json
expect 2 "hint.json:2:71: error: checks[0].per_tensor[0].hints[0].axis: expected an integer or null" hint.json
expect 2 "nochecks.json:1:1: error: checks: missing (expected an array)" nochecks.json
expect 2 "noid.json:1:48: error: checks[0].id: missing (expected a string)" noid.json
expect 2 "--out adir: is a directory" --out adir "$good"
expect 2 "afile/x: cannot create directory: Not a directory" --out afile/x/page.html "$good"

# The default: ./phasegate-report.html, its absolute path on stdout, exit 0.
rm -f phasegate-report.html
"$pg" report fx >stdout.txt 2>stderr.txt || fail "report fx exited $?"
grep -qxF "phasegate report: 4 phase reports -> $(pwd -P)/phasegate-report.html" stdout.txt ||
  fail "stdout: $(cat stdout.txt)"
[ -s phasegate-report.html ] || fail "no ./phasegate-report.html"
[ -s stderr.txt ] && fail "stderr: $(cat stderr.txt)"
# --out=FILE creates directories; a report given as a file and inside a directory is one.
"$pg" report --out=sub/dir/page.html "$good" fx/attention >stdout.txt 2>&1 || fail "--out=sub/dir exited $?"
grep -qF "3 phase reports -> $(pwd -P)/sub/dir/page.html" stdout.txt || fail "dedup/--out=: $(cat stdout.txt)"
# '-' writes the page to stdout, the same page as a file.
"$pg" report --out - fx >stdout.html 2>stderr.txt || fail "--out - exited $?"
cmp -s stdout.html phasegate-report.html || fail "--out - differs from the file"
# A bad report found under a directory is skipped with a warning and listed on the page.
"$pg" report --out mixed.html fx tree >stdout.txt 2>stderr.txt || fail "fx tree exited $?"
[ "$(wc -l <stderr.txt)" -eq 1 ] && grep -qxF "phasegate report: warning: tree/bad/M1/evaluation_report.json:3:16: error: expected a value, found ',' (skipped)" stderr.txt ||
  fail "fx tree: stderr: $(cat stderr.txt)"
grep -qF '4 phase reports ->' stdout.txt || fail "fx tree: stdout: $(cat stdout.txt)"
grep -qF '<b>1 report skipped</b>' mixed.html || fail "the skipped report is not on the page"
# An --out that is not a regular file is written through, never replaced: a symlink
# (its target gets the page), a FIFO (a reader gets the page).
: >target.html
ln -s target.html link.html
"$pg" report --out link.html fx >/dev/null 2>&1 || fail "--out symlink exited $?"
[ -L link.html ] && cmp -s target.html phasegate-report.html || fail "--out symlink: replaced, or target not written"
mkfifo page.fifo && { cat page.fifo >fifo.html & }
"$pg" report --out page.fifo fx >/dev/null 2>&1 || fail "--out fifo exited $?"
wait
[ -p page.fifo ] && cmp -s fifo.html phasegate-report.html || fail "--out fifo: replaced, or reader got no page"
# -- ends the options
"$pg" report --out page2.html -- fx >/dev/null 2>&1 || fail "-- exited $?"

# The page: escaped report strings, self-contained (no script, no resource to load).
p=phasegate-report.html
grep -q '<script' $p && fail "a <script> in the page"
grep -qi '<img\|<link\|<iframe\|@import\|url(\|src="' $p && fail "a resource reference in the page"
grep -o 'href="[^"]*"' $p | grep -v '^href="#' && fail "a link out of the page"
grep -o 'http[s]*://[^"]*' $p | grep -vxF 'http://www.w3.org/2000/svg' && fail "an URL in the page"
grep -qF '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x' $p ||
  fail "captured output not escaped as text"
grep -qF 'L3_&lt;b&gt;&quot;quoted&quot;&amp;amp;&lt;/b&gt;' $p || fail "case id not escaped as text"
grep -qF '<td class="ni"><a href="#r2">not implemented yet</a></td>' $p ||
  fail "M3 (not_implemented) not shown as not implemented yet in the matrix"
[ "$(grep -o '<span class="badge ni">not implemented yet</span>' $p | wc -l)" -eq 3 ] ||
  fail "M3 and its two cases not marked not implemented yet"
[ "$(grep -o '<svg' $p | wc -l)" -ge 6 ] || fail "fewer than 6 figures"
[ "$(grep -o '<line class="tile"' $p | wc -l)" -eq 30 ] || fail "tile grid: want 8 + 15 + 7 lines"
grep -qF 'rows: axis 0 (2) &#xd7; axis 1 (4) &#xd7; axis 2 (40) = 320, 5 per cell' $p || fail "row axes label"
grep -qF 'cols: axis 3 (40), 1 per cell' $p || fail "col axis label"
grep -qF 'phasegate run --op-dir custom/attention --impl plugin:libattn.so --up-to-module 2 --case L2_tail_tile' $p ||
  fail "repro line"
exit $fails
