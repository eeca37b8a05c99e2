// What every launcher format shares: the long-run settings from the runbook, the batch identity,
// the provenance of the plan's numbers and the comment header (dispatch by format: launchers.cpp).
#include "common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/describe.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/table.hpp"
#include "shardplan/version.hpp"

namespace shardplan {

LongRunSettings long_run_settings(const Runbook& r, IntervalChoice choice, long long seed,
                                  bool seed_given) {
  LongRunSettings s;
  const CheckpointPlan& k = r.checkpoint;
  s.checkpoint_interval_steps = k.interval_steps;
  s.checkpoint_interval_s = k.interval_s;
  switch (choice) {
    case IntervalChoice::default_interval:
      s.interval_source =
          "default 30 min (checkpoint on wall-clock time, not epochs; --checkpoint-interval auto "
          "for the runbook's Young interval, " +
          format_seconds(k.young_interval_s) + ")";
      break;
    case IntervalChoice::young:
      s.interval_source = fmt::format("the runbook's Young interval sqrt(2 x write {} x MTBF {})",
                                      format_seconds(k.write_s), format_seconds(r.failures.mtbf_s));
      break;
    case IntervalChoice::given:
      s.interval_source = "--checkpoint-interval";
      break;
  }
  s.keep_last = k.keep_last;
  s.timeout_minutes = static_cast<int>(std::lround(r.collective_timeout_s / 60));
  s.seed = seed;
  s.seed_source = seed_given ? "--seed" : "default 1234 (Megatron-LM's --seed default)";
  return s;
}

int accumulation_steps(const EmitInputs& in) {
  return micro_batches_per_step(in.training, in.plan);
}

namespace emit {

std::string plan_origin(const EmitInputs& in) {
  return "plan from " + in.plan_source;
}

std::vector<Provenance> common_provenance(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const LongRunSettings& s = in.settings;
  const std::string from = plan_origin(in);
  std::vector<Provenance> v = {
      {"data-parallel degree", std::to_string(p.dp), from},
      {"tensor-parallel degree", std::to_string(p.tp), from},
      {"pipeline-parallel degree", std::to_string(p.pp), from},
  };
  if (p.cp > 1) v.push_back({"context-parallel degree", std::to_string(p.cp), from});
  if (p.ep > 1)
    v.push_back(
        {"expert-parallel degree", std::to_string(p.ep), from + " (carved out of data parallel)"});
  v.push_back({"GPUs",
               fmt::format("{} = {} nodes x {}", in.cluster.gpus, in.cluster.nodes(),
                           in.cluster.gpus_per_node),
               fmt::format("dp x tp x pp x cp = {} x {} x {} x {}", p.dp, p.tp, p.pp, p.cp)});
  v.push_back({"micro-batch", std::to_string(p.micro_batch), from});
  v.push_back({"global batch", std::to_string(in.training.global_batch),
               in.plan_source == "flags" ? "training (--global-batch)"
                                         : "training from " + in.plan_source});
  v.push_back({"gradient accumulation", std::to_string(accumulation_steps(in)),
               fmt::format("global {} / (micro-batch {} x data parallel {})",
                           in.training.global_batch, p.micro_batch, p.dp)});
  v.push_back({"checkpoint interval", fmt::format("{} steps", s.checkpoint_interval_steps),
               fmt::format("round({} / predicted step {} (estimate)); interval: {}",
                           format_seconds(s.checkpoint_interval_s),
                           format_seconds(in.estimate.step_s), s.interval_source)});
  v.push_back({"keep last", std::to_string(s.keep_last),
               "runbook (--keep-last; keep the last few checkpoints)"});
  v.push_back({"collective timeout", fmt::format("{} min", s.timeout_minutes),
               fmt::format("runbook: max(10 min, 3 x longest wait {})",
                           format_seconds(in.runbook.longest_wait_s))});
  v.push_back({"seed", std::to_string(s.seed), s.seed_source});
  return v;
}

std::optional<long long> train_steps(const EmitInputs& in) {
  if (in.training.tokens <= 0) return std::nullopt;
  return static_cast<long long>(std::ceil(
      in.training.tokens / (static_cast<double>(in.training.global_batch) * in.training.seq_len)));
}

std::vector<PlanProblem> common_problems(const EmitInputs& in) {
  std::vector<PlanProblem> out;
  if (in.cluster.gpus % in.cluster.gpus_per_node != 0) {
    out.push_back(
        {"--gpus",
         fmt::format("{} GPUs do not fill whole nodes of {}: launchers start the same number "
                     "of processes on every node",
                     in.cluster.gpus, in.cluster.gpus_per_node)});
  }
  // A warm-up the user asked for that the run cannot hold: refused, not shortened in silence
  // (a recipe's own warm-up is shortened with a note, as Megatron needs warm-up < decay).
  const OptimizerSettings o = optimizer_of(in);
  const bool asked = std::any_of(o.given.begin(), o.given.end(),
                                 [](const std::string& g) { return g.rfind("--warmup-", 0) == 0; });
  const auto steps = train_steps(in);
  if (asked && steps) {
    const long long decay = decay_steps(o, *steps);
    const int warmup = warmup_steps_at(o, in.training);
    if (warmup >= decay) {
      out.push_back(
          {"--warmup-steps",
           fmt::format("{} warm-up steps do not fit a run of {} steps ({} decay steps: --tokens "
                       "{:.3g} at {} sequences of {} tokens a step); give fewer warm-up steps or "
                       "more --tokens",
                       warmup, *steps, decay, in.training.tokens, in.training.global_batch,
                       in.training.seq_len)});
    }
  }
  return out;
}

std::string resume_loop(const std::string& launch, const std::string& restarts) {
  return fmt::format(
      "for attempt in $(seq 0 \"{0}\"); do\n"
      "  echo \"launch $attempt of {0}: $(date)\"\n"
      "  if {1}; then\n"
      "    exit 0\n"
      "  fi\n"
      "  sleep 60   # let the failed node drain before the next launch resumes\n"
      "done\n"
      "exit 1\n",
      restarts, launch);
}

std::vector<LaunchEnv> launch_env(LauncherFormat format, const EmitInputs& in) {
  std::vector<LaunchEnv> env = {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", ""},
                                {"NCCL_DEBUG", "WARN", ""}};
  if (const auto own = launcher_row(format).env) {
    for (LaunchEnv& e : own(in)) env.push_back(std::move(e));
  }
  return env;
}

std::vector<PlanProblem> framework_problems(const EmitInputs& in, Framework framework) {
  std::vector<PlanProblem> out = common_problems(in);
  TrainingSpec training = in.training;
  training.framework = load_framework(framework);
  set_precision(training, training.precision);  // fp8: this framework's default recipe
  PlanRules rules;
  rules.allow_tp_across_nodes = true;  // the plan was made with whatever the user allowed
  for (PlanProblem& p : plan_problems(in.plan, {in.model, training, in.cluster, rules}))
    out.push_back(std::move(p));
  return out;
}

std::string summary_line(const EmitInputs& in) {
  const Estimate& e = in.estimate;
  const CheckpointPlan& k = in.runbook.checkpoint;
  return fmt::format(
      "predicted step {}, {:.0f} tokens/s, MFU {} (estimate); checkpoint {}, blocking write {}; "
      "goodput {} (runbook)",
      format_seconds(e.step_s), e.throughput.tokens_per_s, format_percent(e.throughput.mfu),
      format_bytes(k.total_bytes), format_seconds(k.write_s), format_percent(in.runbook.goodput));
}

void finish_meta(EmitMeta& meta, const EmitInputs& in, const std::string& what) {
  const ParallelPlan& p = in.plan;
  std::vector<std::string> h = {
      fmt::format("{} for {} on {}, written by shardplan {}", what, in.model.name,
                  describe_cluster(in.cluster), shardplan_version()),
      fmt::format("plan: {} ({})", describe(p), plan_origin(in)),
      fmt::format("batch: global {} = micro-batch {} x accumulation {} x data parallel {}; GPUs {} "
                  "= dp {} x tp {} x "
                  "pp {} x cp {}",
                  in.training.global_batch, p.micro_batch, accumulation_steps(in), p.dp,
                  in.cluster.gpus, p.dp, p.tp, p.pp, p.cp),
      summary_line(in),
      "",
      "where each number comes from:",
  };
  for (const Provenance& x : meta.provenance)
    h.push_back(fmt::format("  {} = {}: {}", x.setting, x.value, x.source));
  if (!meta.notes.empty()) {
    h.push_back("outside the config:");
    for (const auto& n : meta.notes) h.push_back("  - " + n);
  }
  h.push_back("launch:");
  for (const auto& l : meta.launch) h.push_back("  " + l);
  meta.header = std::move(h);
}

std::string straggler_note(const EmitInputs& in) {
  return fmt::format(
      "log tokens/s every step (predicted {:.0f}); flag a straggler when the median over {} steps "
      "drops "
      "{:.0f}% below the run's",
      in.estimate.throughput.tokens_per_s, in.runbook.straggler_window_steps,
      in.runbook.straggler_drop * 100);
}

std::string optimizer_source(const OptimizerSettings& o) {
  // The flags given, last first, then the recipe.
  std::string from = o.recipe;
  for (const std::string& g : o.given) from.insert(0, ", ").insert(0, g);
  return from;
}

std::string optimizer_duty(const EmitInputs& in) {
  const OptimizerSettings o = optimizer_of(in);
  const std::string from = optimizer_source(o);
  return fmt::format(
      "optimizer and schedule: AdamW(lr={:g}, betas=({:g}, {:g}), eps={:g}, weight_decay={:g}); "
      "{} warm-up steps, then {} decay to {:g}{}; clip the gradient norm at {:g} ({})",
      o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, warmup_steps_at(o, in.training),
      to_string(o.decay), o.min_lr,
      o.decay_end_fraction < 1 ? fmt::format(" at {:.0f}% of the run", o.decay_end_fraction * 100)
                               : "",
      o.clip_grad, from);
}

std::string comment_block(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.empty() ? "#\n" : "# " + l + "\n";
  return out;
}

std::string torchrun_rendezvous(const EmitInputs& in) {
  return fmt::format("--nnodes {} --nproc_per_node {}", in.cluster.nodes(),
                     in.cluster.gpus_per_node);
}

std::string config_path(const EmitInputs& in, LauncherFormat format) {
  return in.output_path.empty() ? launcher_row(format).usual_file : in.output_path;
}

}  // namespace emit

}  // namespace shardplan
