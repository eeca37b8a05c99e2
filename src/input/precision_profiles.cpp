// Precision recipe rows (profiles/precisions/*.json), read strictly: every figure is read or
// named as unknown, and every one carries its source. The fp8 alias resolves here, to the
// framework profile's fp8_default_recipe.
#include <fmt/format.h>

#include <map>

#include "json_reader.hpp"
#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {
namespace {

MathDtype parse_dtype(StrictObject& o, const std::string& key) {
  const std::string text = o.string(key);
  for (int i = 0; i < kMathDtypes; ++i) {
    if (text == to_string(static_cast<MathDtype>(i))) return static_cast<MathDtype>(i);
  }
  throw InputError(o.field(key), "'" + text +
                                     "' is not a GEMM dtype; use fp32, bf16, fp16, "
                                     "fp8 or fp4");
}

void read_kept(StrictObject& o, PrecisionRecipe& r) {
  r.router_in_bf16 = false;
  bool attention = false;
  for (const std::string& g : o.strings_or_empty("bf16_gemms")) {
    if (g == "attention") {
      attention = true;
    } else if (g == "router") {
      r.router_in_bf16 = true;
    } else if (g == "lm_head") {
      r.head_in_bf16 = true;
    } else {
      throw InputError(o.field("bf16_gemms"),
                       "'" + g + "' is not a GEMM group; use attention, router or lm_head");
    }
  }
  // The engine prices the attention core in 16 bits under every recipe (compute.cpp).
  if (!attention)
    throw InputError(o.field("bf16_gemms"),
                     "must list attention: no recipe here runs the "
                     "attention core in low precision");
}

void read_bytes(StrictObject b, PrecisionRecipe& r) {
  r.weight_bytes = b.positive("weight");
  r.weight_copy_bytes = b.number("weight_copies");
  r.activation_bytes = b.positive("activation");
  if (b.has("saved_input")) r.saved_input_bytes = b.positive("saved_input");
  r.gradient_bytes = b.positive("gradient");
  r.master_bytes = b.number("master");
  r.moment_bytes = b.positive("moment");
  r.all_gather_bytes = b.positive("all_gather");
  b.finish();
}

PrecisionRecipe recipe_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  PrecisionRecipe r;
  r.name = o.string("name");
  r.id = parse_precision(r.name, o.field("name"));
  r.source = where;
  o.string("description");
  r.gemm_dtype = parse_dtype(o, "gemm_dtype");
  read_kept(o, r);
  r.bf16_first_layers = o.integer_or("bf16_first_layers", 0);
  r.bf16_last_layers = o.integer_or("bf16_last_layers", 0);
  r.quantize_bytes_per_element = o.number("quantize_bytes_per_element");
  r.attention_output_copy = o.boolean_or("attention_output_copy", false);
  read_bytes(o.object("bytes"), r);
  r.gpu_generations = o.strings_or_empty("gpu_generations");
  if (o.present("hardware_without_stack")) {
    StrictObject h = o.object("hardware_without_stack");
    for (const std::string& gen : h.keys())
      r.hardware_without_stack.emplace_back(gen, h.string(gen));
    h.finish();
  }
  for (const std::string& f : o.strings_or_empty("frameworks"))
    r.frameworks.push_back(parse_framework(f, o.field("frameworks")));
  r.title = o.string("title");
  r.launcher_flags.clear();
  StrictObject launchers = o.object("launchers");
  for (const std::string& name : launchers.keys())
    r.launcher_flags.emplace_back(name, launchers.strings_or_empty(name));
  launchers.finish();
  StrictObject sources = o.object("sources");
  for (const char* key : {"gemm_dtype", "bf16_gemms", "quantize_bytes_per_element",
                          "gpu_generations", "frameworks", "launchers"})
    sources.string(key);
  if (r.bf16_first_layers + r.bf16_last_layers > 0) sources.string("bf16_layers");
  if (o.has("attention_output_copy")) sources.string("attention_output_copy");
  StrictObject byte_sources = sources.object("bytes");
  for (const char* key :
       {"weight", "weight_copies", "activation", "gradient", "master", "moment", "all_gather"})
    byte_sources.string(key);
  if (r.saved_input_bytes > 0) byte_sources.string("saved_input");
  byte_sources.finish();
  sources.finish();
  o.finish();
  return r;
}

}  // namespace

PrecisionRecipe load_recipe(Precision precision) {
  static std::map<Precision, PrecisionRecipe> cache;
  if (auto it = cache.find(precision); it != cache.end()) return it->second;
  SHARDPLAN_CHECK(precision != Precision::fp8, "the fp8 alias resolves before loading");
  const std::string path = fmt::format("precisions/{}.json", to_string(precision));
  const EmbeddedFile* f = find_embedded(path);
  if (!f) throw InputError("--precision", "no profile " + path + " in this build");
  const std::string where = "profiles/" + path;
  PrecisionRecipe r = recipe_from_json(parse_json(f->text, where), where);
  SHARDPLAN_CHECK(r.id == precision, "a recipe file named after its recipe");
  return cache.emplace(precision, r).first->second;
}

Precision resolve_precision(Precision precision, const FrameworkProfile& framework) {
  if (precision != Precision::fp8) return precision;
  // No framework named: the ideal stack, priced as Megatron-LM's default (fp8-delayed).
  const std::string name =
      framework.fp8_default_recipe.empty() ? "fp8-delayed" : framework.fp8_default_recipe;
  return parse_precision(name,
                         "profiles/frameworks/" + framework.name + ".json: fp8_default_recipe");
}

void set_precision(TrainingSpec& training, Precision precision) {
  training.precision = precision;
  training.recipe = load_recipe(resolve_precision(precision, training.framework));
}

TrainingSpec default_training(const ModelSpec& model, Framework framework, Precision precision,
                              bool overlap, bool tp_comm_overlap) {
  TrainingSpec t;
  t.seq_len = model.seq_len > 0 ? default_training_seq_len(model) : 4096;
  t.framework = load_framework(framework);
  set_precision(t, precision);  // after the framework: fp8 is its default recipe
  t.tp_comm_overlap = tp_comm_overlap || t.framework.pricing.tp_comm_overlap;
  t.overlap_grad_reduce = overlap && t.framework.pricing.overlap_grad_reduce;
  t.overlap_param_gather = overlap;
  return t;
}

std::vector<PrecisionRecipe> all_recipes() {
  std::vector<PrecisionRecipe> out;
  for (Precision p : all_precisions())
    if (p != Precision::fp8) out.push_back(load_recipe(p));
  return out;
}

}  // namespace shardplan
