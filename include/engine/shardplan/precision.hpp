// A training precision as one recipe row (profiles/precisions/*.json): which GEMMs run in which
// dtype, what quantizing their inputs costs, the bytes held per weight, activation, gradient and
// optimizer state, the all-gather element, and the GPUs and frameworks that run it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shardplan/framework.hpp"

namespace shardplan {

/// The recipes `--precision` names. bf16 is mixed precision (16-bit weights and gradients, an
/// fp32 master copy the optimizer updates); bf16_pure keeps weights, gradients and optimizer
/// states in bf16 with no fp32 master (torchtune's full_finetune_distributed with dtype bf16,
/// torchtitan's training.dtype bfloat16). fp8 names no recipe of its own: the framework's
/// default FP8 recipe (its profile's fp8_default_recipe). The others are Transformer Engine's
/// recipes: delayed scaling, per-tensor current scaling, 1x128 / 128x128 blockwise scaling
/// (DeepSeek-V3), MXFP8 (32-element blocks) and NVFP4 (16-element blocks).
enum class Precision {
  fp32,
  bf16,
  fp16,
  fp8,
  bf16_pure,
  fp8_delayed,
  fp8_tensorwise,
  fp8_blockwise,
  mxfp8,
  nvfp4
};

/// Index into GpuSpec::peak_flops. fp4 is appended last so the older indices stay put.
enum class MathDtype { fp64, fp32, tf32, bf16, fp16, fp8, fp4 };
inline constexpr int kMathDtypes = 7;

/// One recipe row. A default-constructed value is bf16 mixed precision (profiles/precisions/
/// bf16.json): what the engine prices when a test builds its specs by hand.
struct PrecisionRecipe {
  Precision id = Precision::bf16;
  std::string name = "bf16";
  std::string source;
  MathDtype gemm_dtype = MathDtype::bf16;  // the transformer blocks' linear layers
  // The attention core (QK^T, AV) always runs in 16 bits (Transformer Engine's fused attention
  // outside fp8_dot_product_attention; torchao converts nn.Linear only). These stay too:
  bool head_in_bf16 = false;   // the LM head (and embedding) GEMM
  bool router_in_bf16 = true;  // the MoE router
  int bf16_first_layers = 0;   // transformer layers at the start kept in bf16
  int bf16_last_layers = 0;    // and at the end
  // Memory-bound traffic of quantizing one GEMM input element (cast, amax, transpose, scale
  // writes): forward once per activation element, backward once per output-gradient element.
  double quantize_bytes_per_element = 0;
  double weight_bytes = 2;       // the weights as the model holds them
  double weight_copy_bytes = 0;  // extra low-precision copies per weight (TE's fp8 cache)
  double activation_bytes = 2;   // per activation element (what flows between the ops)
  // Per element of a low-precision linear's input that a framework saving quantized inputs
  // (Transformer Engine) keeps for the weight-gradient GEMM: the one copy wgrad reads with its
  // scales. 0: the input is kept as it came (activation_bytes).
  double saved_input_bytes = 0;
  // Whether the attention output projection keeps a quantized copy of its input beside the
  // 16-bit output the attention kernel saves (Megatron-Core sets save_original_input on
  // linear_proj for every low-precision recipe but delayed scaling).
  bool attention_output_copy = false;
  double gradient_bytes = 2;    // per gradient element (Megatron's fp32 main grads: 4)
  double master_bytes = 4;      // the fp32 master copy the optimizer updates (0: none)
  double moment_bytes = 4;      // per optimizer moment
  double all_gather_bytes = 2;  // per weight element in ZeRO / FSDP parameter all-gathers
  std::vector<std::string> gpu_generations;  // empty: every GPU with gemm_dtype's peak
  /// Generations whose hardware runs the format although no framework here runs the recipe on
  /// them, with the reason (MI355X's CDNA 4 has MXFP8 matrix cores; no ROCm stack runs mxfp8).
  std::vector<std::pair<std::string, std::string>> hardware_without_stack;
  std::vector<Framework> frameworks;  // empty: every framework
  std::string title = "bf16 mixed precision";  // what reports call it
  /// How each launcher spells the recipe: its --format name and the arguments (Megatron-LM's
  /// flags, accelerate's one mixed_precision value). A launcher not listed cannot run it.
  std::vector<std::pair<std::string, std::vector<std::string>>> launcher_flags = {
      {"megatron", {"--bf16"}}, {"accelerate", {"bf16"}}};
  /// The arguments `launcher` spells the recipe with; null when it does not list the launcher.
  const std::vector<std::string>* flags_for(const std::string& launcher) const;

  bool runs_on(const std::string& generation) const;
  bool runs_under(Framework framework) const;
  bool has_master() const { return master_bytes > 0; }
  bool low_precision() const {
    return gemm_dtype == MathDtype::fp8 || gemm_dtype == MathDtype::fp4;
  }
  /// The share of the transformer layers whose linears run in gemm_dtype (the rest in bf16).
  double low_precision_layer_share(int layers) const;
};

/// Whether `recipe` may price `named`: itself, or any FP8 recipe for the fp8 alias.
bool recipe_serves(Precision named, Precision recipe);

}  // namespace shardplan
