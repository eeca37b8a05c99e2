// `shardplan report PROFILE.json --html FILE`: the charts of a probe profile, written later or
// on another machine than the probe ran on.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/reports.hpp"

namespace shardplan::cli {

Runner setup_report(CLI::App& sub) {
  auto profile = std::make_shared<std::string>();
  auto html = std::make_shared<std::string>();
  sub.add_option("PROFILE", *profile, "A profile written by `shardplan probe`")->required();
  sub.add_option("--html", *html, "The HTML report to write")->required();
  return [profile, html]() {
    // Malformed JSON is named as such (with its line), apart from JSON that is not an object.
    const nlohmann::json j = read_json_file(*profile, "PROFILE");
    if (!j.is_object()) {
      throw InputError("PROFILE", "'" + *profile + "' is JSON but not an object; give a profile "
                                                   "written by `shardplan probe`");
    }
    write_html(*html, probe_report(j, *profile), "--html");
    return 0;
  };
}

}  // namespace shardplan::cli
