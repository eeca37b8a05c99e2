#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs what is missing, builds, then
#   ./build.sh run      - builds the shardplan binary (and the CPU probe's MPI plug-in) and plans a
#                         default model on a default cluster (the main job: no tests, benchmarks
#                         or NCCL plug-in)
#   ./build.sh test     - builds everything and runs the whole test suite (ctest)
#   ./build.sh sanitize - the whole test suite again under AddressSanitizer + UBSan (build-asan)
#   ./build.sh tidy     - clang-tidy over src/ with the repository's .clang-tidy
#   ./build.sh fuzz     - builds the libFuzzer harnesses (clang) and runs each on its corpus
#                         for FUZZ_RUNS executions (default 20000); bench/fuzz.sh runs 10^6
#   ./build.sh          - builds everything
# BUILD_DIR (default build) and JOBS (default: all cores) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev
          doctest-dev libtomlplusplus-dev libyaml-cpp-dev libopenmpi-dev openmpi-bin
          libopenblas-dev iproute2 util-linux)
# The --html reports' charting libraries come from npm (third_party/charts); a node that is
# already installed (with its npm) is used as it is.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
# Headless Chromium renders the --html reports in the tests; a single-node Slurm (with munge)
# runs the probe as a Slurm job; python3-yaml reads the scheduler jobs for their schema test.
# Only `./build.sh test` needs them.
[ "${1:-}" = test ] && PACKAGES+=(chromium slurmd slurmctld slurm-client munge python3-yaml)
# Only for the checks CI runs after the tests (sanitize, tidy, fuzz, the JSON schema test).
CHECK_PACKAGES=(clang clang-tidy libclang-rt-dev python3-jsonschema slurmd slurmctld slurm-client
                munge python3-yaml)

install_missing() {
  local missing=()
  for p in "$@"; do
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

build() {  # build [TARGET...]: all targets when none is named
  local dir=${BUILD_DIR:-build} targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
}

configure_sanitized() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DSHARDPLAN_FUZZ=ON -DSHARDPLAN_BUILD_BENCH=OFF -DSHARDPLAN_WITH_CUDA=OFF
}

dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
case "${1:-}" in
  run)
    install_missing "${PACKAGES[@]}"
    install_charts
    build shardplan_tool
    "$dir/shardplan" plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256
    ;;
  test)
    install_missing "${PACKAGES[@]}" python3-jsonschema
    install_charts
    build
    cd "$dir" && ctest --output-on-failure -j "$jobs"
    ;;
  sanitize)
    # clang with ASan + UBSan (and libFuzzer's coverage, so `fuzz` reuses this build); the CUDA
    # plug-in stays out: the CUDA runtime and ASan's shadow memory do not mix.
    install_missing "${PACKAGES[@]}" "${CHECK_PACKAGES[@]}"
    install_charts
    configure_sanitized
    cmake --build build-asan -j "$jobs"
    cd build-asan && ASAN_OPTIONS=detect_leaks=1 \
      LSAN_OPTIONS=suppressions="$PWD/../tests/fuzz/lsan.supp":print_suppressions=0 \
      ctest --output-on-failure -j "$jobs"
    ;;
  tidy)
    install_missing "${PACKAGES[@]}" "${CHECK_PACKAGES[@]}"
    install_charts
    # clang-tidy reads one compile_commands.json entry per source, which a unity build does not
    # write: a folder of its own, configured without it, holds that list and the embedded
    # profiles it names (the only thing built there).
    cmake -S . -B "$dir-tidy" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_UNITY_BUILD=OFF
    cmake --build "$dir-tidy" -j "$jobs" --target shardplan_profiles
    run-clang-tidy -quiet -j "$jobs" -p "$dir-tidy" "$PWD/src/(engine|input|report|launch|cli)/.*\.cpp$"
    ;;
  fuzz)
    install_missing "${PACKAGES[@]}" "${CHECK_PACKAGES[@]}"
    install_charts
    configure_sanitized
    cmake --build build-asan -j "$jobs" --target fuzzers
    FUZZ_RUNS=${FUZZ_RUNS:-20000} bench/fuzz.sh build-asan/fuzz
    ;;
  "")
    install_missing "${PACKAGES[@]}"
    install_charts
    build
    ;;
  *) echo "usage: ./build.sh [run|test|sanitize|tidy|fuzz]" >&2; exit 2 ;;
esac
