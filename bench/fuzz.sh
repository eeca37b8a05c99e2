#!/usr/bin/env bash
# Runs every libFuzzer harness for FUZZ_RUNS executions (default 10^6) on its seed corpus
# (tests/fuzz/corpus/<name>/; new inputs go to a scratch folder, not into the repository) and
# prints one line per harness: executions, seconds, executions/s, coverage and corpus size.
#   bench/fuzz.sh [FOLDER_WITH_fuzz_*]   (default build-asan/fuzz; ./build.sh fuzz builds them)
# A crash stops the run with libFuzzer's report and the reproducer's path; exit status 1.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build-asan/fuzz}
runs=${FUZZ_RUNS:-1000000}
scratch=$(mktemp -d /tmp/shardplan-fuzz-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
printf '%-16s %10s %9s %10s %7s %7s\n' harness runs seconds execs/s cov corpus
status=0
for harness in "$bin"/fuzz_*; do
  name=${harness##*/fuzz_}
  mkdir -p "$scratch/$name"
  log="$scratch/$name.log"
  start=$(date +%s.%N)
  if ! "$harness" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$scratch/$name-" "$scratch/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    echo "fuzz_$name: FAILED after $(grep -c '' "$log") log lines" >&2
    tail -40 "$log" >&2
    ls "$scratch/$name"-* >&2 2>/dev/null && cp "$scratch/$name"-* /tmp/ 2>/dev/null || true
    status=1
    continue
  fi
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$done_line")
  printf '%-16s %10d %9.1f %10.0f %7s %7s\n' "$name" "$runs" "$seconds" \
    "$(awk -v r="$runs" -v s="$seconds" 'BEGIN { print r / s }')" "${cov:-?}" "${corp:-?}"
done
exit $status
