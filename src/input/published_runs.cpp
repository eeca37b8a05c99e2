// Reads a published-runs file (profiles/validation/published-runs.json format) into runs the
// validation predictor can replay. The runs' fields that the sources do not state are null.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "json_reader.hpp"
#include "model_json.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/validation.hpp"

namespace shardplan {
namespace {

int int_or(const nlohmann::json& j, const char* key, int fallback) {
  if (!j.contains(key) || !j.at(key).is_number()) return fallback;
  const double v = j.at(key).get<double>();
  if (!(v >= -2147483648.0 && v <= 2147483647.0)) {
    throw InputError(key, fmt::format("{} is out of range for a count", v));
  }
  return static_cast<int>(v);
}

// A true / false field; absent or null: `fallback`. Anything else is refused, never read as the
// fallback ("compiled_loss": "yes" would otherwise price the eager loss unsaid).
bool flag_or(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  if (!j.at(key).is_boolean())
    throw InputError(key, "is " + j.at(key).dump() + "; give true or false");
  return j.at(key).get<bool>();
}

std::string string_or(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

// "A100-SXM4-80GB (312 TFLOP/s ...)" -> the GPU preset whose name or alias is the first word.
std::string gpu_preset_of(const std::string& hardware, const std::string& where) {
  const std::string first = hardware.substr(0, hardware.find(' '));
  try {
    return load_gpu(first, where).name;
  } catch (const InputError&) {
    throw InputError(where, "cannot tell the GPU from '" + hardware +
                                "'; name a GPU preset first, or pass --cluster");
  }
}

PublishedRun read_run(const nlohmann::json& r, size_t i, const std::string& where,
                      const ClusterOptions& cluster_override);

}  // namespace

std::vector<PublishedRun> load_published_runs(const std::string& text, const std::string& origin,
                                              const ClusterOptions& cluster_override) {
  const nlohmann::json runs = parse_json(text, origin);
  if (!runs.is_array()) throw InputError(origin, "expected a JSON array of runs");
  std::vector<PublishedRun> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string where = fmt::format("{}: run {}", origin, i);
    if (!r.is_object() || !r.contains("model") || !r.contains("hardware") || !r.contains("plan") ||
        !r.contains("measured")) {
      throw InputError(where, "each run needs model, hardware, plan and measured");
    }
    try {
      out.push_back(read_run(r, i, where, cluster_override));
    } catch (const InputError& e) {
      // The field helpers (int_or, flag_or) name the key alone: say which run holds it.
      if (e.field().rfind(origin, 0) == 0) throw;
      throw InputError(where + ": " + e.field(), e.message());
    } catch (const nlohmann::json::exception& e) {
      // A field of the wrong type (a string where a number goes): bad input, not a bug.
      throw InputError(where, fmt::format("a field has the wrong type ({})", e.what()));
    }
  }
  return out;
}

namespace {

ModelSpec read_run_model(const nlohmann::json& mo, const PublishedRun& run,
                         const std::string& where) {
  // {"preset": NAME, "seq_len": N}: a model preset (any architecture it describes: MoE, MLA...)
  // trained at the run's sequence length; no other key may reshape it.
  if (mo.contains("preset")) {
    if (!mo.at("preset").is_string())
      throw InputError(where + ": model.preset", "expected a model preset name");
    for (const auto& [key, value] : mo.items()) {
      if (key != "preset" && key != "seq_len")
        throw InputError(fmt::format("{}: model.{}", where, key),
                         "a model given by preset takes only seq_len beside it");
    }
    ModelSpec m = load_model(mo.at("preset").get<std::string>(), where + ": model.preset");
    if (mo.contains("seq_len")) {
      m.seq_len = int_or(mo, "seq_len", m.seq_len);
      if (m.seq_len < 1)
        throw InputError(where + ": model.seq_len", fmt::format("{} is not >= 1", m.seq_len));
      m.max_positions = std::max(m.max_positions, m.seq_len);
    }
    return m;
  }
  ModelSpec m;
  m.name = run.id;
  m.source = run.source;
  m.layers = int_or(mo, "layers", 0);
  m.hidden = int_or(mo, "hidden", 0);
  m.heads = int_or(mo, "heads", 0);
  m.kv_heads = int_or(mo, "kv_heads", m.heads);
  m.head_dim = m.heads > 0 ? m.hidden / m.heads : 0;
  m.ffn_hidden = int_or(mo, "ffn_hidden", 4 * m.hidden);
  m.vocab = int_or(mo, "vocab", 51200);
  m.seq_len = m.max_positions = int_or(mo, "seq_len", 2048);
  if (mo.contains("mlp") && mo.at("mlp").is_string())
    m.mlp = parse_mlp(mo.at("mlp"), where + ": mlp");
  if (mo.contains("norm") && mo.at("norm").is_string())
    m.norm = parse_norm(mo.at("norm"), where + ": norm");
  if (mo.contains("positions") && mo.at("positions").is_string()) {
    m.positions = parse_positions(mo.at("positions"), where + ": positions");
  }
  // GPT conventions (Megatron-LM's papers) unless the run says otherwise.
  m.tied_embeddings = flag_or(mo, "tied_embeddings", true);
  m.qkv_bias = flag_or(mo, "qkv_bias", true);
  m.out_bias = flag_or(mo, "out_bias", true);
  m.mlp_bias = flag_or(mo, "mlp_bias", true);
  m.dropout = flag_or(mo, "dropout", true);
  check_architecture(m, where);
  return m;
}

ClusterSpec read_run_cluster(const nlohmann::json& hw, const std::string& where,
                             const ClusterOptions& cluster_override) {
  ClusterOptions co = cluster_override;
  co.gpus = int_or(hw, "gpus_total", 1);
  if (co.cluster.empty() && co.gpu.empty()) {
    // A run may name its cluster preset, or its GPU preset and links; else the GPU is read
    // from the hardware description and comes with its reference node's links.
    co.cluster = string_or(hw, "cluster");
    co.gpu = co.cluster.empty() ? gpu_preset_of(hw.value("gpu", std::string()), where) : "";
    co.intra = string_or(hw, "intra");
    co.inter = string_or(hw, "inter");
    co.nics_per_node = int_or(hw, "nics_per_node", 0);
  }
  if (co.gpus_per_node == 0) co.gpus_per_node = int_or(hw, "gpus_per_node", 8);
  return build_cluster(co);
}

// The plan's degrees, and which of them the source states (the rest are searched).
void read_run_plan(const nlohmann::json& pl, const std::string& where, PublishedRun& run) {
  ParallelPlan& p = run.plan;
  p.dp = int_or(pl, "dp", 1);
  p.tp = int_or(pl, "tp", 1);
  p.pp = int_or(pl, "pp", 1);
  p.cp = int_or(pl, "cp", 1);
  p.ep = int_or(pl, "ep", 1);
  p.etp = int_or(pl, "etp", 0);
  p.zero = int_or(pl, "zero_stage", 0);
  run.micro_batch_known = pl.contains("micro_batch") && pl.at("micro_batch").is_number();
  p.micro_batch = int_or(pl, "micro_batch", 1);
  run.interleave_known =
      p.pp == 1 || (pl.contains("interleave") && pl.at("interleave").is_number());
  run.interleaved = p.pp > 1 && string_or(pl, "interleave") == "interleaved";
  p.interleave = int_or(pl, "interleave", 1);
  run.recompute_known = pl.contains("recompute") && pl.at("recompute").is_string();
  if (run.recompute_known) {
    p.recompute = parse_recompute(pl.at("recompute"), where + ": recompute");
  }
  // What the source says its selective recompute redoes, as Megatron-Core's module names.
  if (pl.contains("recompute_modules") && pl.at("recompute_modules").is_array()) {
    std::vector<std::string> names;
    for (const nlohmann::json& n : pl.at("recompute_modules"))
      names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
    p.recompute_modules = parse_recompute_modules(names, where + ": recompute_modules");
  }
  p.sequence_parallel = pl.value("sequence_parallel", false);
  // The expert-parallel all-to-all overlap the recipe sets (Megatron-Core's
  // overlap_moe_expert_parallel_comm); unstated, off.
  p.moe_a2a_overlap = flag_or(pl, "moe_a2a_overlap", false);
  // An uneven pipeline split the recipe states (Megatron's account_for_embedding/loss split,
  // --decoder-first/last-pipeline-num-layers): transformer layers of the first / last chunk.
  p.first_stage_layers = int_or(pl, "first_stage_layers", -1);
  p.last_stage_layers = int_or(pl, "last_stage_layers", -1);
}

TrainingSpec read_run_training(const nlohmann::json& r, const nlohmann::json& pl,
                               const std::string& where, const PublishedRun& run) {
  TrainingSpec t;
  t.seq_len = run.model.seq_len;
  t.global_batch = int_or(pl, "global_batch", run.plan.dp * run.plan.micro_batch);
  // The runs predate FlashAttention unless they say otherwise; Megatron-LM ran fp16 then.
  t.attention = r.contains("attention") ? parse_attention(r.at("attention"), where + ": attention")
                                        : AttentionKind::standard;
  const Precision precision = r.contains("precision")
                                  ? parse_precision(r.at("precision"), where + ": precision")
                                  : Precision::fp16;
  // Which framework profile prices the run (its "profile"; none: the ideal stack).
  const std::string profile = string_or(r, "profile");
  if (!profile.empty()) {
    t.framework = load_framework(parse_framework(profile, where + ": profile"));
    t.overlap_grad_reduce = t.framework.pricing.overlap_grad_reduce;
  }
  set_precision(t, precision);  // after the framework: fp8 is its default recipe
  // A run that states its tensor-parallel communication overlapped (torchtitan's async TP,
  // Megatron's --tp-comm-overlap); else the profile's default.
  if (r.contains("tp_comm_overlap"))
    t.tp_comm_overlap = flag_or(r, "tp_comm_overlap", t.tp_comm_overlap);
  // A run whose stack compiled its loss (torchtitan at a commit that compiles it, compile on).
  t.compiled_loss = flag_or(r, "compiled_loss", false);
  // A run whose loss saw the whole vocabulary on every TP rank (an LM head that gathers its
  // output, torchtitan's disable_loss_parallel).
  t.full_vocab_loss = flag_or(r, "full_vocab_loss", false);
  // A run whose stack's loss holds another figure per logit than its profile's, read from that
  // stack's code (the source says which tensors are alive at the loss's peak). It is that
  // stack's loss whether or not TP shards it, so the profile's vocabulary-parallel figure gives
  // way too (0: logit_bytes), not silently kept under TP.
  if (r.contains("loss_peak_bytes_per_logit")) {
    const nlohmann::json& v = r.at("loss_peak_bytes_per_logit");
    if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 64))
      throw InputError(where + ": loss_peak_bytes_per_logit",
                       "is " + v.dump() + "; give the bytes per logit, above 0 and at most 64");
    t.framework.pricing.logit_bytes = v.get<double>();
    t.framework.pricing.logit_bytes_vocab_parallel = 0;
  }
  // Which kernels the run captured in CUDA graphs, as its recipe sets them (none unstated).
  if (r.contains("cuda_graphs"))
    t.cuda_graphs = parse_cuda_graphs(string_or(r, "cuda_graphs"), where + ": cuda_graphs");
  // The MoE token dispatcher the recipe sets (Megatron-Core's moe_token_dispatcher_type, flex
  // with its DeepEP or HybridEP backend); unstated, the plain all-to-all.
  if (r.contains("moe_dispatcher")) {
    t.moe_dispatcher = parse_moe_dispatcher(string_or(r, "moe_dispatcher"), where + ": moe_dispatcher");
  }
  return t;
}

// The one figure the run measured, from the first key present.
void read_run_measured(const nlohmann::json& me, const std::string& where, PublishedRun& run) {
  static constexpr std::pair<const char*, Metric> kMetrics[] = {
      {"tokens_per_s_per_gpu", Metric::tokens_per_s_per_gpu},
      {"model_tflops_per_gpu", Metric::model_tflops_per_gpu},
      {"iteration_time_s", Metric::iteration_time_s},
      {"tflops_per_gpu", Metric::tflops_per_gpu},
      {"layer_fwd_bwd_ms", Metric::layer_fwd_bwd_ms},
      {"activations_gib", Metric::activations_gib}};
  for (const auto& [key, metric] : kMetrics) {
    if (!me.contains(key)) continue;
    run.metric = metric;
    run.measured = me.at(key);
    return;
  }
  std::string keys;
  for (const auto& [key, metric] : kMetrics) keys += (keys.empty() ? "" : ", ") + std::string(key);
  throw InputError(where + ": measured", "no figure shardplan can predict: give one of " + keys +
                                             " (peak_memory_gib is compared beside one of them)");
}

// A run without a source_group: the first two words of its id ("korthikanti22-t5-22B" ->
// "korthikanti22-t5"), one table of one source.
std::string group_from_id(const std::string& id) {
  const auto first = id.find('-');
  const auto second = first == std::string::npos ? first : id.find('-', first + 1);
  return second == std::string::npos ? id : id.substr(0, second);
}

PublishedRun read_run(const nlohmann::json& r, size_t i, const std::string& where,
                      const ClusterOptions& cluster_override) {
  PublishedRun run;
  run.id = r.value("id", fmt::format("run-{}", i));
  run.source = r.value("source", "");
  run.source_group = string_or(r, "source_group");
  if (run.source_group.empty()) run.source_group = group_from_id(run.id);
  run.model = read_run_model(r.at("model"), run, where);
  run.cluster = read_run_cluster(r.at("hardware"), where, cluster_override);
  read_run_plan(r.at("plan"), where, run);
  run.training = read_run_training(r, r.at("plan"), where, run);
  // Inputs no plan can run (a compiled loss under a profile that prices none, a dispatcher or
  // recipe the profile's framework lacks) are refused here, naming the run's key (the flag's
  // name: --compiled-loss is compiled_loss), not left for the predictor to find no plan.
  try {
    require_runnable_inputs({run.model, run.training, run.cluster, {}});
  } catch (const InputError& e) {
    std::string key = e.field().rfind("--", 0) == 0 ? e.field().substr(2) : e.field();
    std::replace(key.begin(), key.end(), '-', '_');
    throw InputError(where + ": " + key, e.message());
  }
  // Whether any profile figure was fitted on this run.
  const std::string split = string_or(r, "split");
  if (split != "fitted" && split != "held-out" && !split.empty())
    throw InputError(where + ": split", "'" + split + "' is not fitted or held-out");
  run.held_out = split == "held-out";
  if (r.contains("source_flags")) {
    const auto& flags = r.at("source_flags");
    const auto is_text = [](const nlohmann::json& v) {
      return v.is_string() && !v.get<std::string>().empty();
    };
    if (!flags.is_array() || flags.empty() || !std::all_of(flags.begin(), flags.end(), is_text))
      throw InputError(where + ": source_flags",
                       "give a non-empty array of strings, each the source's own caveat on the "
                       "measured figure and where it says so");
    for (const auto& v : flags) run.source_flags.push_back(v.get<std::string>());
  }
  read_run_measured(r.at("measured"), where, run);
  // Peak device memory as the source reports it (torchtitan: the maximum over GPUs of the peak
  // reserved memory), compared beside the step figure.
  const auto& me = r.at("measured");
  if (me.contains("peak_memory_gib")) {
    run.measured_peak_gib = me.at("peak_memory_gib");
    // Which peak the source publishes: "reserved" (the caching allocator's, what torchtitan
    // logs) or "allocated" (the tensors'); a case must say.
    const std::string field = where + ": measured.peak_memory_kind";
    if (!me.contains("peak_memory_kind") || !me.at("peak_memory_kind").is_string())
      throw InputError(field, "missing: say \"reserved\" or \"allocated\" for peak_memory_gib");
    const std::string kind = me.at("peak_memory_kind");
    if (kind != "reserved" && kind != "allocated")
      throw InputError(field, "'" + kind + "' is not reserved or allocated");
    run.peak_is_reserved = kind == "reserved";
  }
  return run;
}

}  // namespace

// The columns each sweep row gives, in this order (tools/import_hagemann23.py writes them).
constexpr std::array<const char*, 11> kSweepColumns = {"trial",
                                                       "gpus",
                                                       "micro_batch",
                                                       "tp",
                                                       "pp",
                                                       "sequence_parallel",
                                                       "recompute",
                                                       "attention",
                                                       "kernel",
                                                       "outcome",
                                                       "iteration_time_s"};

std::vector<MemoryVerdictCase> load_memory_sweeps(const std::string& text,
                                                  const std::string& origin) {
  const nlohmann::json sweeps = parse_json(text, origin);
  if (!sweeps.is_array()) throw InputError(origin, "expected a JSON array of sweeps");
  std::vector<MemoryVerdictCase> out;
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const nlohmann::json& s = sweeps[i];
    const std::string where = fmt::format("{}: sweep {}", origin, i);
    for (const char* key : {"id", "model", "hardware", "plan", "columns", "rows"})
      if (!s.is_object() || !s.contains(key))
        throw InputError(where, fmt::format("each sweep needs id, model, hardware, plan, columns "
                                            "and rows; '{}' is missing",
                                            key));
    if (s.at("columns") != nlohmann::json(kSweepColumns))
      throw InputError(where + ": columns", "expected " + nlohmann::json(kSweepColumns).dump());
    // The fields every row shares, without the rows themselves: each row's run starts from them.
    nlohmann::json header = s;
    header.erase("rows");
    for (const nlohmann::json& row : s.at("rows")) {
      const std::string at = fmt::format("{}: row {}", where, row.dump());
      if (!row.is_array() || row.size() != kSweepColumns.size())
        throw InputError(at, fmt::format("expected {} columns", kSweepColumns.size()));
      try {
        // A count the source states: a whole number from 1 to a million.
        const auto count = [&](size_t column) {
          const nlohmann::json& v = row[column];
          if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000000)
            throw InputError(at, fmt::format("{} must be a whole number from 1 to 1,000,000",
                                             kSweepColumns[column]));
          return static_cast<int>(v.get<long long>());
        };
        const int gpus = count(1), tp = count(3), pp = count(4);
        count(2);  // the micro-batch
        if (gpus % (static_cast<long long>(tp) * pp) != 0)
          throw InputError(at, "gpus must be a multiple of tp x pp");
        nlohmann::json r = header;
        r["id"] = fmt::format("{}-{}", s.at("id").get<std::string>(), row[0].get<long long>());
        r["hardware"]["gpus_total"] = gpus;
        r["attention"] = row[7];
        nlohmann::json& pl = r["plan"];
        pl["dp"] = gpus / (tp * pp);
        pl["tp"] = tp;
        pl["pp"] = pp;
        pl["micro_batch"] = row[2];
        pl["sequence_parallel"] = row[5];
        pl["recompute"] = row[6];
        MemoryVerdictCase c;
        PublishedRun& run = c.run;
        run.id = r.at("id").get<std::string>();
        run.source = string_or(r, "source");
        run.source_group = string_or(r, "source_group");
        run.model = read_run_model(r.at("model"), run, at);
        run.cluster = read_run_cluster(r.at("hardware"), at, {});
        read_run_plan(pl, at, run);
        run.training = read_run_training(r, pl, at, run);
        c.sweep = s.at("id").get<std::string>();
        c.kernel = row[8].get<std::string>();
        const std::string outcome = row[9].get<std::string>();
        if (outcome != "ran" && outcome != "out_of_memory")
          throw InputError(at, "outcome '" + outcome + "' is not ran or out_of_memory");
        c.ran = outcome == "ran";
        if (c.ran) run.measured = row[10].get<double>();
        out.push_back(std::move(c));
      } catch (const nlohmann::json::exception& e) {
        throw InputError(at, fmt::format("a column has the wrong type ({})", e.what()));
      }
    }
  }
  return out;
}

ShippedCorpus load_shipped_corpus(const ClusterOptions& cluster) {
  ShippedCorpus out;
  for (const auto& [text, origin] :
       {std::pair{default_published_runs(), "profiles/validation/published-runs.json"},
        std::pair{default_holdout_runs(), "profiles/validation/holdout-runs.json"}}) {
    for (PublishedRun& r : load_published_runs(text, origin, cluster))
      (r.source_flags.empty() ? out.counted : out.flagged).push_back(std::move(r));
  }
  return out;
}

}  // namespace shardplan
