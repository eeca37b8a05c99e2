// One row per field of the plan, training, link and host objects of `--json` output and plan
// files: what is written, how it is read back and checked, what an absent key means.
#include "spec_fields.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

using json = nlohmann::json;

// The schedule by its name; plans written before schedules were planned carry none.
JsonField<ParallelPlan> schedule_field() {
  return {"schedule", [](const ParallelPlan& p) { return json(schedule_name(p)); },
          [](StrictObject& o, const std::string& k, ParallelPlan& p) {
            p.schedule = parse_schedule(o.string(k), o.field(k));
          },
          [](ParallelPlan& p) { p.schedule = schedule_of(p); }};
}

// Written for the reader's eye and checked on reading: dp x tp x pp x cp, and the summary.
JsonField<ParallelPlan> gpus_field() {
  return {"gpus", [](const ParallelPlan& p) { return json(p.gpus()); },
          [](StrictObject& o, const std::string& k, ParallelPlan& p) {
            if (o.integer(k) != p.gpus()) {
              throw InputError(o.field(k),
                               fmt::format("should be dp x tp x pp x cp = {}", p.gpus()));
            }
          },
          {}};
}

// Written beside dp_shard for the reader's eye; it follows from dp and dp_shard, checked on reading.
JsonField<ParallelPlan> dp_replicate_field() {
  return may_be_absent<ParallelPlan>(
      {"dp_replicate",
       [](const ParallelPlan& p) { return p.dp_shard > 0 ? json(p.dp_replicate()) : left_out(); },
       [](StrictObject& o, const std::string& k, ParallelPlan& p) {
         if (p.dp_shard > 0 && o.integer(k) != p.dp_replicate()) {
           throw InputError(o.field(k), fmt::format("should be dp / dp_shard = {}", p.dp_replicate()));
         }
       },
       {}});
}

// Megatron-Core's recompute modules by name, only in a plan that names them.
JsonField<ParallelPlan> recompute_modules_field() {
  return may_be_absent<ParallelPlan>(
      {"recompute_modules",
       [](const ParallelPlan& p) {
         return p.recompute_modules == 0 ? left_out()
                                         : json(recompute_module_list(p.recompute_modules));
       },
       [](StrictObject& o, const std::string& k, ParallelPlan& p) {
         p.recompute_modules = parse_recompute_modules(o.strings_or_empty(k), o.field(k));
       },
       {}});
}

JsonField<ParallelPlan> summary_field() {
  return {"summary", [](const ParallelPlan& p) { return json(describe(p)); },
          [](StrictObject& o, const std::string& k, ParallelPlan&) { o.string(k); }, {}};
}

// Files written before --framework existed carry none: the ideal stack priced them.
JsonField<TrainingSpec> framework_field() {
  return may_be_absent<TrainingSpec>({"framework",
          [](const TrainingSpec& t) { return json(t.framework.name.empty() ? "none" : t.framework.name); },
          [](StrictObject& o, const std::string& k, TrainingSpec& t) {
            const std::string name = o.string(k);
            if (name != "none") t.framework = load_framework(parse_framework(name, o.field(k)));
          },
          {}});
}

// The precision as named, resolved under the framework read before it.
JsonField<TrainingSpec> precision_field() {
  return {"precision", [](const TrainingSpec& t) { return json(to_string(t.precision)); },
          [](StrictObject& o, const std::string& k, TrainingSpec& t) {
            set_precision(t, parse_precision(o.string(k), o.field(k)));
          },
          {}};
}

// The recipe the file was priced with (what fp8 resolved to): the same one, unless the
// framework's default moved since.
JsonField<TrainingSpec> recipe_field() {
  return may_be_absent<TrainingSpec>({"precision_recipe", [](const TrainingSpec& t) { return json(t.recipe.name); },
          [](StrictObject& o, const std::string& k, TrainingSpec& t) {
            const std::string recipe = o.string(k);
            if (recipe == t.recipe.name) return;
            throw InputError(o.field(k),
                             fmt::format("'{}' was priced, but {} resolves to {} now; give "
                                         "--precision {}",
                                         recipe, to_string(t.precision), t.recipe.name, recipe));
          },
          {}});
}

template <class T>
JsonField<T> positive_when_given(const char* key, double T::*m) {
  return only_when(positive(key, m), [m](const T& v) { return v.*m > 0; });
}

}  // namespace

const JsonFields<Offload>& offload_fields() {
  static const JsonFields<Offload> rows = {
      member("optimizer", &Offload::optimizer),
      member("params", &Offload::params),
      member("activations", &Offload::activations),
      named("to", &Offload::to, to_string, parse_offload_target),
      // Only a plan that offloads layers' activations (Megatron-Core --cpu-offloading-num-layers).
      only_when(member("activation_layers", &Offload::activation_layers),
                [](const Offload& o) { return o.activation_layers > 0; }),
  };
  return rows;
}

const JsonFields<ParallelPlan>& plan_fields() {
  using P = ParallelPlan;
  static const JsonFields<P> rows = {
      member("dp", &P::dp),
      member("tp", &P::tp),
      member("pp", &P::pp),
      member("cp", &P::cp),
      member("ep", &P::ep),
      // Only a plan that sets expert tensor parallelism apart from tp (Megatron-Core's default).
      only_when(member("expert_tp", &P::etp), [](const P& p) { return p.etp > 0; }),
      // Only a plan that hides its expert all-to-alls behind paired passes.
      only_when(member("moe_a2a_overlap", &P::moe_a2a_overlap),
                [](const P& p) { return p.moe_a2a_overlap; }),
      // Only a hybrid-sharded plan (HSDP): ZeRO's shard group, and the replicas of each shard.
      only_when(member("dp_shard", &P::dp_shard), [](const P& p) { return p.dp_shard > 0; }),
      dp_replicate_field(),
      member("zero", &P::zero),
      member("micro_batch", &P::micro_batch),
      named("recompute", &P::recompute, to_string, parse_recompute),
      recompute_modules_field(),
      member("sequence_parallel", &P::sequence_parallel),
      member("interleave", &P::interleave),
      schedule_field(),  // after interleave: a file without one takes the interleave's
      or_null("first_stage_layers", &P::first_stage_layers),  // null: an even split
      or_null("last_stage_layers", &P::last_stage_layers),
      only_when(nested("offload", &P::offload, offload_fields),
                [](const P& p) { return p.offload.any(); }),
      gpus_field(),
      summary_field(),
  };
  return rows;
}

const JsonFields<TrainingSpec>& training_fields() {
  using T = TrainingSpec;
  static const JsonFields<T> rows = {
      framework_field(),  // first: the precision resolves under it
      precision_field(),
      recipe_field(),
      named("optimizer", &T::optimizer, to_string, parse_optimizer),
      named("attention", &T::attention, to_string, parse_attention),
      checked(
          member("seq_len", &T::seq_len), [](const T& t) { return t.seq_len >= 1; },
          "must be >= 1"),
      checked(
          member("global_batch", &T::global_batch), [](const T& t) { return t.global_batch >= 1; },
          "must be >= 1"),
      member("fp32_grads", &T::fp32_grads),
      member("overlap_grad_reduce", &T::overlap_grad_reduce),
      member("overlap_param_gather", &T::overlap_param_gather),
      member("tp_comm_overlap", &T::tp_comm_overlap),
      only_when(member("compiled_loss", &T::compiled_loss),
                [](const T& t) { return t.compiled_loss; }),
      only_when(member("full_vocab_loss", &T::full_vocab_loss),
                [](const T& t) { return t.full_vocab_loss; }),
      checked(
          member("fragmentation", &T::fragmentation),
          [](const T& t) { return t.fragmentation >= 0 && t.fragmentation <= 1; },
          "must be between 0 and 1"),
      positive_when_given("tokens", &T::tokens),
      positive_when_given("gpu_hour_cost", &T::gpu_hour_cost),
      positive_when_given("moe_capacity_factor", &T::moe_capacity_factor),
      positive_when_given("moe_max_load", &T::moe_max_load),
      only_when(member("moe_fp8_dispatch", &T::moe_fp8_dispatch),
                [](const T& t) { return t.moe_fp8_dispatch; }),
      only_when(named("cuda_graphs", &T::cuda_graphs, to_string, parse_cuda_graphs),
                [](const T& t) { return t.cuda_graphs != CudaGraphs::none; }),
      only_when(named("moe_dispatcher", &T::moe_dispatcher, to_string, parse_moe_dispatcher),
                [](const T& t) { return t.moe_dispatcher != MoeDispatcher::alltoall; }),
      only_when(named("context_parallel", &T::context_parallel, to_string, parse_context_parallel),
                [](const T& t) { return t.context_parallel != ContextParallel::ring; }),
      only_when(named("grad_sync", &T::grad_sync, to_string, parse_grad_sync),
                [](const T& t) { return t.grad_sync != GradSync::framework; }),
  };
  return rows;
}

const JsonFields<LinkSpec>& link_fields() {
  using L = LinkSpec;
  static const JsonFields<L> rows = {
      member("name", &L::name),
      positive("bytes_per_s", &L::bytes_per_s),
      positive("busbw_bytes_per_s", &L::busbw_bytes_per_s),
      member("latency_s", &L::latency_s),
      member("measured", &L::measured),
      member("user_given", &L::user_given),
      member("source", &L::source),
  };
  return rows;
}

// Written only when the cluster's profile gives its host side (offload).
const JsonFields<HostSpec>& host_fields() {
  using H = HostSpec;
  static const JsonFields<H> rows = {
      positive("memory_bytes", &H::memory_bytes),
      may_be_absent(member("link", &H::link_name)),
      positive("link_bytes_per_s", &H::link_bytes_per_s),
      positive("dram_bytes_per_s", &H::dram_bytes_per_s),
      positive("dram_efficiency", &H::dram_efficiency),
      member("nvme_bytes_per_s", &H::nvme_bytes_per_s),
      member("source", &H::source),
      // A probe's figures, which offload pricing uses in place of the datasheet's.
      only_when(member("measured_h2d_bytes_per_s", &H::measured_h2d_bytes_per_s),
                [](const H& h) { return h.measured_h2d_bytes_per_s > 0; }),
      only_when(member("measured_d2h_bytes_per_s", &H::measured_d2h_bytes_per_s),
                [](const H& h) { return h.measured_d2h_bytes_per_s > 0; }),
      only_when(member("measured_dram_bytes_per_s", &H::measured_dram_bytes_per_s),
                [](const H& h) { return h.measured_dram_bytes_per_s > 0; }),
  };
  return rows;
}

}  // namespace shardplan
