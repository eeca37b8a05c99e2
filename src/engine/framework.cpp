// Names of frameworks and pipeline schedules, and the small queries on a framework's data.
#include "shardplan/framework.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {

const char* to_string(Framework f) {
  const FrameworkRow* r = find_row(kFrameworkRows, &FrameworkRow::id, f);
  return r ? r->name : "";
}

std::string framework_names(const std::string& separator) {
  return join_field(kFrameworkRows, &FrameworkRow::name, separator);
}

Framework parse_framework(const std::string& text, const std::string& field) {
  if (const FrameworkRow* r = find_row(kFrameworkRows, &FrameworkRow::name, text)) return r->id;
  throw InputError(field, "'" + text + "' is not a framework; use " + or_last(framework_names(", ")));
}

bool FrameworkCaps::has_schedule(Schedule s) const {
  return std::find(pipeline_schedules.begin(), pipeline_schedules.end(), s) !=
         pipeline_schedules.end();
}

bool FrameworkCaps::has_dispatcher(MoeDispatcher d) const {
  return std::find(moe_dispatchers.begin(), moe_dispatchers.end(), d) != moe_dispatchers.end();
}

bool FrameworkCaps::has_context_parallel(ContextParallel kind) const {
  return kind == ContextParallel::ulysses ? ulysses : context_parallel;
}

bool FrameworkCaps::has_hsdp(int stage) const {
  return std::find(hsdp_zero_stages.begin(), hsdp_zero_stages.end(), stage) !=
         hsdp_zero_stages.end();
}

bool FrameworkCaps::shards_experts_of(const std::string& model_type, std::string* preset) const {
  if (!expert_parallel) return false;
  if (expert_parallel_models.empty()) {
    if (preset) preset->clear();
    return true;
  }
  for (const auto& [type, name] : expert_parallel_models) {
    if (type == model_type) {
      if (preset) *preset = name;
      return true;
    }
  }
  return false;
}

bool FrameworkCaps::has_zero(int stage) const {
  return std::find(zero_stages.begin(), zero_stages.end(), stage) != zero_stages.end();
}

const AccuracyClass* FrameworkProfile::accuracy_for(const std::string& gpu_class, bool moe) const {
  const AccuracyClass* other_kind = nullptr;
  for (const AccuracyClass& a : accuracy) {
    if (a.gpu_class != gpu_class) continue;
    if (a.moe == moe) return &a;
    other_kind = &a;
  }
  if (other_kind) return other_kind;
  return beyond_corpus.cases > 0 ? &beyond_corpus : nullptr;
}

PublishedMfu FrameworkProfile::published_mfu_for(const std::string& gpu_class) const {
  for (const PublishedMfu& p : max_published_mfu_by_gpu) {
    if (p.gpu_class == gpu_class) return p;
  }
  return {"", max_published_mfu, max_published_mfu_source};
}

double FrameworkPricing::compute_speed(const std::string& gpu_class, int pp) const {
  double speed = kernel_speed;
  for (const auto& [cls, s] : kernel_speed_by_gpu) {
    if (cls == gpu_class) speed = s;
  }
  return pp > 1 ? speed * pipeline_engine_speed : speed;
}

double BusbwShare::at(double ranks) const {
  if (points.empty()) return 1.0;
  if (ranks <= points.front().first) return points.front().second;
  if (ranks >= points.back().first) return points.back().second;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& [r1, s1] = points[i];
    if (ranks > r1) continue;
    const auto& [r0, s0] = points[i - 1];
    const double t = std::log(ranks / r0) / std::log(r1 / r0);
    return s0 + t * (s1 - s0);
  }
  return points.back().second;
}

double BusbwShare::at(double ranks, int domains) const {
  if (within_node > 0 && domains <= 1) return within_node;
  return at(ranks);
}

}  // namespace shardplan
