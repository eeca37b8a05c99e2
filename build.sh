#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs what is missing, builds, then
#   ./build.sh run   - plans a default model on a default cluster (the main job)
#   ./build.sh test  - runs the whole test suite (ctest)
#   ./build.sh       - builds only
# BUILD_DIR (default build) and JOBS (default: all cores) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev
          doctest-dev libtomlplusplus-dev libyaml-cpp-dev libopenmpi-dev openmpi-bin
          libopenblas-dev iproute2 util-linux)
# The --html reports' charting libraries come from npm (third_party/charts); a node that is
# already installed (with its npm) is used as it is.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
# Headless Chromium renders the --html reports in the tests; only `./build.sh test` needs it.
[ "${1:-}" = test ] && PACKAGES+=(chromium)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "build.sh: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# vega, vega-lite and vega-embed exactly as package-lock.json pins them.
install_charts() {
  local charts=third_party/charts
  if [ ! -f "$charts/node_modules/.package-lock.json" ] ||
     [ "$charts/package-lock.json" -nt "$charts/node_modules/.package-lock.json" ]; then
    (cd "$charts" && npm ci --ignore-scripts --no-audit --no-fund)
  fi
}

build() {
  local dir=${BUILD_DIR:-build}
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$dir" -j "${JOBS:-$(nproc)}"
}

install_missing
install_charts
build
dir=${BUILD_DIR:-build}
case "${1:-}" in
  run)
    "$dir/shardplan" plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256
    ;;
  test)
    cd "$dir" && ctest --output-on-failure -j "${JOBS:-$(nproc)}"
    ;;
  "") ;;
  *) echo "usage: ./build.sh [run|test]" >&2; exit 2 ;;
esac
