// Plan feasibility rules, shared by user-given plans (errors) and the search (rejections).
#include "shardplan/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "shardplan/schedule.hpp"

namespace shardplan {

namespace {

// Layers left for the chunks the first and last stage's counts do not fix, and those chunks.
struct Rest {
  int layers = 0;
  int chunks = 0;
  bool custom = false;
};
Rest rest_of(int layers, const ParallelPlan& p) {
  Rest r{layers, p.pp * p.interleave, false};
  if (p.first_stage_layers >= 0) {
    r.layers -= p.first_stage_layers;
    --r.chunks;
    r.custom = true;
  }
  if (p.last_stage_layers >= 0) {
    r.layers -= p.last_stage_layers;
    --r.chunks;
    r.custom = true;
  }
  return r;
}

// One chunk per device, no layout given: the extra layers go to the middle stages, then the
// last, then the first.
int default_stage_layers(int layers, const ParallelPlan& p, int stage) {
  const int base = layers / p.pp;
  const int extra = layers % p.pp;
  if (extra == 0) return base;
  const int order = stage == 0 ? p.pp - 1 : stage == p.pp - 1 ? p.pp - 2 : stage - 1;
  return base + (order < extra ? 1 : 0);
}

}  // namespace

int chunk_layers(int layers, const ParallelPlan& p, int chunk) {
  const int chunks = p.pp * p.interleave;
  if (chunk == 0 && p.first_stage_layers >= 0) return p.first_stage_layers;
  if (chunk == chunks - 1 && p.last_stage_layers >= 0) return p.last_stage_layers;
  const Rest r = rest_of(layers, p);
  if (!r.custom && p.interleave == 1) return default_stage_layers(layers, p, chunk);
  return r.chunks > 0 ? r.layers / r.chunks : 0;
}

int chunk_device(const ParallelPlan& p, int chunk) {
  if (is_v_shape(p.schedule) && p.interleave == 2)
    return chunk < p.pp ? chunk : 2 * p.pp - 1 - chunk;
  return chunk % p.pp;
}

int head_stage(const ParallelPlan& p) {
  return is_v_shape(p.schedule) && p.interleave == 2 ? 0 : p.pp - 1;
}

int stage_layers(int layers, const ParallelPlan& p, int stage) {
  if (p.interleave == 1) return chunk_layers(layers, p, stage);
  if (is_v_shape(p.schedule) && p.interleave == 2)
    return chunk_layers(layers, p, stage) + chunk_layers(layers, p, 2 * p.pp - 1 - stage);
  int sum = 0;
  for (int k = 0; k < p.interleave; ++k) sum += chunk_layers(layers, p, stage + k * p.pp);
  return sum;
}

bool layout_splits(int layers, const ParallelPlan& p) {
  const Rest r = rest_of(layers, p);
  if (!r.custom) return p.interleave == 1 ? p.pp <= layers : layers % (p.pp * p.interleave) == 0;
  if (r.layers < 0 || p.pp * p.interleave < 2) return false;
  if (r.chunks == 0) return r.layers == 0;
  return r.layers % r.chunks == 0 && r.layers / r.chunks > 0;
}

int micro_batches_per_step(const TrainingSpec& training, const ParallelPlan& plan) {
  const long long per_step = static_cast<long long>(plan.dp) * plan.micro_batch;
  return per_step > 0 ? static_cast<int>(training.global_batch / per_step) : 0;
}

namespace {

PlanProblem layout_problem(int layers, const ParallelPlan& p) {
  const int chunks = p.pp * p.interleave;
  const Rest r = rest_of(layers, p);
  if (!r.custom) {
    return {"--interleave",
            fmt::format("{} layers do not split into pp {} x interleave {} equal chunks; give "
                        "--first-stage-layers / --last-stage-layers so that the rest split "
                        "evenly (Llama 3 405B: 126 layers, pp 16, interleave 2, first and last 3)",
                        layers, p.pp, p.interleave)};
  }
  const char* field = p.first_stage_layers >= 0 ? "--first-stage-layers" : "--last-stage-layers";
  if (chunks < 2) return {field, "a first or last stage layout needs --pp > 1"};
  return {field, fmt::format("{} layers less the first stage's {} and the last stage's {} leave "
                             "{} for the other {} virtual stages; choose counts that leave a "
                             "positive multiple of {}",
                             layers, std::max(0, p.first_stage_layers),
                             std::max(0, p.last_stage_layers), r.layers, r.chunks, r.chunks)};
}

// Megatron-Core's MoE parallel folding: experts take etp x ep ranks out of tp x dp x cp, so ep may
// exceed dp x cp when etp < tp.
template <typename Fail>
void expert_tp_problems(const ModelSpec& m, const ParallelPlan& p, Fail& fail) {
  if (!m.is_moe()) {
    fail("--expert-tp", "expert tensor parallelism needs a mixture-of-experts model");
    return;
  }
  const long long ranks = static_cast<long long>(p.tp) * p.dp * p.cp;
  if (m.experts % p.ep != 0 || ranks % (static_cast<long long>(p.ep) * p.etp) != 0) {
    fail("--ep", fmt::format("expert parallel {} x expert tp {} must divide tp x dp x cp = {}, "
                             "and ep the {} experts",
                             p.ep, p.etp, ranks, m.experts));
  }
  if (m.ffn_hidden % p.etp != 0) {
    fail("--expert-tp",
         fmt::format("expert tp {} does not divide the expert width {}", p.etp, m.ffn_hidden));
  }
}

std::string offload_message(OffloadProblem why, const OffloadSupport& allowed) {
  switch (why) {
    case OffloadProblem::none:
      return "";
    case OffloadProblem::no_host_facts:
      return "the cluster profile gives no host memory or host link bandwidth; add a \"host\" "
             "section to it";
    case OffloadProblem::optimizer_not_supported:
      return "this framework cannot offload the optimizer";
    case OffloadProblem::params_not_supported:
      return "this framework cannot offload the parameters";
    case OffloadProblem::activations_not_supported:
      return "this framework cannot offload activations";
    case OffloadProblem::nvme_not_supported:
      return "this framework offloads to host memory only; use cpu";
    case OffloadProblem::activations_to_nvme:
      return "activation checkpoints are offloaded to host memory only; use cpu";
    case OffloadProblem::parts_together:
      return "this framework offloads parameters and optimizer together; offload both";
    case OffloadProblem::optimizer_needs_zero:
      return fmt::format("optimizer offload needs ZeRO stage {} or more (--zero {})",
                         allowed.optimizer_min_zero, allowed.optimizer_min_zero);
    case OffloadProblem::params_need_zero:
      return fmt::format("parameter offload needs sharded parameters: ZeRO stage {} (--zero {})",
                         allowed.params_min_zero, allowed.params_min_zero);
    case OffloadProblem::activations_need_recompute:
      return "activation offload moves the layer inputs that full recompute keeps; it needs "
             "full recompute";
  }
  return "";
}

}  // namespace

std::vector<PlanProblem> check_plan(const ModelSpec& m, const TrainingSpec& tr,
                                    const ParallelPlan& p, const ClusterSpec& c,
                                    const PlanRules& rules) {
  std::vector<PlanProblem> out;
  auto fail = [&out](std::string field, std::string message) {
    out.push_back({std::move(field), std::move(message)});
  };
  if (p.dp < 1 || p.tp < 1 || p.pp < 1 || p.cp < 1 || p.ep < 1 || p.micro_batch < 1 ||
      p.interleave < 1) {
    fail("--dp/--tp/--pp/--cp/--ep/--micro-batch/--interleave", "every degree must be at least 1");
    return out;
  }
  if (p.gpus() != c.gpus) {
    fail("--dp/--tp/--pp/--cp",
         fmt::format("dp {} x tp {} x pp {} x cp {} = {} GPUs, but the cluster has {}; the "
                     "product of the degrees must equal --gpus",
                     p.dp, p.tp, p.pp, p.cp, p.gpus(), c.gpus));
  }
  if (p.zero < 0 || p.zero > 3)
    fail("--zero", fmt::format("{} is not a ZeRO stage; use 0-3", p.zero));
  if (p.tp > c.gpus_per_node && !rules.allow_tp_across_nodes) {
    fail("--tp", fmt::format("tensor parallel {} spans more than the {} GPUs of a node; keep tp "
                             "<= {} or pass --allow-tp-across-nodes",
                             p.tp, c.gpus_per_node, c.gpus_per_node));
  }
  // A GPU without this dtype's tensor cores (fp8 on an A100); a cluster with no GPU profile at all
  // (the probe checking a model's shapes) has nothing to say about precision.
  const bool has_gpu = c.gpu.peak_flops[static_cast<int>(MathDtype::bf16)] > 0;
  if (has_gpu && c.gpu.peak_flops[static_cast<int>(math_dtype(tr.precision))] <= 0) {
    fail("--precision", fmt::format("{} has no {} tensor cores; use bf16 or fp16", c.gpu.name,
                                    to_string(tr.precision)));
  }
  if (p.sequence_parallel && p.tp == 1) {
    fail("--sequence-parallel",
         "sequence parallelism splits tensor-parallel regions; it needs --tp > 1");
  }
  if (tr.global_batch % (static_cast<long long>(p.dp) * p.micro_batch) != 0) {
    fail("--global-batch",
         fmt::format("{} sequences do not split into micro-batches of {} on {} data-parallel "
                     "ranks; use a multiple of {}",
                     tr.global_batch, p.micro_batch, p.dp, p.dp * p.micro_batch));
  }
  if (tr.seq_len % p.cp != 0) {
    fail("--cp", fmt::format("context parallel {} does not divide the sequence length {}", p.cp,
                             tr.seq_len));
  }
  if (!m.has_architecture()) {
    if (p.interleave > 1) fail("--interleave", "interleaving needs the model's layer count");
    if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0)
      fail("--first-stage-layers", "a stage layout needs the model's layer count");
    return out;
  }
  if (m.heads % p.tp != 0) {
    fail("--tp",
         fmt::format("tensor parallel {} does not divide the {} attention heads", p.tp, m.heads));
  } else if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    fail("--tp", fmt::format("tensor parallel {} neither divides nor is a multiple of the {} "
                             "key/value heads",
                             p.tp, m.kv_heads));
  }
  if (m.ffn_hidden % p.tp != 0) {
    fail("--tp",
         fmt::format("tensor parallel {} does not divide the MLP width {}", p.tp, m.ffn_hidden));
  }
  if (p.pp > m.layers) {
    fail("--pp",
         fmt::format("{} pipeline stages for {} layers; use at most {}", p.pp, m.layers, m.layers));
  } else if (!layout_splits(m.layers, p)) {
    out.push_back(layout_problem(m.layers, p));
  }
  if (auto s = schedule_problem(p, micro_batches_per_step(tr, p))) out.push_back(*s);
  if (p.ep > 1) {
    if (!m.is_moe()) {
      fail("--ep", "expert parallelism needs a mixture-of-experts model");
    } else if (p.etp == 0 && (m.experts % p.ep != 0 || (p.dp * p.cp) % p.ep != 0)) {
      fail("--ep", fmt::format("expert parallel {} must divide the {} experts and dp x cp = {}",
                               p.ep, m.experts, p.dp * p.cp));
    }
  }
  if (p.etp > 0) expert_tp_problems(m, p, fail);
  if (const OffloadProblem why = offload_problem(p, c, rules.offload); why != OffloadProblem::none)
    fail("--offload", offload_message(why, rules.offload));
  return out;
}

std::string describe(const ParallelPlan& p) {
  std::string s = fmt::format("dp {} x tp {} x pp {}", p.dp, p.tp, p.pp);
  if (p.cp > 1) s += fmt::format(" x cp {}", p.cp);
  if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
  if (p.etp > 0) s += fmt::format(", expert tp {}", p.etp);
  s += fmt::format(", ZeRO-{}, micro-batch {}, recompute {}", p.zero, p.micro_batch,
                   to_string(p.recompute));
  if (p.sequence_parallel) s += ", sequence parallel";
  if (p.interleave > 1) s += fmt::format(", interleave {}", p.interleave);
  if (p.pp > 1) s += fmt::format(", schedule {}", schedule_name(p));
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    s += fmt::format(", first/last stage {}/{} layers",
                     p.first_stage_layers >= 0 ? std::to_string(p.first_stage_layers) : "even",
                     p.last_stage_layers >= 0 ? std::to_string(p.last_stage_layers) : "even");
  }
  if (p.offload.any()) {
    const Offload& o = p.offload;
    std::vector<const char*> parts;
    if (o.optimizer) parts.push_back("optimizer");
    if (o.params) parts.push_back("params");
    if (o.activations) parts.push_back("activations");
    s += fmt::format(", offload {} to {}", fmt::join(parts, "+"), to_string(o.to));
  }
  return s;
}

}  // namespace shardplan
