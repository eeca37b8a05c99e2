// The provision table and its JSON (see render_provision.hpp).
#include "shardplan/render_provision.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

std::string format_usd(double usd) {
  if (usd >= 1e9) return fmt::format("${:.2f}B", usd / 1e9);
  if (usd >= 1e6) return fmt::format("${:.2f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.0f}k", usd / 1e3);
  return fmt::format("${:.0f}", usd);
}

std::string describe_option(const ProvisionOption& o) {
  if (!o.fits) return fmt::format("{} x {} (no plan fits)", o.gpus, o.gpu);
  return fmt::format("{} x {} ({}): {}, {}", o.gpus, o.gpu, describe(o.plan),
                     format_seconds(o.time_to_train_s()), format_usd(o.cost()));
}

namespace {

std::string format_hours(double h) {
  if (h >= 1e6) return fmt::format("{:.2f}M", h / 1e6);
  if (h >= 1e3) return fmt::format("{:.1f}k", h / 1e3);
  return fmt::format("{:.0f}", h);
}

std::string recommended_cell(const ProvisionOption& o) {
  if (!o.has_recommended) return "-";
  if (o.fits && o.recommended_step_s > o.step_s() * 1.0005) {
    return fmt::format("{} (+{})", to_string(o.recommended_rung),
                       format_percent(o.recommended_step_s / o.step_s() - 1));
  }
  return fmt::format("{} (same speed)", to_string(o.recommended_rung));
}

std::string marks(const ProvisionOption& o, const ProvisionResult& r, size_t i) {
  std::string m = r.best && *r.best == i ? ">" : " ";
  m += o.pareto ? "*" : " ";
  return m;
}

// The step's validation interval, or "-" when the framework has no case on this GPU generation.
std::string step_interval_cell(const ProvisionOption& o) {
  const StepInterval si = step_interval(o.training.framework, o.cluster.gpu, o.step_s(),
                                        o.estimate.scope);
  if (!si.accuracy) return "-";
  return format_seconds(si.low_s) + " - " + format_seconds(si.high_s);
}

// The MFU cell: '!' marks a plan the engine's MFU check warns about (the lines under the table).
std::string mfu_cell(const ProvisionOption& o) {
  return format_percent(o.estimate.throughput.mfu) + (o.estimate.mfu_check.warns() ? " !" : "");
}

// One line per distinct warning (framework x GPU generation), with the rows it covers.
std::string mfu_warnings(const ProvisionResult& r) {
  std::vector<std::pair<std::string, std::string>> seen;  // (key, rows)
  std::vector<std::string> words;
  for (const ProvisionOption& o : r.options) {
    if (!o.fits || !o.estimate.mfu_check.warns()) continue;
    const MfuPlausibility& m = o.estimate.mfu_check;
    const std::string key = m.framework + "|" + m.published.gpu_class + "|" + o.gpu +
                            (m.red_flag_at_scale ? "|flag" : "");
    const std::string row = fmt::format("{} x {} at {}", o.gpus, o.gpu, format_percent(m.mfu));
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& k) { return k.first == key; });
    if (it != seen.end()) {
      it->second += ", " + row;
      continue;
    }
    seen.emplace_back(key, row);
    words.push_back(mfu_warning(m));
  }
  std::string out;
  for (size_t i = 0; i < seen.size(); ++i) {
    out += fmt::format("warning (!): {}: {}\n", seen[i].second, words[i]);
  }
  return out;
}

}  // namespace

std::string render_provision(const ProvisionResult& r, const ProvisionRequest& request) {
  using A = Table::Align;
  Table t({{"", A::left},
           {"GPU", A::left},
           {"GPUs"},
           {"fastest plan", A::left},
           {"step"},
           {"interval"},
           {"to train"},
           {"GPU-hours"},
           {"cost"},
           {"MFU"},
           {"headroom"},
           {"recommended (vs fastest)", A::left}});
  for (size_t i = 0; i < r.options.size(); ++i) {
    const ProvisionOption& o = r.options[i];
    if (!o.fits) {
      t.add_row({marks(o, r, i), o.gpu, std::to_string(o.gpus), "no plan fits", "-", "-", "-", "-",
                 "-", "-", "-", recommended_cell(o)});
      continue;
    }
    const bool late = request.deadline_s > 0 && !o.meets_deadline;
    t.add_row({marks(o, r, i), o.gpu, std::to_string(o.gpus), describe(o.plan),
               format_seconds(o.step_s()), step_interval_cell(o),
               format_seconds(o.time_to_train_s()) + (late ? " (late)" : ""),
               format_hours(o.estimate.train_gpu_hours), format_usd(o.cost()),
               mfu_cell(o), format_gib(o.headroom_bytes),
               recommended_cell(o)});
  }
  return t.render() + mfu_warnings(r);
}

nlohmann::json to_json(const ProvisionOption& o) {
  nlohmann::json j = {{"gpu", o.gpu},
                      {"gpus", o.gpus},
                      {"fits", o.fits},
                      {"pareto", o.pareto},
                      {"meets_deadline", o.meets_deadline},
                      {"within_budget", o.within_budget},
                      {"gpu_hour_cost", o.training.gpu_hour_cost},
                      {"global_batch", o.training.global_batch}};
  if (!o.fits) {
    j["plan"] = nullptr;
    j["step_s"] = j["time_to_train_s"] = j["cost"] = nullptr;
  } else {
    j["plan"] = to_json(o.plan);
    // The step as an interval from the framework's validation errors on this GPU generation;
    // time to train and cost scale with it.
    const StepInterval si = step_interval(o.training.framework, o.cluster.gpu, o.step_s(),
                                          o.estimate.scope);
    j["step_s"] = o.step_s();
    j["step_s_low"] = si.low_s;
    j["step_s_high"] = si.high_s;
    j["time_to_train_s"] = o.time_to_train_s();
    j["time_to_train_s_low"] = o.time_to_train_s() * si.low_s / o.step_s();
    j["time_to_train_s_high"] = o.time_to_train_s() * si.high_s / o.step_s();
    j["accuracy"] = accuracy_json(si, o.training, o.cluster);
    j["gpu_hours"] = o.estimate.train_gpu_hours;
    j["cost"] = o.cost();
    j["tokens_per_s"] = o.estimate.throughput.tokens_per_s;
    j["mfu"] = o.estimate.throughput.mfu;
    const std::string w = mfu_warning(o.estimate.mfu_check);
    j["mfu_warning"] = w.empty() ? nlohmann::json() : nlohmann::json(w);
    j["memory_bytes"] = o.estimate.memory.total_bytes();
    j["capacity_bytes"] = o.estimate.memory.capacity_bytes;
    j["headroom_bytes"] = o.headroom_bytes;
  }
  j["recommended"] = o.has_recommended ? nlohmann::json{{"rung", to_string(o.recommended_rung)},
                                                        {"plan", to_json(o.recommended)},
                                                        {"step_s", o.recommended_step_s}}
                                       : nlohmann::json();
  return j;
}

nlohmann::json to_json(const ProvisionResult& r, const ProvisionRequest& request) {
  nlohmann::json options = nlohmann::json::array();
  for (const ProvisionOption& o : r.options) options.push_back(to_json(o));
  auto pick = [&](const std::optional<size_t>& i) {
    return i ? to_json(r.options[*i]) : nlohmann::json();
  };
  nlohmann::json prices = nlohmann::json::object();
  for (const GpuOffer& offer : request.offers) {
    prices[offer.cluster.gpu.name] = {{"usd_per_gpu_hour", offer.gpu_hour_cost},
                                      {"source", offer.price_source}};
  }
  return {{"objective", to_string(request.objective)},
          {"deadline_s", request.deadline_s > 0 ? nlohmann::json(request.deadline_s) : nullptr},
          {"budget", request.budget > 0 ? nlohmann::json(request.budget) : nullptr},
          {"prices", prices},
          {"options", options},
          {"best", pick(r.best)},
          {"fastest", pick(r.fastest)},
          {"cheapest", pick(r.cheapest)},
          {"seconds", r.seconds}};
}

}  // namespace shardplan
