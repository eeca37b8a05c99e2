// --from FILE: the launcher config's settings become the planning flags they stand for, so the
// file's plan is checked and priced exactly as the same flags would be; messages name the file's
// key rather than the flag.
#include "from_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "planning_flags.hpp"
#include "shardplan/describe.hpp"
#include "shardplan/emit.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {
namespace {

void fill(FromFile& f, const PlanningOptions& user, const ConfigSetting& s) {
  const PlanningFlag* row = find_planning_flag(s.flag);
  SHARDPLAN_CHECK(row != nullptr, "a config reader set a flag the planning table lacks");
  const bool on = s.value == "true";
  if (flag_given(user, *row)) {
    const bool same = row->text ? user.*row->text == s.value : on;
    if (same || s.launcher_default) return;  // the user's flag stands
    throw InputError(s.flag, fmt::format("{} sets it ({} = {}); drop {} or edit the file", user.from,
                                         s.key, s.value, s.flag));
  }
  if (row->text) {
    f.options.*row->text = s.value;
  } else {
    f.options.*row->on = on;
  }
  f.origin[s.flag] = user.from + ": " + s.key;
}

// The value of the model field an architecture flag overrides, as that flag's text.
std::string model_value(const ModelSpec& m, const std::string& flag) {
  const std::map<std::string, int> ints = {
      {"--layers", m.layers},   {"--hidden", m.hidden},         {"--heads", m.heads},
      {"--kv-heads", m.kv_heads}, {"--ffn-hidden", m.ffn_hidden}, {"--experts", m.experts},
      {"--top-k", m.experts_per_token}, {"--vocab", m.vocab}};
  if (const auto it = ints.find(flag); it != ints.end()) return std::to_string(it->second);
  if (flag == "--mlp") return to_string(m.mlp);
  if (flag == "--norm") return to_string(m.norm);
  if (flag == "--positions") return to_string(m.positions);
  if (flag == "--embeddings") return m.tied_embeddings ? "tied" : "untied";
  if (flag == "--bias") {
    if (m.qkv_bias && m.out_bias && m.mlp_bias) return "all";
    if (!m.qkv_bias && !m.out_bias && !m.mlp_bias) return "none";
    return m.qkv_bias && !m.out_bias && !m.mlp_bias ? "qkv" : "mixed";
  }
  return "";
}

// With --model beside a script that spells the architecture out, the script's shapes that agree
// with the model are no overrides; those that differ are, and a note says so.
void drop_agreeing_shapes(FromFile& f, const PlanningOptions& user) {
  if (!f.config.holds_model || user.model.empty()) return;
  PlanningOptions model_only;
  model_only.model = user.model;
  const ModelSpec m = resolve_model(model_only);
  auto& settings = f.config.settings;
  for (auto it = settings.begin(); it != settings.end();) {
    const std::string value = model_value(m, it->flag);
    if (value.empty()) {
      ++it;
      continue;
    }
    if (value != it->value) {
      f.notes.push_back(fmt::format("{}: {} {} replaces {}'s {}", user.from, it->key, it->value,
                                    m.name, value));
      ++it;
    } else {
      it = settings.erase(it);
    }
  }
}

bool names_model(const PlanningOptions& o) {
  return !o.model.empty() || !o.params.empty() || !o.layers.empty();
}

// Where each field of the plan came from: the file's keys, the launcher's defaults where the
// file is silent, and the user's flags.
std::string provenance(const FromFile& f, const PlanningOptions& user) {
  std::vector<std::string> file, defaults, flags;
  for (const ConfigSetting& s : f.config.settings) {
    const PlanningFlag* row = find_planning_flag(s.flag);
    if (row && flag_given(user, *row)) continue;
    const std::string shown = s.value == "true" ? s.flag : s.flag + " " + s.value;
    if (s.launcher_default) {
      defaults.push_back(shown);
    } else if (s.flag != "--framework") {
      file.push_back(fmt::format("{} ({})", shown, s.key));
    }
  }
  for (const PlanningFlag& row : planning_flags())
    if (flag_given(user, row)) flags.emplace_back(row.name);
  auto list = [](const std::vector<std::string>& v) {
    return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, ", "));
  };
  return fmt::format("fields from {}: {}; {}'s defaults: {}; from flags: {}", f.config.path,
                     list(file), launcher_title(f.config.format), list(defaults), list(flags));
}

void add_notes(FromFile& f, const PlanningOptions& user) {
  const LauncherConfig& c = f.config;
  f.notes.push_back(fmt::format(
      "read {} ({} {}): {} settings; the plan, model and training below are the file's, "
      "flags fill only what it leaves out",
      c.path, launcher_title(c.format), launcher_row(c.format).config_kind, c.settings.size()));
  f.notes.push_back(provenance(f, user));
  for (const std::string& d : c.defaults) f.notes.push_back(c.path + " leaves to defaults: " + d);
  for (const std::string& n : c.notes) f.notes.push_back(c.path + ": " + n);
  if (c.unknown.empty()) return;
  std::string keys;
  for (const std::string& k : c.unknown) {
    if (!keys.empty()) keys += ", ";
    keys += k;
  }
  // A note, not an error: launchers take hundreds of keys that change neither memory nor time;
  // a key within two edits of a plan key is refused by the reader as a likely misspelling.
  f.notes.push_back(fmt::format("{}: {} key{} shardplan does not know, not used: {}", c.path,
                                c.unknown.size(), c.unknown.size() == 1 ? "" : "s", keys));
}

// Stages given as layers per virtual stage, or Megatron-LM's lighter ends, once the model's
// layers are known.
void stage_layout(FromFile& f) {
  const LauncherConfig& c = f.config;
  PlanningOptions& o = f.options;
  if (c.stages.layers_per_stage == 0 && !c.embedding_counts_as_layer && !c.loss_counts_as_layer)
    return;
  const ModelSpec m = resolve_model(o);
  if (!m.has_architecture()) return;
  const int pp = static_cast<int>(parse_int_or(o.pp, "--pp", 1));
  const StagesByLayers& s = c.stages;
  if (s.layers_per_stage > 0 && pp > 1) {
    const int total = m.layers + s.first_less + s.last_less;
    if (total % s.layers_per_stage != 0 || (total / s.layers_per_stage) % pp != 0) {
      throw InputError(c.path + ": " + s.key,
                       fmt::format("{} layers ({} + {} lighter first + {} lighter last) in stages "
                                   "of {} do not make a whole number of stages per pipeline rank "
                                   "({})",
                                   total, m.layers, s.first_less, s.last_less, s.layers_per_stage,
                                   pp));
    }
    o.interleave = std::to_string(total / s.layers_per_stage / pp);
    f.origin["--interleave"] = c.path + ": " + s.key;
    if (s.first_less != 0) o.first_stage_layers = std::to_string(s.layers_per_stage - s.first_less);
    if (s.last_less != 0) o.last_stage_layers = std::to_string(s.layers_per_stage - s.last_less);
  }
  // --account-for-embedding/loss-in-pipeline-split: the split counts the embedding and the loss
  // as one layer each, so the end stages hold one transformer layer fewer.
  const int chunks = pp * static_cast<int>(parse_int_or(o.interleave, "--interleave", 1));
  const int per = (m.layers + (c.embedding_counts_as_layer ? 1 : 0) +
                   (c.loss_counts_as_layer ? 1 : 0)) / std::max(1, chunks);
  if (c.embedding_counts_as_layer && pp > 1) o.first_stage_layers = std::to_string(per - 1);
  if (c.loss_counts_as_layer && pp > 1) o.last_stage_layers = std::to_string(per - 1);
}

// A message about a flag the file filled names the file's key instead.
template <typename F>
Inputs naming_keys(const FromFile& f, F&& resolve) {
  try {
    return resolve();
  } catch (const InputError& e) {
    const auto it = f.origin.find(e.field());
    if (it == f.origin.end()) throw;
    throw InputError(it->second, e.message() + " (" + e.field() + " in shardplan's terms)");
  }
}

}  // namespace

void add_from_option(CLI::App& app, PlanningOptions& o) {
  app.add_option("--from", o.from,
                 "Plan from a launcher config: Megatron-LM script or argument list (.sh), "
                 "DeepSpeed JSON (.json, with --model), torchtitan TOML, accelerate YAML (with "
                 "--model)")
      ->group("From a launcher config");
  app.add_option("--set", o.from_set,
                 "NAME=VALUE: a variable the --from script leaves to its environment or to a "
                 "branch it cannot decide (replaces the script's own assignments; repeatable)")
      ->group("From a launcher config");
}

// bash's environment for the script, and the user's --set values.
ConfigInputs config_inputs(const PlanningOptions& o) {
  ConfigInputs in;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) in.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const std::string& s : o.from_set) {
    const size_t eq = s.find('=');
    const std::string name = s.substr(0, eq);
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    // A variable name, or a positional parameter ($1) of the script.
    const bool valid = eq != std::string::npos && eq > 0 &&
                       (std::all_of(name.begin(), name.end(), digit) ||
                        (!digit(name[0]) && std::all_of(name.begin(), name.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                        })));
    if (!valid)
      throw InputError("--set", fmt::format("'{}' is not NAME=VALUE with NAME a shell variable "
                                            "name (letters, digits, _)",
                                            s));
    in.fixed[name] = s.substr(eq + 1);
  }
  return in;
}

FromFile fill_from_file(const PlanningOptions& o) {
  FromFile f;
  f.config = read_launcher_config(read_text_file(o.from, "--from"), o.from, config_inputs(o));
  f.options = o;
  f.options.from.clear();
  ConfigSetting framework{"--framework", f.config.framework, "(the launcher)", false};
  if (!o.framework.empty() && o.framework != f.config.framework) {
    throw InputError("--framework",
                     fmt::format("{} is a {} config, run by {}; drop --framework", o.from,
                                 launcher_title(f.config.format), f.config.framework));
  }
  // A script shardplan wrote names its model: priced as that preset unless --model says another.
  PlanningOptions user = o;
  if (user.model.empty() && user.params.empty() && f.config.holds_model &&
      !f.config.written_for.empty()) {
    try {
      PlanningOptions named;
      named.model = f.config.written_for;
      (void)resolve_model(named);
      user.model = named.model;
      f.options.model = named.model;
      f.origin["--model"] = o.from + ": its header (written by shardplan)";
      f.notes.push_back(fmt::format("{} was written by shardplan for {}: priced as that model "
                                    "(--model gives another)",
                                    o.from, named.model));
    } catch (const InputError&) {
      // Not a preset name (a config.json's model): the script's shapes stand.
    }
  }
  fill(f, user, framework);
  drop_agreeing_shapes(f, user);
  for (const ConfigSetting& s : f.config.settings) fill(f, user, s);
  if (!f.config.holds_model && !names_model(f.options) && !f.config.missing_model.empty())
    throw InputError("--model", o.from + ": " + f.config.missing_model);
  if (!f.config.holds_model && !names_model(f.options)) {
    throw InputError("--model", fmt::format("{} ({} {}) holds no model architecture; give --model "
                                            "NAME|config.json beside --from",
                                            o.from, launcher_title(f.config.format),
                                            launcher_row(f.config.format).config_kind));
  }
  std::vector<std::string> overrides = std::move(f.notes);
  f.notes.clear();
  add_notes(f, o);
  f.notes.insert(f.notes.end(), overrides.begin(), overrides.end());
  if (f.config.holds_model && user.model.empty()) {
    f.notes.push_back(fmt::format(
        "the model is the script's shapes with GPT-3 conventions for what they leave out (the "
        "vocabulary, {}, is the tokenizer's and not in the script); --model NAME prices the "
        "exact model",
        f.options.vocab.empty() ? "51200 assumed" : f.options.vocab));
  }
  return f;
}

namespace {

// The inputs of the flags the file filled in (`from` cleared), calibrated as resolve_inputs does.
Inputs flag_inputs(const PlanningOptions& filled) {
  Inputs in = resolve_flag_inputs(filled);
  apply_calibration(filled, in);
  return in;
}

}  // namespace

Inputs resolve_from_file(const PlanningOptions& o) {
  FromFile f = fill_from_file(o);
  return naming_keys(f, [&] {
    stage_layout(f);
    Inputs in = flag_inputs(f.options);
    const int k = f.config.default_accumulation;
    if (k > 0 && f.options.global_batch.empty()) {
      const long long global = static_cast<long long>(in.plan.dp) * in.plan.micro_batch * k;
      f.options.global_batch = std::to_string(global);
      in = flag_inputs(f.options);
      f.notes.push_back(fmt::format(
          "{} gives no global batch: {} = micro-batch {} x data parallel {}{}, {}'s default "
          "(--global-batch sets another)",
          o.from, global, in.plan.micro_batch, in.plan.dp, k > 1 ? fmt::format(" x {}", k) : "",
          launcher_title(f.config.format)));
    }
    in.notes.insert(in.notes.begin(), f.notes.begin(), f.notes.end());
    return in;
  });
}

FileVersusSearch file_versus_search(const std::string& path, const Inputs& file,
                                    const Candidate* fastest) {
  FileVersusSearch v;
  v.path = path;
  v.file = estimate(file.model, file.training, file.plan, file.cluster);
  // Under 1% is inside the model's own rounding: not worth a change of plan.
  if (fastest && fastest->step_s < 0.99 * v.file.step_s) {
    v.faster = *fastest;
    v.speedup = v.file.step_s / fastest->step_s;
  }
  return v;
}

std::string render(const FileVersusSearch& v, const Inputs& file) {
  const Estimate& e = v.file;
  std::string out = fmt::format(
      "From {}: {}: step {}, {:.0f} tokens/s, MFU {:.0f}%, {} of {} per device ({})\n",
      v.path, describe(file.plan), format_seconds(e.step_s),
      e.throughput.tokens_per_s, 100 * e.throughput.mfu, format_gib(e.memory.total_bytes()),
      format_gib(e.memory.capacity_bytes), e.memory.fits ? "fits" : "does not fit");
  if (v.faster) {
    out += fmt::format("Faster: {}: step {}, {:.2f}x the file's speed ({:.0f} tokens/s)\n",
                       describe(v.faster->plan), format_seconds(v.faster->step_s), v.speedup,
                       v.faster->tokens_per_s);
  } else {
    out += "Faster: nothing the search found beats the file's plan by more than 1%\n";
  }
  return out;
}

nlohmann::json to_json(const FileVersusSearch& v, const Inputs& file) {
  nlohmann::json j = {{"path", v.path},
                      {"plan", to_json(file.plan)},
                      {"step_s", v.file.step_s},
                      {"tokens_per_s", v.file.throughput.tokens_per_s},
                      {"mfu", v.file.throughput.mfu},
                      {"memory_bytes", v.file.memory.total_bytes()},
                      {"fits", v.file.memory.fits},
                      {"speedup", v.speedup}};
  j["faster"] = v.faster ? nlohmann::json{{"plan", to_json(v.faster->plan)},
                                          {"step_s", v.faster->step_s},
                                          {"tokens_per_s", v.faster->tokens_per_s}}
                         : nlohmann::json(nullptr);
  return j;
}

}  // namespace shardplan::cli
