// Self-contained HTML reports: Vega-Lite charts (specs built with nlohmann/json) rendered by the
// vega, vega-lite and vega-embed builds inlined into the page, so the file opens offline and a
// Content-Security-Policy forbids it to fetch anything.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardplan {

/// One chart: a Vega-Lite spec, its title and a one-line caption saying what to read from it.
struct Chart {
  std::string title;
  std::string caption;
  nlohmann::json spec;
};

/// What the page answers, in the banner at its top: whether the plan fits, and why.
enum class VerdictKind {
  fits,          // a plan runs in the device memory (and the host's, with offload)
  does_not_fit,  // the plan asked about needs more memory than the device (or host) has
  no_plan,       // no plan of the space fits or meets the constraints asked for
  measured,      // a probe profile: what was measured, on what
};
/// "fits", "does-not-fit", "no-plan", "measured" (the banner's class and data-verdict).
const char* to_string(VerdictKind kind);

struct Verdict {
  VerdictKind kind = VerdictKind::no_plan;
  std::string reason;  // one or two sentences: the figures behind the verdict
};

struct HtmlReport {
  std::string title;
  Verdict verdict;                   // the banner under the title; every page has one
  std::vector<std::string> notes;    // assumptions and warnings, listed under the banner
  std::vector<std::string> summary;  // lines under the title
  std::vector<Chart> charts;
};

/// An inlined charting library (generated from third_party/charts at build time).
struct ChartLibrary {
  const char* name;
  const char* version;
  const char* code;
};
const std::vector<ChartLibrary>& chart_libraries();

/// The whole page: the title, the verdict banner, the notes, the summary, the charts. When the
/// charts have drawn, a script writes <pre id="shardplan-rendered">{"charts": N, "marks": [...],
/// "errors": [...]}</pre> into it, which the headless-browser test reads.
std::string render_html(const HtmlReport& report);

/// Renders the report and writes it atomically; InputError naming `field` when it cannot.
void write_html(const std::string& path, const HtmlReport& report, const std::string& field);

}  // namespace shardplan
