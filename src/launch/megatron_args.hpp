// Internal to the Megatron-LM emitter: the argument list builder and the parts of the script
// that live in their own files (model architecture, optimizer and schedule).
#pragma once

#include <string>
#include <vector>

#include "documents.hpp"

namespace shardplan::emit {

class MegatronArgs {
 public:
  explicit MegatronArgs(MegatronScript& s) : s_(s) {}
  MegatronArgs& add(std::string flag, std::string value = "") {
    s_.args.push_back({std::move(flag), std::move(value), false, {}});
    return *this;
  }
  MegatronArgs& add(std::string flag, long long value) {
    return add(std::move(flag), std::to_string(value));
  }
  MegatronArgs& shell(std::string flag, const std::string& variable) {
    s_.args.push_back({std::move(flag), "$" + variable, true, {}});
    return *this;
  }
  /// A flag that takes several words (argparse nargs='*', e.g. --recompute-modules).
  MegatronArgs& words(std::string flag, std::vector<std::string> values) {
    s_.args.push_back({std::move(flag), "", false, std::move(values)});
    return *this;
  }
  MegatronScript& script() { return s_; }

 private:
  MegatronScript& s_;
};

/// A number as pretrain_gpt.py's float arguments read it ("%g": 0.0003, 1e-05).
std::string megatron_number(double v);

/// Layer shapes, norms, positions (RoPE base and scaling), MoE router and MLA flags.
void megatron_model_args(MegatronArgs& a, const EmitInputs& in);
/// What pretrain_gpt.py cannot express about the model (RoPE scaling it hard-codes, ...).
std::vector<PlanProblem> megatron_model_problems(const EmitInputs& in);

/// --lr, --min-lr, warm-up, decay, weight decay, clipping and Adam betas, with their provenance.
void megatron_optimizer_args(MegatronArgs& a, const EmitInputs& in);

}  // namespace shardplan::emit
