// `shardplan provision` from the command line: the JSON contract, the best option, the deadline's
// exit status and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::run_cli;

namespace {

const std::string kMustShow =
    "provision --model llama-3.1-70b --tokens 2T --gpu H100-SXM,H200,B200,A100-80GB "
    "--gpus 64,128,256,512";

using shardplan::test::contains;

}  // namespace

TEST_CASE("provision --json: 16 options, Pareto-marked, the best named") {
  const auto r = run_cli(kMustShow + " --json");
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());  // no progress line when stderr is not a terminal
  const auto p = nlohmann::json::parse(r.out).at("provision");
  const auto& options = p.at("options");
  REQUIRE(options.size() == 16);
  int pareto = 0;
  for (const auto& o : options) {
    for (const char* k : {"gpu", "gpus", "plan", "step_s", "time_to_train_s", "cost", "pareto"})
      CHECK(o.contains(k));
    REQUIRE(o.at("fits") == true);
    // cost = GPUs x hours x the price per GPU-hour
    const double hours = o.at("time_to_train_s").get<double>() / 3600;
    CHECK(o.at("cost").get<double>() ==
          doctest::Approx(o.at("gpus").get<int>() * hours * o.at("gpu_hour_cost").get<double>()));
    pareto += o.at("pareto").get<bool>();
  }
  CHECK(pareto >= 1);
  // Sorted by cost (the default objective), so the best is the first and the cheapest.
  CHECK(p.at("objective") == "cost");
  CHECK(p.at("best").at("cost") == options[0].at("cost"));
  CHECK(p.at("best").at("pareto") == true);
  for (size_t i = 1; i < options.size(); ++i)
    CHECK(options[i - 1].at("cost").get<double>() <= options[i].at("cost").get<double>());
  // The list prices carry their sources.
  CHECK(contains(p.at("prices").at("H200").at("source").get<std::string>(), "LIST PRICE"));
}

TEST_CASE("provision --deadline: the cheapest that meets it, or exit 1 naming the fastest") {
  const auto loose = run_cli(kMustShow + " --deadline 400d --json");
  REQUIRE(loose.status == 0);
  const auto p = nlohmann::json::parse(loose.out).at("provision");
  const auto& best = p.at("best");
  CHECK(best.at("time_to_train_s").get<double>() <= 400 * 86400.0);
  for (const auto& o : p.at("options")) {
    if (o.at("time_to_train_s").get<double>() <= 400 * 86400.0)
      CHECK(best.at("cost").get<double>() <= o.at("cost").get<double>());
  }
  const auto tight = run_cli(kMustShow + " --deadline 1d");
  CHECK(tight.status == 1);
  CHECK(contains(tight.out, "No option meets the deadline of 24.0 h. The fastest is 512 x"));
  const auto tight_json = run_cli(kMustShow + " --deadline 1d --json");
  CHECK(tight_json.status == 1);
  const auto pj = nlohmann::json::parse(tight_json.out).at("provision");
  CHECK(pj.at("best").is_null());
  CHECK(pj.at("fastest").at("gpus") == 512);
}

TEST_CASE("provision --budget: the best costs at most the budget, or exit 1") {
  const auto r = run_cli(kMustShow + " --objective time --budget 1.5M --json");
  REQUIRE(r.status == 0);
  const auto p = nlohmann::json::parse(r.out).at("provision");
  const auto& best = p.at("best");
  CHECK(best.at("cost").get<double>() <= 1.5e6);
  for (const auto& o : p.at("options")) {
    CHECK(o.at("within_budget") == (o.at("cost").get<double>() <= 1.5e6));
    if (o.at("within_budget").get<bool>())
      CHECK(best.at("time_to_train_s").get<double>() <= o.at("time_to_train_s").get<double>());
  }
  const auto poor = run_cli(kMustShow + " --budget '$100k'");
  CHECK(poor.status == 1);
  CHECK(contains(poor.out, "No option meets the budget of $100k. The fastest is"));
}

TEST_CASE("provision --objective time ranks by time to train; --gpu-hour-cost replaces prices") {
  const auto r = run_cli(
      "provision --model llama-3.1-8b --tokens 100B --gpu H100,A100-80GB --gpus 8..32 "
      "--objective time --gpu-hour-cost H100=1,A100-80GB=1 --json");
  REQUIRE(r.status == 0);
  const auto p = nlohmann::json::parse(r.out).at("provision");
  REQUIRE(p.at("options").size() == 6);  // 8, 16, 32 for each
  const auto& o = p.at("options");
  for (size_t i = 1; i < o.size(); ++i)
    CHECK(o[i - 1].at("time_to_train_s").get<double>() <= o[i].at("time_to_train_s").get<double>());
  CHECK(p.at("prices").at("H100-SXM").at("usd_per_gpu_hour") == 1.0);
  CHECK(p.at("prices").at("H100-SXM").at("source") == "--gpu-hour-cost");
}

TEST_CASE("provision refuses bad input, naming the flag") {
  const std::string base = "provision --model llama-3.1-8b --tokens 1T --gpu H100 --gpus 8 ";
  check_refused("provision --model llama-3.1-8b --gpus 8", "--tokens");
  check_refused(base + "--gpu Z100", "--gpu");
  check_refused("provision --model llama-3.1-8b --tokens 1T --gpus 0", "--gpus");
  check_refused("provision --model llama-3.1-8b --tokens 1T --gpus 64..8", "--gpus");
  check_refused(base + "--gpu-hour-cost H100=abc", "--gpu-hour-cost");
  check_refused(base + "--gpu-hour-cost H200=2", "--gpu-hour-cost");
  check_refused(base + "--objective fast", "--objective");
  check_refused(base + "--deadline soon", "--deadline");
  check_refused("provision --params 7B --tokens 1T --gpus 8", "--params");
}
