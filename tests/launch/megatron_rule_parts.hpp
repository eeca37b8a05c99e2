// What the Megatron-LM rule files share (megatron_rules.cpp, megatron_moe_rules.cpp): one
// launch's flags read with Megatron's defaults, the layout parser, and the MoE execution rules.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "megatron_rules.hpp"

namespace shardplan::test::rules {

using L = MegatronLaunch;

inline bool has(const L& l, const char* flag) {
  return l.args.count(flag) != 0;
}
inline std::string str(const L& l, const char* flag, const std::string& fallback = "") {
  const auto it = l.args.find(flag);
  return it == l.args.end() ? fallback : it->second;
}
inline double num(const L& l, const char* flag, double fallback) {
  const auto it = l.args.find(flag);
  return it == l.args.end() || it->second.empty() ? fallback : std::stod(it->second);
}
inline long long whole(const L& l, const char* flag, long long fallback) {
  return std::llround(num(l, flag, static_cast<double>(fallback)));
}
inline std::string fail_if(bool bad, const std::string& what) {
  return bad ? what : "";
}

/// parse_str_to_list (pipeline_parallel_layer_layout.py): commas dropped, (x)*n and x*n
/// unrolled, stages split at '|'.
std::vector<std::string> layout_stages(std::string s);

// The mixture-of-experts execution rules (megatron_moe_rules.cpp).
std::string moe_overlap_rule(const L& l, const ModelSpec& m);
std::string moe_dispatch_rule(const L& l, const ModelSpec& m);
std::string moe_capacity_rule(const L& l, const ModelSpec& m);
std::string moe_recipe_rule(const L& l, const ModelSpec& m);
// Layer CPU offloading's checks (also megatron_moe_rules.cpp).
std::string cpu_offloading_rule(const L& l, const ModelSpec& m);

}  // namespace shardplan::test::rules
