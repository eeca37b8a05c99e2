// Profiles: every preset loads strictly, names are case-insensitive, typos get suggestions.
#include "shardplan/profiles.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/error.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/validation.hpp"
#include "shardplan/units.hpp"
#include "support.hpp"

using namespace shardplan;

using shardplan::test::contains;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string write_temp(const std::string& text) {
  char path[] = "/tmp/shardplan-profile-XXXXXX.json";
  const int fd = mkstemps(path, 5);
  std::FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

}  // namespace

TEST_CASE("every required preset exists and loads") {
  // Issue "Foundation", item 3: the preset names users type.
  for (const char* g :
       {"A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "L40S", "MI300X"}) {
    CAPTURE(g);
    CHECK(load_gpu(g).memory_bytes > 0);
  }
  for (const char* l : {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib-hdr", "ib-ndr",
                        "ib-xdr", "10gbe", "25gbe", "100gbe", "200gbe", "400gbe"}) {
    CAPTURE(l);
    CHECK(load_link(l, "--link").busbw_bytes_per_s > 0);
  }
  for (const char* c : {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200"}) {
    CAPTURE(c);
    CHECK(load_cluster(c).gpus_per_node == 8);
  }
  for (const char* m :
       {"gpt3-125m", "gpt3-350m", "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b",
        "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3.1-8b", "llama-3.1-70b",
        "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b"}) {
    CAPTURE(m);
    CHECK(load_model(m).layers > 0);
  }
  CHECK(list_presets(ProfileKind::model).size() >= 17);
}

TEST_CASE("names are case-insensitive and aliases work") {
  CHECK(load_gpu("h100-sxm").name == "H100-SXM");
  CHECK(load_gpu("H100").name == "H100-SXM");
  CHECK(load_model("LLAMA-2-7B").name == "llama-2-7b");
  CHECK(load_model("meta-llama/Llama-2-7b-hf").name == "llama-2-7b");
}

TEST_CASE("datasheet figures come through in base units") {
  const GpuSpec h100 = load_gpu("H100-SXM");
  CHECK(h100.memory_bytes / kGiB == doctest::Approx(79.65));
  CHECK(h100.peak_flops[static_cast<int>(MathDtype::bf16)] == doctest::Approx(989.4e12));
  CHECK(h100.hbm_bytes_per_s == doctest::Approx(3.35e12));
  const ClusterSpec dgx = load_cluster("dgx-a100");
  CHECK(dgx.intra.bytes_per_s == doctest::Approx(300e9));  // NVLink3 per direction
  CHECK(dgx.inter.bytes_per_s == doctest::Approx(25e9));   // one HDR NIC per GPU
}

TEST_CASE("unknown presets suggest the nearest names") {
  const std::string e = error_of([] { load_gpu("H10O-SXM"); });
  CHECK(contains(e, "--gpu"));
  CHECK(contains(e, "H100-SXM"));
  CHECK(contains(error_of([] { load_model("llama-2-7"); }), "llama-2-7b"));
  CHECK(contains(error_of([] { load_link("nvlnk4", "--intra"); }), "nvlink4"));
}

TEST_CASE("a typed bandwidth is used exactly as given") {
  const LinkSpec l = load_link("900GB/s", "--link");
  CHECK(l.bytes_per_s == 900e9);
  CHECK(l.busbw_bytes_per_s == 900e9);
  CHECK(l.user_given);
}

// --intra / --inter / --link take a profile file as the unknown-link message says they do
// (they took only presets and bandwidths); a file in the plan files' base units is refused by
// the key it should have used.
TEST_CASE("a link profile file is read from its path, in the profiles' units") {
  const nlohmann::json link = nlohmann::json::parse(R"({
    "name": "lab-fabric", "gb_per_s": 200, "busbw_gb_per_s": 160, "latency_us": 3,
    "sources": {"gb_per_s": "a", "busbw_gb_per_s": "b", "latency_us": "c"}})");
  const LinkSpec l = load_link(write_temp(link.dump()), "--inter");
  CHECK(l.name == "lab-fabric");
  CHECK(l.bytes_per_s == doctest::Approx(200e9));
  CHECK(l.busbw_bytes_per_s == doctest::Approx(160e9));
  CHECK(l.latency_s == doctest::Approx(3e-6));
  CHECK(load_link("400Gb/s", "--inter").bytes_per_s == doctest::Approx(50e9));  // still a rate
  const nlohmann::json base_units = nlohmann::json::parse(R"({
    "name": "lab-fabric", "bytes_per_s": 2e11, "busbw_gb_per_s": 160, "latency_us": 3,
    "sources": {}})");
  const std::string e = error_of([&] { load_link(write_temp(base_units.dump()), "--inter"); });
  CHECK(contains(e, "bytes_per_s"));
  CHECK(contains(e, "gb_per_s"));
  CHECK(contains(error_of([&] { load_link("./no-such-link.json", "--inter"); }),
                 "no-such-link.json"));
}

TEST_CASE("profile files are strict: unknown keys and missing sources are errors") {
  nlohmann::json g = nlohmann::json::parse(R"({
    "name": "X1", "memory_gib": 10, "peak_tflops": {"bf16": 100}, "hbm_gb_per_s": 1000,
    "gemm_efficiency": [[1e9, 0.5], [1e12, 0.8]], "attention_efficiency": 0.5,
    "memory_efficiency": 0.8, "kernel_overhead_us": 4, "overlap_slowdown": 0.1, "context_gib": 0.5,
    "sources": {"memory_gib": "a", "peak_tflops": "b", "hbm_gb_per_s": "c", "gemm_efficiency": "d",
                "attention_efficiency": "e", "memory_efficiency": "f", "kernel_overhead_us": "g", "overlap_slowdown": "i",
                "context_gib": "h"}})");
  CHECK(load_gpu(write_temp(g.dump())).name == "X1");
  nlohmann::json typo = g;
  typo["memory_gbi"] = 3;
  const std::string e1 = error_of([&] { load_gpu(write_temp(typo.dump())); });
  CHECK(contains(e1, "memory_gbi"));
  CHECK(contains(e1, "memory_gib"));
  nlohmann::json unsourced = g;
  unsourced["sources"].erase("hbm_gb_per_s");
  CHECK(contains(error_of([&] { load_gpu(write_temp(unsourced.dump())); }), "hbm_gb_per_s"));
  nlohmann::json bad_curve = g;
  bad_curve["gemm_efficiency"] = {{1e12, 0.8}, {1e9, 0.5}};
  CHECK(contains(error_of([&] { load_gpu(write_temp(bad_curve.dump())); }), "ascending"));
}

TEST_CASE("clusters from flags") {
  ClusterOptions o;
  o.gpu = "A100-80GB";
  o.gpus = 128;
  o.inter = "10gbe";
  const ClusterSpec c = build_cluster(o);
  CHECK(c.nodes() == 16);
  CHECK(c.intra.name == "nvlink3");  // the A100's own fabric
  CHECK(c.nics_per_node == 1);       // Ethernet: one NIC per node unless told otherwise
  CHECK(c.inter.busbw_bytes_per_s == doctest::Approx(1.15e9 / 8));
  ClusterOptions flat;
  flat.link = "10Gbit/s";
  flat.gpus = 8;
  const ClusterSpec f = build_cluster(flat);
  CHECK(f.intra.busbw_bytes_per_s == 1.25e9);
}

namespace {

// The multiplier profiles/fit/step-time.json ships for a constant (1 when it has none).
double shipped(const std::string& name) {
  for (const FittedConstant& c : shipped_fit().constants)
    if (c.name == name) return c.multiplier;
  return 1;
}

// A number from an embedded profile's raw JSON, as the file holds it (before any fit).
nlohmann::json raw_profile(const std::string& path) {
  const EmbeddedFile* f = find_embedded(path);
  REQUIRE(f != nullptr);
  return nlohmann::json::parse(f->text);
}

}  // namespace

TEST_CASE("framework compute speed: the profile's figure times the shipped fit's multipliers") {
  // profiles/frameworks hold the figures their sources give (fsdp eager 0.864 from torchtitan's
  // Table 1, 0.933 on A100 from llm-foundry's rows; DeepSpeed's pipeline engine 0.78, MT-NLG);
  // the fitted constants multiply them: the framework's speed on every class, then its class's.
  const nlohmann::json fsdp_raw = raw_profile("frameworks/fsdp.json");
  const double fsdp_speed = fsdp_raw.at("kernels").at("speed").get<double>();
  CHECK(fsdp_speed == doctest::Approx(0.864));
  const FrameworkPricing fsdp = load_framework(Framework::fsdp).pricing;
  CHECK(fsdp.compute_speed(load_gpu("H100-SXM").accuracy_class, 1) ==
        doctest::Approx(fsdp_speed * shipped("stack fsdp") * shipped("stack fsdp x H100")));
  CHECK(fsdp.compute_speed(load_gpu("A100-80GB").accuracy_class, 1) ==
        doctest::Approx(0.933 * shipped("stack fsdp") * shipped("stack fsdp x A100")));
  CHECK(fsdp.compute_speed(load_gpu("A100-40GB").accuracy_class, 1) ==
        fsdp.compute_speed(load_gpu("A100-80GB").accuracy_class, 1));
  const FrameworkPricing ds = load_framework(Framework::deepspeed).pricing;
  const double ds_a100 = ds.compute_speed(load_gpu("A100-80GB").accuracy_class, 1);
  // Only with pipeline stages does DeepSpeed's pipeline engine speed apply.
  CHECK(ds.compute_speed(load_gpu("A100-80GB").accuracy_class, 8) ==
        doctest::Approx(ds_a100 * 0.78 * shipped("deepspeed_pipeline_engine_speed")));
  // Megatron-LM is the reference stack: speed 1 before its per-class fit.
  CHECK(load_framework(Framework::megatron)
            .pricing.compute_speed(load_gpu("A100-80GB").accuracy_class, 8) ==
        doctest::Approx(shipped("stack megatron x A100")));
}

TEST_CASE("a power-limited part reads its sibling's efficiencies times its power derate") {
  // profiles/gpus/h100-96gb-500w.json ships the H100 SXM's curves and power_derate 0.786
  // ((500 / 700)^0.716, pytorch/FBGEMM PR #4197's power law); the fit refines the derate.
  const GpuSpec sxm = load_gpu("H100-SXM");
  const GpuSpec capped = load_gpu("H100-96GB-500W");
  const double derate = 0.786 * shipped("h100_500w_part_factor");
  CHECK(capped.power_derate == doctest::Approx(derate));
  CHECK(capped.memory_efficiency == doctest::Approx(sxm.memory_efficiency * derate));
  CHECK(capped.attention_efficiency == doctest::Approx(sxm.attention_efficiency * derate));
  REQUIRE(capped.gemm_efficiency.size() == sxm.gemm_efficiency.size());
  CHECK(capped.gemm_efficiency.back().efficiency ==
        doctest::Approx(sxm.gemm_efficiency.back().efficiency * derate));
  CHECK(sxm.power_derate == 1);
}

TEST_CASE("the fitted-constants file: every constant the step-time model has, nothing else") {
  // The shipped file names constants the model knows and round-trips through its writer.
  REQUIRE_FALSE(shipped_fit().constants.empty());
  const FittedConstants again =
      fitted_from_text(fitted_to_text(shipped_fit()), "round trip");
  REQUIRE(again.constants.size() == shipped_fit().constants.size());
  for (size_t i = 0; i < again.constants.size(); ++i) {
    CHECK(again.constants[i].name == shipped_fit().constants[i].name);
    CHECK(again.constants[i].multiplier ==
          doctest::Approx(shipped_fit().constants[i].multiplier).epsilon(1e-4));
  }
  const auto refused = [](const std::string& text) {
    try {
      fitted_from_text(text, "fit.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string head = R"({"source": "s", "procedure": "p", "constants": [)";
  CHECK(contains(refused(head + R"({"name": "gemm_share", "multiplier": 1}]})"),
                 "fit.json: constants[0]: name"));
  CHECK(contains(refused(head + R"({"name": "gemm_share", "multiplier": 1}]})"),
                 "is not a fitted constant"));
  CHECK(contains(refused(head + R"({"name": "attention_share", "multiplier": -1}]})"),
                 "constants[0]: multiplier"));
  CHECK(contains(refused(R"({"source": "s", "procedure": "p", "constants": 3})"),
                 "constants"));
  // A stack the corpus does not have is still a constant a user's calibration may carry.
  CHECK(fitted_from_text(head + R"({"name": "stack fsdp x B200", "multiplier": 0.9}]})", "f")
            .constants.size() == 1);
}

// The accuracy classes are data, each GPU profile's accuracy_class with its source: the parts
// that run the same kernels share one (H200 is Hopper GH100 with more HBM, NVIDIA H200
// datasheet: the H100 class); a GPU the corpus has no class for declares none.
TEST_CASE("GPU accuracy classes come from the GPU profiles") {
  const std::pair<const char*, const char*> expected[] = {
      {"A100-40GB", "A100"}, {"A100-80GB", "A100"}, {"H100-SXM", "H100"},
      {"H100-PCIe", "H100"}, {"H100-96GB-500W", "H100"}, {"H200", "H100"},
      {"B200", "B200"},      {"B300", "B300"},      {"GB200", "GB200"},
      {"GB300", "GB300"},    {"L40S", "L40S"},      {"MI300X", "MI300X"},
      {"H800", ""},          {"MI325X", "MI325X"},  {"MI355X", "MI355X"},
      {"V100", "V100"}};
  // A pair, not a structured binding: clang 14 (Debian 12) rejects CAPTURE of a binding.
  for (const auto& gpu_class : expected) {
    CAPTURE(gpu_class.first);
    CHECK(load_gpu(gpu_class.first).accuracy_class == gpu_class.second);
  }
  CHECK(gpu_accuracy_classes() ==
        std::vector<std::string>{"A100", "B200", "B300", "GB200", "GB300", "H100", "L40S",
                                 "MI300X", "MI325X", "MI355X", "V100"});
  // The validation cases reach their GPUs by preset and carry the preset's class. Their GPUs
  // (profiles/validation/*.json "gpu"): A100-40GB, A100-80GB, B200, B300, GB200, GB300,
  // H100-96GB-500W, H100-SXM, H200, H800 (no class), MI300X, MI325X, MI355X, V100.
  std::set<std::string> seen;
  for (const std::string& text : {default_published_runs(), default_holdout_runs()}) {
    for (const PublishedRun& r : load_published_runs(text, "runs")) {
      CAPTURE(r.id);
      CHECK(r.cluster.gpu.accuracy_class == load_gpu(r.cluster.gpu.name).accuracy_class);
      seen.insert(r.cluster.gpu.accuracy_class);
    }
  }
  CHECK(seen == std::set<std::string>{"", "A100", "B200", "B300", "GB200", "GB300", "H100",
                                      "MI300X", "MI325X", "MI355X", "V100"});
}

TEST_CASE("a framework's default FP8 recipe is an FP8 recipe it runs, on Hopper too") {
  const nlohmann::json fsdp = nlohmann::json::parse(find_embedded("frameworks/fsdp.json")->text);
  auto refused_in = [&](const char* profile, const std::string& recipe, const std::string& why) {
    nlohmann::json j =
        nlohmann::json::parse(find_embedded(std::string("frameworks/") + profile)->text);
    j["fp8_default_recipe"] = recipe;
    try {
      framework_from_text(j.dump(), profile);
      FAIL("expected an InputError for " << recipe);
    } catch (const InputError& e) {
      CHECK(e.field() == std::string(profile) + ": fp8_default_recipe");
      CHECK(contains(e.what(), why));
      // The ones that fit: torchao's tensorwise default for both, which the message offers.
      CHECK(contains(e.what(), "fp8-tensorwise"));
    }
  };
  auto refused = [&](const std::string& recipe, const std::string& why) {
    refused_in("fsdp.json", recipe, why);
  };
  // mxfp8 runs under torchtitan (torchao's MX recipes) but only on Blackwell: `--precision fp8`
  // on an H100 would price a recipe the GPU cannot run.
  refused_in("torchtitan.json", "mxfp8", "'mxfp8' does not run on Hopper");
  refused("fp8-delayed", "'fp8-delayed' does not run under fsdp");  // torchao dropped delayed
  refused("bf16", "'bf16' is not an FP8 recipe");
  refused("fp8", "'fp8' is the alias");
  CHECK_THROWS_AS(
      [&] {
        nlohmann::json j = fsdp;
        j["fp8_default_recipe"] = "fp9";
        framework_from_text(j.dump(), "fsdp.json");
      }(),
      InputError);
  CHECK(framework_from_text(fsdp.dump(), "fsdp.json").fp8_default_recipe == "fp8-tensorwise");
}

TEST_CASE("framework profiles name only the accuracy classes the GPU profiles declare") {
  const nlohmann::json fsdp = nlohmann::json::parse(find_embedded("frameworks/fsdp.json")->text);
  auto refused = [](const nlohmann::json& j, const std::string& field) {
    try {
      framework_from_text(j.dump(), "fsdp.json");
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      CHECK(e.field() == field);
      CHECK(contains(e.what(), "'H200' is not a GPU accuracy class; the GPU profiles declare "
                               "A100, B200, B300, GB200, GB300, H100, L40S, MI300X, MI325X, MI355X or V100"));
    }
  };
  nlohmann::json j = fsdp;
  j["kernels"]["speed_by_gpu"][0]["gpu_class"] = "H200";
  refused(j, "fsdp.json: kernels: speed_by_gpu[0]: gpu_class");
  j = fsdp;
  j["accuracy"][0]["gpu_class"] = "H200";
  refused(j, "fsdp.json: accuracy[0]: gpu_class");
  j = fsdp;
  j["max_published_mfu_by_gpu"]["H200"] = j["max_published_mfu_by_gpu"]["H100"];
  refused(j, "fsdp.json: max_published_mfu_by_gpu: H200");
  // The profile's one row (A100) is read; the shipped fit may add a class it fitted (H100).
  const auto by_gpu = framework_from_text(fsdp.dump(), "fsdp.json").pricing.kernel_speed_by_gpu;
  CHECK(std::count_if(by_gpu.begin(), by_gpu.end(),
                      [](const auto& c) { return c.first == "A100"; }) == 1);
  // Each accuracy row names the model kind its cases are: dense or moe, nothing else.
  j = fsdp;
  j["accuracy"][0]["models"] = "hybrid";
  try {
    framework_from_text(j.dump(), "fsdp.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "fsdp.json: accuracy[0]: models");
    CHECK(contains(e.what(), "'hybrid' is not dense or moe"));
  }
  j["accuracy"][0].erase("models");
  CHECK_THROWS_AS(framework_from_text(j.dump(), "fsdp.json"), InputError);
}
