// The --html reports as a person sees them: each kind rendered by headless Chromium, every chart
// must have drawn marks, the page must have made no network request (Chromium's net log) and hit
// no Content-Security-Policy violation. Writes a screenshot of each kind for docs/.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::make_temp_dir;
using shardplan::test::read_file;
using shardplan::test::run_cli;
using shardplan::test::run_command;

namespace {

struct Kind {
  const char* name;
  std::string args;  // shardplan arguments before --html FILE
  size_t charts;
  int status;           // the command's exit status (1: does not fit, no plan)
  const char* verdict;  // the banner's data-verdict
};

// The banner's verdict as the browser built the page: data-verdict of #shardplan-verdict.
std::string verdict_in(const std::string& dom) {
  const std::string open = "id=\"shardplan-verdict\" data-verdict=\"";
  const size_t at = dom.find(open);
  if (at == std::string::npos) return "";
  return dom.substr(at + open.size(), dom.find('"', at + open.size()) - at - open.size());
}

std::string chromium(const std::string& flags, const std::string& html) {
  return std::string(SHARDPLAN_CHROMIUM) +
         " --headless --no-sandbox --disable-gpu --no-first-run --disable-sync "
         "--disable-background-networking --disable-component-update --disable-default-apps "
         "--disable-extensions --host-resolver-rules='MAP * ~NOTFOUND' "
         "--virtual-time-budget=30000 " +
         flags + " file://" + html + " 2>/dev/null";
}

// The marker the page writes once every chart has been embedded (html_report.cpp).
nlohmann::json rendered(const std::string& dom) {
  const std::string open = "<pre id=\"shardplan-rendered\">";
  const size_t start = dom.find(open);
  if (start == std::string::npos) return nullptr;
  const size_t end = dom.find("</pre>", start);
  std::string text = dom.substr(start + open.size(), end - start - open.size());
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""},
                                 {"&lt;", "<"},
                                 {"&gt;", ">"},
                                 {"&amp;", "&"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      text.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return nlohmann::json::parse(text);
}

// The URLs a page asked for, from Chromium's net log: URL_REQUEST_START_JOB events made on a
// page's behalf (an initiator origin; the browser's own update and sign-in checks have "not an
// origin").
std::vector<std::string> page_requests(const std::string& netlog_path) {
  const auto log = nlohmann::json::parse(read_file(netlog_path));
  const int start_job = log.at("constants").at("logEventTypes").at("URL_REQUEST_START_JOB");
  std::vector<std::string> urls;
  for (const auto& e : log.at("events")) {
    if (e.value("type", -1) != start_job || !e.contains("params")) continue;
    const auto& p = e.at("params");  // the begin event; its end event carries no URL
    if (p.contains("url") && p.value("initiator", "") != "not an origin")
      urls.push_back(p.at("url"));
  }
  return urls;
}

void check_kind(const Kind& kind, const std::string& dir) {
  CAPTURE(kind.name);
  const std::string html = dir + "/" + kind.name + ".html";
  const auto made = run_cli(kind.args + " --html " + html);
  REQUIRE(made.status == kind.status);
  const std::string page = read_file(html);
  CHECK(page.find("Content-Security-Policy") != std::string::npos);
  // No resource is referenced by URL: no src/href attribute and no CSS url() pointing out.
  CHECK_FALSE(shardplan::test::references_remote(page));

  const std::string netlog = dir + "/" + kind.name + ".netlog.json";
  const auto dom = run_command(chromium("--log-net-log=" + netlog + " --dump-dom", html));
  REQUIRE(dom.status == 0);
  const nlohmann::json r = rendered(dom.out);
  REQUIRE_MESSAGE(!r.is_null(), "the page never finished drawing its charts");
  CHECK(verdict_in(dom.out) == kind.verdict);
  CHECK(r.at("errors").empty());
  CHECK(r.at("violations").empty());
  REQUIRE(r.at("charts") == kind.charts);
  REQUIRE(r.at("marks").size() == kind.charts);
  for (size_t i = 0; i < kind.charts; ++i) {
    CAPTURE(i);
    CHECK(r.at("marks")[i].get<int>() > 0);
  }
  CHECK(page_requests(netlog).empty());

  const std::string png = std::string(SHARDPLAN_SCREENSHOT_DIR) + "/" + kind.name + ".png";
  const int height = std::min(8000, r.at("height").get<int>() + 20);
  const auto shot = run_command(chromium(
      "--hide-scrollbars --window-size=1200," + std::to_string(height) + " --screenshot=" + png,
      html));
  CHECK(shot.status == 0);
  std::ifstream in(png, std::ios::binary | std::ios::ate);
  CHECK(in.good());
  CHECK(static_cast<long>(in.tellg()) > 20000);  // a drawn page, not a blank one
}

}  // namespace

TEST_CASE("the net log check sees a page that fetches") {
  // The control: without the policy, a page that loads an image and fetches a script is caught.
  const std::string dir = make_temp_dir();
  const std::string html = dir + "/fetches.html";
  shardplan::test::write_file(html,
                              "<html><body><img src=\"https://example.org/x.png\"><script>"
                              "fetch('http://example.com/a.js').catch(function(){})</script>"
                              "</body></html>");
  const auto r = run_command(chromium("--log-net-log=" + dir + "/net.json --dump-dom", html));
  REQUIRE(r.status == 0);
  const auto urls = page_requests(dir + "/net.json");
  REQUIRE(urls.size() == 2);
  CHECK(std::find(urls.begin(), urls.end(), "https://example.org/x.png") != urls.end());
}

TEST_CASE("every --html kind renders in Chromium, all charts drawn, no request made") {
  const std::string dir = make_temp_dir();
  run_command("mkdir -p " + std::string(SHARDPLAN_SCREENSHOT_DIR));
  const std::vector<Kind> kinds = {
      {"plan", "plan --model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 256", 5, 0,
       "fits"},
      {"plan-no-plan", "plan --model llama-3.1-405b --gpu H100-SXM --gpus 8 --global-batch 64", 1,
       1, "no-plan"},
      {"estimate",
       "estimate --model llama-3.1-70b --gpu H100-SXM --gpus 64 --tp 8 --pp 4 --zero 1 "
       "--global-batch 256 --recompute selective --sequence-parallel --interleave 2 "
       "--tokens 2T --gpu-hour-cost 2.5",
       4, 0, "fits"},  // memory, step, communication, the training run
      {"estimate-does-not-fit",
       "estimate --model llama-3.1-405b --gpu H100-SXM --gpus 8 --global-batch 64", 3, 1,
       "does-not-fit"},
      {"provision",
       "provision --model llama-3.1-70b --tokens 2T --gpu H100-SXM,H200,B200,A100-80GB "
       "--gpus 64,128,256,512 --deadline 40d",
       3, 0, "fits"},
      {"probe", "report " + std::string(SHARDPLAN_TEST_DATA) + "/probe/probe-mpi-2ranks.json", 3, 0,
       "measured"},
  };
  REQUIRE(kinds.size() == 6);
  for (const Kind& k : kinds) check_kind(k, dir);
}
