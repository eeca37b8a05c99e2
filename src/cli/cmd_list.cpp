// `shardplan list models|gpus|links|clusters`: the presets with their key figures.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/table.hpp"

namespace shardplan::cli {

Runner setup_list(CLI::App& sub) {
  struct State {
    std::string what;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  sub.add_option("what", state->what, "models | gpus | links | clusters")->required();
  sub.add_flag("--json", state->json, "Print JSON");
  return [state]() {
    ProfileKind kind;
    const std::string& w = state->what;
    if (w == "models" || w == "model") {
      kind = ProfileKind::model;
    } else if (w == "gpus" || w == "gpu") {
      kind = ProfileKind::gpu;
    } else if (w == "links" || w == "link") {
      kind = ProfileKind::link;
    } else if (w == "clusters" || w == "cluster") {
      kind = ProfileKind::cluster;
    } else {
      throw InputError("list", "'" + w + "' is not one of: models, gpus, links, clusters");
    }
    const auto presets = list_presets(kind);
    if (state->json) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& p : presets) {
        nlohmann::json figures = nlohmann::json::object();
        for (const auto& [k, v] : p.figures) figures[k] = v;
        a.push_back(
            {{"name", p.name}, {"aliases", p.aliases}, {"figures", figures}, {"source", p.source}});
      }
      print_json({{"kind", w}, {"presets", a}});
      return 0;
    }
    std::vector<Table::Column> cols{{"name", Table::Align::left}};
    if (!presets.empty()) {
      for (const auto& [k, v] : presets.front().figures) cols.push_back({k, Table::Align::right});
    }
    cols.push_back({"also known as", Table::Align::left});
    Table t(cols);
    for (const auto& p : presets) {
      std::vector<std::string> row{p.name};
      for (const auto& [k, v] : p.figures) row.push_back(v);
      std::string aliases;
      for (const auto& a : p.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
      row.push_back(aliases);
      t.add_row(row);
    }
    std::cout << t.render("");
    std::cout << "\nNames are case-insensitive. Every figure's source is in profiles/" << w
              << "/*.json (`--json` prints them).\n";
    return 0;
  };
}

}  // namespace shardplan::cli
