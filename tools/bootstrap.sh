#!/usr/bin/env bash
# Installs every system dependency of phasegate with apt, on Debian 12 or newer, as root
# (or through sudo). Idempotent: it checks what is installed and only installs the rest.
#   tools/bootstrap.sh            build + test dependencies
# libFuzzer's runtime ships per clang version (libclang-rt-<N>-dev: 14 on Debian 12,
# 19 on Debian 13), so it is chosen after clang is present, from clang's own version.
set -euo pipefail

packages=(
  cmake ninja-build gcc libc6-dev pkg-config git  # build (libc6-dev: gcc only recommends it)
  libyaml-dev libcjson-dev libopenblas-dev libdlpack-dev  # the only libraries
  clang                                          # asan preset and libFuzzer harnesses
  python3 python3-numpy                          # differential tests, exec example impl
  python3-torch                                  # attention_torch.py example impl + its tests (CPU)
  python3-venv                                   # the installed wheel into a venv (python_impl/install)
  chromium fonts-dejavu-core                     # the HTML report in headless Chromium (report_html/chromium)
  valgrind                                       # memcheck/* tests, tools/valgrind/memcheck.sh
  slurm-wlm munge                                # fleet/slurm: a one-node Slurm cluster on localhost
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
updated=0

# install_missing PKG...: apt-get install the packages that are not installed yet
install_missing() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "bootstrap: installing ${missing[*]}"
  if [ "$updated" -eq 0 ]; then $sudo apt-get update; updated=1; fi
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

install_missing "${packages[@]}"
clang_major=$(clang -dumpversion | cut -d. -f1)
install_missing "libclang-rt-${clang_major}-dev"
if [ "$updated" -eq 0 ]; then echo "bootstrap: all dependencies present"; fi
