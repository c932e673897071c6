#!/bin/sh
# repo/no_build_artifacts_in_data: no compiler output (an ELF object, library or
# executable) under tests/data — a compiler run in a catalogue directory once left
# fill.o and two test binaries there. Deliberate binary fixtures keep their data
# extension (.yaml, .json, .npy, .safetensors) and are not flagged.
# usage: no_artifacts.sh DATA_DIR
set -eu
list=$(mktemp)
trap 'rm -f "$list"' EXIT
find "$1" -type f -size +3c > "$list"
found=0
while IFS= read -r f; do
  case $f in *.yaml|*.yml|*.json|*.npy|*.safetensors|*.expected) continue ;; esac
  if [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]; then
    echo "repo/no_build_artifacts_in_data: build artefact in test data: $f" >&2
    found=1
  fi
done < "$list"
if [ "$found" -eq 0 ]; then echo "repo/no_build_artifacts_in_data: ok"; fi
exit "$found"
