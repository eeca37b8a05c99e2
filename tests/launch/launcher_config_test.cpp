// The launcher-config readers: which planning flag each launcher key becomes, the launchers'
// own defaults, bash quoting and expansion in launch scripts, and what is refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "shardplan/error.hpp"
#include "shardplan/launcher_config_reader.hpp"

using shardplan::InputError;
using shardplan::LauncherConfig;
using shardplan::LauncherFormat;
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
                  "--tensor-model-parallel-size 8 --micro-batch-size 2") +
          kShape,
      "args.txt");
  CHECK(c.format == LauncherFormat::megatron);
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
  CHECK(
      noted(read_launcher_config(std::string("--cpu-offloading-num-layers 20") + kShape, "a.args"),
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
  CHECK(c.format == LauncherFormat::deepspeed);
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
  CHECK(c.format == LauncherFormat::torchtitan);
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
  // Flavors the presets name among their aliases ("torchtitan:qwen3/32B"): Qwen3-32B's shape,
  // and deepseek_v3 16B, DeepSeek-V2-Lite's.
  CHECK(value(read_launcher_config("[model]\nname = 'qwen3'\nflavor = '32B'\n", "q.toml"),
              "--model") == "qwen3-32b");
  // data_parallel_shard_degree -1 leaves the world to the launcher: the least the degrees allow
  // stands for it, here the 8 ranks expert parallelism 8 borrows from data parallelism.
  const auto lite = read_launcher_config(
      "[model]\nname = 'deepseek_v3'\nflavor = '16B'\n[parallelism]\n"
      "data_parallel_shard_degree = -1\nexpert_parallel_degree = 8\n",
      "d.toml");
  CHECK(value(lite, "--model") == "deepseek-v2-lite");
  CHECK(value(lite, "--gpus") == "8");
  // tp 2 x pp 2 with ep 4 (expert tp 1): 4 ranks of tp x dp hold the experts, dp 2, 8 GPUs.
  CHECK(value(read_launcher_config("[parallelism]\ndata_parallel_shard_degree = -1\n"
                                   "tensor_parallel_degree = 2\npipeline_parallel_degree = 2\n"
                                   "expert_parallel_degree = 4\n",
                                   "e.toml"),
              "--gpus") == "8");
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
  // parallelism_config sp_size with the deepspeed backend is DeepSpeed-Ulysses
  // (accelerate parallelism_config.py); cp_size is ring attention.
  const auto alst = read_launcher_config(R"(
distributed_type: DEEPSPEED
num_processes: 4
deepspeed_config:
  zero_stage: 3
parallelism_config:
  parallelism_config_dp_shard_size: 2
  parallelism_config_sp_size: 2
  parallelism_config_sp_backend: deepspeed
)",
                                         "alst.yaml");
  CHECK(value(alst, "--cp") == "2");
  CHECK(value(alst, "--cp-kind") == "ulysses");
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
        LauncherFormat::deepspeed);
  CHECK(read_launcher_config("[parallelism]\ntensor_parallel_degree = 2\n", "cfg").format ==
        LauncherFormat::torchtitan);
  CHECK(read_launcher_config("distributed_type: FSDP\n", "cfg").format ==
        LauncherFormat::accelerate);
  // Neither: the message names every launcher's extension, from the launcher rows.
  for (const char* each :
       {".json (DeepSpeed config JSON)", ".sh (Megatron-LM launch script",
        ".toml (torchtitan job config TOML)", "or .yaml (accelerate config YAML)"})
    CHECK_THROWS_WITH_AS(read_launcher_config("hello", "cfg"), doctest::Contains(each), InputError);
}

TEST_CASE(
    "launch scripts run as bash runs them: branches it can decide, $((...)), +=, environment") {
  const std::string script = R"(#!/bin/bash
NNODES=${NNODES:-2}
if [ "$NNODES" -gt 1 ]; then
  TP=8
elif [[ $NNODES == 1 ]]; then
  TP=4
else
  TP=1
fi
ARGS=(--num-layers 32 --hidden-size 4096 --num-attention-heads 32)
ARGS+=(--tensor-model-parallel-size $TP)
ARGS+=(--use-distributed-optimizer)
EXTRA="--bf16"
EXTRA+=" --micro-batch-size 2"
GBS=$(( NNODES * 64 ))
python tools/preprocess_data.py --tensor-model-parallel-size 2 --micro-batch-size 9
torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" $EXTRA \
    --global-batch-size $GBS 2>&1 | tee log.txt
)";
  const auto c = read_launcher_config(script, "train.sh");
  CHECK(value(c, "--tp") == "8");    // NNODES 2 > 1: the first branch, and only it
  CHECK(value(c, "--zero") == "1");  // ARGS+=( ... ) kept
  CHECK(value(c, "--precision") == "bf16");
  CHECK(value(c, "--micro-batch") == "2");     // the helper's 9 is not the training's
  CHECK(value(c, "--global-batch") == "128");  // $(( 2 * 64 ))
  CHECK(value(c, "--gpus") == "16");
  // The environment is bash's: NNODES=1 takes the elif branch.
  const auto one = read_launcher_config(script, "train.sh", {{{"NNODES", "1"}}, {}});
  CHECK(value(one, "--tp") == "4");
  CHECK(value(one, "--global-batch") == "64");
  CHECK(value(one, "--gpus") == "8");
}

TEST_CASE("a branch the file cannot decide is named, and --set decides it") {
  const std::string script = R"(
if [ -f /data/checkpoint ]; then TP=4; else TP=2; fi
ARGS="--num-layers 32 --hidden-size 4096 --num-attention-heads 32"
if [ "$USE_FP8" = "1" ]; then
  ARGS+=" --fp8-format hybrid"
fi
torchrun --nproc_per_node 8 pretrain_gpt.py $ARGS --tensor-model-parallel-size $TP --bf16
)";
  try {
    read_launcher_config(script, "train.sh");
    FAIL("a tp set in undecided branches was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--set TP=VALUE") != std::string::npos);
  }
  const auto c = read_launcher_config(script, "train.sh", {{}, {{"TP", "4"}}});
  CHECK(value(c, "--tp") == "4");
  CHECK(value(c, "--precision") == "bf16");  // the fp8 branch is not read ...
  bool said = false;
  for (const std::string& n : c.notes) said |= n.find("USE_FP8") != std::string::npos;
  CHECK(said);  // ... and the note says which condition left it out
  const auto fp8 = read_launcher_config(script, "train.sh", {{}, {{"TP", "4"}, {"USE_FP8", "1"}}});
  CHECK(value(fp8, "--precision") == "fp8");
  // An expansion the file does not fix, passed whole to the training command, may hold
  // arguments: named, with how to give it, not taken as Megatron-LM's defaults in silence.
  const auto open = read_launcher_config(
      "if [ -n \"$FAST\" ]; then EXTRA=\"--recompute-granularity selective\"; fi\n"
      "torchrun pretrain_gpt.py $EXTRA --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32\n",
      "train.sh");
  bool named = false;
  for (const std::string& n : open.notes) named |= n.find("passes ${EXTRA}") != std::string::npos;
  CHECK(named);
  const auto given = read_launcher_config(
      "if [ -n \"$FAST\" ]; then EXTRA=\"--recompute-granularity selective\"; fi\n"
      "torchrun pretrain_gpt.py $EXTRA --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32\n",
      "train.sh", {{}, {{"EXTRA", "--recompute-granularity full"}}});
  CHECK(value(given, "--recompute") == "full");
}

TEST_CASE("the training command inside bash -c, srun and a heredoc; #SBATCH nodes") {
  const std::string wrapped = R"(#!/bin/bash
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
MODEL="--num-layers 32 --hidden-size 4096 --num-attention-heads 32"
srun --kill-on-bad-exit=1 bash -c "torchrun --nnodes \$SLURM_NNODES --nproc_per_node 8 \
  pretrain_gpt.py $MODEL --pipeline-model-parallel-size 4"
)";
  const auto c = read_launcher_config(wrapped, "job.sbatch.sh");
  CHECK(value(c, "--pp") == "4");
  CHECK(value(c, "--gpus") == "32");  // SLURM_NNODES from #SBATCH --nodes=4
  // Megatron-DeepSpeed as BigScience ran it: the DeepSpeed JSON written by the script itself.
  const std::string mds = R"(
ZERO_STAGE=0
config_json="./ds_config.$SLURM_JOBID.json"
cat <<EOT > $config_json
{
  "train_micro_batch_size_per_gpu": 2,
  "train_batch_size": 2048,
  "zero_optimization": {"stage": $ZERO_STAGE},
  "bf16": {"enabled": true}
}
EOT
deepspeed --num_nodes 48 --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 4 \
  --pipeline-model-parallel-size 12 --num-layers 70 --hidden-size 14336 \
  --num-attention-heads 112 --micro-batch-size 2 --global-batch-size 2048 \
  --checkpoint-activations --deepspeed --deepspeed_config ${config_json} \
  --zero-stage ${ZERO_STAGE} --position-embedding-type alibi --pad-vocab-size-to 250880
)";
  const auto b = read_launcher_config(mds, "tr11-176B-ml.slurm.sh");
  // Stage 0 with bf16: DeepSpeed's BF16_Optimizer shards the optimizer state as ZeRO-1 does.
  CHECK(value(b, "--zero") == "1");
  CHECK(value(b, "--precision") == "bf16");
  CHECK(value(b, "--recompute") == "full");  // --checkpoint-activations: every layer
  CHECK(value(b, "--gpus") == "384");
  CHECK(value(b, "--vocab") == "250880");
  CHECK(value(b, "--positions") == "alibi");
}

TEST_CASE("Megatron-LM's own semantics: aliases, SP at tp 1, the architecture flags") {
  const auto c = read_launcher_config(
      std::string("--sequence-parallel --recompute-activations --swiglu --normalization RMSNorm "
                  "--position-embedding-type rope --untie-embeddings-and-output-weights "
                  "--disable-bias-linear --tokenizer-type GPT2BPETokenizer "
                  "--tensor-model-parallel-size 1") +
          kShape,
      "args.txt");
  CHECK(value(c, "--sequence-parallel").empty());  // arguments.py turns it off at tp 1
  CHECK(value(c, "--recompute") == "selective");
  CHECK(value(c, "--ffn-hidden") == "10880");  // int(4 x 4096 x 2/3 / 64) x 64
  CHECK(value(c, "--norm") == "rmsnorm");
  CHECK(value(c, "--positions") == "rotary");
  CHECK(value(c, "--embeddings") == "untied");
  CHECK(value(c, "--bias") == "none");
  CHECK(value(c, "--vocab") == "50304");  // 50,257 padded to a multiple of 128
  const auto d =
      read_launcher_config(std::string("--tensor-model-parallel-size 8") + kShape, "args.txt");
  CHECK(value(d, "--norm") == "layernorm");  // Megatron-LM's defaults, said as the file's
  CHECK(value(d, "--positions") == "learned");
  CHECK(value(d, "--embeddings") == "tied");
  CHECK(value(d, "--bias") == "all");
}

TEST_CASE("DeepSpeed: \"auto\" values, legacy cpu_offload, AutoTP, and a model config refused") {
  const auto c = read_launcher_config(R"({
    "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "zero_optimization": {"stage": 2, "cpu_offload": true, "reduce_bucket_size": "auto"},
    "tensor_parallel": {"autotp_size": 4}
  })",
                                      "ds_config_zero2.json");
  CHECK(value(c, "--zero") == "2");
  CHECK(value(c, "--offload") == "optimizer");  // zero/config.py: cpu_offload = optimizer on cpu
  CHECK(value(c, "--offload-to") == "cpu");
  CHECK(value(c, "--tp") == "4");
  CHECK(value(c, "--precision").empty());  // the Trainer decides; said in a note
  CHECK(value(c, "--micro-batch").empty());
  bool said = false;
  for (const std::string& n : c.notes) said |= n.find("\"auto\"") != std::string::npos;
  CHECK(said);
  CHECK_THROWS_AS(read_launcher_config(R"({"model_type": "llama", "hidden_size": 4096,
                                          "num_hidden_layers": 32})",
                                       "config.json"),
                  InputError);
}

// Megatron-DeepSpeed with the DeepSpeed JSON kept in the repository beside the script (as
// examples_deepspeed/ does): read from there, as DeepSpeed would load it at launch.
TEST_CASE("Megatron-DeepSpeed: a --deepspeed_config on disk beside the script is read") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "shardplan-mds-beside-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream json(dir / "ds_zero3.json");
    json << R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
               "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": true}})";
  }
  const std::string script = R"(
deepspeed --num_nodes 2 --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 \
  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --micro-batch-size 1 \
  --global-batch-size 64 --deepspeed --deepspeed_config ds_zero3.json --zero-stage 1
)";
  const std::string path = (dir / "run.sh").string();
  const auto c = read_launcher_config(script, path);
  CHECK(value(c, "--zero") == "3");  // the JSON's stage, not --zero-stage 1
  CHECK(value(c, "--offload") == "optimizer");
  CHECK(value(c, "--precision") == "bf16");
  bool read_from = false;
  for (const std::string& n : c.notes)
    read_from |=
        n.find("ds_zero3.json read from " + (dir / "ds_zero3.json").string()) != std::string::npos;
  CHECK(read_from);
  // Neither written by the script nor on disk: --zero-stage stands, and the note says why.
  std::filesystem::remove(dir / "ds_zero3.json");
  const auto missing = read_launcher_config(script, path);
  CHECK(value(missing, "--zero") == "1");
  bool named = false;
  for (const std::string& n : missing.notes)
    named |= n.find("neither written by the script nor readable here") != std::string::npos;
  CHECK(named);
  std::filesystem::remove_all(dir);
}

// DeepSpeed-Ulysses in the JSON (runtime/config.py: the data-parallel world is world /
// sequence_parallel_size): the batch identity gives dp, sequence_parallel_size the CP degree.
TEST_CASE("DeepSpeed: sequence_parallel_size is Ulysses context parallelism") {
  const auto c = read_launcher_config(R"({
    "train_batch_size": 32, "train_micro_batch_size_per_gpu": 1,
    "gradient_accumulation_steps": 8, "sequence_parallel_size": 4,
    "zero_optimization": {"stage": 3}, "bf16": {"enabled": true}
  })",
                                      "ds_ulysses.json");
  CHECK(value(c, "--dp") == "4");  // 32 / (1 x 8)
  CHECK(value(c, "--cp") == "4");
  CHECK(value(c, "--cp-kind") == "ulysses");
  const auto one = read_launcher_config(R"({"sequence_parallel_size": 1})", "ds_sp1.json");
  CHECK(value(one, "--cp").empty());
  CHECK_THROWS_AS(read_launcher_config(R"({"sequence_parallel_size": 0})", "ds_sp0.json"),
                  InputError);
}

// Megatron-Core's --cp-comm-type (transformer_config.py cp_comm_type): p2p is the ring, a2a the
// Ulysses-style all-to-all; Megatron-DeepSpeed's --ds-sequence-parallel-size is DeepSpeed-Ulysses.
TEST_CASE("Megatron: --cp-comm-type and --ds-sequence-parallel-size set how CP splits attention") {
  const auto kind = [](const std::string& args) {
    return value(read_launcher_config("torchrun pretrain_gpt.py --context-parallel-size 2 " + args,
                                      "train.sh"),
                 "--cp-kind");
  };
  CHECK(kind("--cp-comm-type a2a") == "ulysses");
  CHECK(kind("--cp-comm-type p2p") == "ring");
  CHECK(kind("").empty());  // Megatron-Core's default, p2p: ring, the shardplan default too
  const auto ds =
      read_launcher_config("deepspeed pretrain_gpt.py --ds-sequence-parallel-size 4", "ds.sh");
  CHECK(value(ds, "--cp") == "4");
  CHECK(value(ds, "--cp-kind") == "ulysses");
  // Hierarchical a2a+p2p is not priced: refused by name, not read as either.
  CHECK_THROWS_WITH_AS(
      read_launcher_config("torchrun pretrain_gpt.py --cp-comm-type a2a+p2p", "train.sh"),
      doctest::Contains("--cp-comm-type"), InputError);
}

// DeepSpeed's AutoEP block (module_inject/auto_ep_config.py parse_autoep_config): autoep_size is
// the expert-parallel group, read only when enabled.
TEST_CASE("DeepSpeed: the expert_parallel block is AutoEP's expert-parallel degree") {
  const auto c = read_launcher_config(R"({
    "train_batch_size": 256, "train_micro_batch_size_per_gpu": 1,
    "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2},
    "expert_parallel": {"enabled": true, "autoep_size": 8, "preset_model": "mixtral"}
  })",
                                      "ds_autoep.json");
  CHECK(value(c, "--dp") == "64");
  CHECK(value(c, "--ep") == "8");
  CHECK(value(c, "--expert-tp").empty());
  const auto etp = read_launcher_config(
      R"({"expert_parallel": {"enabled": true, "autoep_size": 4,
                              "expert_tensor_parallel_size": 2}})",
      "ds_autoep_etp.json");
  CHECK(value(etp, "--ep") == "4");
  CHECK(value(etp, "--expert-tp") == "2");
  // Off unless enabled, as DeepSpeed reads it.
  const auto off =
      read_launcher_config(R"({"expert_parallel": {"autoep_size": 8}})", "ds_off.json");
  CHECK(value(off, "--ep").empty());
  for (const char* bad :
       {R"({"expert_parallel": 8})", R"({"expert_parallel": {"enabled": "yes", "autoep_size": 8}})",
        R"({"expert_parallel": {"enabled": true, "autoep_size": 0}})",
        R"({"expert_parallel": {"enabled": true, "autoep_size": 2.5}})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(read_launcher_config(bad, "ds_bad.json"), InputError);
  }
}
