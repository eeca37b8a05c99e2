#!/usr/bin/env bash
# The GPU path of `shardplan probe`, checked wherever an NVIDIA GPU is at hand: builds shardplan
# with the CUDA back-end (NCCL + cuBLASLt), runs `probe --backend nccl` on every local GPU (one
# is enough) with the GEMM sweep and the model's GEMM shapes, prints the achieved bf16 TFLOP/s,
# the fitted figures and the host-link / STREAM figures, checks the profile records GPU calls
# (ncclAllReduce ..., no "medium": links measured GPU to GPU), writes the HTML report and plans
# with the profile it wrote.
#
#   bench/gpu-probe.sh [extra probe flags, e.g. --max-bytes 256MiB --model llama-3-8b]
#
# Environment: BUILD_DIR (default build-gpu); NCCL_ROOT, the folder holding include/nccl.h and
# lib/libnccl.so* (default: the CUDA folder, else PyTorch's wheel, site-packages/nvidia/nccl);
# CUDAToolkit_ROOT if the toolkit is not in /usr/local/cuda or on PATH; SHARDPLAN_GPU, a GPU
# preset or profile file when the device name matches none (see `shardplan list gpus`); OUT,
# the profile to write (default $BUILD_DIR/gpu-probe.json).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
out=${OUT:-$build/gpu-probe.json}

say() { printf '\n== %s\n' "$*"; }

say "GPUs"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
  echo "gpu-probe: no NVIDIA GPU or driver here (nvidia-smi is missing or failed); the probe will" \
       "say the same and exit 2" >&2
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] 2>/dev/null || gpus=1

say "NCCL"
if [ -z "${NCCL_ROOT:-}" ]; then
  for dir in /usr/local/cuda /usr; do
    if [ -e "$dir/include/nccl.h" ]; then NCCL_ROOT=$dir; break; fi
  done
fi
if [ -z "${NCCL_ROOT:-}" ] && command -v python3 >/dev/null; then
  # PyTorch's wheels ship NCCL as the nvidia-nccl-cu* package: nvidia/nccl/{include,lib}.
  NCCL_ROOT=$(python3 -c 'import importlib.util as u; s = u.find_spec("nvidia.nccl"); print(list(s.submodule_search_locations)[0] if s else "")' 2>/dev/null || true)
fi
if [ -z "${NCCL_ROOT:-}" ] || [ ! -e "$NCCL_ROOT/include/nccl.h" ]; then
  echo "gpu-probe: cannot find nccl.h; set NCCL_ROOT to the folder with include/nccl.h and" \
       "lib/libnccl.so* (pip install nvidia-nccl-cu12 puts one in site-packages/nvidia/nccl)" >&2
  exit 2
fi
export NCCL_ROOT
echo "NCCL_ROOT=$NCCL_ROOT"
ls "$NCCL_ROOT"/lib*/libnccl.so* 2>/dev/null | head -3 || true

say "build (CUDA back-end required)"
# build.sh installs the Debian packages that are missing, then configures and builds; the second
# configure insists on the CUDA back-end so a missing toolkit or NCCL stops here, loudly.
BUILD_DIR=$build ./build.sh
cmake -S . -B "$build" -DSHARDPLAN_WITH_CUDA=ON -DNCCL_ROOT="$NCCL_ROOT" | grep -i 'shardplan probe'
cmake --build "$build" -j "${JOBS:-$(nproc)}"
ls -l "$build/shardplan" "$build/libshardplan_nccl.so"

say "probe: $gpus GPU(s), nccl back-end, collectives to 1 GiB, GEMM sweep and llama-2-7b shapes"
gpu_flag=()
[ -n "${SHARDPLAN_GPU:-}" ] && gpu_flag=(--gpu "$SHARDPLAN_GPU")
table=$build/gpu-probe.txt
set +e
"$build/shardplan" probe --backend nccl --out "$out" --html "${out%.json}.html" \
  --model llama-2-7b --seq-len 4096 "${gpu_flag[@]}" "$@" | tee "$table"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "gpu-probe: shardplan probe exited $status (2: no GPU / no NCCL / unknown GPU - set" \
       "SHARDPLAN_GPU; 3: a rank stopped responding; 1: a correctness check failed)" >&2
  exit "$status"
fi

say "achieved bf16 TFLOP/s (cublasLtMatmul, best shape) and the efficiency curve"
grep -E '^# GEMM (best|efficiency)' "$table" || echo "no bf16 GEMM ran (see the notes above)"
awk '!/^#/ && $4 == "bf16" { printf "  %6s x %6s x %6s  %9.1f TFLOP/s  %s\n", $1, $2, $3, $6, $0 ~ /sweep/ ? "sweep" : "model" }' "$table"

say "fitted figures"
sed -n '/^# Fit:/,/^# Out of bounds/p' "$table"

say "host link per GPU (pinned copies) and CPU memory per node (STREAM)"
grep -E '^# (Host link per GPU|CPU memory per node)' "$table" || echo "no host-memory figures (see the notes above)"

say "what was timed: the library calls each collective row records"
grep -o '"call": "[^"]*"' "$out" | sort | uniq -c
if grep -q '"medium"' "$out"; then
  echo "gpu-probe: the profile says a link was measured between CPU processes (\"medium\"):" \
       "the nccl back-end should have moved GPU memory" >&2
  exit 1
fi
echo "HTML report: ${out%.json}.html"

say "planning with the calibrated profile $out"
"$build/shardplan" memory --cluster "$out" --model llama-2-7b --gpus "$gpus" --zero 3 || true
