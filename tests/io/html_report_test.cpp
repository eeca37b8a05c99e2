// The HTML page: self-contained (libraries inline, a policy that forbids fetches), its specs
// valid JSON that cannot close the script element they sit in.
#include "shardplan/html_report.hpp"

#include <doctest/doctest.h>

#include <string>

#include "support.hpp"

using namespace shardplan;

TEST_CASE("render_html inlines the pinned libraries and forbids every fetch") {
  HtmlReport r;
  r.title = "a <report> & more";
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
