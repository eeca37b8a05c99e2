// Framework profiles (profiles/frameworks/*.json), read strictly: every key is read or named as
// unknown, and every section carries its source.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "json_reader.hpp"
#include "reach_fields.hpp"
#include "shardplan/error.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/names.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {
namespace {

std::vector<OffloadTarget> targets(StrictObject& o, const std::string& key) {
  std::vector<OffloadTarget> out;
  for (const std::string& t : o.strings_or_empty(key)) {
    if (t == "cpu") {
      out.push_back(OffloadTarget::cpu);
    } else if (t == "nvme") {
      out.push_back(OffloadTarget::nvme);
    } else {
      throw InputError(o.field(key), "'" + t + "' is not an offload target; use cpu or nvme");
    }
  }
  return out;
}

// A list of ZeRO stages 0-3 under `key`; `optional`: absent or empty is none.
std::vector<int> zero_stages(StrictObject& o, const char* key = "zero_stages",
                             bool optional = false) {
  std::vector<int> out;
  if (optional && !o.has(key)) return out;
  const auto& raw = o.raw(key);
  if (!raw.is_array() || (raw.empty() && !optional))
    throw InputError(o.field(key), "expected a list of ZeRO stages 0-3");
  for (const auto& z : raw) {
    if (!z.is_number_integer() || z.get<int>() < 0 || z.get<int>() > 3)
      throw InputError(o.field(key), "expected a list of ZeRO stages 0-3");
    out.push_back(z.get<int>());
  }
  return out;
}

FrameworkCaps read_caps(StrictObject o) {
  FrameworkCaps c;
  c.zero_stages = zero_stages(o);
  c.max_zero_with_pp = o.integer("max_zero_with_pp");
  c.tensor_parallel = o.boolean("tensor_parallel");
  c.sequence_parallel = o.boolean("sequence_parallel");
  c.sequence_parallel_always = o.boolean_or("sequence_parallel_always", false);
  c.pipeline_schedules.clear();
  for (const std::string& s : o.strings_or_empty("pipeline_schedules"))
    c.pipeline_schedules.push_back(parse_schedule(s, o.field("pipeline_schedules")));
  const std::string layout = o.string("stage_layout");
  if (layout == "any") {
    c.stage_layout = FrameworkCaps::StageLayout::any;
  } else if (layout == "lighter") {
    c.stage_layout = FrameworkCaps::StageLayout::lighter;
  } else if (layout == "none") {
    c.stage_layout = FrameworkCaps::StageLayout::none;
  } else {
    throw InputError(o.field("stage_layout"), "'" + layout + "' is not any, lighter or none");
  }
  for (const std::string& s : o.strings_or_empty("interleaved_only_schedules")) {
    c.interleaved_only_schedules.push_back(
        parse_schedule(s, o.field("interleaved_only_schedules")));
  }
  c.context_parallel = o.boolean("context_parallel");
  c.ulysses = o.boolean_or("ulysses", false);
  c.expert_parallel = o.boolean("expert_parallel");
  if (o.has("expert_parallel_models")) {
    StrictObject models = o.object("expert_parallel_models");
    for (const std::string& type : models.keys())
      c.expert_parallel_models.emplace_back(type, models.string(type));
    models.finish();
  }
  c.expert_parallel_max_zero = o.integer_or("expert_parallel_max_zero", 3);
  if (c.expert_parallel_max_zero < 0 || c.expert_parallel_max_zero > 3)
    throw InputError(o.field("expert_parallel_max_zero"), "must be a ZeRO stage, 0 to 3");
  c.expert_parallel_with_tp = o.boolean_or("expert_parallel_with_tp", true);
  c.fp8 = o.boolean("fp8");
  c.fp16 = o.boolean("fp16");
  c.bf16_pure = o.boolean("bf16_pure");
  c.tp_across_nodes = o.boolean("tp_across_nodes");
  c.moe_a2a_overlap = o.boolean_or("moe_a2a_overlap", false);
  for (const std::string& s : o.strings_or_empty("moe_a2a_overlap_schedules")) {
    c.moe_a2a_overlap_schedules.push_back(parse_schedule(s, o.field("moe_a2a_overlap_schedules")));
  }
  c.moe_dispatchers = {MoeDispatcher::alltoall};
  for (const std::string& s : o.strings_or_empty("moe_dispatchers")) {
    const MoeDispatcher d = parse_moe_dispatcher(s, o.field("moe_dispatchers"));
    if (!c.has_dispatcher(d)) c.moe_dispatchers.push_back(d);
  }
  c.replicate_only_1d = o.boolean("replicate_only_1d");
  c.recompute_modules = o.boolean_or("recompute_modules", false);
  // HSDP: the ZeRO stages it shards inside a group and replicates across (sources.hsdp).
  c.hsdp_zero_stages = zero_stages(o, "hsdp_zero_stages", true);
  StrictObject off = o.object("offload");
  c.offload.optimizer = targets(off, "optimizer");
  c.offload.params = targets(off, "params");
  c.offload.activations = targets(off, "activations");
  c.offload.params_with_optimizer = off.boolean_or("params_with_optimizer", false);
  c.offload.optimizer_min_zero = off.integer_or("optimizer_min_zero", 1);
  c.offload.params_min_zero = off.integer_or("params_min_zero", 3);
  c.offload.gradients_with_optimizer = off.boolean_or("gradients_with_optimizer", false);
  c.offload.min_shard_ranks = off.integer_or("min_shard_ranks", 1);
  if (c.offload.min_shard_ranks < 1) {
    throw InputError(off.field("min_shard_ranks"), "must be 1 or more ranks");
  }
  c.offload.gradient_bucket_elements = off.number_or("gradient_bucket_elements", 0);
  if (c.offload.gradient_bucket_elements < 0) {
    throw InputError(off.field("gradient_bucket_elements"), "must be 0 or more elements");
  }
  // Offload of N layers' activations without recompute (sources.offload_layers).
  c.offload.activation_layers = off.boolean_or("activation_layers", false);
  c.offload.activation_layers_with_pp = off.boolean_or("activation_layers_with_pp", false);
  c.offload.activation_layers_with_recompute =
      off.boolean_or("activation_layers_with_recompute", false);
  off.finish();
  o.finish();
  return c;
}

BusbwShare read_share(StrictObject& o, const std::string& key) {
  BusbwShare s;
  if (!o.has(key)) return s;
  for (const auto& point : o.raw(key)) {
    if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number())
      throw InputError(o.field(key), "each point is [group size in GPUs, share of busbw]");
    const double ranks = point[0].get<double>(), share = point[1].get<double>();
    if (!(ranks >= 2) || !(share > 0 && share <= 1) ||
        (!s.points.empty() && ranks <= s.points.back().first))
      throw InputError(o.field(key), "points need ascending group sizes >= 2 and 0 < share <= 1");
    s.points.emplace_back(ranks, share);
  }
  return s;
}

// One collective section: what it issues (words for the reader) and the achieved busbw share.
BusbwShare read_collective(StrictObject o) {
  o.string("collective");
  o.string_or("buckets", "");
  o.string_or("gathers_per_micro_batch", "");
  BusbwShare s = read_share(o, "busbw_share");
  s.within_node = o.number_or("busbw_share_within_node", 0);
  if (!(s.within_node >= 0 && s.within_node <= 1))
    throw InputError(o.field("busbw_share_within_node"), "must be a share between 0 and 1");
  o.finish();
  return s;
}

void read_collectives(StrictObject o, FrameworkPricing& p) {
  p.dp_busbw = read_collective(o.object("data_parallel"));
  p.zero3_busbw = read_collective(o.object("sharded_data_parallel"));
  p.tp_busbw = read_collective(o.object("tensor_parallel"));
  o.finish();
}

// A key naming one of two words: whether it names the second; anything else is refused.
bool names_second(StrictObject& o, const std::string& key, const char* first, const char* second) {
  const std::string words = o.string(key);
  if (words != first && words != second) {
    throw InputError(o.field(key),
                     "'" + words + "' is not " + std::string(first) + " or " + second);
  }
  return words == second;
}

// memory: sentences with their own figures, and the ZeRO-3 / FSDP conventions under gradient accumulation.
void read_memory(StrictObject o, FrameworkPricing& p) {
  for (const std::string& key : o.keys()) {
    if (key == "fsdp_reshard_after_forward") {
      if (names_second(o, key, "always", "not-with-pp"))
        p.fsdp_reshard = FrameworkPricing::Reshard::not_with_pp;
    } else if (key == "fsdp_grad_sync_with_pp") {
      p.fsdp_defer_grad_sync_with_pp = names_second(o, key, "every-micro-batch", "deferred");
    } else if (key == "fsdp_accumulated_grad_bytes") {
      p.fsdp_accumulated_grad_bytes = o.positive(key);
    } else if (key == "moe_router_probs") {
      p.moe_probs_in_activation = names_second(o, key, "in-combine", "in-activation");
    } else if (key == "low_precision_saved_inputs") {
      p.saves_quantized_inputs = !names_second(o, key, "quantized", "high-precision");
    } else {
      o.string(key);
    }
  }
  o.finish();
}

// A class some GPU profile declares (accuracy_class), or an error that lists them.
void require_gpu_class(const std::string& cls, const std::string& field) {
  const std::vector<std::string> classes = gpu_accuracy_classes();
  if (std::find(classes.begin(), classes.end(), cls) != classes.end()) return;
  std::string all;
  for (const auto& c : classes) all += (all.empty() ? "" : ", ") + c;
  throw InputError(field, fmt::format("'{}' is not a GPU accuracy class; the GPU profiles "
                                      "declare {} (a GPU profile's accuracy_class)",
                                      cls, or_last(all)));
}

// kernels: the class in words, the speed, and optionally the speed per GPU generation and of
// the pipeline engine, each with the validation cases it was fitted on.
void read_kernels(StrictObject o, FrameworkPricing& p) {
  o.string("class");
  p.kernel_speed = o.positive("speed");
  if (o.has("speed_by_gpu")) {
    const auto& raw = o.raw("speed_by_gpu");
    if (!raw.is_array()) throw InputError(o.field("speed_by_gpu"), "expected a list");
    for (size_t i = 0; i < raw.size(); ++i) {
      StrictObject g(raw[i], o.field("speed_by_gpu") + fmt::format("[{}]", i));
      const std::string cls = g.string("gpu_class");
      require_gpu_class(cls, g.field("gpu_class"));
      p.kernel_speed_by_gpu.emplace_back(cls, g.positive("speed"));
      g.string("fitted_on");
      g.finish();
    }
  }
  // Fixed costs per layer and micro-batch: microseconds in the profile.
  if (o.has("layer_fixed_us")) p.layer_fixed_s = o.positive("layer_fixed_us") * 1e-6;
  if (o.has("moe_layer_fixed_us"))
    p.moe_layer_fixed_s = o.positive("moe_layer_fixed_us") * 1e-6;
  if (o.has("grouped_gemm_16bit_share"))
    p.grouped_gemm_16bit_share = o.positive("grouped_gemm_16bit_share");
  // The share of the fixed costs left under CUDA graphs; absent: the stack runs none.
  if (o.has("cuda_graph_fixed_share")) {
    StrictObject g = o.object("cuda_graph_fixed_share");
    p.cuda_graph_scoped_fixed_share = g.positive("scoped");
    p.cuda_graph_full_fixed_share = g.positive("full");
    g.finish();
  }
  if (o.has("pipeline_engine")) {
    StrictObject e = o.object("pipeline_engine");
    p.pipeline_engine_speed = e.positive("speed");
    e.string("fitted_on");
    e.finish();
  }
  o.finish();
}

// One interval row: a GPU class's, or (no gpu_class) the one beyond the corpus.
AccuracyClass read_accuracy_class(StrictObject& a, bool with_class) {
  AccuracyClass c;
  c.gpu_class = with_class ? a.string("gpu_class") : "beyond the validation corpus";
  if (with_class) {
    require_gpu_class(c.gpu_class, a.field("gpu_class"));
    const std::string models = a.string("models");
    if (models != "dense" && models != "moe")
      throw InputError(a.field("models"), "'" + models + "' is not dense or moe");
    c.moe = models == "moe";
  }
  c.cases = a.integer("cases");
  if (a.has("groups")) c.groups = a.integer("groups");
  const std::string split = a.string("split");
  if (split != "held-out" && split != "fitted" && split != "cross-validated")
    throw InputError(a.field("split"), "'" + split + "' is not cross-validated, held-out or fitted");
  c.held_out = split != "fitted";
  c.step_error_low = a.number("step_error_low");
  c.step_error_high = a.number("step_error_high");
  if (c.cases < 1 || c.step_error_low > 0 || c.step_error_high < 0 || c.step_error_low <= -1)
    throw InputError(a.field("cases"), "needs cases >= 1 and -1 < low <= 0 <= high");
  c.source = a.string("source");
  // What the class's cases span; a plan beyond it takes the beyond-corpus interval.
  if (with_class) {
    StrictObject reach = a.object("reach");
    read_fields(reach_fields(), reach, c.reach);
    reach.finish();
  }
  a.finish();
  return c;
}

std::vector<AccuracyClass> read_accuracy(StrictObject& o) {
  std::vector<AccuracyClass> out;
  const auto& raw = o.raw("accuracy");
  if (!raw.is_array()) throw InputError(o.field("accuracy"), "expected a list of GPU classes");
  for (size_t i = 0; i < raw.size(); ++i) {
    StrictObject a(raw[i], o.field("accuracy") + fmt::format("[{}]", i));
    out.push_back(read_accuracy_class(a, true));
  }
  return out;
}

// overlap.pp_send: whether a pipeline send holds its sender (FrameworkPricing::PipelineSend).
FrameworkPricing::PipelineSend read_pp_send(StrictObject& overlap) {
  using P = FrameworkPricing::PipelineSend;
  const std::string words = overlap.string("pp_send");
  if (words == "async") return P::async;
  if (words == "blocking") return P::blocking;
  if (words == "steady-state-gradients-async") return P::steady_gradients_async;
  throw InputError(overlap.field("pp_send"),
                   "'" + words +
                       "' is not one of: async, blocking, steady-state-gradients-async");
}

// `--precision fp8` is the framework's default FP8 recipe on every GPU with FP8 tensor cores,
// so that recipe must be an FP8 one this framework runs, and run on Hopper, the first of them:
// caught here, when the profile loads, not when a plan is priced. A framework without FP8 of its
// own (capabilities.fp8 false: DeepSpeed) names what the model code's Transformer Engine does,
// and its FP8 plans are refused by the rules anyway.
void check_fp8_default(const FrameworkProfile& f, const std::string& field) {
  const Precision p = parse_precision(f.fp8_default_recipe, field);
  auto runs = [&](const PrecisionRecipe& r) { return !f.caps.fp8 || r.runs_under(f.id); };
  // The recipes that would do, named only in a refusal: every profile load runs this check,
  // and reading every recipe row for it would be start-up work for nothing.
  auto use = [&] {
    std::vector<std::string> fit;
    for (const PrecisionRecipe& r : all_recipes()) {
      if (r.gemm_dtype == MathDtype::fp8 && runs(r) && r.runs_on("hopper")) fit.push_back(r.name);
    }
    return fit.empty() ? std::string("no recipe here fits")
                       : "use " + or_last(fmt::format("{}", fmt::join(fit, ", ")));
  };
  if (p == Precision::fp8)
    throw InputError(field, "'fp8' is the alias this names, not a recipe; " + use());
  const PrecisionRecipe r = load_recipe(p);
  if (r.gemm_dtype != MathDtype::fp8)
    throw InputError(field, fmt::format("'{}' is not an FP8 recipe; {}", r.name, use()));
  if (!runs(r))
    throw InputError(field, fmt::format("'{}' does not run under {} (profiles/precisions/{}.json "
                                        "frameworks); {}",
                                        r.name, f.name, r.name, use()));
  if (!r.runs_on("hopper"))
    throw InputError(field, fmt::format("'{}' does not run on Hopper, and `--precision fp8` "
                                        "falls back to this recipe on every FP8 GPU; {}",
                                        r.name, use()));
}

FrameworkProfile framework_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  FrameworkProfile f;
  f.name = o.string("name");
  f.id = parse_framework(f.name, o.field("name"));
  f.source = where;
  o.string("description");
  o.string("versions");
  f.caps = read_caps(o.object("capabilities"));
  read_collectives(o.object("collectives"), f.pricing);
  StrictObject overlap = o.object("overlap");
  f.pricing.overlap_grad_reduce = overlap.boolean("grad_reduce");
  overlap.boolean("param_gather");
  f.pricing.tp_comm_overlap = overlap.boolean("tp_comm");
  f.pricing.pp_send = read_pp_send(overlap);
  overlap.finish();
  read_kernels(o.object("kernels"), f.pricing);
  StrictObject recompute = o.object("recompute");
  for (const std::string& key : recompute.keys()) {
    const std::string words = recompute.string(key);
    if (key != "selective_policy") continue;
    if (words == "every-other-matmul")
      f.pricing.selective = FrameworkPricing::Selective::every_other_matmul;
    else if (words != "attention-core")
      throw InputError(recompute.field(key),
                       "'" + words + "' is not attention-core or every-other-matmul");
  }
  recompute.finish();
  read_memory(o.object("memory"), f.pricing);
  StrictObject loss = o.object("loss");
  for (const std::string& key : loss.keys()) {
    if (key == "peak_bytes_per_logit")
      f.pricing.logit_bytes = loss.positive(key);
    else if (key == "peak_bytes_per_logit_vocab_parallel")
      f.pricing.logit_bytes_vocab_parallel = loss.positive(key);
    else if (key == "compiled_peak_bytes_per_logit")
      f.pricing.compiled_logit_bytes = loss.positive(key);
    else
      loss.string(key);
  }
  loss.finish();
  f.fp8_default_recipe = o.string("fp8_default_recipe");
  check_fp8_default(f, o.field("fp8_default_recipe"));
  f.max_published_mfu = o.positive("max_published_mfu");
  if (o.has("max_published_mfu_by_gpu")) {
    StrictObject by = o.object("max_published_mfu_by_gpu");
    for (const std::string& cls : by.keys()) {
      require_gpu_class(cls, by.field(cls));
      StrictObject one = by.object(cls);
      const double mfu = one.positive("mfu");
      if (mfu > 1) throw InputError(one.field("mfu"), "must be a share between 0 and 1");
      f.max_published_mfu_by_gpu.push_back({cls, mfu, one.string("source")});
      one.finish();
    }
    by.finish();
  }
  f.accuracy = read_accuracy(o);
  if (o.has("accuracy_beyond_corpus")) {
    StrictObject b = o.object("accuracy_beyond_corpus");
    f.beyond_corpus = read_accuracy_class(b, false);
  }
  StrictObject sources = o.object("sources");
  // moe_a2a_overlap: the MoE capabilities (the overlap switch and its schedules, the dispatchers).
  for (const char* key : {"capabilities", "collectives", "overlap", "kernels", "recompute",
                          "memory", "loss", "max_published_mfu", "fp8_default_recipe",
                          "moe_a2a_overlap", "offload_layers", "hsdp"})
    sources.string(key);
  if (f.caps.recompute_modules) sources.string("recompute_modules");  // where it is documented
  f.max_published_mfu_source = j.at("sources").at("max_published_mfu").get<std::string>();
  sources.finish();
  o.finish();
  apply_fitted(shipped_fit(), f.name, f.pricing);
  return f;
}

}  // namespace

FrameworkProfile framework_from_text(const std::string& json_text, const std::string& where) {
  return framework_from_json(parse_json(json_text, where), where);
}

FrameworkProfile load_framework(Framework id) {
  static std::map<Framework, FrameworkProfile> cache;
  if (auto it = cache.find(id); it != cache.end()) return it->second;
  const std::string path = fmt::format("frameworks/{}.json", to_string(id));
  const EmbeddedFile* f = find_embedded(path);
  if (!f) throw InputError("--framework", "no profile " + path + " in this build");
  const std::string where = "profiles/" + path;
  return cache.emplace(id, framework_from_text(f->text, where)).first->second;
}

}  // namespace shardplan
