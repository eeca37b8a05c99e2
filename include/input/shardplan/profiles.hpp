// Presets and profile files: GPUs, links, clusters and models, by name or path. Names are
// case-insensitive; an unknown name is an InputError that suggests the nearest ones.
#pragma once

#include <string>
#include <vector>

#include "shardplan/files.hpp"  // read_text_file
#include "shardplan/presets.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/validation.hpp"

namespace shardplan {

/// One row of `shardplan list`: a preset's name and its key figures already formatted.
struct PresetSummary {
  std::string name;
  std::vector<std::string> aliases;
  std::vector<std::pair<std::string, std::string>> figures;  // column -> value
  std::string source;
};
std::vector<PresetSummary> list_presets(ProfileKind kind);

/// The accuracy classes the GPU presets declare (their accuracy_class), sorted: the names a
/// framework profile's accuracy, kernels.speed_by_gpu and max_published_mfu_by_gpu may use.
std::vector<std::string> gpu_accuracy_classes();

/// The GPU preset whose name or alias a device name (as nvidia-smi or rocm-smi reports it,
/// "NVIDIA H100 80GB HBM3") contains as whole words, the longest such name winning (case,
/// '-', '_' and spaces ignored); empty when none does.
std::string gpu_preset_for_device(const std::string& device);

/// A GPU by preset name or profile file.
GpuSpec load_gpu(const std::string& name_or_path, const std::string& field = "--gpu");

/// A link by preset name (nvlink4, ib-ndr, 10gbe, ...) or a typed bandwidth (900GB/s,
/// 10Gbit/s), which is used exactly as given.
LinkSpec load_link(const std::string& name_or_bandwidth, const std::string& field);

/// A cluster preset (dgx-h100 ...) or a cluster profile file, such as one `shardplan probe`
/// wrote. `gpus` is left at the preset's node size; the caller sets the total.
ClusterSpec load_cluster(const std::string& name_or_path, const std::string& field = "--cluster");

/// A GPU, link or cluster profile's JSON text (preset name or file) and where it came from, for
/// tools that write profiles of their own: `shardplan probe` starts from a preset's JSON and
/// replaces what it measured. InputError naming `field` for an unknown name or unreadable file.
std::pair<std::string, std::string> profile_text(ProfileKind kind, const std::string& name_or_path,
                                                 const std::string& field);

/// How the user described the cluster: a preset or file, and flags that override it.
struct ClusterOptions {
  std::string cluster;  // --cluster NAME|FILE
  std::string gpu;      // --gpu NAME|FILE
  std::string intra;    // --intra LINK
  std::string inter;    // --inter LINK (per NIC)
  std::string link;     // --link LINK: one flat link between all GPUs
  int gpus = 0;         // --gpus (0: one node)
  int gpus_per_node = 0;    // GPUs per host
  int gpus_per_domain = 0;  // GPUs per scale-up (NVLink) domain; 0: the preset's, or the host
  int nics_per_node = 0;
};

/// The cluster the options describe. Without --cluster, a GPU (H100-SXM by default) comes with
/// its profile's node fabric and scale-out network, or with its system's tiers when it ships
/// only as one (GB200: the NVL72 rack); a typed bandwidth is used exactly as given.
ClusterSpec build_cluster(const ClusterOptions& options);

/// A framework's profile (profiles/frameworks/NAME.json, compiled in): its capabilities, which
/// extend the plan rules, and how it runs a plan.
FrameworkProfile load_framework(Framework framework);
/// A framework profile from the text of its JSON, read strictly (`where` names it in errors):
/// what load_framework reads from the compiled-in file.
FrameworkProfile framework_from_text(const std::string& json_text, const std::string& where);

/// A precision recipe row (profiles/precisions/NAME.json, compiled in). Not the fp8 alias.
PrecisionRecipe load_recipe(Precision precision);
/// The recipe a named precision means under a framework: itself, or for `fp8` the framework
/// profile's fp8_default_recipe (fp8-delayed when no framework is named).
Precision resolve_precision(Precision precision, const FrameworkProfile& framework);
/// Sets the precision and the recipe row that prices it; call after the framework is set.
void set_precision(TrainingSpec& training, Precision precision);
/// The training a planning command prices where no flag says otherwise: the model's default
/// sequence (4,096 for a model without one), `framework`'s profile, `precision`'s recipe under
/// it, and the profile's overlap settings. `overlap` false is --no-overlap (no gradient reduction
/// or parameter gather behind compute); `tp_comm_overlap` asks for TP overlap where the profile
/// does not default to it. The CLI starts from it, and so do the benches that time its defaults.
TrainingSpec default_training(const ModelSpec& model, Framework framework = Framework::megatron,
                              Precision precision = Precision::bf16, bool overlap = true,
                              bool tp_comm_overlap = false);
/// Every recipe row, in Precision order, the alias left out.
std::vector<PrecisionRecipe> all_recipes();

/// A model preset, a Hugging Face config.json, or a shardplan model JSON file.
ModelSpec load_model(const std::string& name_or_path, const std::string& field = "--model");

/// Model from the text of a Hugging Face config.json (Llama, Mistral, Qwen2, Gemma, GPT-2,
/// GPT-NeoX, Mixtral fields). `origin` names the file in errors and in ModelSpec::source.
ModelSpec model_from_hf_config(const std::string& json_text, const std::string& origin);

/// The published-runs file shipped with shardplan (profiles/validation/published-runs.json):
/// the Megatron-LM papers' runs the A100 efficiencies were fitted on.
std::string default_published_runs();
/// Runs the model was not tuned on (profiles/validation/holdout-runs.json): other frameworks
/// (FSDP, torchtitan, DeepSpeed), GPUs (H100) and precisions (fp8).
std::string default_holdout_runs();

/// Runs from a published-runs file; the cluster comes from each run's hardware (its GPU preset
/// and node size) unless `cluster` names one.
std::vector<PublishedRun> load_published_runs(const std::string& json_text,
                                              const std::string& origin,
                                              const ClusterOptions& cluster = {});

/// The shipped corpus, published-runs.json then holdout-runs.json, split as every figure of
/// `validate` counts it: `counted` holds the runs fitted and measured against; `flagged` those
/// whose source flags their figure (PublishedRun::source_flags), predicted apart and never
/// fitted or counted. Ids are the files' own.
struct ShippedCorpus {
  std::vector<PublishedRun> counted;
  std::vector<PublishedRun> flagged;
};
ShippedCorpus load_shipped_corpus(const ClusterOptions& cluster = {});

/// The published sweeps of layouts that ran or ran out of memory
/// (profiles/validation/memory-sweeps.json, written by tools/import_hagemann23.py).
std::string default_memory_sweeps();
/// Each sweep row as a case: the sweep's model, hardware, precision, profile and plan defaults
/// with the row's columns over them.
std::vector<MemoryVerdictCase> load_memory_sweeps(const std::string& json_text,
                                                  const std::string& origin);

}  // namespace shardplan
