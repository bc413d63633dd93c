#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only; idempotent), then
# configures and builds tilefuse into ./build.
#   usage: scripts/setup.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  libgtest-dev googletest
  llvm-14-tools          # FileCheck, for IR tests
  clang-14 libclang-rt-14-dev  # libFuzzer + sanitizers for the parser fuzzer
  libopenblas-dev        # bench/cpu_gemm_bench: OpenBLAS sgemm next to the CPU executor
  libdlpack-dev          # dlpack.h: the C API's tensors (include/tilefuse/tilefuse.h)
  python3-numpy python3-pytest  # the Python package's tests (python/tests), Debian's /usr/bin/python3
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
