// Long-run arithmetic: checkpoint bytes from the memory model's per-device states, write and
// read times at a storage bandwidth, failures at the cluster's scale, Young's interval, goodput
// and the operational thresholds. Formulas and their sources are in runbook.hpp.
#include "shardplan/runbook.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "shardplan/error.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"

namespace shardplan {

double young_interval_s(double checkpoint_s, double mtbf_s) {
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_interval_s(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2.0 * mtbf_s);
  return young_interval_s(checkpoint_s, mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) -
         checkpoint_s;
}

double goodput(double interval_s, double checkpoint_s, double mtbf_s, double restart_s) {
  SHARDPLAN_CHECK(interval_s > 0 && mtbf_s > 0, "goodput needs a positive interval and MTBF");
  return 1.0 / (1.0 + checkpoint_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s);
}

namespace {

// What one rank holds of a stage: its weights in the parameter dtype (sharded only under ZeRO-3,
// as the memory model holds them) and its optimizer state (sharded under ZeRO >= 1).
struct RankState {
  double weights = 0;
  double optimizer = 0;
};

RankState rank_state(const StageMemory& s, const StateBytes& per, double weight_bytes) {
  const double held_params = per.weights > 0 ? s.weights_bytes / per.weights : 0;
  return {held_params * weight_bytes, s.optimizer_bytes};
}

// Walks every rank in Megatron-LM's order (tp fastest, then cp, dp, pp; see placement_of) and
// adds what it writes and reads to its node: replicated state is written by data-parallel rank 0
// only, sharded state by every rank; every rank reads all it holds. Under HSDP each shard is held
// alike by the dp_replicate ranks of its position, and torch.distributed.checkpoint keeps each
// duplicate on the replica with the smallest plan so far (dedup_save_plans, save_to_lowest_rank
// False by default), which spreads the writing: each replica writes 1/dp_replicate of its shard.
void account_ranks(CheckpointPlan& k, const MemoryBreakdown& mem, const ParallelPlan& p,
                   const ClusterSpec& c) {
  std::vector<RankState> stages;
  for (const StageMemory& s : mem.stages) {
    stages.push_back(rank_state(s, mem.bytes_per_param, k.weight_bytes_per_param));
  }
  const long long inner = static_cast<long long>(p.tp) * p.cp;
  const double replicas = p.dp_replicate();  // 1 unless HSDP replicates the shards
  double node_write = 0, node_read = 0;
  for (long long rank = 0; rank < c.gpus; ++rank) {
    const bool replica_writer = (rank / inner) % p.dp == 0;
    const RankState& st = stages[static_cast<size_t>(rank / (inner * p.dp))];
    double write = kSmallStateBytesPerRank;
    if (p.zero >= 3) {
      write += st.weights / replicas;
    } else if (replica_writer) {
      write += st.weights;
    }
    if (p.zero >= 1) {
      write += st.optimizer / replicas;
    } else if (replica_writer) {
      write += st.optimizer;
    }
    const double read = st.weights + st.optimizer + kSmallStateBytesPerRank;
    k.bytes_per_rank = std::max(k.bytes_per_rank, write);
    k.read_bytes_per_rank = std::max(k.read_bytes_per_rank, read);
    k.read_total_bytes += read;
    node_write += write;
    node_read += read;
    if ((rank + 1) % c.gpus_per_node == 0 || rank + 1 == c.gpus) {
      k.node_write_bytes = std::max(k.node_write_bytes, node_write);
      k.node_read_bytes = std::max(k.node_read_bytes, node_read);
      node_write = node_read = 0;
    }
  }
}

CheckpointPlan size_checkpoint(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                               const ClusterSpec& c, const Estimate& e, const RunbookOptions& o) {
  CheckpointPlan k;
  const MemoryBreakdown& mem = e.memory;
  // Mixed and pure bf16 keep 16-bit parameters (fp8 runs keep bf16 ones; the fp8 copy is a
  // cache); the optimizer state is what StateBytes holds (no master under pure bf16).
  k.weight_bytes_per_param = tr.recipe.weight_bytes;  // the recipe row's weight dtype
  k.optimizer_bytes_per_param = mem.bytes_per_param.optimizer;
  // The MTP modules train beside the model and are saved with it (DeepSeek-V3's released
  // checkpoint: 671B main weights and 14B MTP, its Hugging Face README).
  const ParamCounts counts = count_params(m);
  k.params = counts.total + counts.mtp;
  k.small_state_bytes = kSmallStateBytesPerRank * c.gpus;
  k.total_bytes = k.params * k.bytes_per_param() + k.small_state_bytes;
  // ZeRO-0 leaves nothing sharded over data parallel: one writer per model-parallel rank.
  k.writing_ranks = p.zero == 0 ? c.gpus / p.dp : c.gpus;
  account_ranks(k, mem, p, c);

  const int nodes = c.nodes();
  k.node_bytes_per_s = o.storage_aggregate ? o.storage_bytes_per_s / nodes : o.storage_bytes_per_s;
  k.aggregate_bytes_per_s =
      o.storage_aggregate ? o.storage_bytes_per_s : o.storage_bytes_per_s * nodes;
  const double node_write_s = k.node_write_bytes / k.node_bytes_per_s;
  const double aggregate_write_s = k.total_bytes / k.aggregate_bytes_per_s;
  k.write_s = std::max(node_write_s, aggregate_write_s);
  k.write_aggregate_bound = aggregate_write_s > node_write_s;
  k.read_s = std::max(k.node_read_bytes / k.node_bytes_per_s,
                      k.read_total_bytes / k.aggregate_bytes_per_s);

  k.keep_last = o.keep_last;
  k.disk_bytes = (o.keep_last + 1.0) * k.total_bytes;
  k.disk_capacity_bytes = o.disk_bytes;
  k.disk_fits = o.disk_bytes <= 0 || k.disk_bytes <= o.disk_bytes;
  return k;
}

}  // namespace

Runbook plan_runbook(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                     const ClusterSpec& c, const Estimate& e, const RunbookOptions& o) {
  SHARDPLAN_CHECK(o.storage_bytes_per_s > 0 && o.failures_per_gpu_hour > 0 && o.keep_last >= 1,
                  "runbook options are validated by the caller");
  SHARDPLAN_CHECK(!e.memory.stages.empty() && e.step_s > 0,
                  "the estimate must be of a valid plan");
  Runbook r;
  r.step_s = e.step_s;
  r.tokens_per_s = e.throughput.tokens_per_s;
  CheckpointPlan& k = r.checkpoint;
  k = size_checkpoint(m, tr, p, c, e, o);

  FailureModel& f = r.failures;
  f.per_gpu_hour = o.failures_per_gpu_hour;
  f.per_day = f.per_gpu_hour * c.gpus * 24.0;
  f.mtbf_s = 3600.0 / (f.per_gpu_hour * c.gpus);
  f.restart_given = o.restart_s > 0;
  f.restart_s = f.restart_given ? o.restart_s : kDefaultRestartFixedS + k.read_s;

  k.young_interval_s = young_interval_s(k.write_s, f.mtbf_s);
  k.daly_interval_s = daly_interval_s(k.write_s, f.mtbf_s);
  k.interval_given = o.checkpoint_interval_s > 0;
  k.interval_s = k.interval_given ? o.checkpoint_interval_s : k.young_interval_s;
  k.interval_steps =
      static_cast<int>(std::clamp(std::llround(k.interval_s / r.step_s), 1LL, 1LL << 30));
  k.effective_interval_s = k.interval_steps * r.step_s;
  k.covered_steps = static_cast<long long>(k.keep_last) * k.interval_steps;

  const double t = k.effective_interval_s;
  r.checkpoint_overhead = k.write_s / t;
  r.failure_overhead = (t / 2.0 + f.restart_s) / f.mtbf_s;
  r.goodput = goodput(t, k.write_s, f.mtbf_s, f.restart_s);
  r.first_order_valid = r.goodput >= 0.5;

  if (tr.tokens > 0) {
    r.tokens = tr.tokens;
    r.compute_s = e.train_s;
    r.wall_s = r.compute_s / r.goodput;
    r.expected_failures = r.wall_s / f.mtbf_s;
  }

  // Ranks that write nothing wait in the next collective for the writers, and a restarted job's
  // first collective waits for the slowest reader: a timeout must outlast both, and a step.
  r.longest_wait_s = std::max({r.step_s, k.write_s, k.read_s});
  r.collective_timeout_s = std::max(kMinCollectiveTimeoutS,
                                    60.0 * std::ceil(kTimeoutHeadroom * r.longest_wait_s / 60.0));
  r.straggler_window_steps =
      std::max(kStragglerMinSteps, static_cast<int>(std::ceil(kStragglerWindowS / r.step_s)));
  return r;
}

}  // namespace shardplan
