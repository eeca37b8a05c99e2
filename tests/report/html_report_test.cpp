// The HTML page: self-contained (libraries inline, a policy that forbids fetches), its specs
// valid JSON that cannot close the script element they sit in.
#include "shardplan/html_report.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "shardplan/profiles.hpp"
#include "shardplan/reports.hpp"
#include "support.hpp"

using namespace shardplan;

TEST_CASE("render_html inlines the pinned libraries and forbids every fetch") {
  HtmlReport r;
  r.title = "a <report> & more";
  r.verdict = {VerdictKind::fits, "it fits"};
  r.charts.push_back({"one", "what to read", {{"mark", "bar"}, {"title", "</script><b>"}}});
  r.charts.push_back({"two", "caption", {{"mark", "point"}}});
  const std::string page = render_html(r);
  REQUIRE(chart_libraries().size() == 3);
  for (const ChartLibrary& lib : chart_libraries()) {
    CAPTURE(lib.name);
    CHECK(std::string(lib.code).size() > 10000);
    CHECK(page.find(lib.code) != std::string::npos);
    CHECK(page.find(std::string(lib.name) + " " + lib.version) != std::string::npos);
  }
  CHECK(page.find("default-src 'none'") != std::string::npos);
  CHECK(page.find("a &lt;report&gt; &amp; more") != std::string::npos);
  // The spec's "</script>" is written "<\/script>": the element still ends where it should.
  const auto at = page.find("id=\"shardplan-specs\">");
  REQUIRE(at != std::string::npos);
  const auto start = page.find('>', at) + 1;
  const auto end = page.find("</script>", start);
  const auto specs = nlohmann::json::parse(page.substr(start, end - start));
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].at("title") == "</script><b>");
  CHECK(page.find("id=\"chart-1\"") != std::string::npos);
  CHECK_FALSE(shardplan::test::references_remote(page));
  CHECK(shardplan::test::references_remote(
      "<img src=\"https://example.org/x.png\">"));  // the check can fail
}

namespace {

// The page's banner: its data-verdict attribute and its text (tags stripped).
std::pair<std::string, std::string> banner_of(const std::string& page) {
  const std::string open = "id=\"shardplan-verdict\" data-verdict=\"";
  const size_t at = page.find(open);
  if (at == std::string::npos) return {};
  const size_t kind_end = page.find('"', at + open.size());
  const size_t end = page.find("</div>", kind_end);
  std::string text;
  bool in_tag = false;
  for (char c : page.substr(kind_end + 1, end - kind_end - 1)) {
    if (c == '<' || c == '>')
      in_tag = c == '<';
    else if (!in_tag)
      text += c;
  }
  return {page.substr(at + open.size(), kind_end - at - open.size()), text};
}

// "82.6x the capacity" in a verdict's reason: the ratio printed.
double capacity_ratio(const std::string& reason) {
  const size_t at = reason.find("x the capacity");
  REQUIRE(at != std::string::npos);
  const size_t start = reason.find_last_not_of("0123456789.", at - 1) + 1;
  return std::stod(reason.substr(start, at - start));
}

ClusterSpec h100s(int gpus) {
  ClusterOptions c;
  c.gpu = "H100-SXM";
  c.gpus = gpus;
  return build_cluster(c);
}

PlanningResult planned(const ModelSpec& model, const TrainingSpec& training,
                       const ClusterSpec& cluster) {
  PlanningRequest rq;
  rq.search.threads = 1;
  return plan_cluster(model, training, cluster, rq);
}

}  // namespace

TEST_CASE("render_html puts the verdict banner under the title, before any chart") {
  HtmlReport r;
  r.title = "t";
  r.verdict = {VerdictKind::does_not_fit, "needs 6,580 GiB <per> device"};
  r.notes = {"sequence capped at 8192"};
  r.charts.push_back({"one", "caption", {{"mark", "bar"}}});
  const std::string page = render_html(r);
  const auto [kind, text] = banner_of(page);
  CHECK(kind == "does-not-fit");
  CHECK(text ==
        "DOES NOT FIT"
        "needs 6,580 GiB &lt;per&gt; device");
  const size_t banner = page.find("shardplan-verdict");
  CHECK(page.find("<h1>") < banner);
  CHECK(banner < page.find("<section class=\"chart\">"));
  CHECK(banner < page.find("<li>sequence capped at 8192</li>"));
  CHECK(std::string(to_string(VerdictKind::no_plan)) == "no-plan");
}

TEST_CASE("estimate's page says DOES NOT FIT for Llama 3.1 405B on 8 H100s") {
  const ModelSpec model = load_model("llama-3.1-405b");
  const TrainingSpec tr = test::training(8192, 64);
  ParallelPlan p = test::plan(8, 1, 1);
  const ClusterSpec c = h100s(8);
  const Estimate e = estimate(model, tr, p, c);
  const std::string page = render_html(estimate_report(e, model, tr, p, c));
  const auto [kind, reason] = banner_of(page);
  CHECK(kind == "does-not-fit");
  CHECK(test::contains(reason, "79.65 GiB"));  // an H100-SXM's usable memory (its profile)
  // ZeRO-0 holds the mixed-precision model states whole: 16 B/param (Rajbhandari et al. 2020,
  // Sec. 3.1) x 405.85B = 6,047 GiB, 75.9x 79.65 GiB before any activation.
  const double ratio = capacity_ratio(reason);
  CHECK(ratio > 75.9);
  CHECK(ratio < 100);
  CHECK(test::contains(reason, "if it fit"));
  // The summary's step time is no headline of its own: it says the plan does not run.
  CHECK(test::contains(page, "(if it fit: it does not)"));

  // Llama 3.1 70B on 64 of them, dp 2 x tp 8 x pp 4 with ZeRO-1, fits (the README's example).
  const ModelSpec m70 = load_model("llama-3.1-70b");
  const TrainingSpec tr70 = test::training(8192, 256);
  p = test::plan(2, 8, 4);
  p.zero = 1;
  p.recompute = Recompute::selective;
  p.sequence_parallel = true;
  const ClusterSpec c64 = h100s(64);
  const Estimate fits = estimate(m70, tr70, p, c64);
  REQUIRE(fits.memory.fits);
  const auto [fit_kind, fit_reason] =
      banner_of(render_html(estimate_report(fits, m70, tr70, p, c64)));
  CHECK(fit_kind == "fits");
  CHECK(test::contains(fit_reason, "to spare"));
}

TEST_CASE("plan's page says NO PLAN for 405B on 8 H100s and FITS for 70B on 64") {
  const ModelSpec big = load_model("llama-3.1-405b");
  const TrainingSpec tr = test::training(8192, 64);
  const ClusterSpec c8 = h100s(8);
  const auto [kind, reason] =
      banner_of(render_html(plan_report(planned(big, tr, c8), big, tr, c8)));
  CHECK(kind == "no-plan");
  // Even with the optimizer state in host memory, bf16 weights and gradients (4 B/param)
  // sharded over all 8 GPUs need 405.85B x 4 / 8 = 189 GiB per device: 2.4x the capacity.
  CHECK(capacity_ratio(reason) >= 2.3);
  CHECK(test::contains(reason, "79.65 GiB"));

  const ModelSpec model = load_model("llama-3.1-70b");
  const TrainingSpec tr70 = test::training(8192, 256);
  const ClusterSpec c64 = h100s(64);
  const auto [fits, why] =
      banner_of(render_html(plan_report(planned(model, tr70, c64), model, tr70, c64)));
  CHECK(fits == "fits");
  CHECK(test::contains(why, "rung runs it"));
  CHECK(test::contains(why, "to spare"));
}

TEST_CASE("provision's page says NO PLAN, naming the deadline, when none can meet it") {
  const ModelSpec model = load_model("llama-3.1-8b");
  TrainingSpec tr = test::training(8192, 0);
  tr.tokens = 1e12;
  ProvisionRequest rq;
  rq.offers = {{h100s(8), 3.0, "test"}};
  rq.counts = {8};
  rq.planning.search.threads = 1;
  // 6 x 8.03B x 1e12 = 4.8e22 FLOPs (Kaplan et al. 2020, C = 6ND) on 8 x 989 TFLOP/s (H100 SXM
  // dense bf16, NVIDIA datasheet) takes 70 days at 100% MFU: a one-day deadline cannot be met.
  rq.deadline_s = 86400;
  const ProvisionResult r = provision(model, tr, rq);
  const auto [kind, reason] = banner_of(render_html(provision_report(r, rq, model)));
  CHECK(kind == "no-plan");
  CHECK(test::contains(reason, "deadline of 24.0 h"));
  rq.deadline_s = 0;
  const ProvisionResult open = provision(model, tr, rq);
  CHECK(banner_of(render_html(provision_report(open, rq, model))).first == "fits");
}

TEST_CASE("a probe page says what was measured, and that the mpi back-end measured CPUs") {
  const std::string path = std::string(SHARDPLAN_TEST_DATA) + "/probe/probe-mpi-2ranks.json";
  const auto profile = nlohmann::json::parse(test::read_file(path));
  const auto [kind, reason] = banner_of(render_html(probe_report(profile, path)));
  CHECK(kind == "measured");
  CHECK(test::contains(reason, "2 ranks on 1 host with the mpi back-end"));
  CHECK(test::contains(reason, "Measured on CPUs"));
}
