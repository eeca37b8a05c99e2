// `shardplan plan` from the command line: the JSON contract, exit statuses and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;

TEST_CASE("plan --json: ladder, recommended, fastest, ranked and search") {
  const auto r = run_cli(
      "plan --model llama-2-7b --gpu H100-SXM --gpus 8 --global-batch 64 --seq-len 4096 --top 5 "
      "--json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& ladder = j.at("ladder");
  REQUIRE(ladder.size() >= 3);
  CHECK(ladder[0].at("rung") == "single-gpu");
  CHECK(ladder[0].at("fits") == false);
  for (const char* k : {"rung", "fits", "reason", "memory_bytes", "comm_share"})
    CHECK(ladder[0].contains(k));
  const std::string stop = j.at("recommended").at("rung");
  CHECK((stop == "zero-1" || stop == "zero-2"));
  for (const char* k : {"memory", "time", "throughput", "comm", "plan"}) {
    CHECK(j.at("recommended").contains(k));
    CHECK(j.at("fastest").contains(k));
  }
  CHECK(j.at("ranked").size() == 5);
  const auto& s = j.at("search");
  CHECK(s.at("evaluated").get<long long>() >= s.at("feasible").get<long long>());
  CHECK(s.at("seconds").get<double>() >= 0.0);  // speed is measured by bench/search_bench
  CHECK(j.at("gap").at("step_ratio").get<double>() >= 1.0);
}

TEST_CASE("plan ranks its best plans again by simulation and says so") {
  const auto r = run_cli(
      "plan --model llama-2-7b --gpu H100-SXM --gpus 8 --global-batch 64 --seq-len 4096 --top 5 "
      "--json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& rr = j.at("rerank");
  CHECK(rr.at("simulated").get<int>() >= 1);
  CHECK(rr.at("simulated").get<int>() <= rr.at("at_most").get<int>());
  CHECK(rr.at("candidates").get<long long>() == j.at("search").at("feasible").get<long long>());
  CHECK(rr.at("k_rule").get<std::string>().find("at most") != std::string::npos);
  CHECK(rr.contains("changed"));
  // The fastest plan's step is its simulated one.
  CHECK(rr.at("chosen_simulated_step_s").get<double>() ==
        doctest::Approx(j.at("fastest").at("simulated").at("step_s").get<double>()));
  const auto text = run_cli(
      "plan --model llama-2-7b --gpu H100-SXM --gpus 8 --global-batch 64 --seq-len 4096 --top 5");
  REQUIRE(text.status == 0);
  CHECK(contains(text.out, "Re-ranked the "));
  CHECK(contains(text.out, " candidates by simulation"));
}

TEST_CASE("plan table shows every rung's reason and the recommended plan") {
  const auto r = run_cli("plan --model llama-3.1-70b --gpu H100-SXM --gpus 64");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "weights need"));
  CHECK(contains(r.out, "Recommended (zero-3"));
  CHECK(contains(r.out, "Fastest found"));
}

TEST_CASE("an impossible request exits 1 and says how close the search came") {
  const auto r = run_cli("plan --params 1e12 --gpus 2");
  CHECK(r.status == 1);
  CHECK(contains(r.out, "No plan fits"));
  CHECK(contains(r.out, "Closest"));
  CHECK(contains(r.out, "x the capacity"));
  const auto j = run_cli("plan --params 1e12 --gpus 2 --json");
  CHECK(j.status == 1);
  const auto closest = nlohmann::json::parse(j.out).at("closest");
  CHECK(closest.at("memory_bytes").get<double>() > closest.at("capacity_bytes").get<double>());
}

TEST_CASE("plan rejects bad flags naming them") {
  for (const auto& [args, field] :
       {std::pair{"plan --model llama-2-7b --objective speed", "--objective"},
        std::pair{"plan --model llama-2-7b --top 0", "--top"},
        std::pair{"plan --model llama-2-7b --max-comm-share 3", "--max-comm-share"},
        std::pair{"plan --gpus 8", "--model"}}) {
    shardplan::test::check_refused(args, field);
  }
}

TEST_CASE(
    "plan --framework torchtitan: the ladder says the framework has no ZeRO-1 and no offload on "
    "one GPU") {
  const auto eight =
      run_cli("plan --model llama-3.1-8b --gpus 8 --gpu H100-SXM --framework torchtitan");
  REQUIRE(eight.status == 0);
  const auto zero1 = eight.out.find("zero-1 ");
  REQUIRE(zero1 != std::string::npos);
  const std::string line = eight.out.substr(zero1, eight.out.find('\n', zero1) - zero1);
  CHECK(contains(line, "the framework has no ZeRO stage this rung needs"));
  CHECK(contains(line, "framework_zero_stage"));

  const auto one =
      run_cli("plan --model llama-3.1-8b --gpus 1 --gpu H100-SXM --framework torchtitan --json");
  const auto j = nlohmann::json::parse(one.out);
  REQUIRE(j.at("ladder").size() >= 4);
  CHECK(j.at("ladder")[2].at("rung") == "offload");
  // Offload inside FSDP only, with the weights sharded over 2 or more ranks: not on one GPU.
  CHECK(contains(j.at("ladder")[2].at("reason").get<std::string>(), "framework_offload_shards"));
  CHECK(j.at("ladder")[3].at("rung") == "zero-1");
  CHECK(contains(j.at("ladder")[3].at("reason").get<std::string>(), "framework_zero_stage"));
}
