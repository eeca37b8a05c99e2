#!/usr/bin/env bash
# The probe as a Slurm job, end to end on a real single-node Slurm that this test starts: munged,
# slurmctld and slurmd (Debian's slurm-wlm) with a configuration of its own in a temporary
# folder and ports of its own; `shardplan probe --job slurm` writes the batch script, sbatch runs
# it (srun --mpi=pmix, two ranks of the mpi back-end), and `plan` uses the profile it wrote.
# Exit 77 (skipped, with the reason) where Slurm is not installed or cannot start here.
#   tests/probe/slurm_test.sh SHARDPLAN
set -uo pipefail
bin=$(readlink -f "$1")
skip() { echo "SKIP: $*"; exit 77; }
for tool in munged slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (apt-get install slurmd slurmctld slurm-client munge)"
done
[ "$(id -u)" -eq 0 ] || skip "starting munged and slurmd needs root"

dir=$(mktemp -d /tmp/shardplan-slurm-XXXXXX)
host=$(hostname -s)
export SLURM_CONF=$dir/slurm.conf
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true
  sleep 1
  [ -f "$dir/slurmd.pid" ] && kill "$(cat "$dir/slurmd.pid")" 2>/dev/null
  [ -f "$dir/slurmctld.pid" ] && kill "$(cat "$dir/slurmctld.pid")" 2>/dev/null
  [ -f "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# munge: its own key, socket and pid file, so a munged the machine runs is left alone.
mkdir -p "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$dir/munge"
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" ||
  skip "munged did not start: $(tail -n 3 "$dir/munged.log" 2>/dev/null)"

cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool"
cat >"$SLURM_CONF" <<EOF
ClusterName=shardplan-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd did not start: $(tail -n 3 "$dir/slurmd.log" 2>/dev/null)"
for _ in $(seq 1 30); do
  sinfo -h -o '%t' 2>/dev/null | grep -qE '^idle' && break
  sleep 1
done
sinfo -h -o '%t' | grep -qE '^idle' ||
  skip "the node did not come up: $(sinfo 2>&1 | tail -n 2); $(tail -n 3 "$dir/slurmd.log")"

# The job: two ranks of the mpi back-end on the one node, its profile in the test's folder.
profile=$dir/profile.json
"$bin" probe --backend mpi --job slurm --job-out "$dir/probe.sbatch" --nodes 1 \
  --gpus-per-node 2 --out "$profile" --shardplan "$bin" --gemm-sizes 32 --max-bytes 4KiB \
  --collectives all_reduce,all_gather --stream-bytes none --iters 3 --warmup 1 --timeout-s 30 ||
  { echo "FAIL: probe --job slurm exited $?"; exit 1; }
cat "$dir/probe.sbatch"
grep -q '^#SBATCH --nodes=1$' "$dir/probe.sbatch" || { echo "FAIL: no --nodes=1"; exit 1; }
grep -q '^#SBATCH --ntasks-per-node=2$' "$dir/probe.sbatch" || { echo "FAIL: no 2 tasks"; exit 1; }
grep -q '^#SBATCH --time=' "$dir/probe.sbatch" || { echo "FAIL: no --time bound"; exit 1; }
grep -q 'srun --mpi=pmix' "$dir/probe.sbatch" || { echo "FAIL: no srun --mpi=pmix"; exit 1; }

cd "$dir" || exit 1
start=$SECONDS
if ! timeout 300 sbatch --wait --chdir="$dir" "$dir/probe.sbatch" >"$dir/sbatch.out" 2>&1; then
  echo "FAIL: the Slurm job failed ($((SECONDS - start)) s):"
  cat "$dir/sbatch.out" "$dir"/shardplan-probe-*.out 2>/dev/null | tail -n 40
  tail -n 20 "$dir/slurmd.log"
  exit 1
fi
echo "the Slurm job ran in $((SECONDS - start)) s"
tail -n 12 "$dir"/shardplan-probe-*.out
[ -s "$profile" ] || { echo "FAIL: the job wrote no profile at $profile"; exit 1; }
grep -q '"backend": "mpi"' "$profile" || { echo "FAIL: the profile is not the probe's"; exit 1; }
grep -q '"ranks": 2' "$profile" || grep -q 'intra' "$profile" || { echo "FAIL: no intra tier"; exit 1; }
out=$("$bin" plan --cluster "$profile" --model llama-2-7b --gpus 2 --global-batch 8 2>&1) ||
  { echo "FAIL: plan with the job's profile exited $?: $out"; exit 1; }
echo "$out" | grep -q 'measured-intra' || { echo "FAIL: the plan does not use the measured link"; echo "$out" | head; exit 1; }
echo "PASS: the probe ran as a Slurm job and plan used its profile"
