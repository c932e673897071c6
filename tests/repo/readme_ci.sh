#!/bin/sh
# repo/readme_ci: the README's first fenced block holds exactly two commands; the first
# ends in the main job (verify_all), the second runs the test suite; `.ci/run` contains
# the second line verbatim; tools/bootstrap.sh lists every package issue 2 names, and
# valgrind (the tools/memcheck/* tests register only where it is installed).
# usage: readme_ci.sh SOURCE_DIR
set -eu
src=$1
fail() { echo "repo/readme_ci: $*" >&2; exit 1; }

# lines between the first ``` fence and the next one
block=$(awk '/^```/{n++; next} n==1' "$src/README.md")
[ -n "$block" ] || fail "README.md: no fenced block"
count=$(printf '%s\n' "$block" | grep -c .)
[ "$count" -eq 2 ] || fail "README.md: first block has $count non-empty lines, expected 2"
first_fence=$(grep -n '^```' "$src/README.md" | head -1 | cut -d: -f1)
[ "$first_fence" -le 3 ] || fail "README.md: the commands do not open the file (fence at line $first_fence)"
cmd1=$(printf '%s\n' "$block" | sed -n 1p)
cmd2=$(printf '%s\n' "$block" | sed -n 2p)
case $cmd1 in *bootstrap.sh*verify_all*) ;; *) fail "command 1 does not bootstrap and run verify_all: $cmd1" ;; esac
case $cmd2 in *bootstrap.sh*) ;; *) fail "command 2 does not bootstrap: $cmd2" ;; esac
case $cmd2 in *workflow*|*ctest*) ;; *) fail "command 2 runs no tests: $cmd2" ;; esac

[ -x "$src/.ci/run" ] || fail ".ci/run missing or not executable"
grep -qxF "$cmd2" "$src/.ci/run" || fail ".ci/run does not contain command 2 verbatim: $cmd2"
grep -q '^set -e' "$src/.ci/run" || fail ".ci/run does not stop on failure (set -e)"

for p in cmake ninja-build libyaml-dev libcjson-dev libopenblas-dev libdlpack-dev python3-numpy clang valgrind; do
  grep -qw -- "$p" "$src/tools/bootstrap.sh" || fail "tools/bootstrap.sh does not install $p"
done
echo "repo/readme_ci: ok"
