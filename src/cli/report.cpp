// `shardplan report PROFILE.json --html FILE`: the charts of a probe profile, written later or
// on another machine than the probe ran on.
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/reports.hpp"

namespace shardplan::cli {

Runner setup_report(CLI::App& sub) {
  auto profile = std::make_shared<std::string>();
  auto html = std::make_shared<std::string>();
  sub.add_option("PROFILE", *profile, "A profile written by `shardplan probe`")->required();
  sub.add_option("--html", *html, "The HTML report to write")->required();
  return [profile, html]() {
    const std::string text = read_text_file(*profile, "PROFILE");
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      throw InputError("PROFILE", "'" + *profile + "' is not a JSON object");
    }
    write_html(*html, probe_report(j, *profile), "--html");
    return 0;
  };
}

}  // namespace shardplan::cli
