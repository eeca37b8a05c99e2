// The launcher-config readers: which planning flag each launcher key becomes, the launchers'
// own defaults, bash quoting and expansion in launch scripts, and what is refused.
#include "shardplan/launcher_config.hpp"

#include <doctest/doctest.h>

#include <string>

#include "shardplan/error.hpp"

using shardplan::ConfigFormat;
using shardplan::InputError;
using shardplan::LauncherConfig;
using shardplan::read_launcher_config;

namespace {

std::string value(const LauncherConfig& c, const std::string& flag) {
  for (const auto& s : c.settings)
    if (s.flag == flag) return s.value;
  return "";
}

bool noted(const LauncherConfig& c, const std::string& part) {
  for (const std::string& d : c.defaults)
    if (d.find(part) != std::string::npos) return true;
  return false;
}

const char* kShape = " --num-layers 32 --hidden-size 4096 --num-attention-heads 32";

}  // namespace

TEST_CASE("Megatron-LM argument list: --name value and --name=value, the last one wins") {
  const auto c = read_launcher_config(
      std::string("--tensor-model-parallel-size=4 --pipeline-model-parallel-size 2 "
                  "--tensor-model-parallel-size 8 --micro-batch-size 2") + kShape,
      "args.txt");
  CHECK(c.format == ConfigFormat::megatron);
  CHECK(value(c, "--tp") == "8");  // argparse keeps the last
  CHECK(value(c, "--pp") == "2");
  CHECK(value(c, "--micro-batch") == "2");
  CHECK(value(c, "--layers") == "32");
  CHECK(c.holds_model);
  // Megatron-LM's defaults when the list is silent (arguments.py): fp32, fp32 main gradients
  // do not apply to fp32, no overlap, one micro-batch per rank.
  CHECK(value(c, "--precision") == "fp32");
  CHECK(value(c, "--fp32-grads").empty());
  CHECK(value(c, "--no-overlap") == "true");
  CHECK(c.default_accumulation == 1);
  CHECK(noted(c, "ZeRO-0"));
}

TEST_CASE("Megatron-LM script: comments, continuations, quotes and ${VAR:-default}") {
  const std::string script = R"(#!/bin/bash
# --tensor-model-parallel-size 16   (a comment: not an argument)
PP=${PP:-4}
NODES=2
LAYOUT='Et*3|t*4|t*4|t*3L'
ARGS=(--bf16 --grad-reduce-in-bf16 --use-distributed-optimizer)
export EXTRA="--sequence-parallel --tensor-model-parallel-size 2"
torchrun --nnodes $NODES --nproc-per-node 8 pretrain_gpt.py \
   --pipeline-model-parallel-size "${PP}" \
   --pipeline-model-parallel-layout "$LAYOUT" \
   "${ARGS[@]}" $EXTRA \
   --num-layers 14 --hidden-size 4096 --num-attention-heads 32 --global-batch-size 64
)";
  const auto c = read_launcher_config(script, "train.sh");
  CHECK(value(c, "--tp") == "2");
  CHECK(value(c, "--pp") == "4");
  CHECK(value(c, "--gpus") == "16");
  CHECK(value(c, "--gpus-per-node") == "8");
  CHECK(value(c, "--sequence-parallel") == "true");
  CHECK(value(c, "--zero") == "1");
  CHECK(value(c, "--precision") == "bf16");
  CHECK(value(c, "--fp32-grads").empty());  // --grad-reduce-in-bf16 given
  // 4 stages on pp 4: one per rank; the ends hold 3 layers (E and L are not layers).
  CHECK(value(c, "--interleave") == "1");
  CHECK(value(c, "--first-stage-layers") == "3");
  CHECK(value(c, "--last-stage-layers") == "3");
  CHECK(c.default_accumulation == 0);  // --global-batch-size given
}

TEST_CASE("Megatron-LM ZeRO stages: distributed optimizer, Megatron FSDP strategies, torch FSDP2") {
  auto zero = [](const std::string& args) {
    return value(read_launcher_config(args + kShape, "a.args"), "--zero");
  };
  CHECK(zero("--use-distributed-optimizer") == "1");
  CHECK(zero("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads") == "2");
  CHECK(zero("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params") == "3");
  CHECK(zero("--use-megatron-fsdp") == "3");  // the strategy's default
  CHECK(zero("--use-torch-fsdp2") == "3");
  CHECK(zero("") == "");
  CHECK_THROWS_AS(read_launcher_config(std::string("--use-megatron-fsdp "
                                                   "--data-parallel-sharding-strategy half") +
                                           kShape,
                                       "a.args"),
                  InputError);
  const auto v = read_launcher_config(
      std::string("--num-layers-per-virtual-pipeline-stage 4 --pipeline-model-parallel-size 2") +
          kShape,
      "a.args");
  CHECK(v.stages.layers_per_stage == 4);
}

TEST_CASE("Megatron-LM layer CPU offloading: --cpu-offloading with --cpu-offloading-num-layers") {
  auto layers = [](const std::string& args) {
    return value(read_launcher_config(args + kShape, "a.args"), "--offload-activation-layers");
  };
  CHECK(layers("--cpu-offloading --cpu-offloading-num-layers 20") == "20");
  // TransformerConfig.cpu_offloading_num_layers defaults to 0; without --cpu-offloading the count
  // offloads nothing.
  CHECK(layers("--cpu-offloading") == "");
  CHECK(layers("--cpu-offloading-num-layers 20") == "");
  CHECK(noted(read_launcher_config(std::string("--cpu-offloading-num-layers 20") + kShape, "a.args"),
              "without --cpu-offloading"));
  // The switch takes no value: the next flag is read as itself.
  CHECK(layers("--cpu-offloading --cpu-offloading-activations --cpu-offloading-num-layers 8") ==
        "8");
  CHECK_THROWS_AS(read_launcher_config(std::string("--cpu-offloading --cpu-offloading-weights "
                                                   "--cpu-offloading-num-layers 8") +
                                           kShape,
                                       "a.args"),
                  InputError);
}

TEST_CASE("DeepSpeed JSON: the batch identity gives dp; stage defaults; offload targets") {
  const auto c = read_launcher_config(
      R"({"train_batch_size": 96, "train_micro_batch_size_per_gpu": 2,
          "gradient_accumulation_steps": 3, "fp16": {"enabled": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"},
                                "offload_param": {"device": "nvme"}}})",
      "ds.json");
  CHECK(c.format == ConfigFormat::deepspeed);
  CHECK(value(c, "--dp") == "16");  // 96 / (2 x 3)
  CHECK(value(c, "--zero") == "2");
  CHECK(value(c, "--precision") == "fp16");
  CHECK(value(c, "--offload") == "optimizer,params");
  CHECK(value(c, "--offload-to") == "nvme");
  // zero/config.py: overlap_comm defaults to false below stage 3.
  CHECK(value(c, "--no-overlap") == "true");
  CHECK_FALSE(c.holds_model);
  // Hugging Face's "auto" is left to the Trainer: a default here, no dp from the identity.
  const auto a = read_launcher_config(
      R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
          "zero_optimization": {"stage": 3}})",
      "auto.json");
  CHECK(value(a, "--micro-batch").empty());
  CHECK(value(a, "--dp").empty());
  CHECK(value(a, "--no-overlap").empty());  // stage 3 overlaps by default
  CHECK_THROWS_AS(read_launcher_config(R"({"train_batch_size": 10,
      "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 1})",
                                       "bad.json"),
                  InputError);
  CHECK_THROWS_AS(read_launcher_config(R"({"zero_optimization": {"stage": 1,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "nvme"}}})",
                                       "two.json"),
                  InputError);
}

TEST_CASE("torchtitan TOML: schedules, layers per stage, ZeRO from the FSDP settings") {
  const auto c = read_launcher_config(R"(
[model]
name = "llama3"
flavor = "70B"
[parallelism]
data_parallel_shard_degree = 4
tensor_parallel_degree = 8
pipeline_parallel_degree = 4
pipeline_parallel_schedule = "InterleavedZeroBubble"
pipeline_parallel_layers_per_stage = 10
pipeline_parallel_first_stage_less_layers = 1
pipeline_parallel_microbatch_size = 2
[training]
local_batch_size = 16
seq_len = 8192
[activation_checkpoint]
mode = "none"
)",
                                      "job.toml");
  CHECK(c.format == ConfigFormat::torchtitan);
  CHECK(value(c, "--model") == "llama-3.1-70b");
  CHECK(value(c, "--schedule") == "zb-h1");
  CHECK(value(c, "--micro-batch") == "2");
  CHECK(value(c, "--dp") == "4");
  // "default" resharding keeps parameters gathered under a pipeline: ZeRO-2.
  CHECK(value(c, "--zero") == "2");
  CHECK(value(c, "--recompute") == "none");
  CHECK(c.stages.layers_per_stage == 10);
  CHECK(c.stages.first_less == 1);
  // global_batch_size -1: local 16 x dp, so 16 / 2 = 8 micro-batches per rank.
  CHECK(c.default_accumulation == 8);
  // torchtitan's other registered models name their presets too.
  CHECK(value(read_launcher_config("[model]\nname = 'deepseek_v3'\nflavor = '671B'\n", "d.toml"),
              "--model") == "deepseek-v3");
  const auto qwen = read_launcher_config(
      "[model]\nname = 'qwen3'\nflavor = '30B-A3B'\n[training]\n"
      "debug_moe_force_load_balance = true\n",
      "q.toml");
  CHECK(value(qwen, "--model") == "qwen3-30b-a3b");
  // torchtitan's round-robin routing (PR #1670) is balanced routing.
  CHECK(value(qwen, "--moe-force-balance") == "true");
  CHECK_THROWS_AS(read_launcher_config("[parallelism]\npipeline_parallel_degree = 2\n"
                                       "pipeline_parallel_schedule = 'Magic'\n",
                                       "job.toml"),
                  InputError);
}

TEST_CASE("accelerate YAML: DeepSpeed and Megatron-LM plugins, processes per machine") {
  const auto ds = read_launcher_config(R"(
distributed_type: DEEPSPEED
mixed_precision: bf16
num_machines: 4
num_processes: 32
deepspeed_config:
  zero_stage: 2
  offload_optimizer_device: cpu
  gradient_accumulation_steps: 4
)",
                                       "acc.yaml");
  CHECK(ds.framework == "deepspeed");
  CHECK(value(ds, "--zero") == "2");
  CHECK(value(ds, "--offload") == "optimizer");
  CHECK(value(ds, "--gpus") == "32");
  CHECK(value(ds, "--gpus-per-node") == "8");
  CHECK(ds.default_accumulation == 4);
  const auto mg = read_launcher_config(R"(
distributed_type: MEGATRON_LM
num_processes: 8
megatron_lm_config:
  megatron_lm_tp_degree: 2
  megatron_lm_pp_degree: 2
  megatron_lm_sequence_parallelism: true
)",
                                       "mg.yml");
  CHECK(mg.framework == "megatron");
  CHECK(value(mg, "--tp") == "2");
  CHECK(value(mg, "--sequence-parallel") == "true");
  CHECK(value(mg, "--precision") == "fp32");  // no mixed_precision
  CHECK_THROWS_AS(read_launcher_config("distributed_type: TPU\n", "x.yaml"), InputError);
  // A misspelt plan key is refused with the nearest one.
  CHECK_THROWS_WITH_AS(read_launcher_config("distributed_type: FSDP\nnum_proceses: 8\n", "y.yaml"),
                       doctest::Contains("did you mean num_processes"), InputError);
}

TEST_CASE("the contents decide when the extension does not") {
  CHECK(read_launcher_config("{\"zero_optimization\": {\"stage\": 1}}", "cfg").format ==
        ConfigFormat::deepspeed);
  CHECK(read_launcher_config("[parallelism]\ntensor_parallel_degree = 2\n", "cfg").format ==
        ConfigFormat::torchtitan);
  CHECK(read_launcher_config("distributed_type: FSDP\n", "cfg").format ==
        ConfigFormat::accelerate);
  CHECK_THROWS_AS(read_launcher_config("hello", "cfg"), InputError);
}
