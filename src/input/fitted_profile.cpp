// Reads and writes the fitted step-time constants (profiles/fit/step-time.json).
#include "shardplan/fitted_profile.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "json_fields.hpp"
#include "json_reader.hpp"
#include "reach_fields.hpp"
#include "shardplan/error.hpp"
#include "shardplan/presets.hpp"

namespace shardplan {

FittedConstants fitted_from_text(const std::string& text, const std::string& where) {
  const nlohmann::json j = parse_json(text, where);  // StrictObject reads it in place
  StrictObject o(j, where);
  FittedConstants fit;
  o.string_or("description", "");
  fit.source = o.string("source");
  fit.procedure = o.string("procedure");
  const nlohmann::json& list = o.raw("constants");
  if (!list.is_array()) throw InputError(o.field("constants"), "must be a list of constants");
  for (size_t i = 0; i < list.size(); ++i) {
    StrictObject c(list[i], o.field("constants") + "[" + std::to_string(i) + "]");
    FittedConstant f;
    f.name = c.string("name");
    f.knob = knob_named(f.name);
    if (!f.knob) {
      throw InputError(c.field("name"),
                       "'" + f.name + "' is not a fitted constant of the step-time model "
                       "(`shardplan validate --cross-validate` lists them)");
    }
    f.multiplier = c.positive("multiplier");
    f.cases = c.integer_or("cases", 0);
    c.string_or("figure", "");
    c.finish();
    fit.constants.push_back(f);
  }
  fit.run = o.string_or("run", "");
  if (o.has("interval")) {
    StrictObject iv = o.object("interval");
    fit.interval_low = iv.number("low");
    fit.interval_high = iv.number("high");
    fit.interval_basis = iv.string("basis");
    fit.interval_cases = iv.integer_or("cases", 0);
    fit.interval_groups = iv.integer_or("groups", 0);
    iv.finish();
    if (!(fit.interval_low > -1 && fit.interval_low <= 0 && fit.interval_high >= 0)) {
      throw InputError(o.field("interval"),
                       "low must be in (-1, 0] and high at least 0 (measured / predicted step - "
                       "1)");
    }
  }
  if (o.has("reach")) {
    StrictObject r = o.object("reach");
    read_fields(reach_fields(), r, fit.reach);
    r.finish();
  }
  o.finish();
  return fit;
}

std::string fitted_to_text(const FittedConstants& fit) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const FittedConstant& c : fit.constants) {
    list.push_back({{"name", c.name},
                    {"multiplier", std::round(c.multiplier * 1e4) / 1e4},
                    {"cases", c.cases},
                    {"figure", c.knob ? c.knob->figure : std::string()}});
  }
  nlohmann::ordered_json j = {
      {"description",
       "The fitted constants of the step-time model: each a multiplier on a figure the GPU and "
       "framework profiles hold (their own sources say where that figure comes from). The "
       "profile readers apply them. Regenerate, never edit by hand."},
      {"source", fit.source},
      {"procedure", fit.procedure},
      {"constants", list}};
  if (!fit.run.empty()) j["run"] = fit.run;
  if (fit.reach.max_gpus > 0) {
    j["reach"] = nlohmann::ordered_json::parse(write_fields(reach_fields(), fit.reach).dump());
  }
  if (!fit.interval_basis.empty()) {
    // Unrounded: its basis prints the same figures in words.
    j["interval"] = {{"low", fit.interval_low},
                     {"high", fit.interval_high},
                     {"cases", fit.interval_cases},
                     {"groups", fit.interval_groups},
                     {"basis", fit.interval_basis}};
  }
  return j.dump(2) + "\n";
}

const FittedConstants& shipped_fit() {
  static const FittedConstants fit = [] {
    const EmbeddedFile* f = find_embedded("fit/step-time.json");
    return f ? fitted_from_text(f->text, "profiles/fit/step-time.json") : FittedConstants{};
  }();
  return fit;
}

}  // namespace shardplan
