// The HTML page around the charts (see html_report.hpp).
#include "shardplan/html_report.hpp"

#include <fmt/format.h>

#include "shardplan/error.hpp"
#include "shardplan/files.hpp"

namespace shardplan {
namespace {

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON inside <script>: "</" would end the element, so it is written "<\/" (same JSON value).
std::string script_safe(const std::string& json) {
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    out += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') out += '\\';
  }
  return out;
}

// No fetches of any kind; inline scripts and styles only. Vega compiles its expressions with
// the Function constructor, hence 'unsafe-eval' (it grants no network access).
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data:";

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
p.summary { margin: 2px 0; color: #444; font-size: 14px; }
section.chart { margin: 28px 0; border-top: 1px solid #ddd; padding-top: 12px; }
section.chart h2 { font-size: 17px; margin: 0 0 6px; }
p.caption { color: #555; font-size: 13px; margin: 6px 0 0; }
#shardplan-rendered { display: none; }
div.verdict { margin: 10px 0 14px; padding: 10px 14px; border-left: 6px solid; font-size: 15px; }
div.verdict strong { font-size: 17px; margin-right: 8px; letter-spacing: 0.03em; }
div.verdict-fits { background: #e8f5e9; border-color: #2e7d32; }
div.verdict-fits strong { color: #1b5e20; }
div.verdict-does-not-fit, div.verdict-no-plan { background: #fdecea; border-color: #c62828; }
div.verdict-does-not-fit strong, div.verdict-no-plan strong { color: #b71c1c; }
div.verdict-measured { background: #e3f2fd; border-color: #1565c0; }
div.verdict-measured strong { color: #0d47a1; }
ul.notes { margin: 4px 0 12px; padding-left: 20px; color: #5d4037; font-size: 13px; }
)";

// The banner's headline word for each verdict.
const char* headline(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::fits:
      return "FITS";
    case VerdictKind::does_not_fit:
      return "DOES NOT FIT";
    case VerdictKind::no_plan:
      return "NO PLAN";
    case VerdictKind::measured:
      return "MEASURED";
  }
  return "";
}

std::string banner(const Verdict& v) {
  SHARDPLAN_CHECK(!v.reason.empty(), "every HTML page states its verdict and the reason");
  return fmt::format(
      "<div class=\"verdict verdict-{0}\" id=\"shardplan-verdict\" data-verdict=\"{0}\">"
      "<strong>{1}</strong>{2}</div>\n",
      to_string(v.kind), headline(v.kind), escape_html(v.reason));
}

// Embeds every chart, then writes what drew: per chart, the number of data marks in its SVG.
constexpr const char* kDriver = R"(
(function () {
  var specs = JSON.parse(document.getElementById('shardplan-specs').textContent);
  var errors = [];
  var runs = specs.map(function (spec, i) {
    return vegaEmbed('#chart-' + i, spec, {renderer: 'svg', actions: false})
      .catch(function (e) { errors.push('chart ' + i + ': ' + e); });
  });
  Promise.all(runs).then(function () {
    var marks = specs.map(function (_, i) {
      return document.querySelectorAll('#chart-' + i + ' svg .role-mark > *').length;
    });
    var out = document.createElement('pre');
    out.id = 'shardplan-rendered';
    out.textContent = JSON.stringify({charts: specs.length, marks: marks, errors: errors,
                                      violations: window.shardplanViolations,
                                      height: document.documentElement.scrollHeight});
    document.body.appendChild(out);
  });
})();
)";

}  // namespace

const char* to_string(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::fits:
      return "fits";
    case VerdictKind::does_not_fit:
      return "does-not-fit";
    case VerdictKind::no_plan:
      return "no-plan";
    case VerdictKind::measured:
      return "measured";
  }
  return "";
}

std::string render_html(const HtmlReport& report) {
  std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n<title>{}</title>\n"
      "<style>{}</style>\n<script>window.shardplanViolations = [];\n"
      "document.addEventListener('securitypolicyviolation', function (e) {{\n"
      "  window.shardplanViolations.push(e.violatedDirective + ' ' + e.blockedURI); }});\n"
      "</script>\n",
      kPolicy, escape_html(report.title), kStyle);
  for (const ChartLibrary& lib : chart_libraries()) {
    page += fmt::format(
        "<!-- {} {} (BSD-3-Clause, University of Washington Interactive Data Lab) -->\n<script>",
        lib.name, lib.version);
    page += lib.code;
    page += "</script>\n";
  }
  page += "</head>\n<body>\n<h1>" + escape_html(report.title) + "</h1>\n";
  page += banner(report.verdict);
  if (!report.notes.empty()) {
    page += "<ul class=\"notes\">\n";
    for (const std::string& n : report.notes) page += "<li>" + escape_html(n) + "</li>\n";
    page += "</ul>\n";
  }
  for (const std::string& line : report.summary) {
    page += "<p class=\"summary\">" + escape_html(line) + "</p>\n";
  }
  nlohmann::json specs = nlohmann::json::array();
  for (size_t i = 0; i < report.charts.size(); ++i) {
    const Chart& c = report.charts[i];
    page += fmt::format(
        "<section class=\"chart\">\n<h2>{}</h2>\n<div id=\"chart-{}\"></div>\n"
        "<p class=\"caption\">{}</p>\n</section>\n",
        escape_html(c.title), i, escape_html(c.caption));
    specs.push_back(c.spec);
  }
  page += "<script type=\"application/json\" id=\"shardplan-specs\">" + script_safe(specs.dump()) +
          "</script>\n<script>" + kDriver + "</script>\n</body>\n</html>\n";
  return page;
}

void write_html(const std::string& path, const HtmlReport& report, const std::string& field) {
  write_file_atomically(path, render_html(report), field);
}

}  // namespace shardplan
