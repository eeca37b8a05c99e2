// --from FILE: `emit` then `estimate --from` gives back the plan emit was given, for every
// launcher, and launcher configs written by hand are read with their defaults and unknown keys
// named.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::contains;
using shardplan::test::make_temp_dir;
using shardplan::test::run_cli;
using shardplan::test::write_file;

namespace {

const std::string kData = std::string(SHARDPLAN_TEST_DATA) + "/launch/";

nlohmann::json json_of(const std::string& args, int status = 0) {
  const auto r = run_cli(args + " --json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.status == status);
  return nlohmann::json::parse(r.out);
}

// Emits `flags` as `format` into `path` and returns what it wrote.
std::string emitted(const std::string& format, const std::string& flags, const std::string& path) {
  const auto r = run_cli("emit --format " + format + " " + flags + " -o " + path);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return shardplan::test::read_file(path);
}

// Emits `flags` as `format` into a file, reads it back with --from (plus `beside`, the flags
// the format cannot hold) and checks the plan and the batch are the ones the flags gave.
void round_trip(const std::string& format, const std::string& flags, const std::string& beside,
                const std::string& extension) {
  CAPTURE(format);
  CAPTURE(flags);
  const std::string path = make_temp_dir() + "/config." + extension;
  const auto emitted = run_cli("emit --format " + format + " " + flags + " -o " + path);
  INFO(emitted.err);
  REQUIRE(emitted.status == 0);
  const auto asked = json_of("estimate " + flags);
  const auto read = json_of("estimate --from " + path + " " + beside);
  CHECK(read.at("plan") == asked.at("plan"));
  for (const char* key : {"global_batch", "seq_len", "precision"})
    CHECK(read.at("training").at(key) == asked.at("training").at(key));
  CHECK(read.at("training").at("framework") == asked.at("training").at("framework"));
  CHECK(contains(read.at("notes").dump(), "read " + path));
}

bool has_note(const nlohmann::json& j, const std::string& part) {
  for (const auto& n : j.at("notes"))
    if (contains(n.get<std::string>(), part)) return true;
  return false;
}

}  // namespace

TEST_CASE("emit then estimate --from: a Megatron-LM script gives back its plan") {
  // The README's GPT-3 175B run: the script holds the shapes, the degrees and torchrun's GPUs.
  round_trip("megatron",
             "--model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 8 --zero 1 "
             "--recompute full --global-batch 1536",
             "--model gpt3-175b --cluster dgx-a100", "sh");
  // Interleaved stages with a custom first/last stage: written as
  // --pipeline-model-parallel-layout, read back from it.
  round_trip("megatron",
             "--model llama-3.1-70b --gpus 64 --tp 4 --pp 4 --interleave 2 --first-stage-layers 7 "
             "--last-stage-layers 7 --sequence-parallel --zero 1 --recompute full "
             "--global-batch 128",
             "--model llama-3.1-70b", "sh");
  // Megatron-Core's recompute modules: one word each in the script (argparse nargs='*').
  round_trip("megatron",
             "--model qwen3-30b-a3b --gpus 16 --tp 2 --ep 8 --zero 1 --recompute selective "
             "--recompute-modules moe_act,layernorm --precision fp8-tensorwise --global-batch 64",
             "--model qwen3-30b-a3b", "sh");
  // HSDP at ZeRO-1: --num-distributed-optimizer-instances dp / shard, read back as the shard.
  round_trip("megatron",
             "--model llama-3.1-8b --cluster dgx-h100 --gpus 32 --zero 1 --dp-shard 8 "
             "--recompute full --global-batch 64",
             "--model llama-3.1-8b --cluster dgx-h100", "sh");
  // Without --model beside it: the script's header names the model shardplan wrote it for, so
  // the vocabulary (the tokenizer's, not in the arguments) is that model's, not GPT-2's 51,200.
  {
    const std::string path = make_temp_dir() + "/llama.sh";
    const std::string flags = "--model llama-3.1-8b --gpus 16 --tp 2 --zero 1 --global-batch 64";
    REQUIRE(run_cli("emit --format megatron " + flags + " -o " + path).status == 0);
    const auto read = json_of("estimate --from " + path);
    const auto asked = json_of("estimate " + flags);
    CHECK(read.at("model").at("params") == asked.at("model").at("params"));
    CHECK(read.at("model").at("vocab") == 128256);
    CHECK(read.at("plan") == asked.at("plan"));
  }
  // Megatron FSDP (ZeRO-3) with context parallelism.
  round_trip("megatron",
             "--model llama-3.1-8b --gpus 16 --cp 2 --zero 3 --recompute full --global-batch 64 "
             "--seq-len 16384",
             "--model llama-3.1-8b", "sh");
}

TEST_CASE("emit then estimate --from: a DeepSpeed JSON gives back its plan") {
  // tp and pp are not DeepSpeed keys: they come back from the _shardplan block.
  round_trip("deepspeed",
             "--model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 8 --zero 1 "
             "--recompute full --global-batch 1536 --framework deepspeed",
             "--model gpt3-175b --cluster dgx-a100", "json");
  round_trip("deepspeed",
             "--model llama-2-7b --gpus 8 --zero 3 --offload optimizer --global-batch 64 "
             "--micro-batch 2 --framework deepspeed",
             "--model llama-2-7b", "json");
  // AutoEP: the expert-parallel degree travels in DeepSpeed's own expert_parallel block.
  round_trip("deepspeed",
             "--model mixtral-8x7b --cluster dgx-h100 --gpus 64 --zero 2 --ep 8 --recompute full "
             "--global-batch 256 --framework deepspeed",
             "--model mixtral-8x7b --cluster dgx-h100", "json");
}

TEST_CASE("emit then estimate --from: a torchtitan TOML gives back its plan") {
  round_trip("torchtitan",
             "--model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 8 --zero 2 "
             "--recompute full --global-batch 1536 --framework torchtitan",
             "--cluster dgx-a100", "toml");
  // A llama3 flavour names shardplan's preset; FSDP without a pipeline is ZeRO-3.
  round_trip("torchtitan",
             "--model llama-3.1-8b --gpus 16 --tp 2 --zero 3 --recompute selective "
             "--global-batch 64 --framework torchtitan",
             "--gpus 16", "toml");
}

TEST_CASE("a compiled loss: emitted as torchtitan's [compile], read back, refused elsewhere") {
  const std::string flags =
      "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --zero 3 --recompute selective "
      "--global-batch 8 --seq-len 8192 --framework torchtitan --compiled-loss";
  const std::string dir = make_temp_dir();
  const std::string toml = emitted("torchtitan", flags, dir + "/c.toml");
  CHECK(contains(toml, "[compile]"));
  CHECK(contains(toml, "components = [ 'model', 'loss' ]"));
  const auto asked = json_of("estimate " + flags);
  const auto read = json_of("estimate --from " + dir + "/c.toml --cluster dgx-h100 --gpus 8");
  CHECK(asked.at("training").at("compiled_loss") == true);
  CHECK(read.at("training").at("compiled_loss") == true);
  CHECK(read.at("memory") == asked.at("memory"));
  // 8192 x 128,256 logits at 4 B (compiled) against 12 B (eager): 7.83 GiB less at the peak.
  const auto eager = json_of("estimate " + flags.substr(0, flags.find(" --compiled-loss")));
  CHECK_FALSE(eager.at("training").contains("compiled_loss"));
  // Llama 3.1 8B's vocabulary is 128,256 (its config.json); micro-batch 1 of 8,192 tokens.
  const double logit_bytes_saved = 8192.0 * 128256 * (12 - 4);
  CHECK(eager.at("memory").at("transient_bytes").get<double>() -
            asked.at("memory").at("transient_bytes").get<double>() ==
        doctest::Approx(logit_bytes_saved).epsilon(1e-9));
  CHECK(eager.at("memory").at("allocated_bytes").get<double>() -
            asked.at("memory").at("allocated_bytes").get<double>() ==
        doctest::Approx(logit_bytes_saved).epsilon(1e-9));
  // Left eager, the note says what it assumed and which flag changes it.
  CHECK(has_note(eager, "the loss is priced eager, 12 B per logit"));
  CHECK_FALSE(has_note(asked, "priced eager"));
  // The model alone compiled leaves the loss eager; the old training.compile compiled both.
  write_file(dir + "/model-only.toml",
             "[model]\nname = 'llama3'\nflavor = '8B'\n[compile]\nenable = true\n"
             "components = ['model']\n");
  CHECK_FALSE(json_of("estimate --from " + dir + "/model-only.toml --gpus 8")
                  .at("training")
                  .contains("compiled_loss"));
  write_file(dir + "/old.toml",
             "[model]\nname = 'llama3'\nflavor = '8B'\n[training]\ncompile = true\n");
  const auto old = json_of("estimate --from " + dir + "/old.toml --gpus 8");
  CHECK(old.at("training").at("compiled_loss") == true);
  CHECK(has_note(old, "training.compile compiles the loss"));
  write_file(dir + "/bad.toml", "[model]\nname = 'llama3'\nflavor = '8B'\n[compile]\nfuse = 1\n");
  CHECK(has_note(json_of("estimate --from " + dir + "/bad.toml --gpus 8"), "compile.fuse"));
  // Megatron's profile prices no compiled loss: the flag is refused, naming the stack that has it,
  // by estimate and by plan, and in a plan file (a rule, not a flag check).
  check_refused("estimate --model llama-3.1-8b --gpus 8 --compiled-loss", "--compiled-loss");
  check_refused("plan --model llama-3.1-8b --gpus 8 --compiled-loss", "--framework torchtitan");
  auto plan = json_of("estimate --model llama-3.1-8b --gpus 8 --zero 3");
  plan["training"]["compiled_loss"] = true;
  write_file(dir + "/p.json", plan.dump());
  check_refused("estimate --plan " + dir + "/p.json", "plan (--compiled-loss)");
}

TEST_CASE("a full-vocabulary loss: disable_loss_parallel read and emitted, Megatron refuses it") {
  // torchtitan's parallel_dims.loss_parallel_enabled is tp > 1 and not disable_loss_parallel:
  // with it set, each TP rank holds all 8192 x 128,256 logits at the eager loss's 12 B, not
  // loss_parallel's 16 B over a quarter of them.
  const std::string flags =
      "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --tp 4 --zero 3 --recompute selective "
      "--global-batch 8 --seq-len 8192 --framework torchtitan";
  const std::string dir = make_temp_dir();
  const std::string toml = emitted("torchtitan", flags + " --full-vocab-loss", dir + "/f.toml");
  CHECK(contains(toml, "disable_loss_parallel = true"));
  const auto asked = json_of("estimate " + flags + " --full-vocab-loss");
  const auto read = json_of("estimate --from " + dir + "/f.toml --cluster dgx-h100 --gpus 8");
  CHECK(asked.at("training").at("full_vocab_loss") == true);
  CHECK(read.at("training").at("full_vocab_loss") == true);
  CHECK(read.at("memory") == asked.at("memory"));
  const auto parallel = json_of("estimate " + flags);
  CHECK_FALSE(parallel.at("training").contains("full_vocab_loss"));
  CHECK(asked.at("memory").at("transient_bytes").get<double>() -
            parallel.at("memory").at("transient_bytes").get<double>() ==
        doctest::Approx(8192.0 * 128256 * (12.0 - 16.0 / 4)).epsilon(1e-9));
  CHECK(asked.at("time").at("step_s").get<double>() >
        parallel.at("time").at("step_s").get<double>());
  // The pre-v0.1 switch, training.enable_loss_parallel = false, reads the same.
  write_file(dir + "/old.toml",
             "[model]\nname = 'llama3'\nflavor = '8B'\n[training]\ntensor_parallel_degree = 4\n"
             "enable_loss_parallel = false\n");
  CHECK(json_of("estimate --from " + dir + "/old.toml --gpus 8")
            .at("training")
            .at("full_vocab_loss") == true);
  // Megatron-LM's GPT model always runs the vocabulary-parallel loss: no config for it.
  check_refused(
      "emit --format megatron --model llama-3.1-8b --cluster dgx-h100 --gpus 8 --tp 4 "
      "--full-vocab-loss -o " +
          dir + "/m.sh",
      "--full-vocab-loss");
}

TEST_CASE(
    "CUDA graphs: read from Megatron-LM's flags as arguments.py resolves them, emitted back") {
  const std::string dir = make_temp_dir();
  const std::string base =
      "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
      "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 "
      "--global-batch-size 64 --bf16 --use-distributed-optimizer ";
  const auto graphs = [&](const std::string& flags) {
    write_file(dir + "/g.sh", base + flags + "\n");
    const auto e = json_of("estimate --from " + dir + "/g.sh --gpus 8");
    return e.at("training").value("cuda_graphs", std::string("none"));
  };
  // --enable-cuda-graph is --cuda-graph-impl local; with no modules it graphs whole layers.
  CHECK(graphs("--enable-cuda-graph") == "full");
  CHECK(graphs("--cuda-graph-impl full_iteration") == "full");
  // The attention and the MLP together are the layer; the attention alone, or a MoE layer's
  // router, is a scope (the old --cuda-graph-scope spelling too).
  CHECK(graphs("--cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp") == "full");
  CHECK(graphs("--external-cuda-graph --cuda-graph-scope attn moe_router") == "scoped");
  CHECK(graphs("--cuda-graph-impl none") == "none");
  CHECK(graphs("") == "none");
  write_file(dir + "/bad.sh", base + "--cuda-graph-impl x\n");
  check_refused("estimate --from " + dir + "/bad.sh --gpus 8", "--cuda-graph-impl");
  // Emitted as Transformer Engine's per-module graphs of the attention, and read back so.
  const std::string flags =
      "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --zero 1 --recompute full "
      "--cuda-graphs scoped";
  const std::string script = emitted("megatron", flags, dir + "/e.sh");
  CHECK(contains(script, "--cuda-graph-impl transformer_engine"));
  CHECK(contains(script, "--cuda-graph-modules attn"));
  const auto asked = json_of("estimate " + flags);
  const auto read = json_of("estimate --from " + dir + "/e.sh --cluster dgx-h100 --gpus 8");
  CHECK(read.at("training").at("cuda_graphs") == "scoped");
  CHECK(read.at("time") == asked.at("time"));
  // torchtitan's profile states no share of the fixed costs graphs leave: refused.
  check_refused("estimate --model llama-3.1-8b --gpus 8 --framework torchtitan --cuda-graphs full",
                "--cuda-graphs");
}

TEST_CASE("emit then estimate --from: HSDP as torchtitan's and accelerate's two degrees") {
  // torchtitan: data_parallel_replicate_degree 2 x data_parallel_shard_degree 8.
  round_trip("torchtitan",
             "--model llama-3.1-8b --cluster dgx-h100 --gpus 16 --zero 3 --dp-shard 8 "
             "--global-batch 64 --framework torchtitan",
             "--cluster dgx-h100 --gpus 16", "toml");
  // accelerate FSDP2: parallelism_config_dp_replicate_size 2 x _dp_shard_size 8, at ZeRO-2 too.
  round_trip("accelerate",
             "--model llama-3.1-8b --cluster dgx-h100 --gpus 16 --zero 2 --dp-shard 8 "
             "--global-batch 256 --framework fsdp",
             "--model llama-3.1-8b --cluster dgx-h100 --global-batch 256", "yaml");
  const std::string path = make_temp_dir() + "/titan.toml";
  REQUIRE(run_cli("emit --format torchtitan --model llama-3.1-8b --cluster dgx-h100 --gpus 16 "
                  "--zero 3 --dp-shard 8 --global-batch 64 --framework torchtitan -o " + path)
              .status == 0);
  const std::string toml = shardplan::test::read_file(path);
  CHECK(contains(toml, "data_parallel_replicate_degree = 2"));
  CHECK(contains(toml, "data_parallel_shard_degree = 8"));
  // FSDP1's HYBRID_SHARD shards inside a node: one node's GPUs per shard group.
  const std::string dir = make_temp_dir();
  write_file(dir + "/hybrid.yaml", "distributed_type: FSDP\nnum_machines: 2\nnum_processes: 16\n"
                                   "mixed_precision: bf16\nfsdp_config:\n  fsdp_version: 1\n"
                                   "  fsdp_sharding_strategy: HYBRID_SHARD\n");
  const auto j = json_of("estimate --from " + dir + "/hybrid.yaml --model llama-3.1-8b "
                         "--global-batch 32");
  CHECK(j.at("plan").at("dp_shard") == 8);
  CHECK(j.at("plan").at("dp_replicate") == 2);
  CHECK(j.at("plan").at("zero") == 3);
}

TEST_CASE("emit then estimate --from: an accelerate YAML gives back its plan") {
  // The batch is the script's (DataLoader batch_size, accumulation on the launch line): given
  // beside the file, as the emitted header says.
  round_trip("accelerate",
             "--model llama-3.1-8b --gpus 16 --zero 3 --recompute full --global-batch 256 "
             "--framework fsdp",
             "--model llama-3.1-8b --global-batch 256", "yaml");
}

TEST_CASE("estimate --from a hand-written Megatron-LM script: variables, arrays, defaults") {
  const auto j = json_of("estimate --from " + kData + "megatron-llama2-7b.sh --model llama-2-7b");
  const auto& p = j.at("plan");
  CHECK(p.at("tp") == 2);  // TP=2 ... --tensor-model-parallel-size $TP
  CHECK(p.at("pp") == 2);
  CHECK(p.at("dp") == 4);  // torchrun $DISTRIBUTED_ARGS: 2 nodes x 8 / (2 x 2)
  CHECK(p.at("zero") == 1);
  CHECK(p.at("sequence_parallel") == true);
  CHECK(p.at("recompute") == "selective");
  CHECK(j.at("training").at("global_batch") == 256);
  CHECK(j.at("training").at("seq_len") == 4096);
  CHECK(j.at("cluster").at("gpus") == 16);
  // Megatron-LM's own default when the script is silent, said so.
  CHECK(has_note(j, "no --grad-reduce-in-bf16: Megatron-LM keeps fp32 main gradients"));
  CHECK(j.at("training").at("fp32_grads") == true);
  // A key shardplan does not know is named, not dropped silently; known non-plan keys (--lr,
  // --lr-warmup-iters, --clip-grad ...) are not.
  CHECK(has_note(j, "1 key shardplan does not know, not used: --my-site-profiler"));
}

TEST_CASE("estimate --from hand-written DeepSpeed, torchtitan and accelerate configs") {
  // 256 = micro 4 x accumulation 8 x dp 8: DeepSpeed's batch identity gives dp.
  const auto ds = json_of("estimate --from " + kData + "deepspeed-zero3-offload.json --model "
                          "llama-2-7b");
  CHECK(ds.at("plan").at("dp") == 8);
  CHECK(ds.at("plan").at("zero") == 3);
  CHECK(ds.at("plan").at("micro_batch") == 4);
  CHECK(ds.at("plan").at("offload").at("optimizer") == true);
  CHECK(ds.at("training").at("framework") == "deepspeed");
  CHECK(has_note(ds, "not used: my_team_tag"));
  CHECK(has_note(ds, "tensor and pipeline parallelism live in the training script"));

  // data_parallel_shard_degree -1: the GPUs left after tp 2, so --gpus says how many.
  const auto tt = json_of("estimate --from " + kData + "torchtitan-llama3-8b.toml --gpus 16");
  CHECK(tt.at("model").at("name") == "llama-3.1-8b");
  CHECK(tt.at("plan").at("dp") == 8);
  CHECK(tt.at("plan").at("tp") == 2);
  CHECK(tt.at("plan").at("zero") == 3);
  CHECK(tt.at("plan").at("micro_batch") == 2);
  CHECK(tt.at("plan").at("recompute") == "full");
  // global_batch_size -1: local 2 x dp 8 (job_config.py Training.global_batch_size).
  CHECK(tt.at("training").at("global_batch") == 16);
  CHECK(tt.at("training").at("seq_len") == 8192);

  // FSDP1's SHARD_GRAD_OP is ZeRO-2; 16 processes on 2 machines.
  const auto ac = json_of("estimate --from " + kData + "accelerate-fsdp1.yaml --model llama-3.1-8b");
  CHECK(ac.at("plan").at("zero") == 2);
  CHECK(ac.at("plan").at("dp") == 16);
  CHECK(ac.at("plan").at("recompute") == "full");
  CHECK(ac.at("cluster").at("gpus_per_node") == 8);
  CHECK(has_note(ac, "DataLoader batch_size"));
}

TEST_CASE("--from refuses what it cannot read or price, naming the file's key") {
  const std::string dir = make_temp_dir();
  // A misspelt plan key would leave the plan to its default: refused with the nearest key.
  write_file(dir + "/typo.sh", "torchrun pretrain_gpt.py --tensor-model-paralel-size 4 "
                               "--num-layers 32 --hidden-size 4096 --num-attention-heads 32\n");
  check_refused("estimate --from " + dir + "/typo.sh", "did you mean --tensor-model-parallel-size");
  // A plan the model cannot take names the script's argument, not --tp.
  write_file(dir + "/tp3.sh", "torchrun --nproc_per_node 6 pretrain_gpt.py "
                              "--tensor-model-parallel-size 3 --num-layers 32 --hidden-size 4096 "
                              "--num-attention-heads 32\n");
  check_refused("estimate --from " + dir + "/tp3.sh", "tp3.sh: --tensor-model-parallel-size");
  // A value the file does not fix.
  write_file(dir + "/env.sh", "torchrun pretrain_gpt.py --tensor-model-parallel-size $TP\n");
  check_refused("estimate --from " + dir + "/env.sh --model llama-2-7b",
                "--set TP=VALUE");
  // A flag beside the file for a value the file sets: nothing is replaced silently.
  check_refused("estimate --from " + kData + "megatron-llama2-7b.sh --tp 4",
                "megatron-llama2-7b.sh sets it (--tensor-model-parallel-size = 2)");
  // DeepSpeed's JSON holds no model.
  check_refused("estimate --from " + kData + "deepspeed-zero3-offload.json", "give --model");
  // DeepSpeedZeroConfig refuses unknown keys, and so does shardplan.
  write_file(dir + "/ds.json", R"({"train_micro_batch_size_per_gpu": 1,
                                   "zero_optimization": {"stage": 2, "overlap_com": true}})");
  check_refused("estimate --from " + dir + "/ds.json --model llama-2-7b",
                "zero_optimization.overlap_com");
  // HSDP is priced from its shard degree: -1 ("the rest") beside a replicate degree is not one.
  write_file(dir + "/hsdp.toml", "[parallelism]\ndata_parallel_replicate_degree = 2\n"
                                 "data_parallel_shard_degree = -1\n[model]\nname = 'llama3'\n"
                                 "flavor = '8B'\n");
  check_refused("estimate --from " + dir + "/hsdp.toml", "data_parallel_shard_degree");
  // AutoEP's expert-parallel degree is read; DeepSpeed shards experts only for its presets'
  // families (gpt-oss is none of them) and, as documented, with ZeRO stages 0-2.
  write_file(dir + "/autoep.json", R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                       "expert_parallel": {"enabled": true, "autoep_size": 8}})");
  CHECK(json_of("estimate --from " + dir +
                "/autoep.json --model mixtral-8x7b --gpus 64 --seq-len 4096")
            .at("plan")
            .at("ep") == 8);
  check_refused("estimate --from " + dir + "/autoep.json --model gpt-oss-120b --gpus 64",
                "expert_parallel.autoep_size");
  write_file(dir + "/autoep3.json",
             R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                        "zero_optimization": {"stage": 3},
                                        "expert_parallel": {"enabled": true, "autoep_size": 8}})");
  check_refused(
      "estimate --from " + dir + "/autoep3.json --model mixtral-8x7b --gpus 64 --seq-len 4096",
      "ZeRO stages up to 2");
  write_file(dir + "/plan.cfg", "hello");
  check_refused("estimate --from " + dir + "/plan.cfg", "not a launcher config");
}

TEST_CASE("runbook, memory and plan take --from; plan says what would be faster") {
  const std::string file = kData + "deepspeed-zero3-offload.json --model llama-2-7b";
  CHECK(json_of("memory --from " + file).at("plan").at("zero") == 3);
  CHECK(json_of("runbook --from " + file).at("plan").at("offload").at("optimizer") == true);
  // The same run with the optimizer on NVMe: its states cross the drive every step (ZeRO-Infinity)
  // while the 7B model's plain ZeRO plans fit on the 8 H100s, so the search finds one faster on
  // the same GPUs and batch.
  const std::string nvme = kData + "deepspeed-zero3-offload-nvme.json --model llama-2-7b";
  const auto plan = json_of("plan --from " + nvme);
  const auto& from = plan.at("from");
  CHECK(from.at("plan").at("offload").at("optimizer") == true);
  REQUIRE(!from.at("faster").is_null());
  CHECK(from.at("speedup").get<double>() > 1.01);
  CHECK(from.at("faster").at("step_s").get<double>() < from.at("step_s").get<double>());
  CHECK(plan.at("training").at("global_batch") == 256);
  const auto text = run_cli("plan --from " + nvme);
  CHECK(contains(text.out, "From " + kData + "deepspeed-zero3-offload-nvme.json: dp 8"));
  CHECK(contains(text.out, "Faster: "));
}

TEST_CASE("accelerate's deepspeed_config_file is followed, beside the YAML; a missing one is named") {
  const std::string dir = make_temp_dir();
  write_file(dir + "/ds.json", R"({"train_micro_batch_size_per_gpu": 2,
                                   "zero_optimization": {"stage": 3}, "bf16": {"enabled": true}})");
  write_file(dir + "/acc.yaml", "distributed_type: DEEPSPEED\nnum_processes: 8\nnum_machines: 1\n"
                                "mixed_precision: bf16\ndeepspeed_config:\n"
                                "  deepspeed_config_file: ds.json\n");
  const auto j = json_of("estimate --from " + dir + "/acc.yaml --model llama-2-7b");
  CHECK(j.at("plan").at("zero") == 3);
  CHECK(j.at("plan").at("micro_batch") == 2);
  write_file(dir + "/missing.yaml", "distributed_type: DEEPSPEED\nnum_processes: 8\n"
                                    "deepspeed_config:\n  deepspeed_config_file: nowhere.json\n");
  check_refused("estimate --from " + dir + "/missing.yaml --model llama-2-7b",
                "deepspeed_config.deepspeed_config_file");
}
