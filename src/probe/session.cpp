// What the CLI sees of a started back-end (probe.hpp's Session) and the sweep from start to
// calibrated profile: run, fit, build, summarise.
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
std::vector<MathDtype> Session::gemm_dtypes() const {
  return launch_->backend->gemm_dtypes();
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
