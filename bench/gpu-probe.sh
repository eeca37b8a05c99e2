#!/usr/bin/env bash
# The GPU path of `shardplan probe` in one call, for a machine with NVIDIA GPUs and a short time
# on it. It runs from a build made elsewhere and carried over (the binary and its plug-ins,
# $BUILD_DIR/shardplan, libshardplan_nccl.so and libshardplan_mpi.so, 8 MB together; the MPI one
# shares NCCL ids under mpirun and runs --dry-run): nothing is installed
# and nothing else is built on the GPU machine. Then:
#   1. checks the driver first (the CUDA 13 runtime needs an R580 or newer driver) and that the
#      plug-in's libraries (CUDA runtime, NCCL, cuBLASLt) resolve, and says what is missing;
#   2. probes one GPU: GEMMs in every format it runs (random-mantissa inputs, timed warm-up,
#      median call) at the sweep sizes and the model's shapes, host links, CPU memory (STREAM),
#      with the HTML report (no collective: one rank has no link);
#   3. probes every GPU at once when there are several (one process per GPU under mpirun when it
#      is installed, else one process driving them all): collectives to 1 GiB on the intra tier;
#   4. prints each figure beside its published counterpart (bench/gpu-probe-reference.tsv) and
#      plans with the profile it wrote.
# Expected wall time on one H200: about 1.5 minutes for step 2 (4 formats x 6 sizes and ~6 model
# shapes at 0.5 s warm-up + 1 s timing each, the host sweep, CUDA start-up); on 8 GPUs add about
# 1.5 minutes for step 3. Each probe runs under `timeout` ($PROBE_TIMEOUT_S, default 420 s).
#
#   bench/gpu-probe.sh [--dry-run] [extra probe flags, e.g. --gemm-sizes 4096 --model llama-3-8b]
#   bench/gpu-probe.sh --bundle
#
# --dry-run: no GPU needed; runs the driver check (reporting, not stopping), then the same steps
# with the mpi back-end (CPU processes), to check the script and the report path here.
# --bundle (on the build machine): copies the Debian libraries the binary loads (fmt, yaml-cpp,
# toml++, Open MPI, OpenBLAS and theirs; 43 MB) into $BUILD_DIR/gpu-probe-libs, for a GPU machine
# whose image has none of them: carry build/shardplan, build/libshardplan_*.so and
# build/gpu-probe-libs (51 MB together). The CUDA runtime, cuBLASLt and NCCL come from the GPU
# machine (/usr/local/cuda, or the nvidia-* Python wheels PyTorch installs).
# Environment: BUILD_DIR (default build); OUT (default $BUILD_DIR/gpu-probe); NVIDIA_SMI (the
# nvidia-smi to ask, default nvidia-smi); SHARDPLAN_GPU, a GPU preset or profile file when the
# device name matches none; PROBE_TIMEOUT_S.
set -euo pipefail
cd "$(dirname "$0")/.."
dry=0
build=${BUILD_DIR:-build}
if [ "${1:-}" = --bundle ]; then
  mkdir -p "$build/gpu-probe-libs"
  ldd "$build/shardplan" "$build"/libshardplan_*.so | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*|libdl|libpthread|librt)\.so|libcuda|libnccl|libcublas|libcudart' |
    while read -r lib; do cp -L "$lib" "$build/gpu-probe-libs/"; done
  du -sh "$build/gpu-probe-libs" "$build/shardplan" "$build"/libshardplan_*.so
  exit 0
fi
if [ "${1:-}" = --dry-run ]; then
  dry=1
  shift
fi
out=${OUT:-$build/gpu-probe}
smi=${NVIDIA_SMI:-nvidia-smi}
limit=${PROBE_TIMEOUT_S:-420}
reference=bench/gpu-probe-reference.tsv
start=$SECONDS
mkdir -p "$out"

say() { printf '\n== %s (%d s)\n' "$*" "$((SECONDS - start))"; }
fail() {
  echo "gpu-probe: $*" >&2
  [ "$dry" = 1 ] || exit 2
  echo "gpu-probe: (--dry-run: going on with the mpi back-end)" >&2
}

say "driver"
gpus=0
gpu_name=""
if ! command -v "$smi" >/dev/null 2>&1; then
  fail "no NVIDIA driver here: $smi is not installed (the probe needs an NVIDIA GPU, its driver R580+ for CUDA 13, and libcuda.so.1)"
elif ! query=$("$smi" --query-gpu=name,driver_version --format=csv,noheader 2>&1); then
  fail "$smi failed: $query"
else
  echo "$query"
  gpus=$(printf '%s\n' "$query" | grep -c . || true)
  gpu_name=$(printf '%s\n' "$query" | head -1 | cut -d, -f1)
  driver=$(printf '%s\n' "$query" | head -1 | cut -d, -f2 | tr -d ' ')
  if [ "${driver%%.*}" -lt 580 ] 2>/dev/null; then
    fail "driver $driver is older than R580, which the CUDA 13 runtime this build links needs (cudaErrorInsufficientDriver); update the driver to 580 or later, or build against an older toolkit (CUDAToolkit_ROOT)"
  fi
fi

say "binary and plug-in ($build)"
if [ ! -x "$build/shardplan" ] || { [ "$dry" = 0 ] && [ ! -e "$build/libshardplan_nccl.so" ]; } ||
   { [ "$dry" = 1 ] && [ ! -e "$build/libshardplan_mpi.so" ]; }; then
  # Not carried over: build the two targets only (no apt-get, no npm, no tests).
  echo "gpu-probe: $build/shardplan or its plug-in is missing; building them (cmake, two targets)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_WITH_CUDA=ON \
    -DSHARDPLAN_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target shardplan_tool shardplan_nccl
fi
ls -l "$build/shardplan" "$build"/libshardplan_*.so 2>/dev/null || true
# The libraries: the bundle carried with the binary, the CUDA toolkit's, and the nvidia-* wheels
# (NCCL, cuBLAS, the CUDA runtime) of the Python that holds PyTorch.
libs=/usr/local/cuda/lib64
[ -d "$build/gpu-probe-libs" ] && libs=$(readlink -f "$build/gpu-probe-libs"):$libs
if command -v python3 >/dev/null; then
  for pkg in nccl cublas cuda_runtime; do
    dir=$(python3 -c "import importlib.util as u; s = u.find_spec('nvidia.$pkg'); print(list(s.submodule_search_locations)[0] if s else '')" 2>/dev/null || true)
    [ -n "$dir" ] && [ -d "$dir/lib" ] && libs=$libs:$dir/lib
  done
fi
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
backend=nccl
if [ "$dry" = 1 ]; then
  backend=mpi
fi
for file in "$build/shardplan" "$build/libshardplan_mpi.so" "$build/libshardplan_nccl.so"; do
  [ -e "$file" ] || continue
  [ "$dry" = 1 ] && [ "$file" = "$build/libshardplan_nccl.so" ] && continue
  if missing=$(ldd "$file" | grep 'not found'); then
    echo "gpu-probe: $file's libraries do not resolve (LD_LIBRARY_PATH=$LD_LIBRARY_PATH):" >&2
    echo "$missing" >&2
    echo "gpu-probe: carry build/gpu-probe-libs (bench/gpu-probe.sh --bundle on the build" \
         "machine) for the Debian ones; install the CUDA 13 runtime, NCCL and cuBLASLt for the" \
         "others" >&2
    exit 2
  fi
done
gpu_flag=()
[ -n "${SHARDPLAN_GPU:-}" ] && gpu_flag=(--gpu "$SHARDPLAN_GPU")

# probe NAME PROCESSES [flags...]: one probe run under timeout, its table kept in $out/NAME.txt.
probe() {
  local name=$1 processes=$2
  shift 2
  local launcher=()
  if [ "$processes" -gt 1 ]; then
    launcher=(mpirun --allow-run-as-root --oversubscribe -np "$processes")
  fi
  set +e
  timeout -k 10 "$limit" "${launcher[@]}" "$build/shardplan" probe --backend "$backend" \
    --out "$out/$name.json" --html "$out/$name.html" "${gpu_flag[@]}" "$@" >"$out/$name.txt" \
    2>"$out/$name.err"
  local status=$?
  set -e
  grep -E '^# (WARNING|GEMM efficiency|Stragglers|  rank)' "$out/$name.txt" || true
  grep '^# Out of bounds' "$out/$name.txt" | tail -n 1 || true
  grep -E '^probe: wrote' "$out/$name.err" || true
  if [ "$status" -ne 0 ]; then
    tail -n 30 "$out/$name.err" >&2
    echo "gpu-probe: $name exited $status (2: bad input, no GPU or an unknown device - set" \
         "SHARDPLAN_GPU; 3: a rank stopped responding; 124: over ${limit} s; 1: a check failed)" >&2
    exit "$status"
  fi
}

# compare TABLE: each measured figure beside the published one for this GPU.
compare() {
  local table=$1
  echo "measured (this run)                                  published"
  awk -v gpu="$gpu_name" -v gpus="$gpus" '
    FNR == NR {
      if ($0 ~ /^#/ || split($0, f, "\t") < 5) next
      n = split(f[2], names, ",")
      for (i = 1; i <= n; ++i) if (index(gpu, names[i])) { ref[f[1]] = f[3] " " f[4]; src[f[1]] = f[5] }
      next
    }
    /^# [a-z_]+ \([a-z_]+_perf\) on the / { coll = $2; tier = $6; next }
    /^ *[0-9]+ +[0-9]+ +float/ { last[coll " " tier] = $8; size[coll " " tier] = $1; next }
    /^# GEMM best / {
      fmt = $4; measured = $5
      key = "gemm_" fmt
      printf "  %-6s GEMM best %9.1f TFLOP/s (median call)   ", fmt, measured
      if (key in ref) { split(ref[key], r, " "); printf "%s MAMF, %.0f%%: %s\n", ref[key], 100 * measured / r[1], src[key] }
      else print "(no published figure in the reference table)"
      next
    }
    /^# Host link per GPU/ { printf "  host link %s   ", substr($0, index($0, "h2d")); if ("host_link" in ref) printf "line rate %s: %s\n", ref["host_link"], src["host_link"]; else print ""; next }
    /^# CPU memory per node/ { print "  " substr($0, 3) "   (the host'"'"'s own: no published figure)"; next }
    END {
      for (k in last) {
        split(k, p, " ")
        key = p[1] "_busbw_" gpus "gpu"
        printf "  %-14s %-5s busbw %8.1f GB/s at %s B   ", p[1], p[2], last[k], size[k]
        if (key in ref) printf "%s: %s\n", ref[key], src[key]; else print "(no published figure for this count)"
      }
    }' "$reference" "$table"
}

model=(--model llama-2-7b --seq-len 4096)
if [ "$dry" = 1 ]; then
  # CPU stand-in: small sizes, so the dry run takes seconds.
  model=(--model llama-2-7b --seq-len 128 --gemm-sizes 128,256 --max-bytes 1MiB --iters 5
         --warmup 2 --stream-bytes 64MiB)
fi

say "one GPU: GEMMs per format, the model's shapes, host links and CPU memory"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} probe one-gpu 1 "${model[@]}" "$@"
compare "$out/one-gpu.txt"

all=$gpus
[ "$dry" = 1 ] && all=2
if [ "$all" -gt 1 ]; then
  say "$all ranks at once: collectives to 1 GiB on the intra tier, GEMMs on every GPU"
  processes=$all
  command -v mpirun >/dev/null 2>&1 || processes=1  # one process drives every GPU
  probe all-gpus "$processes" "${model[@]}" "$@"
  compare "$out/all-gpus.txt"
else
  say "one GPU only: no collective to measure (every tier needs two ranks)"
fi

say "what was timed: the library calls the profile records"
grep -ho '"call": "[^"]*"' "$out"/*.json | sort | uniq -c
if [ "$dry" = 0 ] && grep -q '"medium"' "$out"/*.json; then
  echo "gpu-probe: a profile says its links were measured between CPU processes (\"medium\"):" \
       "the nccl back-end should have moved GPU memory" >&2
  exit 1
fi

say "planning with the calibrated profile"
profile=$out/one-gpu.json
[ -e "$out/all-gpus.json" ] && profile=$out/all-gpus.json
"$build/shardplan" estimate --cluster "$profile" --model llama-2-7b --gpus "$((all > 0 ? all : 1))" \
  --global-batch 64 --seq-len 4096 || true
echo "profiles and HTML reports: $out/"
say "done"
