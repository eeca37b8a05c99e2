// The Hugging Face families of 2025 whose conventions do not fit the two old groups (gated
// Llama-likes, GPT-2-likes): gpt-oss, Nemotron, GLM-4.5, Kimi K2 and the hybrids (Qwen3-Next,
// Nemotron-H, MiniMax-01).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "shardplan/specs.hpp"

namespace shardplan {

/// model_type values read here (their conventions set by apply_family_conventions).
const std::set<std::string>& newer_family_types();

/// DeepSeek-V3-style MoE keys (n_routed_experts, n_shared_experts, moe_intermediate_size,
/// first_k_dense_replace, num_nextn_predict_layers): DeepSeek-V2/V3, Kimi K2, GLM-4.5.
bool deepseek_style_moe(const std::string& type);

/// Qwen-MoE keys (num_experts, moe_intermediate_size, shared_expert_intermediate_size,
/// decoder_sparse_step): Qwen2-MoE, Qwen3-MoE, Qwen3-Next.
bool qwen_style_moe(const std::string& type);

/// What a newer family's modeling code fixes (MLP kind, norms, biases, sinks, layer pattern),
/// applied after the shared readers; a no-op for other families.
void apply_family_conventions(const nlohmann::json& c, const std::string& type,
                              const std::string& origin, ModelSpec& m);

}  // namespace shardplan
