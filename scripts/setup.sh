#!/usr/bin/env bash
# Installs the Debian 12 packages rdmalab needs, only those missing (idempotent), then configures
# and builds. Usage: scripts/setup.sh [BUILD_DIR [extra cmake args...]]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsimgrid-dev
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
  libopenmpi-dev openmpi-bin
  sockperf  # the kernel TCP baseline beside tcp_bw and tcp_lat (tests/backends/verbs/tcp_beside_sockperf.sh)
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev
  clang  # libFuzzer for tests/fuzz
  clang-19 libclang-rt-19-dev  # the sanitized suite (scripts/test.sh): its ASan runtime is safe to fork
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "rdmalab setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir="${1:-build}"
shift || true
cmake -S . -B "$build_dir" -G Ninja "$@" >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; exit 1; }
grep -E "rdmalab optional parts|: built|left out" "$build_dir.configure.log" || true
cmake --build "$build_dir" -j "$(nproc)"
