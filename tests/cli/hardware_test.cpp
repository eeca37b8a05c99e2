// The rack-scale and newest presets from the command line: TP inside the NVL72 domain priced on
// NVLink, the same TP over the NICs of 8-GPU servers, and provision across the new GPUs.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::contains;
using shardplan::test::run_cli;

namespace {

const std::string k405b = "--model llama-3.1-405b --gpus 256 --global-batch 512 --seq-len 8192";

nlohmann::json tensor_traffic(const std::string& args) {
  const auto r = run_cli("estimate " + args + " --json");
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out).at("comm").at("tensor_parallel");
}

}  // namespace

TEST_CASE("plan on gb200-nvl72 weighs TP 8-64 inside the NVLink domain; dgx-b200 stops at 8") {
  const std::string args = "plan --model llama-3.1-405b --gpus 256 --top 3000 --json --cluster ";
  const auto nvl = run_cli(args + "gb200-nvl72");
  REQUIRE(nvl.status == 0);
  std::set<int> tps;
  const auto nvl_json = nlohmann::json::parse(nvl.out);  // outlives the loop over its members
  for (const auto& r : nvl_json.at("ranked")) {
    const int tp = r.at("plan").at("tp").get<int>();
    tps.insert(tp);
    if (tp < 8) continue;
    // Wider than a 4-GPU tray, and priced on NVLink: one domain, no NIC.
    const auto& t = r.at("comm").at("tensor_parallel");
    CHECK(t.at("tier") == "nvlink5-nvl72");
    CHECK(t.at("group").at("domains") == 1);
    CHECK(t.at("group").at("nodes") == tp / 4);
  }
  for (const int tp : {8, 16, 32, 64}) CHECK(tps.count(tp) == 1);
  const auto dgx = run_cli(args + "dgx-b200");
  REQUIRE(dgx.status == 0);
  const auto dgx_json = nlohmann::json::parse(dgx.out);
  for (const auto& r : dgx_json.at("ranked")) {
    CHECK(r.at("plan").at("tp").get<int>() <= 8);
  }
}

TEST_CASE("TP 8 on NVL72 is priced on NVLink; TP 16 on DGX B200 over the NICs") {
  const std::string plan = " --tp 8 --pp 4 --zero 1 --sequence-parallel --recompute full";
  const auto nvl = tensor_traffic(k405b + " --cluster gb200-nvl72" + plan);
  CHECK(nvl.at("tier") == "nvlink5-nvl72");
  CHECK(nvl.at("group").at("nodes") == 2);    // two trays
  CHECK(nvl.at("group").at("domains") == 1);  // one NVLink domain
  CHECK(nvl.at("busbw_bytes_per_s").get<double>() == doctest::Approx(740e9));

  check_refused("estimate " + k405b + " --cluster dgx-b200 --tp 16 --pp 2 --zero 1", "--tp");
  const auto dgx = tensor_traffic(k405b +
                                  " --cluster dgx-b200 --tp 16 --pp 2 --zero 1 --sequence-parallel "
                                  "--recompute full --allow-tp-across-nodes");
  CHECK(dgx.at("tier") == "nvlink5 + ib-ndr");
  CHECK(dgx.at("group").at("domains") == 2);
  // min(NVLink5 740, 8 GPUs x 47 GB/s of ConnectX-7) = 376 GB/s.
  CHECK(dgx.at("busbw_bytes_per_s").get<double>() == doctest::Approx(376e9));
}

TEST_CASE("EP 64 of a MoE model sits inside one NVL72 domain") {
  const auto r = run_cli(
      "estimate --model deepseek-v3 --cluster gb200-nvl72 --gpus 256 --global-batch 1024 "
      "--seq-len 4096 --pp 4 --ep 64 --zero 1 --recompute full --json");
  REQUIRE(r.status == 0);
  const auto ep = nlohmann::json::parse(r.out).at("comm").at("expert_parallel");
  CHECK(ep.at("tier") == "nvlink5-nvl72");
  CHECK(ep.at("group").at("ranks") == 64);
  CHECK(ep.at("group").at("domains") == 1);
}

TEST_CASE("provision plans H200, B200, B300, GB200, GB300 and MI355X side by side") {
  const auto r = run_cli(
      "provision --model llama-3.1-70b --tokens 1T --gpus 64,128 "
      "--gpu H200,B200,B300,GB200,GB300,MI355X "
      "--gpu-hour-cost B300=7,GB300=8,MI355X=5 --json");
  REQUIRE(r.status == 0);
  std::set<std::string> planned;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& o : j.at("provision").at("options")) {
    if (o.at("fits").get<bool>()) planned.insert(o.at("gpu").get<std::string>());
  }
  CHECK(planned == std::set<std::string>{"H200", "B200", "B300", "GB200", "GB300", "MI355X"});
}

TEST_CASE("a V100 refuses bf16 and names the precision it has") {
  check_refused("estimate --model llama-2-7b --cluster dgx-2 --gpus 16 --zero 3", "fp16");
  const auto r = run_cli(
      "estimate --model llama-2-7b --cluster dgx-2 --gpus 16 --zero 3 --precision fp16 --json");
  CHECK(r.status == 0);
}

TEST_CASE("list clusters shows the scale-up domain and the host of each preset") {
  const auto r = run_cli("list clusters");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "72 x nvlink5-nvl72"));
  CHECK(contains(r.out, "nvlink-c2c"));
  CHECK(contains(r.out, "8 x nvlink4"));
}
