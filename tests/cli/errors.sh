#!/bin/sh
# Error experience of every subcommand: missing / unreadable / directory-instead-of-
# file inputs, unknown and incomplete options, bad values, unknown --impl schemes,
# missing impl libraries, unknown cases, phases outside 1..N. Each must exit 2 with
# one clear line on stderr naming the file or flag (no usage dump, no crash).
# `phasegate run` refuses a bad impl, --inspect name, report / data location, suite,
# mode list, phase or timeout before any case runs (nothing on stdout; the report, when
# its place is known and usable, says ERROR: a refused run replaces the old verdict).
#   errors.sh PHASEGATE OP_DIR OUT_DIR CTOR_CRASH_PLUGIN
set -u
pg=$1 op=$2 out=$3 ctor_crash=$4
rm -rf "$out" && mkdir -p "$out/adir" "$out/emptyop" && cd "$out" || exit 1
: >afile
ln -s loop1 loop2 && ln -s loop2 loop1               # an --op-dir that is a symlink loop
mkdir -p ydir/module_interfaces.yaml                 # the contract's name on a directory
fails=0
# expect CODE NEEDLE ARGS...: exit CODE, stderr is exactly one line containing NEEDLE
expect() {
  code=$1 needle=$2
  shift 2
  "$pg" "$@" >stdout.txt 2>stderr.txt </dev/null
  got=$?
  lines=$(wc -l <stderr.txt)
  if [ "$got" -ne "$code" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$needle" stderr.txt ||
     { [ "$1" = run ] && [ -s stdout.txt ]; }; then
    echo "FAIL: phasegate $* -> exit $got (want $code), $lines stderr line(s) (want 1 with '$needle'), stdout:"
    cat stdout.txt
    echo "stderr:"
    cat stderr.txt
    fails=1
  else
    echo "ok: phasegate $*: $(cat stderr.txt)"
  fi
}
c="$op/module_interfaces.yaml" s="$op/adversarial_suite.json"
for cmd in validate list selftest; do
  expect 2 "nowhere.yaml: cannot open" $cmd --contract nowhere.yaml
  expect 2 "adir: cannot read: Is a directory" $cmd --contract adir
  expect 2 "emptyop: no module_interfaces.yaml" $cmd --op-dir emptyop
  expect 2 "afile: no module_interfaces.yaml in the directory or its eval/ subdirectory (not a directory)" $cmd --op-dir afile
  expect 2 "nodir: no module_interfaces.yaml in the directory or its eval/ subdirectory (no such directory)" $cmd --op-dir nodir
  expect 2 "loop1: no module_interfaces.yaml in the directory or its eval/ subdirectory (Too many levels of symbolic links)" $cmd --op-dir loop1
  expect 2 "ydir: no module_interfaces.yaml in the directory or its eval/ subdirectory (ydir/module_interfaces.yaml: not a regular file)" $cmd --op-dir ydir
  expect 2 "unknown option '--bogus'" $cmd --op-dir "$op" --bogus
  expect 2 "--op-dir needs a value" $cmd --op-dir
  expect 2 "--op-dir DIR or --contract FILE" $cmd
done
for cmd in validate list; do
  expect 2 "nowhere.json: cannot open" $cmd --op-dir "$op" --suite nowhere.json
  expect 2 "adir: not a regular file" $cmd --contract "$c" --suite adir
  expect 2 "--format must be" $cmd --op-dir "$op" --format yaml
done
expect 2 "--levels takes L0..L5" list --op-dir "$op" --levels L7
expect 2 "--threads: 'x'" selftest --op-dir "$op" --threads x
expect 2 "--reference-precision must be fp32 or fp64" selftest --op-dir "$op" --reference-precision fp16
expect 2 "pass --golden-lib" selftest --contract "$op/../../../../suites/rmsnorm/module_interfaces.yaml"
expect 2 "cannot open" selftest --contract "$op/../../../../suites/rmsnorm/module_interfaces.yaml" --golden-lib nowhere.so
expect 2 "no case 'nope'" gen --op-dir "$op" --case nope --out g
expect 2 "--up-to-module: '9' is not in 1..3" gen --op-dir "$op" --case L2_basic --out g --up-to-module 9
expect 2 "afile/x: cannot create directory" gen --op-dir "$op" --case L2_basic --out afile/x
expect 2 "nowhere.yaml: cannot open" gen --contract nowhere.yaml --case L2_basic --out g
expect 2 "nowhere.json: cannot open" gen --contract "$c" --suite nowhere.json --case L2_basic --out g
expect 2 "--op-dir DIR (or --contract FILE), --case ID and --out DIR" gen --op-dir "$op"
expect 2 "a.npy: cannot open" diff a.npy b.npy
expect 2 "adir: not a regular file" diff adir adir
expect 2 "--threads needs an integer 0..1024, got 'x'" diff a.npy b.npy --threads x
expect 2 "unknown comparison rule 'foo'" diff afile afile --rule foo
expect 2 "expected two tensor files" diff a.npy
expect 2 "--up-to-module: expected a module number in 1..3 for op 'attention', got 'x'" run --op-dir "$op" --impl exec:true --up-to-module x
expect 2 "--up-to-module 9 outside 1..3" run --op-dir "$op" --impl exec:true --up-to-module 9 --report r.json
expect 2 "no case 'nope'" run --op-dir "$op" --impl exec:true --up-to-module 1 --case nope --report r.json
expect 2 "nowhere.so': cannot open" run --op-dir "$op" --impl exec:true --up-to-module 1 --golden-lib nowhere.so --report r.json
# The seed runner's spelling reaches the same checks.
expect 2 "unknown option '--bogus'" --op-dir "$op" --self-test --bogus
expect 2 "--impl SPEC is required" --op-dir "$op" --up-to-module 1

# --- run: everything that would fail every case is refused once, before any case runs.
r1() { n=$1; shift; expect 2 "$n" run --op-dir "$op" --report r.json "$@"; }
# the impl: checked once (a forked dlopen probe), one line naming the path, exit 2
r1 "impl plugin 'nowhere.so' does not exist" --impl plugin:nowhere.so --up-to-module 1
r1 "impl plugin 'adir' is a directory, not a shared library" --impl plugin:adir --up-to-module 1
r1 "impl plugin 'afile' cannot be loaded: ./afile: " --impl plugin:afile --up-to-module 1
r1 "crashed with SIGSEGV while loading (in a library constructor)" --impl "plugin:$ctor_crash" --up-to-module 1
r1 "--impl 'foo:bar': unknown scheme 'foo:'; expected plugin:PATH.so, exec:COMMAND, worker:COMMAND, python:FILE.py[::FUNCTION] or replay:DIR" --impl foo:bar --up-to-module 1
r1 "--impl 'exec:': nothing after 'exec:'" --impl exec: --up-to-module 1
r1 "--impl 'exec:  ': the command is empty" --impl "exec:  " --up-to-module 1
r1 "replay directory 'nowhere' does not exist" --impl replay:nowhere --up-to-module 1
grep -q '"status":[[:space:]]*"ERROR"' r.json 2>/dev/null || { echo "FAIL: a refused impl wrote no ERROR report"; fails=1; }
grep -q '"failure_category":[[:space:]]*"infra"' r.json || { echo "FAIL: a refused impl is not infra"; fails=1; }
rm -f r.json
# --inspect must name a tensor of the op
r1 "--inspect 'nope': no such tensor in op 'attention'; the M1 boundary outputs are 'scores'" --impl exec:true --up-to-module 1 --inspect nope
# report / data locations: checked before running; --report never grows a tree
expect 2 "--report: directory 'nodir/sub' does not exist" run --op-dir "$op" --impl exec:true --up-to-module 1 --report nodir/sub/r.json
[ -e nodir ] && { echo "FAIL: --report created nodir/"; fails=1; }
expect 2 "--report: 'adir' is a directory" run --op-dir "$op" --impl exec:true --up-to-module 1 --report adir
expect 2 "phasegate run: error: --report-dir: cannot create directory 'afile/x/attention/M1'" run --op-dir "$op" --impl exec:true --up-to-module 1 --report-dir afile/x
r1 "phasegate run: error: --save-data: cannot create directory 'afile/x'" --impl exec:true --up-to-module 1 --save-data afile/x
r1 "--golden-data: 'nowhere' is not a directory" --impl exec:true --up-to-module 1 --golden-data nowhere
# the single-case --golden-data layout (DIR/in + DIR/out) needs exactly one selected case
mkdir -p gd1/in gd1/out
r1 "--golden-data: 'gd1' holds a single case (in/ and out/); 3 cases are selected" --impl exec:true --up-to-module 1 --golden-data gd1
r1 "2 cases are selected: pick the one it belongs to with --case ID" --impl exec:true --up-to-module 1 --golden-data gd1 --case L2_basic,L2_fp32
# an invalid suite or contract: each finding once, no second "phasegate run: error:" line
mkdir -p badsuite badcontract
cp "$c" badsuite/ && sed 's/"L2_basic"/"L2 basic"/' "$s" >badsuite/adversarial_suite.json
sed 's/source: module_1/source: module_7/' "$c" >badcontract/module_interfaces.yaml && cp "$s" badcontract/
expect 2 "badsuite/adversarial_suite.json:4:10: error: cases[1].id" run --op-dir badsuite --impl exec:true --up-to-module 1 --report r.json
expect 2 "badcontract/module_interfaces.yaml:37:38: error: input 'scores' of module 2 comes from module_7" run --op-dir badcontract --impl exec:true --up-to-module 1 --report r.json
# modes
r1 "--modes: empty list" --impl exec:true --up-to-module 1 --modes ""
r1 "--modes 'sim,,npu': empty mode name in the list" --impl exec:true --up-to-module 1 --modes sim,,npu
r1 "--modes 'sim,': empty mode name in the list" --impl exec:true --up-to-module 1 --modes sim,
# the phase: 1..N named in every message
r1 "--up-to-module 0 outside 1..3 for op 'attention'" --impl exec:true --up-to-module 0
r1 "--up-to-module 4 outside 1..3 for op 'attention'" --impl exec:true --up-to-module 4
r1 "--up-to-module: expected a module number in 1..3 for op 'attention', got '1.5'" --impl exec:true --up-to-module 1.5
r1 "--up-to-module: expected a module number in 1..3 for op 'attention', got ''" --impl exec:true --up-to-module ""
r1 "--up-to-module K is required (K in 1..3 for op 'attention')" --impl exec:true
expect 2 "--up-to-module needs a value" run --op-dir "$op" --impl exec:true --up-to-module
# the timeout
for t in 0 -1 x inf ""; do
  r1 "--timeout: expected seconds > 0 (at most 1e7), got '$t'" --impl exec:true --up-to-module 1 --timeout "$t"
done
grep -q '"status":[[:space:]]*"ERROR"' r.json 2>/dev/null || { echo "FAIL: a refused run wrote no ERROR report"; fails=1; }
[ -e phasegate-reports ] && { echo "FAIL: a refused run created phasegate-reports/"; fails=1; }

# Consistency: --opt=value everywhere, --format json for diff as for validate/list.
expect_ok() { # expect_ok [-77] NEEDLE ARGS...: exit 0 (or 77), stdout contains NEEDLE
  want=0
  [ "$1" = -77 ] && { want=77; shift; }
  needle=$1
  shift
  "$pg" "$@" >stdout.txt 2>stderr.txt </dev/null
  got=$?
  if [ $got -ne $want ] || ! grep -qF -- "$needle" stdout.txt; then
    echo "FAIL: phasegate $* -> exit $got (want $want, stdout with '$needle'):"; cat stdout.txt stderr.txt
    fails=1
  else
    echo "ok: phasegate $*"
  fi
}
expect_ok "3 cases" validate --op-dir="$op"
mkdir -p onlyc && cp "$c" onlyc/
expect_ok "3 primary inputs, no suite checked" validate --op-dir onlyc
expect 2 "onlyc/adversarial_suite.json: cannot open" list --op-dir onlyc
expect_ok '"status":' validate --contract="$c" --suite="$s" --format=json
expect_ok "attention/M1/L2/L2_basic" list --op-dir="$op" --levels=L2
expect_ok "3 inputs written" gen --op-dir="$op" --case=L2_basic --out=gen_eq
expect_ok '"verdict":' diff gen_eq/q.npy gen_eq/q.npy --format=json
expect_ok -77 "SKIPPED selftest attention" selftest --op-dir="$op" --threads=1
expect 2 "--threads: 'x'" selftest --op-dir="$op" --threads=x
expect 2 "--no-golden-cache takes no value" run --no-golden-cache=1

"$pg" bogus >stdout.txt 2>stderr.txt
got=$?
if [ $got -ne 2 ] || ! grep -q "unknown command 'bogus'" stderr.txt; then
  echo "FAIL: phasegate bogus -> exit $got"; fails=1
fi
"$pg" >stdout.txt 2>stderr.txt
[ $? -eq 2 ] && grep -q "usage: phasegate" stderr.txt || { echo "FAIL: phasegate with no command"; fails=1; }
exit $fails
