// Step time, throughput and time to train as text and JSON: the tables of `estimate` and the
// object `estimate --json` prints (key names are the stable --json contract).
#include "shardplan/render_estimate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "shardplan/consistency.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render_comm.hpp"
#include "shardplan/render_memory.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

nlohmann::json to_json(const StepTime& s) {
  nlohmann::json j = {{"step_s", s.step_s},
                      {"compute_s", s.compute_s},
                      {"bubble_s", s.bubble_s},
                      {"exposed_comm_s", s.exposed_comm_s},
                      {"optimizer_s", s.optimizer_s},
                      {"offload_s", s.offload_s},
                      {"recompute_s", s.recompute_s},
                      {"contention_s", s.contention_s},
                      {"micro_batches", s.micro_batches},
                      {"critical_stage", s.critical_stage},
                      {"schedule", s.schedule}};
  if (s.offload_s > 0 || s.offload.cpu_adam_s > 0 || s.offload.offloaded_layers > 0) {
    const OffloadTime& o = s.offload;
    j["offload"] = {{"gradients_down_s", o.gradients_down_s},
                    {"weights_up_s", o.weights_up_s},
                    {"params_fetch_s", o.params_fetch_s},
                    {"activations_s", o.activations_s},
                    {"hidden_s", o.hidden_s},
                    {"cpu_adam_s", o.cpu_adam_s},
                    {"nvme_s", o.nvme_s},
                    {"exposed_s", o.exposed_s},
                    {"link_figure", o.link_measured ? "measured" : "datasheet"},
                    {"dram_figure", o.dram_measured ? "measured" : "datasheet"}};
    if (o.offloaded_layers > 0) {
      j["offload"]["layers"] = {{"layers", o.offloaded_layers},
                                {"down_s", o.layers_down_s},
                                {"up_s", o.layers_up_s},
                                {"exposed_s", o.layers_exposed_s}};
    }
  }
  return j;
}

namespace {

// The offload row: the optimizer / weight / checkpoint offload's parts, and the offloaded
// layers' copies over the host link (C2C or PCIe) with what their layers' passes leave exposed.
std::string offload_words(const OffloadTime& o, const HostSpec& h) {
  std::string words;
  if (o.cpu_adam_s > 0 || o.weights_up_s > 0 || o.nvme_s > 0 || o.gradients_down_s > 0 ||
      o.params_fetch_s > 0 || o.activations_s > 0) {
    words = fmt::format("CPU Adam {}, weights up {}, NVMe {}; PCIe during fwd/bwd {} ({} hidden)",
                        format_seconds(o.cpu_adam_s), format_seconds(o.weights_up_s),
                        format_seconds(o.nvme_s),
                        format_seconds(o.gradients_down_s + o.params_fetch_s + o.activations_s),
                        format_seconds(o.hidden_s));
  }
  if (o.offloaded_layers > 0) {
    words += fmt::format("{}{} layers' activations over {}: {} down in forward, {} up in "
                         "backward, {} of it past the layers' passes",
                         words.empty() ? "" : "; ", o.offloaded_layers,
                         h.link_name.empty() ? "the host link" : h.link_name,
                         format_seconds(o.layers_down_s), format_seconds(o.layers_up_s),
                         format_seconds(o.layers_exposed_s));
  }
  return words + fmt::format("; host link {}, CPU memory {}",
                             o.link_measured ? "measured" : "datasheet",
                             o.dram_measured ? "measured (probe)" : "datasheet x efficiency");
}

// The JSON key of each simulated communication stream.
const char* stream_key(SimStream s) {
  switch (s) {
    case SimStream::compute: return "compute";
    case SimStream::tp: return "tp";
    case SimStream::cp: return "cp";
    case SimStream::ep: return "ep";
    case SimStream::dp_gather: return "dp_gather";
    case SimStream::dp_reduce: return "dp_reduce";
    case SimStream::pp: return "pp";
  }
  return "?";
}

}  // namespace

nlohmann::json to_json(const SimulatedStep& s) {
  nlohmann::json exposed = nlohmann::json::object();
  for (int k = 1; k < kSimStreams; ++k)
    exposed[stream_key(static_cast<SimStream>(k))] = s.exposed_s[k];
  return {{"step_s", s.step_s},
          {"bubble_s", s.bubble_s},
          {"compute_s", s.compute_s},
          {"contention_s", s.contention_s},
          {"optimizer_s", s.optimizer_s},
          {"critical_stage", s.critical_device},
          {"schedule", to_string(s.order)},
          {"tasks", s.tasks},
          {"exposed_s", exposed}};
}

nlohmann::json to_json(const Throughput& t) {
  return {{"tokens_per_s", t.tokens_per_s},
          {"tflops_per_gpu", t.tflops_per_gpu},
          {"mfu", t.mfu},
          {"hfu", t.hfu},
          {"model_flops_per_step", t.model_flops},
          {"hardware_flops_per_step", t.hardware_flops},
          {"peak_flops_per_gpu", t.peak_flops}};
}

nlohmann::json accuracy_json(const StepInterval& si, const TrainingSpec& tr, const ClusterSpec& c) {
  const std::string fw = tr.framework.name.empty() ? "none" : tr.framework.name;
  if (!si.accuracy) {
    return {{"class", fw + " x " + c.gpu.accuracy_class},
            {"cases", 0},
            {"split", "none"},
            {"note", "no validation case for this framework on this GPU generation"}};
  }
  const AccuracyClass& a = *si.accuracy;
  nlohmann::json j = {{"class", fw + " x " + a.name()},
                      {"cases", a.cases},
                      {"split", a.held_out ? "held-out" : "fitted"},
                      {"step_error_low", si.error_low},
                      {"step_error_high", si.error_high},
                      {"source", a.source}};
  // What of the plan lies beyond its class's validation cases, and so took the wider interval.
  if (!si.beyond.empty()) j["beyond_corpus"] = si.beyond;
  return j;
}

std::string interval_text(const StepInterval& si, const TrainingSpec& tr) {
  if (!si.accuracy) return "no validation case for this framework and GPU generation";
  const AccuracyClass& a = *si.accuracy;
  if (!si.beyond.empty()) {
    return fmt::format("{} to {} (beyond the validation corpus, {} held-out cases: {})",
                       format_seconds(si.low_s), format_seconds(si.high_s), a.cases, si.beyond);
  }
  if (a.source.rfind("calibrated", 0) == 0) {
    return fmt::format("{} to {} ({} x {} calibrated on your run: {} held-out calibrated cases)",
                       format_seconds(si.low_s), format_seconds(si.high_s), tr.framework.name,
                       a.name(), a.cases);
  }
  return fmt::format("{} to {} ({} x {}, {} {} case{})", format_seconds(si.low_s),
                     format_seconds(si.high_s), tr.framework.name, a.name(), a.cases,
                     a.held_out ? "held-out" : "fitted", a.cases == 1 ? "" : "s");
}

std::string mfu_warning(const MfuPlausibility& m) {
  if (m.above_published) {
    const std::string on = m.published.gpu_class.empty() ? "" : " on " + m.published.gpu_class;
    return fmt::format(
        "MFU {} is above the highest published for {}{} ({}: {}); the model is least "
        "trustworthy here",
        format_percent(m.mfu), m.framework, on, format_percent(m.published.mfu), m.published.source);
  }
  if (m.red_flag_at_scale) {
    return fmt::format(
        "MFU {} is above {} at scale, a red flag: published dense runs reach 40-56%",
        format_percent(m.mfu), format_percent(kRedFlagMfu));
  }
  return "";
}

nlohmann::json to_json(const Estimate& e, const ParallelPlan& p, const TrainingSpec& tr,
                       const ClusterSpec& c) {
  nlohmann::json j = {{"memory", to_json(e.memory)},
                      {"time", to_json(e.time)},
                      {"throughput", to_json(e.throughput)},
                      {"comm", to_json(e.comm, e.time, p, tr, c)}};
  if (e.simulated.ran) j["simulated"] = to_json(e.simulated);
  nlohmann::json notes = nlohmann::json::array();
  if (e.params_only) {
    notes.push_back(fmt::format(
        "compute from 6 x params x tokens at an assumed {:.0f}% MFU (optimizer included): "
        "only the parameter count was given",
        kParamsOnlyMfu * 100));
  }
  if (const std::string w = mfu_warning(e.mfu_check); !w.empty()) notes.push_back(w);
  j["notes"] = notes;
  // The plan's step (simulated where it ran) with its interval; `time` keeps the closed forms.
  const StepInterval si = step_interval(tr.framework, c.gpu, e.step_s, e.scope);
  j["step"] = {{"step_s", e.step_s},
               {"source", e.step_simulated ? "simulated" : "closed_form"},
               {"closed_form_s", e.time.step_s},
               {"step_s_low", si.low_s},
               {"step_s_high", si.high_s}};
  j["throughput"]["tokens_per_s_low"] = e.throughput.tokens_per_s * e.step_s / si.high_s;
  j["throughput"]["tokens_per_s_high"] = e.throughput.tokens_per_s * e.step_s / si.low_s;
  j["accuracy"] = accuracy_json(si, tr, c);
  if (tr.tokens > 0) {
    j["training_run"] = {
        {"tokens", tr.tokens}, {"time_s", e.train_s}, {"gpu_hours", e.train_gpu_hours}};
    if (tr.gpu_hour_cost > 0) j["training_run"]["cost"] = e.train_cost;
    if (!e.memory.fits) {
      j["notes"].push_back(
          "the plan does not fit in device memory: training_run is the time it would take if "
          "it did, not a run that can start");
    }
  }
  return j;
}

std::string render_simulated(const SimulatedStep& s) {
  std::string exposed;
  for (int k = 1; k < kSimStreams; ++k) {
    if (s.exposed_s[k] <= 0) continue;
    exposed += fmt::format("{}{} {}", exposed.empty() ? "" : ", ",
                           to_string(static_cast<SimStream>(k)), format_seconds(s.exposed_s[k]));
  }
  return fmt::format(
      "Step: {} (simulated: {} schedule, {} events, critical stage {}; bubble {}, compute {}, "
      "exposed {})\n",
      format_seconds(s.step_s), to_string(s.order), s.tasks, s.critical_device,
      format_seconds(s.bubble_s), format_seconds(s.compute_s), exposed.empty() ? "none" : exposed);
}

std::string render_time(const Estimate& e, const TrainingSpec& tr, const ClusterSpec& c) {
  const StepTime& s = e.time;
  const Throughput& th = e.throughput;
  std::string out = "Step time (closed form: the search's fast bound)\n";
  Table t({{"", Table::Align::left}, {"seconds"}, {"share"}, {"what", Table::Align::left}});
  auto row = [&](const char* label, double v, std::string what) {
    t.add_row({label, format_seconds(v), format_percent(share_of_step(v, s)), std::move(what)});
  };
  row("compute", s.compute_s,
      fmt::format("{} micro-batch{} on the slowest stage, forward + backward{}", s.micro_batches,
                  s.micro_batches == 1 ? "" : "es",
                  s.recompute_s > 0
                      ? fmt::format(" + recompute ({})", format_seconds(s.recompute_s))
                      : "") +
          (s.contention_s > 0 ? fmt::format(", {} of it slowed by overlapped communication",
                                            format_seconds(s.contention_s))
                              : ""));
  row("pipeline bubble", s.bubble_s, fmt::format("fill and drain of the {} schedule", s.schedule));
  row("exposed communication", s.exposed_comm_s, "not hidden behind compute");
  row("optimizer step", s.optimizer_s,
      s.optimizer_in_mfu         ? "included in the assumed MFU"
      : s.offload.cpu_adam_s > 0 ? "on the CPU: in the offload row"
                                 : "memory-bound update of the local states");
  if (s.offload_s > 0 || s.offload.cpu_adam_s > 0 || s.offload.offloaded_layers > 0) {
    row("offload", s.offload_s, offload_words(s.offload, c.host));
  }
  t.add_rule();
  row("closed form (search bound)", s.step_s, "");
  out += t.render();
  out += "\n";
  out += e.step_simulated ? render_simulated(e.simulated)
                          : fmt::format("Step: {} (closed form: not simulated)\n",
                                        format_seconds(e.step_s));
  out += fmt::format(
      "\nThroughput: {:.0f} tokens/s, {:.1f} TFLOP/s per GPU (model FLOPs), MFU {}, HFU {} "
      "(of {:.0f} TFLOP/s {} peak)\n",
      th.tokens_per_s, th.tflops_per_gpu, format_percent(th.mfu), format_percent(th.hfu),
      th.peak_flops / kTera, to_string(tr.recipe.gemm_dtype));
  out += fmt::format("Step interval from validation: {}\n",
                     interval_text(step_interval(tr.framework, c.gpu, e.step_s, e.scope), tr));
  if (const std::string w = mfu_warning(e.mfu_check); !w.empty()) out += "warning: " + w + "\n";
  if (e.params_only) {
    out += fmt::format(
        "note: compute from 6 x params x tokens at an assumed {:.0f}% MFU: only the parameter "
        "count was given\n",
        kParamsOnlyMfu * 100);
  }
  const std::string run = training_run_text(e, tr);
  if (!run.empty()) out += run + "\n";
  return out;
}

std::string training_run_text(const Estimate& e, const TrainingSpec& tr) {
  if (tr.tokens <= 0) return "";
  if (!e.memory.fits) {
    return fmt::format(
        "Training {} tokens: not with this plan: it does not fit in device memory, so no time or "
        "cost to train is given",
        format_count(tr.tokens));
  }
  std::string out = fmt::format("Training {} tokens: {} ({:.0f} GPU-hours)", format_count(tr.tokens),
                                format_seconds(e.train_s), e.train_gpu_hours);
  if (tr.gpu_hour_cost > 0)
    out += fmt::format(", cost {:.0f} at {:g} per GPU-hour", e.train_cost, tr.gpu_hour_cost);
  return out;
}

}  // namespace shardplan
