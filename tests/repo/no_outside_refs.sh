#!/bin/sh
# repo/no_outside_refs: what a user reads (README, docs/, the bundled ops, the CMake
# module, tools/ with the installed Python package) never cites a file that is not part
# of the project: the team's design notes live outside the repository, so a reader of a
# clone or an installed package could not follow such a reference.
# usage: no_outside_refs.sh SOURCE_DIR
set -eu
cd "$1"
hits=$(grep -rnE 'DESIGN\.md|STYLE\.md|DEVELOPERS\.md|\.\./shared' \
         README.md docs suites cmake tools 2>/dev/null || true)
if [ -n "$hits" ]; then
  echo "repo/no_outside_refs: a reference to a file outside the project:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "repo/no_outside_refs: ok"
