// Enum names as users type them, in one table per enum, shared by parsing and printing.
#include "shardplan/specs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {
namespace {

template <typename E>
struct Name {
  E value;
  const char* name;
};

constexpr Name<MlpKind> kMlpNames[] = {
    {MlpKind::gelu, "gelu"},
    {MlpKind::swiglu, "swiglu"},
    {MlpKind::geglu, "geglu"},
    {MlpKind::squared_relu, "squared-relu"}};
constexpr Name<NormKind> kNormNames[] = {{NormKind::layernorm, "layernorm"},
                                         {NormKind::rmsnorm, "rmsnorm"}};
constexpr Name<MixerKind> kMixerNames[] = {{MixerKind::attention, "attention"},
                                           {MixerKind::gated_deltanet, "gated-deltanet"},
                                           {MixerKind::lightning, "lightning"},
                                           {MixerKind::mamba2, "mamba2"},
                                           {MixerKind::none, "none"}};
constexpr Name<PositionKind> kPositionNames[] = {{PositionKind::learned, "learned"},
                                                 {PositionKind::rotary, "rotary"},
                                                 {PositionKind::alibi, "alibi"},
                                                 {PositionKind::none, "none"}};
constexpr Name<RopeScaling> kRopeScalingNames[] = {{RopeScaling::none, "none"},
                                                   {RopeScaling::linear, "linear"},
                                                   {RopeScaling::llama3, "llama3"},
                                                   {RopeScaling::yarn, "yarn"}};
constexpr Name<RouterScore> kRouterScoreNames[] = {{RouterScore::softmax, "softmax"},
                                                   {RouterScore::sigmoid, "sigmoid"}};
constexpr Name<MoeDispatcher> kMoeDispatcherNames[] = {{MoeDispatcher::alltoall, "alltoall"},
                                                       {MoeDispatcher::deepep, "deepep"}};
constexpr Name<CudaGraphs> kCudaGraphsNames[] = {
    {CudaGraphs::none, "none"}, {CudaGraphs::scoped, "scoped"}, {CudaGraphs::full, "full"}};
constexpr Name<ContextParallel> kContextParallelNames[] = {{ContextParallel::ring, "ring"},
                                                           {ContextParallel::ulysses, "ulysses"}};
constexpr Name<Precision> kPrecisionNames[] = {{Precision::fp32, "fp32"},
                                               {Precision::bf16, "bf16"},
                                               {Precision::fp16, "fp16"},
                                               {Precision::fp8, "fp8"},
                                               {Precision::bf16_pure, "bf16-pure"},
                                               {Precision::fp8_delayed, "fp8-delayed"},
                                               {Precision::fp8_tensorwise, "fp8-tensorwise"},
                                               {Precision::fp8_blockwise, "fp8-blockwise"},
                                               {Precision::mxfp8, "mxfp8"},
                                               {Precision::nvfp4, "nvfp4"}};
constexpr Name<OptimizerKind> kOptimizerNames[] = {{OptimizerKind::adamw, "adamw"},
                                                   {OptimizerKind::sgd_momentum, "sgd"},
                                                   {OptimizerKind::adafactor, "adafactor"},
                                                   {OptimizerKind::adam_8bit, "adam8bit"}};
constexpr Name<Recompute> kRecomputeNames[] = {
    {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}};
constexpr Name<RecomputeModule> kRecomputeModuleNames[] = {
    {RecomputeModule::core_attn, "core_attn"},     {RecomputeModule::layernorm, "layernorm"},
    {RecomputeModule::mla_up_proj, "mla_up_proj"}, {RecomputeModule::moe_act, "moe_act"},
    {RecomputeModule::mlp, "mlp"},                 {RecomputeModule::moe, "moe"},
    {RecomputeModule::shared_experts, "shared_experts"}};
constexpr Name<AttentionKind> kAttentionNames[] = {{AttentionKind::flash, "flash"},
                                                   {AttentionKind::standard, "standard"}};
constexpr Name<OffloadTarget> kOffloadTargetNames[] = {{OffloadTarget::cpu, "cpu"},
                                                       {OffloadTarget::nvme, "nvme"}};
constexpr Name<GradSync> kGradSyncNames[] = {{GradSync::framework, "framework"},
                                             {GradSync::every_micro_batch, "every-micro-batch"},
                                             {GradSync::deferred, "deferred"}};
constexpr Name<MathDtype> kDtypeNames[] = {{MathDtype::fp64, "fp64"}, {MathDtype::fp32, "fp32"},
                                           {MathDtype::tf32, "tf32"}, {MathDtype::bf16, "bf16"},
                                           {MathDtype::fp16, "fp16"}, {MathDtype::fp8, "fp8"},
                                           {MathDtype::fp4, "fp4"}};

template <typename E, size_t N>
const char* name_of(const Name<E> (&table)[N], E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  SHARDPLAN_CHECK(false, "enum value missing from its name table");
}

template <typename E, size_t N>
E parse_name(const Name<E> (&table)[N], const std::string& text, const std::string& field,
             std::initializer_list<std::pair<const char*, E>> aliases = {}) {
  const std::string key = lowered(text);
  for (const auto& entry : table) {
    if (key == entry.name) return entry.value;
  }
  for (const auto& [alias, value] : aliases) {
    if (key == alias) return value;
  }
  std::string valid;
  for (const auto& entry : table) {
    if (!valid.empty()) valid += ", ";
    valid += entry.name;
  }
  throw InputError(field, "'" + text + "' is not one of: " + valid);
}

}  // namespace

const char* to_string(MlpKind v) {
  return name_of(kMlpNames, v);
}
const char* to_string(NormKind v) {
  return name_of(kNormNames, v);
}
const char* to_string(MixerKind v) {
  return name_of(kMixerNames, v);
}
const char* to_string(PositionKind v) {
  return name_of(kPositionNames, v);
}
const char* to_string(RopeScaling v) {
  return name_of(kRopeScalingNames, v);
}
const char* to_string(RouterScore v) {
  return name_of(kRouterScoreNames, v);
}
const char* to_string(MoeDispatcher v) {
  return name_of(kMoeDispatcherNames, v);
}
const char* to_string(CudaGraphs v) {
  return name_of(kCudaGraphsNames, v);
}
const char* to_string(ContextParallel v) {
  return name_of(kContextParallelNames, v);
}
const char* to_string(Precision v) {
  return name_of(kPrecisionNames, v);
}
const char* to_string(OptimizerKind v) {
  return name_of(kOptimizerNames, v);
}
const char* to_string(Recompute v) {
  return name_of(kRecomputeNames, v);
}
const char* to_string(AttentionKind v) {
  return name_of(kAttentionNames, v);
}
const char* to_string(OffloadTarget v) {
  return name_of(kOffloadTargetNames, v);
}
const char* to_string(GradSync v) {
  return name_of(kGradSyncNames, v);
}
const char* to_string(MathDtype v) {
  return name_of(kDtypeNames, v);
}

MlpKind parse_mlp(const std::string& text, const std::string& field) {
  return parse_name(kMlpNames, text, field,
                    {{"silu", MlpKind::swiglu}, {"swish", MlpKind::swiglu}});
}
NormKind parse_norm(const std::string& text, const std::string& field) {
  return parse_name(kNormNames, text, field);
}
MixerKind parse_mixer(const std::string& text, const std::string& field) {
  return parse_name(kMixerNames, text, field);
}
PositionKind parse_positions(const std::string& text, const std::string& field) {
  return parse_name(kPositionNames, text, field, {{"rope", PositionKind::rotary}});
}
RopeScaling parse_rope_scaling(const std::string& text, const std::string& field) {
  return parse_name(kRopeScalingNames, text, field);
}
RouterScore parse_router_score(const std::string& text, const std::string& field) {
  return parse_name(kRouterScoreNames, text, field);
}
MoeDispatcher parse_moe_dispatcher(const std::string& text, const std::string& field) {
  // HybridEP (DeepEP's hybrid-ep branch, Megatron-Core's flex backend "hybridep") routes as
  // DeepEP does: one RDMA copy per token and remote domain, forwarded over NVLink there.
  return parse_name(kMoeDispatcherNames, text, field,
                    {{"flex", MoeDispatcher::deepep}, {"hybridep", MoeDispatcher::deepep}});
}
CudaGraphs parse_cuda_graphs(const std::string& text, const std::string& field) {
  // Megatron-Core's scope names: full_iteration graphs the whole step, "full" a whole layer.
  return parse_name(kCudaGraphsNames, text, field,
                    {{"full_iteration", CudaGraphs::full},
                     {"full_layer", CudaGraphs::full},
                     {"te_scoped", CudaGraphs::scoped}});
}
ContextParallel parse_context_parallel(const std::string& text, const std::string& field) {
  return parse_name(kContextParallelNames, text, field);
}
std::vector<Precision> all_precisions() {
  std::vector<Precision> out;
  for (const auto& n : kPrecisionNames) out.push_back(n.value);
  return out;
}

std::string precision_names(std::string_view separator) {
  return join_field(kPrecisionNames, &Name<Precision>::name, separator);
}

Precision parse_precision(const std::string& text, const std::string& field) {
  return parse_name(kPrecisionNames, text, field,
                    {{"mixed", Precision::bf16}, {"bf16-true", Precision::bf16_pure}});
}
OptimizerKind parse_optimizer(const std::string& text, const std::string& field) {
  return parse_name(kOptimizerNames, text, field,
                    {{"adam", OptimizerKind::adamw},
                     {"sgd-momentum", OptimizerKind::sgd_momentum},
                     {"adam-8bit", OptimizerKind::adam_8bit},
                     {"adamw8bit", OptimizerKind::adam_8bit}});
}
Recompute parse_recompute(const std::string& text, const std::string& field) {
  return parse_name(kRecomputeNames, text, field);
}
unsigned parse_recompute_modules(const std::vector<std::string>& names, const std::string& field) {
  unsigned modules = 0;
  for (const std::string& name : names) modules |= bit(parse_name(kRecomputeModuleNames, name, field));
  if (modules == 0) {
    throw InputError(field, fmt::format("'{}' names no module; give one or more of: {}",
                                        fmt::join(names, ","), recompute_module_names(", ")));
  }
  return modules;
}
// Megatron's command line separates the names by spaces, shardplan's flag by commas: both.
unsigned parse_recompute_modules(const std::string& text, const std::string& field) {
  std::string commas = text;
  std::replace(commas.begin(), commas.end(), ' ', ',');
  const std::vector<std::string> names = split_list(commas);
  if (names.empty()) {
    throw InputError(field, "'" + text + "' names no module; give one or more of: " +
                                recompute_module_names(", "));
  }
  return parse_recompute_modules(names, field);
}
std::vector<std::string> recompute_module_list(unsigned modules) {
  std::vector<std::string> out;
  for (const auto& entry : kRecomputeModuleNames)
    if ((modules & bit(entry.value)) != 0) out.emplace_back(entry.name);
  return out;
}
std::string recompute_modules_text(unsigned modules, const std::string& separator) {
  return fmt::format("{}", fmt::join(recompute_module_list(modules), separator));
}
std::string recompute_module_names(const std::string& separator) {
  return recompute_modules_text(~0u, separator);
}
unsigned recomputed_modules(const ParallelPlan& p) {
  if (p.recompute != Recompute::selective) return 0;
  return p.recompute_modules != 0 ? p.recompute_modules : bit(RecomputeModule::core_attn);
}
AttentionKind parse_attention(const std::string& text, const std::string& field) {
  return parse_name(kAttentionNames, text, field);
}
OffloadTarget parse_offload_target(const std::string& text, const std::string& field) {
  return parse_name(kOffloadTargetNames, text, field);
}
GradSync parse_grad_sync(const std::string& text, const std::string& field) {
  return parse_name(kGradSyncNames, text, field);
}

void share_nics(ClusterSpec& c) {
  const double share = static_cast<double>(c.nics_per_node) / c.gpus_per_node;
  c.inter = c.nic;
  c.inter.bytes_per_s *= share;
  c.inter.busbw_bytes_per_s *= share;
  for (double& measured : c.inter.collective_busbw) measured *= share;  // a probe's, per NIC
}

const std::vector<std::string>* PrecisionRecipe::flags_for(const std::string& launcher) const {
  for (const auto& [name, flags] : launcher_flags)
    if (name == launcher) return &flags;
  return nullptr;
}

bool PrecisionRecipe::runs_on(const std::string& generation) const {
  return gpu_generations.empty() || std::find(gpu_generations.begin(), gpu_generations.end(),
                                              generation) != gpu_generations.end();
}

bool PrecisionRecipe::runs_under(Framework framework) const {
  return frameworks.empty() ||
         std::find(frameworks.begin(), frameworks.end(), framework) != frameworks.end();
}

double moe_max_load(const TrainingSpec& training) {
  return training.moe_max_load > 0 ? training.moe_max_load : 1.0;
}

double PrecisionRecipe::low_precision_layer_share(int layers) const {
  if (layers <= 0) return 1.0;
  const int kept = std::min(layers, bf16_first_layers + bf16_last_layers);
  return static_cast<double>(layers - kept) / layers;
}

bool recipe_serves(Precision named, Precision recipe) {
  if (named == recipe) return true;
  return named == Precision::fp8 &&
         (recipe == Precision::fp8_delayed || recipe == Precision::fp8_tensorwise ||
          recipe == Precision::fp8_blockwise);
}

bool recipe_matches(const TrainingSpec& tr) {
  return recipe_serves(tr.precision, tr.recipe.id);
}

PlanScope plan_scope(const ModelSpec& model, const TrainingSpec& training, const ParallelPlan& plan,
                     const ClusterSpec& cluster) {
  std::vector<std::string> mixers;
  if (model.has_architecture()) {
    // Every mixer but softmax attention, by name (kMixerNames), in their sorted order.
    for (const auto& [kind, name] : kMixerNames) {
      if (kind != MixerKind::attention && kind != MixerKind::none &&
          model.mixer_layer_count(kind) > 0)
        mixers.emplace_back(name);
    }
    std::sort(mixers.begin(), mixers.end());
  }
  return {model.experts > 0,
          mixers,
          to_string(training.recipe.gemm_dtype),
          std::max(1, plan.cp),
          cluster.gpus,
          plan.cp > 1 && training.context_parallel == ContextParallel::ulysses};
}

int default_global_batch(int seq_len, int multiple_of) {
  SHARDPLAN_CHECK(seq_len > 0 && multiple_of > 0, "a sequence length and a batch multiple");
  const long long sequences =
      std::max(1LL, std::llround(kDefaultTokensPerStep / static_cast<double>(seq_len)));
  const long long rounded = (sequences + multiple_of - 1) / multiple_of * multiple_of;
  return static_cast<int>(std::min<long long>(rounded, 1'000'000'000));
}

}  // namespace shardplan
