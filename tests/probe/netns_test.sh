#!/usr/bin/env bash
# Two "nodes" on one machine (a two-node test without two machines): two network namespaces joined by a veth pair
# shaped to 1 Gbit/s each way with tc tbf, each with its own hostname (a UTS namespace, or Open
# MPI takes them for one node); Open MPI reaches the second through an `ip netns exec` agent
# instead of ssh. The probe's inter-node bandwidth must come out within 25% of 125 MB/s, its
# all-reduce times within 10% of a plain blocking MPI_Allreduce (REFERENCE) of the same sizes on
# the same link, and the planner must load it. Exit 77 (ctest SKIP_RETURN_CODE) only when
# namespaces cannot be made.
#   netns_test.sh SHARDPLAN JSON_GET MPIRUN REFERENCE  (KEEP_PROFILE=FILE keeps the profile)
set -euo pipefail
shardplan=$1
json_get=$2
mpirun=$3
reference=$4
shaped_gb_per_s=0.125  # 1 Gbit/s
tolerance=0.25
reference_tolerance=0.10
# The sizes the probe's all-reduce is compared with the reference at. From 4 MiB they are held to
# the tolerance: bandwidth-bound on this link (35 ms and more against a ~0.1 ms round trip), the
# probe and the reference agreed within 2% in each of 9 rounds. 1 MiB (~9 ms) is reported, not
# held: on a shared 2-core machine a millisecond of scheduling is more than a tenth of it.
compared_bytes="1048576 4194304 8388608 16777216"
held_from_bytes=4194304
rounds=3

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "not root: cannot create network namespaces"
command -v ip >/dev/null || skip "no ip command (iproute2)"

# Names and a subnet of this run's own, all inside namespaces this script makes.
tag=sp$$
octet=$(($$ % 200 + 20))
subnet=10.251.$octet.0/24
ip1=10.251.$octet.1
ip2=10.251.$octet.2
ns1=${tag}a
ns2=${tag}b
work=$(mktemp -d /tmp/shardplan-netns-XXXXXX)
cleanup() {
  ip netns del "$ns1" 2>/dev/null || true  # deleting a namespace deletes its veth end too
  ip netns del "$ns2" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP_PROFILE:-}" ] && trap 'cp "$profile" "$KEEP_PROFILE" 2>/dev/null; cleanup' EXIT

unshare --uts true 2>"$work/netns.err" || skip "unshare --uts failed: $(cat "$work/netns.err")"
ip netns add "$ns1" 2>"$work/netns.err" || skip "ip netns add failed: $(cat "$work/netns.err")"
ip netns add "$ns2" 2>"$work/netns.err" || skip "ip netns add failed: $(cat "$work/netns.err")"
# From here on, anything that fails is a failure.
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$ns1"
ip link set "${tag}y" netns "$ns2"
ip -n "$ns1" addr add "$ip1/24" dev "${tag}x"
ip -n "$ns2" addr add "$ip2/24" dev "${tag}y"
ip -n "$ns1" link set lo up
ip -n "$ns2" link set lo up
ip -n "$ns1" link set "${tag}x" up
ip -n "$ns2" link set "${tag}y" up
tc -n "$ns1" qdisc add dev "${tag}x" root tbf rate 1gbit burst 256kb latency 50ms
tc -n "$ns2" qdisc add dev "${tag}y" root tbf rate 1gbit burst 256kb latency 50ms

# Open MPI's launcher agent: "agent HOST command..." runs the command in that host's namespace.
cat >"$work/agent" <<EOF
#!/bin/sh
host=\$1
shift
case "\$host" in
  $ip1) ns=$ns1 ;;
  $ip2) ns=$ns2 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
EOF
chmod +x "$work/agent"

profile=$work/profile.json
# Every MPI process yields the core while it waits (Open MPI's mpi_yield_when_idle, which
# mpirun sets itself when it knows a node is oversubscribed: ompi/runtime/ompi_mpi_params.c):
# two ranks spinning in blocking calls on a machine shared with other work starve the kernel's
# network processing that the shaped link needs (a 1 MiB MPI_Allreduce went from ~16 to ~100 ms).
# Every message up to 32 MiB sent eagerly (btl_tcp_eager_limit): with Open MPI's default 64 KiB,
# a large message waits for its receiver's go-ahead, which travels in the same TCP stream as that
# rank's own outgoing message and so can queue behind all of it. Whether it does depends on which
# rank enters the all-reduce first: a 2-rank all-reduce of 16 MiB took ~145 ms in some launches and
# ~277 ms (the two directions in turn) in others, and a CI run held the probe's 299 ms against the
# reference's 177 ms. Sent eagerly, both directions run at the line rate in every launch (6 of 6:
# 143-150 ms), and 1 MiB no longer flips between ~9 and ~13 ms.
# The probe and the reference run under the same launch, so they are compared like for like.
mpi="timeout -k 5 100 $mpirun --allow-run-as-root --oversubscribe -H $ip1:1,$ip2:1 -np 2 \
  --mca plm_rsh_agent $work/agent --mca btl tcp,self --bind-to none --mca mpi_yield_when_idle 1 \
  --mca btl_tcp_eager_limit 33554432 \
  --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet"
in_ns1() { ip netns exec "$ns1" unshare --uts sh -c "hostname $ns1; $*"; }
probe() {  # probe OUT FLAGS...: the probe across the two namespaces, writing profile OUT
  local out=$1
  shift
  in_ns1 "$mpi $shardplan probe --backend mpi --out $out --gemm-sizes none --timeout-s 30 $*" \
    >"$work/out" 2>"$work/err" || {
    cat "$work/err" >&2
    fail "the probe across the two namespaces failed"
  }
}
get() { "$json_get" "$@"; }
within() {  # within VALUE: |VALUE - shaped| <= tolerance x shaped
  awk -v x="$1" -v r="$shaped_gb_per_s" -v t="$tolerance" 'BEGIN { exit !(x >= r * (1 - t) && x <= r * (1 + t)) }'
}

# The profile the planner checks below. A machine shared with other work can starve one run's
# ranks of CPU (send_recv 0.092 GB/s in one run, 0.098-0.116 in the next ones): a second run
# decides when the first's send_recv is out of range, and both are printed.
for attempt in 1 2; do
  start=$(date +%s)
  probe "$profile" --collectives send_recv,all_reduce --min-bytes 64KiB --max-bytes 8MiB \
    --iters 6 --warmup 2
  echo "probe across two namespaces took $(($(date +%s) - start)) s (run $attempt)"
  grep -E '^#  (inter|intra|world) ' "$work/out" || true
  within "$(get "$profile" fit.tiers.inter.collectives.send_recv.busbw_gb_per_s)" && break
done

same() {  # same A B: equal to 1e-6 relative
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * (b < 0 ? -b : b)) }'
}

# Two hosts, one rank each: the inter tier was measured, nothing inside a node.
[ "$(get "$profile" provenance.hosts.0)" = "$ns1" ] || fail "rank 0 is not on $ns1"
[ "$(get "$profile" provenance.hosts.1)" = "$ns2" ] || fail "rank 1 is not on $ns2"
[ "$(get "$profile" fit.tiers.inter.ranks)" = 2 ] || fail "no inter-node tier in the fit"
get "$profile" fit.skipped_tiers.intra >/dev/null || fail "the intra tier should be skipped"

send_recv=$(get "$profile" fit.tiers.inter.collectives.send_recv.busbw_gb_per_s)
all_reduce=$(get "$profile" fit.tiers.inter.collectives.all_reduce.busbw_gb_per_s)
nic=$(get "$profile" inter.gb_per_s)
echo "inter-node busbw: send_recv $send_recv GB/s, all_reduce $all_reduce GB/s; shaped $shaped_gb_per_s GB/s"
within "$send_recv" || fail "send_recv busbw $send_recv GB/s is not within 25% of $shaped_gb_per_s GB/s"
same "$nic" "$send_recv" || fail "the profile's inter gb_per_s $nic is not the measured $send_recv"
[ "$(get "$profile" inter.measured)" = true ] || fail "the inter link is not marked measured"
# The node-pair round: the two hosts' only pair exchanged 1 MiB both ways, checked, over the same
# shaped link (full duplex, so each direction near the line rate, and never above it).
[ "$(get "$profile" measurements.pairs.0.correct)" = true ] || fail "the node pair's exchange was wrong or missing"
[ "$(get "$profile" measurements.pairs.0.hosts.1)" = "$ns2" ] || fail "the node pair is not $ns1 <-> $ns2"
pair=$(get "$profile" measurements.pairs.0.gb_per_s)
echo "node pair $ns1 <-> $ns2: $pair GB/s each way (1 MiB both ways at once)"
awk -v x="$pair" -v r="$shaped_gb_per_s" 'BEGIN { exit !(x > 0.4 * r && x <= 1.1 * r) }' ||
  fail "the node pair's $pair GB/s is not near the shaped $shaped_gb_per_s GB/s"
# What was measured is said: CPU processes over the hosts' network, not the GPUs' NICs.
case "$(get "$profile" inter.medium)" in
  *"network between CPU processes"*) ;;
  *) fail "the inter link does not say it was measured between CPU processes" ;;
esac

# The probe's all-reduce against a plain blocking MPI_Allreduce, run by turns ($rounds rounds, so
# both see the same hour of a shared machine): per size the median over rounds of each run's
# time (the average over ranks of each rank's median iteration, the time the fit uses).
probe_all_reduce_us() {  # probe_all_reduce_us PROFILE BYTES: that row's median time
  local i=0 kind size call
  while kind=$(get "$1" "measurements.collectives.$i.collective" 2>/dev/null); do
    size=$(get "$1" "measurements.collectives.$i.size_bytes")
    if [ "$kind" = all_reduce ] && [ "$size" = "$2" ]; then
      call=$(get "$1" "measurements.collectives.$i.call" 2>/dev/null) || call="(none recorded)"
      [ "$call" = MPI_Allreduce ] || fail "the probe's all_reduce of $2 B timed $call, not the blocking MPI_Allreduce"
      get "$1" "measurements.collectives.$i.time_us.median"
      return 0
    fi
    i=$((i + 1))
  done
  fail "the probe measured no all_reduce of $2 B"
}
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for round in $(seq "$rounds"); do
  in_ns1 "$mpi $reference 8 2 $compared_bytes" >"$work/reference.$round" 2>"$work/reference.err" || {
    cat "$work/reference.err" >&2
    fail "the reference MPI_Allreduce across the two namespaces failed"
  }
  probe "$work/compare.$round.json" --collectives all_reduce --min-bytes 1MiB --max-bytes 16MiB \
    --iters 8 --warmup 2 --stream-bytes none
done
for bytes in $compared_bytes; do
  references="" probes=""
  for round in $(seq "$rounds"); do
    r=$(awk -v b="$bytes" '$1 == b { print $3 }' "$work/reference.$round")
    [ -n "$r" ] || fail "the reference printed no time for $bytes B"
    references="$references $r"
    probes="$probes $(probe_all_reduce_us "$work/compare.$round.json" "$bytes")"
  done
  ref=$(echo $references | median)
  probed=$(echo $probes | median)
  ratio=$(awk -v p="$probed" -v r="$ref" 'BEGIN { printf "%.3f", p / r }')
  held=$([ "$bytes" -ge "$held_from_bytes" ] && echo "held to 1 +- $reference_tolerance" || echo "reported")
  echo "all_reduce $bytes B: probe $probed us (rounds:$probes), plain MPI_Allreduce $ref us (rounds:$references); probe/reference $ratio ($held)"
  [ "$bytes" -ge "$held_from_bytes" ] || continue
  awk -v x="$ratio" -v t="$reference_tolerance" 'BEGIN { exit !(x >= 1 - t && x <= 1 + t) }' ||
    fail "the probe's all_reduce of $bytes B took $ratio x the plain MPI_Allreduce's time (allowed: 1 +- $reference_tolerance)"
done

# The planner loads it and reflects the measured link.
set +e
plan=$("$shardplan" memory --cluster "$profile" --model llama-2-7b --gpus 2 --zero 3 --json)
status=$?
set -e
[ "$status" -le 1 ] || fail "shardplan memory --cluster $profile exited $status"
planned_nic=$(echo "$plan" | get - cluster.nic.bytes_per_s)
planned_per_gpu=$(echo "$plan" | get - cluster.inter_per_gpu.bytes_per_s)
[ "$(echo "$plan" | get - cluster.nodes)" = 2 ] || fail "the plan does not span two nodes"
[ "$(echo "$plan" | get - cluster.nic.measured)" = true ] || fail "the planner's NIC is not the measured one"
same "$planned_nic" "$(awk -v g="$nic" 'BEGIN { printf "%.6f", g * 1e9 }')" ||
  fail "planned NIC $planned_nic B/s is not the profile's $nic GB/s"
same "$planned_per_gpu" "$planned_nic" || fail "one GPU and one NIC per node: per-GPU $planned_per_gpu != NIC $planned_nic"
# comm prices the data-parallel gradient all-reduce between the two nodes with the measured
# all_reduce bus bandwidth.
set +e
comm=$("$shardplan" comm --cluster "$profile" --model llama-2-7b --gpus 2 --json)
status=$?
set -e
[ "$status" -eq 0 ] || fail "shardplan comm --cluster $profile exited $status"
comm_busbw=$(echo "$comm" | get - comm.data_parallel.busbw_bytes_per_s)
same "$comm_busbw" "$(awk -v g="$all_reduce" 'BEGIN { printf "%.6f", g * 1e9 }')" ||
  fail "comm's data-parallel busbw $comm_busbw B/s is not the measured all_reduce $all_reduce GB/s"
[ "$(echo "$comm" | get - comm.data_parallel.group.nodes)" = 2 ] || fail "comm's gradient sync does not cross the two nodes"
echo "$comm" | grep -q '"the inter-node link measured-inter (' ||
  fail "comm's JSON notes do not say the inter-node link was measured between CPU processes"
echo "PASS: planner's inter link $planned_nic B/s per GPU (1 Gbit/s shaped = 125000000 B/s); comm prices the gradient all-reduce at the measured $all_reduce GB/s"
