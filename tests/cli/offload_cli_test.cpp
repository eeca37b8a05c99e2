// Offload at the command line: Llama-3.1-8B on one H100 plans to an offload rung, the plan file
// round-trips it, DeepSpeed and accelerate emit it with keys that parse back, others refuse.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace shardplan::test;

namespace {
const std::string kOneH100 = "--model llama-3.1-8b --gpus 1 --gpu H100-SXM";
}

TEST_CASE("plan llama-3.1-8b on one H100: offload fits, and says what it costs") {
  const auto r = run_cli("plan " + kOneH100);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "offload                STOP HERE"));
  CHECK(contains(r.out, "offload adds"));
  CHECK(contains(r.out, "Recommended (offload"));
  const auto j = nlohmann::json::parse(run_cli("plan " + kOneH100 + " --json").out);
  CHECK(j.at("recommended").at("rung") == "offload");
  CHECK(j.at("recommended").at("plan").at("offload").at("optimizer") == true);
  REQUIRE(j.at("ladder").size() == 3);
  const auto& rung = j.at("ladder")[2];
  CHECK(rung.at("offload_s").get<double>() > 0);
  CHECK(rung.at("without_offload_bytes").get<double>() > rung.at("capacity_bytes").get<double>());
  CHECK(j.at("recommended").at("memory").at("offload").at("host_fits") == true);
  CHECK(j.at("fastest").at("plan").contains("offload"));  // the search falls back to offload
}

TEST_CASE("estimate --offload: memory freed, host need, the offload row; bad values refused") {
  const auto r = run_cli("estimate " + kOneH100 + " --zero 1 --offload optimizer");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "offload optimizer to cpu"));
  CHECK(contains(r.out, "Offload: 89.75 GiB off each device"));  // 12 B x 8.03e9
  CHECK(contains(r.out, "CPU Adam"));
  check_refused("estimate " + kOneH100 + " --offload gradients", "--offload");
  check_refused("estimate " + kOneH100 + " --zero 1 --offload optimizer --offload-to disk",
                "--offload-to");
  check_refused("estimate " + kOneH100 + " --offload optimizer", "ZeRO stage 1");
  check_refused("estimate --model llama-3.1-8b --gpus 1 --gpu L40S --zero 1 --offload optimizer",
                "host");
}

TEST_CASE("emit: DeepSpeed offload keys and accelerate's fsdp_offload_params parse back") {
  const auto ds = run_cli("emit --format deepspeed " + kOneH100 +
                          " --zero 3 --offload optimizer,params --offload-to nvme");
  REQUIRE(ds.status == 0);
  const auto z = nlohmann::json::parse(ds.out).at("zero_optimization");
  CHECK(z.at("stage") == 3);
  CHECK(z.at("offload_optimizer").at("device") == "nvme");
  CHECK(z.at("offload_optimizer").at("pin_memory") == true);
  CHECK(z.at("offload_optimizer").at("nvme_path").is_string());
  CHECK(z.at("offload_param").at("device") == "nvme");
  const auto acc =
      run_cli("emit --format accelerate " + kOneH100 + " --zero 3 --offload optimizer,params");
  REQUIRE(acc.status == 0);
  CHECK(contains(acc.out, "fsdp_offload_params: true"));
  check_refused("emit --format accelerate " + kOneH100 + " --zero 3 --offload optimizer",
                "together");
  // Megatron-Core offloads the optimizer only.
  const auto mega = run_cli("emit --format megatron " + kOneH100 + " --zero 1 --offload optimizer");
  REQUIRE(mega.status == 0);
  CHECK(contains(mega.out, "--optimizer-cpu-offload"));
  CHECK(contains(mega.out, "--use-precision-aware-optimizer"));
  check_refused("emit --format megatron " + kOneH100 + " --zero 3 --offload optimizer,params",
                "cannot offload the parameters");
}

TEST_CASE("torchtitan offloads inside FSDP2: one shard rank refused with the reason, eight run") {
  // torchtitan v0.2.2: training.enable_cpu_offload reaches CPUOffloadPolicy through apply_fsdp,
  // which runs only when data_parallel_shard_degree > 1.
  const std::string offload = " --framework torchtitan --zero 3 --offload optimizer,params";
  check_refused("estimate " + kOneH100 + offload, "sharded over at least 2 ranks");
  const std::string eight = "--model llama-3.1-8b --gpus 8 --gpu H100-SXM" + offload;
  const auto r = run_cli("estimate " + eight);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "offload optimizer+params to cpu"));
  const auto titan = run_cli("emit --format torchtitan " + eight);
  REQUIRE(titan.status == 0);
  CHECK(contains(titan.out, "enable_cpu_offload = true"));
  CHECK(contains(titan.out, "data_parallel_shard_degree = 8"));
  // FSDP2's CPUOffloadPolicy moves weights and optimizer together.
  check_refused("estimate --model llama-3.1-8b --gpus 8 --gpu H100-SXM --framework torchtitan "
                "--zero 3 --offload optimizer",
                "together");
}

TEST_CASE("plan --framework torchtitan: Llama-3.1-70B on 8 H100s fits only offloaded, sharded") {
  // 70.6B params x 16 B / 8 GPUs = 141 GB of states per GPU even fully sharded: the search falls
  // back to offload, which torchtitan runs with 2 or more shard ranks only.
  const auto r = run_cli("plan --model llama-3.1-70b --gpus 8 --gpu H100-SXM --framework "
                         "torchtitan --global-batch 64 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& fastest = j.at("fastest").at("plan");
  CHECK(fastest.at("offload").at("optimizer") == true);
  CHECK(fastest.at("offload").at("params") == true);
  CHECK(fastest.at("zero").get<int>() >= 2);
  CHECK(fastest.at("dp").get<int>() >= 2);
  CHECK(j.at("search").at("rejected").contains("framework_offload_shards"));
}

TEST_CASE("a plan file keeps the offload: emit --plan gives the same DeepSpeed config") {
  const std::string dir = make_temp_dir();
  const auto planned = run_cli("plan " + kOneH100 + " --json");
  REQUIRE(planned.status == 0);
  write_file(dir + "/plan.json", planned.out);
  const auto from_file = run_cli("emit --format deepspeed --plan " + dir + "/plan.json");
  REQUIRE(from_file.status == 0);
  const auto j = nlohmann::json::parse(from_file.out);
  const auto rec = nlohmann::json::parse(planned.out).at("recommended").at("plan");
  CHECK(j.at("_shardplan").at("plan").at("offload") == rec.at("offload"));
  CHECK(j.at("zero_optimization").at("offload_optimizer").at("device") == "cpu");
}

namespace {
// The Megatron-Bridge GB200 FP8-CS recipe for Llama-3.1-405B (llama31_workload_base_configs.py
// V1): 128 GPUs, TP 2, Megatron-FSDP, GBS 64.
const std::string kRecipe =
    "--model llama-3.1-405b --cluster gb200-nvl72 --gpus 128 --tp 2 --zero 3 --sequence-parallel "
    "--seq-len 8192 --global-batch 64 --precision fp8-tensorwise";
}  // namespace

TEST_CASE("estimate --offload-activation-layers 92: Llama-3.1-405B fits on GB200, the row says so") {
  CHECK(run_cli("estimate " + kRecipe).status == 1);  // 336 GiB of 185 GiB without it
  const auto r = run_cli("estimate " + kRecipe + " --offload-activation-layers 92");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "activations of 92 layers offloaded to cpu"));
  CHECK(contains(r.out, "92 layers' activations over nvlink-c2c"));
  const auto j =
      nlohmann::json::parse(run_cli("estimate " + kRecipe + " --offload-activation-layers 92 --json").out);
  CHECK(j.at("plan").at("offload").at("activation_layers") == 92);
  const auto& layers = j.at("time").at("offload").at("layers");
  CHECK(layers.at("layers") == 92);
  // 92 x 1.78 GB (1.658 GiB: FP8 saves the linears' inputs quantized, offload_layers_test) over
  // 225 GB/s = 0.73 s
  CHECK(layers.at("down_s").get<double>() == doctest::Approx(92 * 1.658 * 1.073741824 / 225).epsilon(0.02));
  CHECK(layers.at("exposed_s") == 0);
  CHECK(j.at("memory").at("fits") == true);
}

TEST_CASE("--offload-activation-layers: bad counts and frameworks are refused naming the flag") {
  check_refused("estimate " + kRecipe + " --offload-activation-layers many",
                "--offload-activation-layers");
  check_refused("estimate " + kRecipe + " --offload-activation-layers 126",
                "not below the 126 layers");
  check_refused("estimate " + kRecipe + " --offload-activation-layers 40 --recompute selective",
                "without recompute");
  check_refused("estimate " + kRecipe + " --offload-activation-layers 40 --framework torchtitan",
                "activations of whole layers");
  check_refused("estimate " + kRecipe + " --offload-activation-layers 40 --offload-to nvme",
                "host memory only");
}

TEST_CASE("offloaded layers go through the plan file and a Megatron-LM script and back") {
  const std::string dir = make_temp_dir();
  const auto est = run_cli("estimate " + kRecipe + " --offload-activation-layers 92 --json");
  REQUIRE(est.status == 0);
  write_file(dir + "/plan.json", est.out);
  const auto mega = run_cli("emit --format megatron --plan " + dir + "/plan.json -o " + dir + "/m.sh");
  INFO(mega.err);
  REQUIRE(mega.status == 0);
  const std::string script = read_file(dir + "/m.sh");
  CHECK(contains(script, "--cpu-offloading"));
  CHECK(contains(script, "--cpu-offloading-num-layers 92"));
  const auto back = run_cli("estimate --from " + dir + "/m.sh --model llama-3.1-405b --cluster "
                            "gb200-nvl72 --global-batch 64 --json");
  INFO(back.err);
  REQUIRE(back.status == 0);
  CHECK(nlohmann::json::parse(back.out).at("plan").at("offload").at("activation_layers") == 92);
}
