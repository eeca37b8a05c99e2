// What the CLI sees of a started back-end (probe.hpp's Session) and the sweep from start to
// calibrated profile: run, fit, build, summarise.
#include <algorithm>
#include <utility>

#include "backends.hpp"
#include "fit.hpp"
#include "harness.hpp"
#include "shardplan/probe.hpp"

namespace shardplan::probe {

Session::Session(std::unique_ptr<Launch> launch) : launch_(std::move(launch)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

bool Session::lead() const {
  return launch_->control->process() == 0;
}
const char* Session::backend() const {
  return launch_->backend->name();
}
bool Session::measures_gpu() const {
  return launch_->backend->measures_gpu();
}
std::string Session::device() const {
  return launch_->backend->ranks().front().device;
}
int Session::ranks() const {
  return static_cast<int>(launch_->backend->ranks().size());
}
int Session::nodes() const {
  int nodes = 0;
  for (const RankInfo& r : launch_->backend->ranks()) nodes = std::max(nodes, r.node + 1);
  return nodes;
}

std::vector<std::string> Session::gemm_formats() const {
  std::vector<std::string> out;
  for (const GemmFormat* f : launch_->backend->gemm_formats_here()) out.emplace_back(f->name);
  return out;
}

std::vector<const GemmFormat*> Backend::gemm_formats_here() const {
  std::vector<const GemmFormat*> out;
  for (const GemmFormat& f : gemm_formats()) {
    // Lowest precision first; fp32 and fp64 only where nothing faster runs (CPUs).
    if (why_not(f).empty()) out.push_back(&f);
  }
  const bool tensor_cores = std::any_of(out.begin(), out.end(), [](const GemmFormat* f) {
    return f->dtype != MathDtype::fp32 && f->dtype != MathDtype::fp64;
  });
  if (tensor_cores) {
    std::erase_if(out, [](const GemmFormat* f) {
      return f->dtype == MathDtype::fp32 || f->dtype == MathDtype::fp64;
    });
  }
  return out;
}
const std::string& Session::note() const {
  return launch_->note;
}

Session start_session(const std::string& name, const Settings& settings) {
  return Session(std::make_unique<Launch>(start_backend(name, settings)));
}

Calibration calibrate(Session& session, const SweepPlan& plan, const ProfileInputs& inputs,
                      const GpuSpec& gpu, bool table) {
  Launch& l = session.launch();
  std::unique_ptr<Reporter> reporter = std::make_unique<Reporter>();
  if (session.lead()) {
    std::vector<std::unique_ptr<Reporter>> parts;
    if (table) parts.push_back(make_table_reporter(stdout));
    parts.push_back(make_progress_reporter(stderr));
    reporter = make_tee_reporter(std::move(parts));
  }
  const Results results = run_probe(*l.backend, *l.control, *l.watchdog, plan, *reporter);
  Calibration out;
  out.wrong = results.wrong();
  if (!session.lead()) return out;
  const FitResult fit = fit_results(results, gpu);
  out.profile = build_profile(results, fit, inputs);
  out.summary = render_summary(results, fit, gpu);
  out.warnings = probe_warnings(results, fit);
  return out;
}

}  // namespace shardplan::probe
