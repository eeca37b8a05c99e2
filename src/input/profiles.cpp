// Loading GPU, link and cluster profiles, embedded or from files, with a source for every figure.
#include "shardplan/profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string_view>

#include "json_reader.hpp"
#include "model_json.hpp"
#include "profile_parts.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/error.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/names.hpp"
#include "shardplan/units.hpp"

namespace shardplan {
namespace {

const char* folder_of(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::gpu:
      return "gpus/";
    case ProfileKind::link:
      return "links/";
    case ProfileKind::cluster:
      return "clusters/";
    case ProfileKind::model:
      return "models/";
  }
  return "";
}

const char* noun_of(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::gpu:
      return "GPU";
    case ProfileKind::link:
      return "link";
    case ProfileKind::cluster:
      return "cluster";
    case ProfileKind::model:
      return "model";
  }
  return "";
}

struct Preset {
  std::string path;  // "profiles/gpus/h100-sxm.json"
  nlohmann::json json;
};

// An embedded profile, parsed on first use and kept: the one cache behind find_preset and
// presets(). Map nodes never move, so the reference stays valid.
const Preset& parsed_preset(const EmbeddedFile& f) {
  static std::mutex mutex;
  static std::map<std::string, Preset, std::less<>> parsed;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(std::string_view(f.path));
  if (it == parsed.end()) {
    const std::string where = "profiles/" + std::string(f.path);
    it = parsed.emplace(f.path, Preset{where, parse_json(f.text, where)}).first;
  }
  return it->second;
}

// Every embedded profile of a kind, parsed (for listing them all; a lookup by name parses only
// the one it finds).
std::vector<const Preset*> presets(ProfileKind kind) {
  std::vector<const Preset*> out;
  const std::string folder = folder_of(kind);
  for (const EmbeddedFile& f : embedded_profiles()) {
    if (std::string_view(f.path).rfind(folder, 0) == 0) out.push_back(&parsed_preset(f));
  }
  return out;
}

std::vector<std::string> names_of(const nlohmann::json& j) {
  std::vector<std::string> names{j.value("name", std::string())};
  if (j.contains("aliases")) {
    for (const auto& a : j.at("aliases")) names.push_back(a.get<std::string>());
  }
  return names;
}

// The preset called `name` (or with it as an alias), parsed on first use: only that profile's
// JSON is read, the names coming from the index the build wrote beside each file.
const Preset* find_preset(ProfileKind kind, const std::string& name) {
  const std::string key = lowered(name) + '\n';
  const std::string folder = folder_of(kind);
  for (const EmbeddedFile& f : embedded_profiles()) {
    const std::string_view path = f.path;
    const std::string_view names = f.names;
    if (path.rfind(folder, 0) != 0) continue;
    for (size_t at = 0; at < names.size(); at = names.find('\n', at) + 1) {
      if (names.compare(at, key.size(), key) == 0) return &parsed_preset(f);
    }
  }
  return nullptr;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".json");
}

[[noreturn]] void unknown_preset(ProfileKind kind, const std::string& name,
                                 const std::string& field) {
  std::vector<std::string> all;
  for (const Preset* p : presets(kind)) all.push_back(p->json.value("name", std::string()));
  const auto near = nearest_names(name, all);
  std::string hint;
  for (const auto& n : near) hint += (hint.empty() ? "" : ", ") + n;
  throw InputError(field, fmt::format("unknown {} '{}'; nearest: {} (see `shardplan list {}s`, "
                                      "or give a path to a profile file)",
                                      noun_of(kind), name, hint, lowered(noun_of(kind))));
}

}  // namespace

// The profile's JSON for a preset name or a file path.
std::pair<nlohmann::json, std::string> resolve_profile(ProfileKind kind, const std::string& name,
                                                       const std::string& field) {
  if (const Preset* p = find_preset(kind, name)) return {p->json, p->path};
  if (looks_like_path(name)) return {parse_json(read_text_file(name, field), name), name};
  unknown_preset(kind, name, field);
}

void require_sources(StrictObject& o, const std::vector<std::string>& figures) {
  if (!o.has("sources"))
    throw InputError(o.field("sources"), "missing: every figure needs a source");
  StrictObject sources = o.object("sources");
  for (const auto& key : figures) {
    if (o.has(key)) sources.string(key);
  }
  sources.finish();
}

namespace {

std::vector<EfficiencyPoint> read_curve(StrictObject& o, const std::string& key) {
  std::vector<EfficiencyPoint> curve;
  const auto& raw = o.raw(key);
  if (!raw.is_array() || raw.empty()) {
    throw InputError(o.field(key), "expected [[flops, efficiency], ...] with ascending flops");
  }
  for (const auto& point : raw) {
    if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number()) {
      throw InputError(o.field(key), "each point is [flops of one GEMM, share of peak]");
    }
    EfficiencyPoint p{point[0].get<double>(), point[1].get<double>()};
    if (!(p.flops > 0) || !(p.efficiency > 0) || p.efficiency > 1 ||
        (!curve.empty() && p.flops <= curve.back().flops)) {
      throw InputError(o.field(key), "points need flops > 0 ascending and 0 < efficiency <= 1");
    }
    curve.push_back(p);
  }
  return curve;
}

double fraction(StrictObject& o, const std::string& key) {
  const double v = o.positive(key);
  if (v > 1) throw InputError(o.field(key), "is a share of peak; must be at most 1");
  return v;
}

}  // namespace

GpuSpec gpu_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  GpuSpec g;
  g.name = o.string("name");
  o.strings_or_empty("aliases");
  o.string_or("description", "");
  g.intra_link = o.string_or("intra_link", "");
  g.inter_link = o.string_or("inter_link", "");
  g.system = o.string_or("system", "");
  g.generation = o.string_or("generation", "");
  g.accuracy_class = o.string_or("accuracy_class", "");
  g.memory_bytes = o.positive("memory_gib") * kGiB;
  StrictObject peaks = o.object("peak_tflops");
  for (int i = 0; i < kMathDtypes; ++i) {
    const char* dtype = to_string(static_cast<MathDtype>(i));
    g.peak_flops[i] = peaks.number_or(dtype, 0) * kTera;
  }
  peaks.finish();
  g.hbm_bytes_per_s = o.positive("hbm_gb_per_s") * kGB;
  g.gemm_efficiency = read_curve(o, "gemm_efficiency");
  g.attention_efficiency = fraction(o, "attention_efficiency");
  g.attention_half_seq = o.number_or("attention_half_seq", 0);
  g.attention_half_head_dim = o.number_or("attention_half_head_dim", 0);
  if (g.attention_half_seq < 0 || g.attention_half_head_dim < 0) {
    throw InputError(o.field(g.attention_half_seq < 0 ? "attention_half_seq"
                                                      : "attention_half_head_dim"),
                     "is a length (tokens or head dim); must be 0 (a flat curve) or more");
  }
  if (o.has("gemm_dtype_share")) {
    StrictObject shares = o.object("gemm_dtype_share");
    for (int i = 0; i < kMathDtypes; ++i) {
      const char* dtype = to_string(static_cast<MathDtype>(i));
      if (!shares.has(dtype)) continue;
      const double v = shares.positive(dtype);
      if (v > 1.5) {
        throw InputError(shares.field(dtype),
                         "is the share of the bf16 GEMM efficiency this dtype reaches; give a "
                         "value between 0 and 1.5");
      }
      g.gemm_dtype_share[i] = v;
    }
    shares.finish();
  }
  g.memory_efficiency = fraction(o, "memory_efficiency");
  g.power_derate = o.number_or("power_derate", 1);
  if (g.power_derate <= 0 || g.power_derate > 1) {
    throw InputError(o.field("power_derate"),
                     "is the share of its full-power sibling's efficiencies a power-limited part "
                     "reaches; must be above 0 and at most 1");
  }
  g.kernel_overhead_s = o.number("kernel_overhead_us") * 1e-6;
  g.sm_count = o.number_or("sm_count", 0);
  if (g.sm_count < 0 || g.sm_count != std::floor(g.sm_count) || g.sm_count > 10000) {
    throw InputError(o.field("sm_count"),
                     "is the GPU's streaming multiprocessors (AMD: compute units), a whole number "
                     "such as 132; 0 or absent leaves GEMM wave quantization out");
  }
  g.overlap_slowdown = o.number("overlap_slowdown");
  if (g.overlap_slowdown < 0 || g.overlap_slowdown > 1) {
    throw InputError(o.field("overlap_slowdown"),
                     "is a share of compute time; must be between 0 and 1");
  }
  g.context_bytes = o.number("context_gib") * kGiB;
  g.calibrated = o.boolean_or("calibrated", false);
  g.list_price_usd_per_gpu_hour = o.number_or("list_price_usd_per_gpu_hour", 0);
  if (g.list_price_usd_per_gpu_hour < 0) {
    throw InputError(o.field("list_price_usd_per_gpu_hour"), "a price cannot be negative");
  }
  g.host = host_from_json(o);
  g.source = where;
  require_sources(o, {"memory_gib",
                      "peak_tflops",
                      "hbm_gb_per_s",
                      "gemm_efficiency",
                      "gemm_dtype_share",
                      "attention_half_seq",
                      "attention_half_head_dim",
                      "attention_efficiency",
                      "memory_efficiency",
                      "kernel_overhead_us",
                      "sm_count",
                      "overlap_slowdown",
                      "context_gib",
                      "intra_link",
                      "inter_link",
                      "system",
                      "list_price_usd_per_gpu_hour",
                      "generation",
                      "accuracy_class",
                      "power_derate"});
  if (g.list_price_usd_per_gpu_hour > 0) {
    g.list_price_source = j.at("sources").at("list_price_usd_per_gpu_hour").get<std::string>();
  }
  o.finish();
  if (!g.calibrated) {
    // The profile ships its full-power sibling's efficiencies; measured ones are the part's own.
    for (EfficiencyPoint& p : g.gemm_efficiency) p.efficiency *= g.power_derate;
    g.attention_efficiency *= g.power_derate;
    g.memory_efficiency *= g.power_derate;
  }
  apply_fitted(shipped_fit(), g);
  return g;
}

LinkProfile link_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  LinkProfile p;
  LinkSpec& l = p.link;
  l.name = o.string("name");
  o.strings_or_empty("aliases");
  o.string_or("description", "");
  l.bytes_per_s = o.positive("gb_per_s") * kGB;
  l.busbw_bytes_per_s = o.positive("busbw_gb_per_s") * kGB;
  l.latency_s = o.number("latency_us") * 1e-6;
  l.measured = o.boolean_or("measured", false);
  l.medium = o.string_or("medium", "");
  if (o.has("collective_busbw_gb_per_s")) {
    // A probe's fit: bus bandwidth per collective, named as in the collectives table.
    StrictObject per = o.object("collective_busbw_gb_per_s");
    for (const CollectiveInfo& c : collectives()) {
      l.collective_busbw[static_cast<size_t>(c.kind)] = per.number_or(c.name, 0) * kGB;
    }
    per.finish();
  }
  const std::string nics = o.string_or("nics", "one_per_node");
  if (nics != "one_per_node" && nics != "one_per_gpu") {
    throw InputError(o.field("nics"), "'" + nics + "' is not one_per_node or one_per_gpu");
  }
  p.nic_per_gpu = nics == "one_per_gpu";
  l.source = where;
  require_sources(o, {"gb_per_s", "busbw_gb_per_s", "latency_us", "collective_busbw_gb_per_s"});
  o.finish();
  return p;
}

LinkProfile resolve_link(const nlohmann::json& value, const std::string& field) {
  if (value.is_object()) return link_from_json(value, field);
  if (!value.is_string()) throw InputError(field, "expected a link name, a bandwidth or an object");
  const std::string name = value.get<std::string>();
  if (const Preset* p = find_preset(ProfileKind::link, name)) {
    return link_from_json(p->json, p->path);
  }
  // A link profile file, as the unknown-link message offers. "900GB/s" holds a slash too, so a
  // link's path is one that ends in .json or starts at a directory ("/", "./", "../").
  if ((name.size() > 5 && name.ends_with(".json")) || name.starts_with('/') ||
      name.starts_with("./") || name.starts_with("../")) {
    return link_from_json(parse_json(read_text_file(name, field), name), name);
  }
  // A bandwidth is a number with a unit; a sign or a leading dot is a number too, so that
  // "-5GB/s" is refused as a bandwidth below zero rather than as an unknown link name.
  if (!name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '-' ||
                        name[0] == '+' || name[0] == '.')) {
    LinkProfile p;
    p.link.name = name;
    p.link.bytes_per_s = p.link.busbw_bytes_per_s = parse_bandwidth(name, field);
    p.link.latency_s = 0;
    p.link.user_given = true;
    p.link.source = "typed by the user; used exactly as given, no latency term";
    return p;
  }
  unknown_preset(ProfileKind::link, name, field);
}

namespace {

// A probe's measured figures (optional): each GB/s figure with its source.
void read_measured_host(StrictObject& parent, HostSpec& h) {
  StrictObject m = parent.object("measured");
  auto rate = [&](const char* key) {
    if (!m.has(key)) return 0.0;
    return m.positive(key) * kGB;
  };
  h.measured_h2d_bytes_per_s = rate("h2d_gb_per_s");
  h.measured_d2h_bytes_per_s = rate("d2h_gb_per_s");
  h.measured_dram_bytes_per_s = rate("dram_gb_per_s");
  h.measured_source = parent.field("measured");
  require_sources(m, {"h2d_gb_per_s", "d2h_gb_per_s", "dram_gb_per_s"});
  m.finish();
}

}  // namespace

// A host's side for offload (optional): memory, the CPU-GPU link per GPU (a link preset), DRAM
// bandwidth and the share of it CPU Adam reaches, NVMe bandwidth; each with a source.
HostSpec host_from_json(StrictObject& parent) {
  if (!parent.has("host")) return {};
  StrictObject o = parent.object("host");
  HostSpec h;
  // A probe of a host without preset facts writes only what it measured.
  const bool measured_only = o.has("measured") && !o.has("memory_gib");
  if (o.has("measured")) read_measured_host(o, h);
  h.source = parent.field("host");
  if (measured_only) {
    o.finish();
    return h;
  }
  h.memory_bytes = o.positive("memory_gib") * kGiB;
  const LinkSpec link = resolve_link(o.raw("link"), o.field("link")).link;
  h.link_name = link.name;
  h.link_bytes_per_s = link.bytes_per_s;
  h.dram_bytes_per_s = o.positive("dram_gb_per_s") * kGB;
  h.dram_efficiency = fraction(o, "dram_efficiency");
  h.nvme_bytes_per_s = o.number_or("nvme_gb_per_s", 0) * kGB;
  require_sources(o, {"memory_gib", "link", "dram_gb_per_s", "dram_efficiency", "nvme_gb_per_s"});
  o.finish();
  return h;
}

std::vector<std::string> gpu_accuracy_classes() {
  std::set<std::string> classes;  // from the build's index: no profile is parsed
  const std::string folder = folder_of(ProfileKind::gpu);
  for (const EmbeddedFile& f : embedded_profiles()) {
    if (std::string_view(f.path).rfind(folder, 0) == 0 && *f.accuracy_class != '\0')
      classes.insert(f.accuracy_class);
  }
  return {classes.begin(), classes.end()};
}

namespace {

// " nvidia h100 80gb hbm3 ": lower case, every run of other characters one space, padded.
std::string device_words(const std::string& name) {
  std::string out = " ";
  for (const char ch : lowered(name)) {
    const bool word = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    if (word)
      out += ch;
    else if (out.back() != ' ')
      out += ' ';
  }
  return out.back() == ' ' ? out : out + ' ';
}

}  // namespace

std::string gpu_preset_for_device(const std::string& device) {
  const std::string words = device_words(device);
  std::string best;
  size_t best_size = 1;  // a name of no word matches nothing
  for (const Preset* p : presets(ProfileKind::gpu)) {
    for (const auto& n : names_of(p->json)) {
      const std::string w = device_words(n);
      if (w.size() > best_size && words.find(w) != std::string::npos) {
        best = p->json.value("name", std::string());
        best_size = w.size();
      }
    }
  }
  return best;
}

GpuSpec load_gpu(const std::string& name_or_path, const std::string& field) {
  auto [json, where] = resolve_profile(ProfileKind::gpu, name_or_path, field);
  return gpu_from_json(json, where);
}

std::pair<std::string, std::string> profile_text(ProfileKind kind, const std::string& name_or_path,
                                                 const std::string& field) {
  auto [json, where] = resolve_profile(kind, name_or_path, field);
  return {json.dump(2), where};
}

LinkSpec load_link(const std::string& name_or_bandwidth, const std::string& field) {
  return resolve_link(nlohmann::json(name_or_bandwidth), field).link;
}

namespace {

std::string sixteen_bit_peak(const GpuSpec& g) {
  for (MathDtype d : {MathDtype::bf16, MathDtype::fp16}) {
    const double peak = g.peak_flops[static_cast<int>(d)];
    if (peak > 0) return fmt::format("{:.0f} TFLOP/s {}", peak / kTera, to_string(d));
  }
  return "-";
}

}  // namespace

std::vector<PresetSummary> list_presets(ProfileKind kind) {
  std::vector<PresetSummary> out;
  for (const Preset* preset : presets(kind)) {
    const Preset& p = *preset;
    PresetSummary s;
    const auto& j = p.json;
    s.name = j.value("name", std::string());
    auto names = names_of(j);
    s.aliases.assign(names.begin() + 1, names.end());
    switch (kind) {
      case ProfileKind::gpu: {
        const GpuSpec g = gpu_from_json(j, p.path);
        s.figures = {
            {"memory", fmt::format("{:.1f} GiB", g.memory_bytes / kGiB)},
            // bf16's peak, or fp16's where the GPU has no bf16 (V100), named: a 0 read as none.
            {"16-bit dense", sixteen_bit_peak(g)},
            {"HBM", fmt::format("{:.0f} GB/s", g.hbm_bytes_per_s / kGB)},
            {"node link", j.value("intra_link", std::string("-"))}};
        s.source = j.at("sources").value("peak_tflops", std::string());
        break;
      }
      case ProfileKind::link: {
        const LinkProfile l = link_from_json(j, p.path);
        s.figures = {{"nominal", fmt::format("{:.2f} GB/s", l.link.bytes_per_s / kGB)},
                     {"busbw", fmt::format("{:.2f} GB/s", l.link.busbw_bytes_per_s / kGB)},
                     {"latency", fmt::format("{:.1f} us", l.link.latency_s * 1e6)},
                     {"per", l.nic_per_gpu ? "NIC, one per GPU"
                                           : (j.value("nics", std::string()) == "one_per_node"
                                                  ? "NIC, one per node"
                                                  : "GPU")}};
        s.source = j.at("sources").value("busbw_gb_per_s", std::string());
        break;
      }
      case ProfileKind::cluster: {
        s.figures = cluster_figures(j, p.path);
        s.source = j.value("description", std::string());
        break;
      }
      case ProfileKind::model: {
        const ModelSpec m = model_from_json(j, p.path);
        s.figures = model_summary_figures(m);
        s.source = m.source;
        break;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// A Hugging Face config.json, not shardplan's own model file: it names its architecture, or it has
// no "name" (every shardplan model file has one) and is called config.json or carries transformers'
// size fields. The HF reader then names what is missing (model_type) instead of "name".
bool looks_like_hf_config(const nlohmann::json& j, const std::string& path) {
  if (j.contains("model_type") || j.contains("architectures") || j.contains("text_config")) {
    return true;
  }
  if (j.contains("name")) return false;
  return std::filesystem::path(path).filename() == "config.json" || j.contains("hidden_size") ||
         j.contains("num_hidden_layers") || j.contains("n_embd") || j.contains("n_layer");
}

}  // namespace

ModelSpec load_model(const std::string& name_or_path, const std::string& field) {
  if (const Preset* p = find_preset(ProfileKind::model, name_or_path)) {
    return model_from_json(p->json, p->path);
  }
  // A Hugging Face model directory (a snapshot or a save_pretrained folder) holds config.json.
  std::error_code ec;
  if (std::filesystem::is_directory(name_or_path, ec)) {
    const std::string config = (std::filesystem::path(name_or_path) / "config.json").string();
    if (!std::filesystem::is_regular_file(config, ec)) {
      throw InputError(field, "'" + name_or_path +
                                  "' is a directory without a config.json; give a Hugging Face "
                                  "model directory, a config.json or a preset name");
    }
    return model_from_hf_config(read_text_file(config, field), config);
  }
  if (!looks_like_path(name_or_path)) unknown_preset(ProfileKind::model, name_or_path, field);
  const std::string text = read_text_file(name_or_path, field);
  const nlohmann::json j = parse_json(text, name_or_path);
  if (!j.is_object()) throw InputError(name_or_path, "expected a JSON object");
  if (looks_like_hf_config(j, name_or_path)) return model_from_hf_config(text, name_or_path);
  return model_from_json(j, name_or_path);
}

namespace {

std::string embedded_text(const std::string& path) {
  const EmbeddedFile* f = find_embedded(path);
  SHARDPLAN_CHECK(f != nullptr, "a validation file is not embedded");
  return f->text;
}

}  // namespace

std::string default_published_runs() {
  return embedded_text("validation/published-runs.json");
}

std::string default_holdout_runs() {
  return embedded_text("validation/holdout-runs.json");
}

std::string default_memory_sweeps() {
  return embedded_text("validation/memory-sweeps.json");
}

}  // namespace shardplan
