#!/usr/bin/env bash
# Installs every system dependency of phasegate with apt, on Debian 12 or newer, as root
# (or through sudo). Idempotent: it checks what is installed and only installs the rest.
#   tools/bootstrap.sh            build + test dependencies
set -euo pipefail

packages=(
  cmake ninja-build gcc pkg-config git          # build
  libyaml-dev libcjson-dev libopenblas-dev libdlpack-dev  # the only libraries
  clang libclang-rt-14-dev                       # asan preset and libFuzzer harnesses
  python3 python3-numpy                          # differential tests, exec example impl
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all dependencies present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
