// `shardplan report PROFILE.json --html FILE`: the charts of a probe profile, written later or
// on another machine than the probe ran on.
#include <fmt/format.h>

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
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      // nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3, column
      // 5: ..."; the part after the bracket says where and what.
      const std::string what = e.what();
      const size_t cut = what.find("] ");
      throw InputError("PROFILE",
                       fmt::format("'{}' is not valid JSON: {}", *profile,
                                   cut == std::string::npos ? what : what.substr(cut + 2)));
    }
    if (!j.is_object()) {
      throw InputError("PROFILE", fmt::format("'{}' holds a JSON {}, not the object a profile "
                                              "written by `shardplan probe` is",
                                              *profile, j.type_name()));
    }
    write_html(*html, probe_report(j, *profile), "--html");
    return 0;
  };
}

}  // namespace shardplan::cli
