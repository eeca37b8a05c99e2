// torchtitan v0.2.2's mixture-of-experts execution keys (torchtitan/config/job_config.py
// Parallelism) and what ParallelDims._validate (torchtitan/distributed/parallel_dims.py) accepts.
// The MoE model arguments themselves (experts, top-k, score function, node-limited groups, route
// scale) are the registered flavor's MoEArgs (torchtitan/models/moe/moe.py), not job keys.
#include <fmt/format.h>

#include "common.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan::emit {
namespace {

// job_config.py Parallelism.pipeline_parallel_expert_parallel_overlap (default true): "only
// effective when the pipeline parallel schedule is DualPipeV and pipeline_parallel_degree > 1
// and expert_parallel_degree > 1"; "Does not support activation_checkpoint, set mode=none".
bool titan_overlap_applies(const ParallelPlan& p) {
  return p.pp > 1 && p.ep > 1 && schedule_of(p) == Schedule::dualpipe_v;
}

}  // namespace

void titan_moe_keys(const EmitInputs& in, toml::table& t, std::vector<Provenance>& why) {
  const ParallelPlan& p = in.plan;
  if (!in.model.is_moe() || p.ep == 1) return;
  // Parallelism.expert_tensor_parallel_degree defaults to 1; the plan's expert tp to tp.
  t.insert("expert_tensor_parallel_degree", p.expert_tp());
  why.push_back({"parallelism.expert_tensor_parallel_degree", std::to_string(p.expert_tp()),
                 fmt::format("plan: experts over ep {} x expert tp {}", p.ep, p.expert_tp())});
  if (titan_overlap_applies(p)) {
    t.insert("pipeline_parallel_expert_parallel_overlap", p.moe_a2a_overlap);
    why.push_back({"parallelism.pipeline_parallel_expert_parallel_overlap",
                   p.moe_a2a_overlap ? "true" : "false",
                   p.moe_a2a_overlap
                       ? "plan: DualPipeV hides the EP all-to-all behind the other micro-batch"
                       : "plan: all-to-alls priced exposed (torchtitan's default is true)"});
  }
}

void titan_moe_notes(const EmitInputs& in, std::vector<std::string>& notes) {
  const RouterSpec& r = in.model.router;
  if (!in.model.is_moe()) return;
  // models/moe/moe.py MoEArgs.load_balance_coeff (default 1e-3): a per-expert score bias updated
  // before each optimizer step (auxiliary-loss-free balancing); there is no balance loss.
  if (r.aux_loss_coeff > 0 || !in.model.router_bias) {
    notes.push_back(fmt::format(
        "torchtitan v0.2.2 balances experts by a per-expert bias (MoEArgs.load_balance_coeff "
        "1e-3, models/moe/moe.py) and has no auxiliary balance loss; the model's config.json "
        "has {}{}: set load_balance_coeff = None in the flavor and add the loss to train the "
        "model named",
        r.aux_loss_coeff > 0 ? fmt::format("an auxiliary loss of weight {:g}", r.aux_loss_coeff)
                             : std::string("no auxiliary loss"),
        in.model.router_bias ? "" : " and no expert bias"));
  }
}

void titan_moe_problems(const EmitInputs& in, std::vector<PlanProblem>& out) {
  const ParallelPlan& p = in.plan;
  const int etp = p.expert_tp();
  if (in.model.is_moe() && p.ep > 1 && etp != 1 && etp != p.tp) {
    out.push_back({"--expert-tp", fmt::format("torchtitan v0.2.2 runs expert tp 1 or expert tp = "
                                              "tp ({}) only (\"Currently we only support ETP=TP "
                                              "or ETP=1\"); the plan has {}",
                                              p.tp, etp)});
  }
  if (p.moe_a2a_overlap && (!titan_overlap_applies(p) || p.recompute != Recompute::none)) {
    out.push_back({"--schedule",
                   "torchtitan v0.2.2 overlaps the expert-parallel all-to-all only under the "
                   "dualpipe-v schedule with pp > 1, ep > 1 and no activation checkpointing "
                   "(Parallelism.pipeline_parallel_expert_parallel_overlap)"});
  }
  if (in.training.moe_fp8_dispatch) {
    out.push_back({"--moe-fp8-dispatch",
                   "torchtitan v0.2.2 has no FP8 expert dispatch (its all-to-all and DeepEP "
                   "paths send bf16): dispatch in bf16"});
  }
}

}  // namespace shardplan::emit
