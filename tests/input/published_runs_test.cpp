// The published-runs reader: a run may name a model preset (any architecture a preset holds,
// MoE included) and an expert-parallel plan, as the MoE rows of framework performance tables
// need.
#include <doctest/doctest.h>

#include <string>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/validation.hpp"

using shardplan::InputError;
using shardplan::load_published_runs;

namespace {

std::string run_with(const std::string& model, const std::string& plan_extra) {
  return R"([{"id": "r", "model": )" + model +
         R"(, "hardware": {"gpu": "H100-SXM", "gpus_total": 64},
  "plan": {"dp": 8, "tp": 1, "pp": 8, "global_batch": 512)" + plan_extra +
         R"(}, "measured": {"tokens_per_s_per_gpu": 1000.0}}])";
}

}  // namespace

TEST_CASE("published runs: a model preset with the run's sequence length, and ep / etp") {
  const auto runs =
      load_published_runs(run_with(R"({"preset": "mixtral-8x7b", "seq_len": 4096})",
                                   R"(, "ep": 8, "etp": 1)"),
                          "runs.json");
  REQUIRE(runs.size() == 1);
  // Mixtral 8x7B (Jiang et al. 2024, Table 1): 32 layers, 8 experts, 2 active per token.
  CHECK(runs[0].model.layers == 32);
  CHECK(runs[0].model.experts == 8);
  CHECK(runs[0].model.experts_per_token == 2);
  CHECK(runs[0].model.seq_len == 4096);
  CHECK(runs[0].training.seq_len == 4096);
  CHECK(runs[0].plan.ep == 8);
  CHECK(runs[0].plan.etp == 1);
}

TEST_CASE("published runs: a preset keeps its own sequence length unless the run states one") {
  const auto runs = load_published_runs(run_with(R"({"preset": "llama-3-8b"})", ""), "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].model.seq_len == 8192);  // the preset's (Meta Llama 3 model card: 8k context)
  CHECK(runs[0].model.experts == 0);
  CHECK(runs[0].plan.ep == 1);
}

TEST_CASE("published runs: a preset with shape keys beside it, or an unknown preset, is refused") {
  CHECK_THROWS_WITH_AS(
      load_published_runs(run_with(R"({"preset": "llama-3-8b", "layers": 16})", ""), "runs.json"),
      doctest::Contains("runs.json: run 0: model.layers"), InputError);
  CHECK_THROWS_AS(load_published_runs(run_with(R"({"preset": "no-such-model"})", ""), "runs.json"),
                  InputError);
  CHECK_THROWS_AS(load_published_runs(run_with(R"({"preset": 7})", ""), "runs.json"), InputError);
}

TEST_CASE("published runs: a run may state its tensor-parallel communication overlapped") {
  std::string text = run_with(R"({"preset": "llama-3-8b"})", "");
  const std::string key = R"("measured")";
  text.replace(text.find(key), key.size(), R"("tp_comm_overlap": true, "measured")");
  const auto runs = load_published_runs(text, "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].training.tp_comm_overlap);
  CHECK_FALSE(load_published_runs(run_with(R"({"preset": "llama-3-8b"})", ""), "runs.json")[0]
                  .training.tp_comm_overlap);
}

TEST_CASE(
    "published runs: source_flags are the source's words, or the run is refused naming them") {
  const auto with_flags = [](const std::string& flags) {
    std::string text = run_with(R"({"preset": "llama-3-8b"})", "");
    const std::string key = R"("measured")";
    return text.replace(text.find(key), key.size(),
                        R"("source_flags": )" + flags + R"(, "measured")");
  };
  const auto runs =
      load_published_runs(with_flags(R"(["a known regression, table note 2"])"), "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].source_flags == std::vector<std::string>{"a known regression, table note 2"});
  CHECK(load_published_runs(run_with(R"({"preset": "llama-3-8b"})", ""), "runs.json")[0]
            .source_flags.empty());
  for (const std::string bad : {R"("one string")", "[]", R"([""])", "[3]"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(load_published_runs(with_flags(bad), "runs.json"),
                         doctest::Contains("runs.json: run 0: source_flags"), InputError);
  }
}

TEST_CASE("published runs: a stated uneven pipeline split reaches the plan") {
  // Llama 3.1 405B's 126 layers on PP8 x VP8 with the embedding and the loss counted as layers
  // (Megatron-Bridge recipes/llama/llama3.py, account_for_*_in_pipeline_split): 128 / 64 = 2 per
  // chunk, so the first and the last chunk hold one transformer layer each.
  const auto runs = load_published_runs(
      run_with(R"({"preset": "llama-3.1-405b"})",
               R"(, "interleave": 8, "first_stage_layers": 1, "last_stage_layers": 1)"),
      "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].plan.first_stage_layers == 1);
  CHECK(runs[0].plan.last_stage_layers == 1);
  CHECK(load_published_runs(run_with(R"({"preset": "llama-3.1-405b"})", ""), "runs.json")[0]
            .plan.first_stage_layers == -1);
}

// The shipped sweeps (tools/import_hagemann23.py from the sheets of Hagemann et al. 2023's data
// repository, commit e13c2cb): every layout that ran or ran out of memory, none other.
TEST_CASE("memory sweeps: the shipped sheets' layouts, outcomes and plans") {
  const auto cases =
      shardplan::load_memory_sweeps(shardplan::default_memory_sweeps(), "memory-sweeps.json");
  // The ten sheets hold 984 rows: 401 ran, 563 "OOM Error", 19 "Kernel not available" (the
  // fused kernel on LLaMA 30B) and 1 "Other Error"; the last two say nothing about memory.
  CHECK(cases.size() == 964);
  int oom = 0;
  const shardplan::MemoryVerdictCase* best = nullptr;
  for (const auto& c : cases) {
    oom += c.ran ? 0 : 1;
    if (c.run.id == "hagemann23-13b-2k-layouts-132178") best = &c;
  }
  CHECK(oom == 563);
  // Trial 132178 of llama_13B_bfloat16_64_GPUs_all_runs.xlsx: the paper's 70.5% MFU layout,
  // 64 GPUs, micro-batch 1, no model or pipeline parallelism, no checkpointing, FlashAttention-2
  // with the RMSNorm kernel, 26.54 s a step.
  REQUIRE(best != nullptr);
  CHECK(best->ran);
  CHECK(best->kernel == "flash_attention2 + RMS kernel");
  CHECK(best->run.plan.dp == 64);
  CHECK(best->run.plan.tp == 1);
  CHECK(best->run.plan.pp == 1);
  CHECK(best->run.plan.zero == 1);
  CHECK(best->run.plan.micro_batch == 1);
  CHECK(best->run.plan.recompute == shardplan::Recompute::none);
  CHECK(best->run.training.attention == shardplan::AttentionKind::flash);
  CHECK(best->run.training.global_batch == 2048);
  CHECK(best->run.measured == doctest::Approx(26.54).epsilon(0.001));
  // Aleph Alpha's scaling gathers the logits and runs the aten loss on their fp32 copy, the
  // 16-bit logits kept in the pipeline buffer: 2 + 4 + 4 + 4 B a logit at the backward's peak.
  CHECK(best->run.training.full_vocab_loss);
  CHECK(best->run.training.framework.pricing.logit_bytes == 14);
  // LLaMA-13B (Touvron et al. 2023, Table 2): 40 layers of width 5120; 80 GB A100s.
  CHECK(best->run.model.layers == 40);
  CHECK(best->run.model.hidden == 5120);
  CHECK(best->run.cluster.gpu.memory_bytes == doctest::Approx(80.0 * 1024 * 1024 * 1024));
  // The sheet's vocabulary is 128,000, not LLaMA's 32,000: this layout's "Average MFU", 0.7057,
  // is 6N + 12·l·h·s FLOPs a token over 2,048 x 2,048 tokens in 26.54 s on 64 A100s at 312
  // TFLOP/s only with N = 13.999B, a 128,000-entry embedding and LM head included (0.658 with
  // 32,000).
  CHECK(best->run.model.vocab == 128000);
  const double n = shardplan::count_params(best->run.model).total;
  const double per_token = 6.0 * n + 12.0 * 40 * 5120 * 2048;
  CHECK(per_token * 2048 * 2048 / (26.54 * 64 * 312e12) == doctest::Approx(0.7057).epsilon(0.005));
}

TEST_CASE("memory sweeps: a row that cannot be a layout is refused, naming it") {
  const auto sweep = [](const std::string& row) {
    return R"([{"id": "s", "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 128},
      "hardware": {"gpu": "A100-80GB"}, "plan": {"zero_stage": 1, "global_batch": 64},
      "columns": ["trial", "gpus", "micro_batch", "tp", "pp", "sequence_parallel", "recompute",
                  "attention", "kernel", "outcome", "iteration_time_s"],
      "rows": [)" +
           row + "]}]";
  };
  CHECK(shardplan::load_memory_sweeps(
            sweep(R"([1, 8, 1, 2, 2, false, "none", "flash", "k", "out_of_memory", null])"), "f")
            .size() == 1);
  // 6 GPUs cannot hold tp 4.
  CHECK_THROWS_WITH_AS(
      shardplan::load_memory_sweeps(
          sweep(R"([1, 6, 1, 4, 1, false, "none", "flash", "k", "ran", 1.0])"), "f"),
      doctest::Contains("multiple of tp x pp"), InputError);
  CHECK_THROWS_WITH_AS(shardplan::load_memory_sweeps(
                           sweep(R"([1, 8, 0, 1, 1, false, "none", "flash", "k", "ran", 1.0])"),
                           "f"),
                       doctest::Contains("micro_batch must be a whole number"), InputError);
  CHECK_THROWS_WITH_AS(
      shardplan::load_memory_sweeps(
          sweep(R"([1, 8, 1, 1, 1, false, "none", "flash", "k", "crashed", 1.0])"), "f"),
      doctest::Contains("not ran or out_of_memory"), InputError);
  CHECK_THROWS_WITH_AS(
      shardplan::load_memory_sweeps(sweep(R"([1, 8, 1, 1, 1, false, "none", "flash", "k"])"), "f"),
      doctest::Contains("expected 11 columns"), InputError);
  CHECK_THROWS_WITH_AS(shardplan::load_memory_sweeps(
                           sweep(R"([1, "8", 1, 1, 1, false, "none", "flash", "k", "ran", 1.0])"),
                           "f"),
                       doctest::Contains("gpus must be a whole number"), InputError);
  CHECK_THROWS_WITH_AS(shardplan::load_memory_sweeps(
                           sweep(R"([1, 8, 1, 1, 1, false, "none", "flash", "k", "ran", "1 s"])"),
                           "f"),
                       doctest::Contains("wrong type"), InputError);
}

TEST_CASE("published runs: a flag is true or false; anything else is refused with its run") {
  // A string where a flag goes was once read as the flag's default, unsaid.
  std::string shaped = run_with(
      R"({"layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "tied_embeddings": "no"})", "");
  CHECK_THROWS_WITH_AS(load_published_runs(shaped, "runs.json"),
                       doctest::Contains("runs.json: run 0: tied_embeddings: is \"no\""),
                       InputError);
  std::string text = run_with(R"({"preset": "llama-3-8b"})", "");
  const std::string compiled = text.substr(0, text.size() - 2) + R"(, "compiled_loss": "yes"}])";
  CHECK_THROWS_WITH_AS(load_published_runs(compiled, "runs.json"),
                       doctest::Contains("run 0: compiled_loss: is \"yes\"; give true or false"),
                       InputError);
  // compiled_loss on a profile that prices no compiled loss is refused too.
  const std::string megatron =
      text.substr(0, text.size() - 2) + R"(, "profile": "megatron", "compiled_loss": true}])";
  CHECK_THROWS_WITH_AS(load_published_runs(megatron, "runs.json"),
                       doctest::Contains("run 0: compiled_loss"), InputError);
  // A stack's own bytes per logit: a number above 0 and at most 64.
  const std::string loss_bytes =
      text.substr(0, text.size() - 2) + R"(, "loss_peak_bytes_per_logit": 0}])";
  CHECK_THROWS_WITH_AS(load_published_runs(loss_bytes, "runs.json"),
                       doctest::Contains("run 0: loss_peak_bytes_per_logit: is 0"), InputError);
  CHECK(load_published_runs(
            text.substr(0, text.size() - 2) + R"(, "loss_peak_bytes_per_logit": 14}])", "runs.json")
            .front()
            .training.framework.pricing.logit_bytes == 14);
  // CUDA graphs: a scope name, and only on a profile that prices them.
  const std::string bogus =
      text.substr(0, text.size() - 2) + R"(, "profile": "megatron", "cuda_graphs": "all"}])";
  CHECK_THROWS_WITH_AS(load_published_runs(bogus, "runs.json"),
                       doctest::Contains("run 0: cuda_graphs: 'all' is not one of"), InputError);
  const std::string titan =
      text.substr(0, text.size() - 2) +
      R"(, "profile": "torchtitan", "precision": "bf16", "cuda_graphs": "full"}])";
  CHECK_THROWS_WITH_AS(load_published_runs(titan, "runs.json"),
                       doctest::Contains("run 0: cuda_graphs: torchtitan's profile prices no CUDA"),
                       InputError);
  const std::string graphed =
      text.substr(0, text.size() - 2) + R"(, "profile": "megatron", "cuda_graphs": "full"}])";
  CHECK(load_published_runs(graphed, "runs.json").front().training.cuda_graphs ==
        shardplan::CudaGraphs::full);
}
