#!/bin/sh
# Every option a subcommand's parser accepts appears in its --help, every command of
# the dispatch table appears in `phasegate --help`, and every runner/cli/cmd_<name>.c
# is in that table. Options are read from the parsers' own source (strcmp(…, "--x"),
# IS_OPT("--x"), the flag and pg_cli_opt tables), so a new option without help text
# fails here.
#   help_options.sh PHASEGATE CLI_SOURCE_DIR
set -u
pg=$1 src=$2
fails=0
"$pg" --help >top.txt 2>&1 || { echo "FAIL: phasegate --help exited $?"; fails=1; }
for f in "$src"/cmd_*.c; do
  cmd=$(basename "$f" .c | sed 's/^cmd_//')
  grep -q "{\"$cmd\", pg_cmd_$cmd," "$src/main.c" || { echo "FAIL: $cmd missing from main.c's table"; fails=1; }
  grep -qE "^  $cmd " top.txt || { echo "FAIL: phasegate --help does not list '$cmd'"; fails=1; }
  "$pg" "$cmd" --help >help.txt 2>&1 || { echo "FAIL: phasegate $cmd --help exited $?"; fails=1; }
  grep -q "usage: phasegate" help.txt || { echo "FAIL: $cmd --help has no usage line"; fails=1; }
  "$pg" help "$cmd" >help2.txt 2>&1 && cmp -s help.txt help2.txt ||
    { echo "FAIL: 'phasegate help $cmd' differs from 'phasegate $cmd --help'"; fails=1; }
  opts=$(grep -oE '(strcmp\([a-z_]+, |IS_OPT\(|flags\[\] = \{|\{|, )"--[a-z0-9-]+"' "$f" |
         grep -oE '"--[a-z0-9-]+"' | tr -d '"' | grep -vx -- --help | sort -u)
  [ -n "$opts" ] || { echo "FAIL: found no options in $f (parser changed? update this test)"; fails=1; }
  for o in $opts; do
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" help.txt ||
      { echo "FAIL: phasegate $cmd accepts $o but its --help does not mention it"; fails=1; }
  done
  echo "ok: $cmd: $(echo $opts | wc -w) options checked"
done
# The seed runner's spellings are documented at the top level.
for o in --self-test --inspect; do
  grep -q -- "$o" top.txt || { echo "FAIL: phasegate --help does not mention $o"; fails=1; }
done
exit $fails
