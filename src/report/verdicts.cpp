// The verdict banner's words for each --html page (see verdicts.hpp).
#include "shardplan/verdicts.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "shardplan/describe.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render_provision.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/table.hpp"

namespace shardplan {
namespace {

// "60.43 GiB of 79.65 GiB per device (19.22 GiB to spare)".
std::string memory_against_capacity(double peak_bytes, double capacity_bytes) {
  const double margin = capacity_bytes - peak_bytes;
  if (margin >= 0) {
    return fmt::format("{} of {} per device ({} to spare)", format_gib(peak_bytes),
                       format_gib(capacity_bytes), format_gib(margin));
  }
  return fmt::format("{} per device against {} ({:.1f}x the capacity, {} over)",
                     format_gib(peak_bytes), format_gib(capacity_bytes),
                     peak_bytes / capacity_bytes, format_gib(-margin));
}

// The rule that refused most configurations. dp x tp x pp x cp = GPUs refuses most points of any
// cartesian space by construction, so it is named only when no other rule refused any.
std::optional<RuleId> top_rule(const SearchResult& found) {
  std::optional<RuleId> top;
  long long most = 0;
  for (int i = 0; i < kRules; ++i) {
    const auto rule = static_cast<RuleId>(i);
    if (rule == RuleId::gpu_count || found.rejected[i] <= most) continue;
    most = found.rejected[i];
    top = rule;
  }
  if (!top && found.rejected[static_cast<int>(RuleId::gpu_count)] > 0) top = RuleId::gpu_count;
  return top;
}

Verdict no_plan_verdict(const SearchResult& found, const ClusterSpec& cluster) {
  const double capacity = cluster.gpu.memory_bytes;
  if (found.have_least_memory) {
    return {VerdictKind::no_plan,
            fmt::format("None of the {} configurations searched fits in the {} of a {}{}; the "
                        "closest, {}, needs {}.",
                        found.evaluated, format_gib(capacity), cluster.gpu.name,
                        headroom_clause(cluster), describe(found.least_memory.plan),
                        memory_against_capacity(found.least_memory.peak_bytes,
                                                cluster.usable_bytes()))};
  }
  const std::optional<RuleId> rule = top_rule(found);
  if (!rule) {
    return {VerdictKind::no_plan,
            fmt::format("None of the {} configurations searched can run.", found.evaluated)};
  }
  return {VerdictKind::no_plan,
          fmt::format("None of the {} configurations searched can run; most were refused "
                      "because {} ({} of them).",
                      found.evaluated, rule_gist(*rule), found.rejected[static_cast<int>(*rule)])};
}

}  // namespace

Verdict plan_verdict(const PlanningResult& planned, const ClusterSpec& cluster) {
  const RungVerdict* rec = planned.recommended();
  const Candidate* fastest = planned.fastest();
  if (rec) {
    std::string reason = fmt::format(
        "The {} rung runs it: {}; {}, {} per step, exposed communication {} of the step.",
        to_string(rec->rung), describe(rec->plan.plan),
        memory_against_capacity(rec->memory_bytes, rec->capacity_bytes),
        format_seconds(rec->plan.step_s), format_percent(rec->comm_share));
    if (fastest && fastest->step_s < rec->plan.step_s) {
      reason += fmt::format(" The fastest plan found takes {} per step.",
                            format_seconds(fastest->step_s));
    }
    return {VerdictKind::fits, reason};
  }
  if (fastest) {
    return {VerdictKind::fits,
            fmt::format("No rung of the ladder keeps exposed communication under {} of the step; "
                        "the fastest plan the search found, {}, fits: {}, {} per step.",
                        format_percent(planned.ladder.max_comm_share), describe(fastest->plan),
                        memory_against_capacity(fastest->peak_bytes, cluster.gpu.memory_bytes),
                        format_seconds(fastest->step_s))};
  }
  return no_plan_verdict(planned.found, cluster);
}

Verdict estimate_verdict(const Estimate& e) {
  const MemoryBreakdown& m = e.memory;
  const std::string memory = memory_against_capacity(m.total_bytes(), m.capacity_bytes);
  const std::string stage =
      m.stages.size() > 1 ? fmt::format(" on stage {}, the most loaded", m.worst_stage) : "";
  if (m.total_bytes() > m.capacity_bytes) {
    return {VerdictKind::does_not_fit,
            fmt::format("The plan needs {}{}: it cannot run as planned. The step time and MFU "
                        "below are what it would take if it fit.",
                        memory, stage)};
  }
  if (!m.host_fits) {
    return {VerdictKind::does_not_fit,
            fmt::format("Offload puts {} per node in host memory, which holds {}: it cannot run "
                        "as planned. The step time and MFU below are what it would take if it "
                        "fit.",
                        format_gib(m.host_bytes_per_node), format_gib(m.host_capacity_bytes))};
  }
  std::string reason = fmt::format("{}; {} per step, MFU {}.", memory,
                                   format_seconds(e.step_s), format_percent(e.throughput.mfu));
  if (m.worst().offloaded_bytes > 0) {
    reason += fmt::format(" Offload keeps {} per device in host memory ({} of {} per node).",
                          format_gib(m.worst().offloaded_bytes), format_gib(m.host_bytes_per_node),
                          format_gib(m.host_capacity_bytes));
  }
  return {VerdictKind::fits, reason};
}

Verdict provision_verdict(const ProvisionResult& r, const ProvisionRequest& request) {
  if (r.best) {
    std::string reason = "Best by " + std::string(to_string(request.objective)) + ": " +
                         describe_option(r.options[*r.best]);
    if (request.deadline_s > 0)
      reason += ", within the deadline of " + format_seconds(request.deadline_s);
    if (request.budget > 0) reason += ", within the budget of " + format_usd(request.budget);
    return {VerdictKind::fits, reason + "."};
  }
  if (!r.fastest) {
    return {VerdictKind::no_plan,
            fmt::format("None of the {} options ({} GPU types x {} counts) fits in device "
                        "memory.",
                        r.options.size(), request.offers.size(), request.counts.size())};
  }
  const ProvisionOption& fastest = r.options[*r.fastest];
  std::vector<std::string> missed;
  if (request.deadline_s > 0)
    missed.push_back("the deadline of " + format_seconds(request.deadline_s));
  if (request.budget > 0) missed.push_back("the budget of " + format_usd(request.budget));
  std::string constraints = missed.empty() ? "the constraints" : missed.front();
  if (missed.size() > 1) constraints = missed[0] + " and " + missed[1];
  return {VerdictKind::no_plan,
          fmt::format("Options fit in memory, but none meets {}; the fastest is {}.", constraints,
                      describe_option(fastest))};
}

Verdict probe_verdict(const nlohmann::json& profile) {
  const nlohmann::json prov = profile.value("provenance", nlohmann::json::object());
  const std::string backend = prov.value("backend", std::string("unknown"));
  const size_t ranks =
      prov.contains("ranks") && prov["ranks"].is_array() ? prov["ranks"].size() : 0;
  const size_t hosts =
      prov.contains("hosts") && prov["hosts"].is_array() ? prov["hosts"].size() : 0;
  const nlohmann::json m = profile.value("measurements", nlohmann::json::object());
  auto count = [&](const char* kind) {
    return m.contains(kind) && m[kind].is_array() ? m[kind].size() : size_t{0};
  };
  std::string reason = fmt::format(
      "{} ranks on {} host{} with the {} back-end: {} collective measurements, {} "
      "GEMM shapes.",
      ranks, hosts, hosts == 1 ? "" : "s", backend, count("collectives"), count("gemm"));
  // The mpi back-end moves host buffers and multiplies on the CPU (backend_mpi.cpp): its links
  // are shared memory and the host network, not the GPU's NVLink or InfiniBand path.
  if (backend == "mpi") {
    reason +=
        " Measured on CPUs: the links are host shared memory and the host network, not a GPU "
        "fabric, and the GEMMs are the CPU's BLAS.";
  }
  return {VerdictKind::measured, reason};
}

}  // namespace shardplan
