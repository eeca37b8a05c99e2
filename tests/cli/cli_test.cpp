// The CLI as users meet it: exit statuses, JSON contract, and bad input naming the field.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;

TEST_CASE(
    "memory --params 7e9 --gpus 1 --gpu H100-SXM --json: 7e9 x 16 B = 112e9 bytes, does not fit") {
  const auto r = run_cli("memory --params 7e9 --gpus 1 --gpu H100-SXM --json");
  CHECK(r.status == 1);  // does not fit
  const auto j = nlohmann::json::parse(r.out);
  const auto& m = j.at("memory");
  const double states = m.at("weights_bytes").get<double>() +
                        m.at("gradients_bytes").get<double>() +
                        m.at("optimizer_bytes").get<double>();
  CHECK(states == doctest::Approx(112e9));
  CHECK(m.at("fits") == false);
  CHECK(m.at("activations_bytes").is_null());
  CHECK(m.at("stages").size() == 1);
  for (const char* key : {"overhead_bytes", "total_bytes", "capacity_bytes"})
    CHECK(m.contains(key));
  CHECK_FALSE(m.at("notes").empty());
}

TEST_CASE("memory table names fits and the margin") {
  const auto r = run_cli("memory --model llama-2-7b --gpus 8 --zero 1 --global-batch 64");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "FITS"));
  CHECK(contains(r.out, "optimizer state"));
  CHECK(contains(r.out, "NCCL buffers"));
}

TEST_CASE("bad input exits 2 and names the field") {
  struct Case {
    const char* args;
    const char* field;
  };
  const Case cases[] = {
      {"memory --model no-such-model", "--model"},
      {"memory --model llama-2-7b --gpus 8 --tp 3", "--tp"},         // 32 heads
      {"memory --model llama-2-7b --gpus 8 --dp 3 --tp 2", "--dp"},  // 6 != 8
      {"memory --model llama-2-7b --global-batch -4", "--global-batch"},
      {"memory --model llama-2-7b --gpu Z100", "--gpu"},
      {"memory --model llama-2-7b --precision fp12", "--precision"},
      {"memory --model llama-2-7b --zero 5", "--zero"},
      {"memory --params 7X", "--params"},
      {"memory --params -7e9", "--params"},
      {"memory --model llama-2-7b --gpus 16 --tp 16", "--tp"},  // larger than a node
      {"memory --model llama-2-7b --link fast", "--link"},
      {"memory --model " SHARDPLAN_TEST_DATA "/hf/does-not-exist.json", "--model"},
  };
  for (const Case& c : cases)
    shardplan::test::check_refused(c.args, c.field);  // nothing half-written
}

TEST_CASE("unknown preset suggests the nearest names") {
  const auto r = run_cli("memory --model llama-2-7 --gpus 1");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "llama-2-7b"));
}

TEST_CASE("malformed config.json exits 2 naming the file") {
  const auto r =
      run_cli("memory --model " SHARDPLAN_SOURCE_DIR "/tests/data/malformed/config.json");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "malformed/config.json"));
  CHECK(contains(r.err, "line"));
}

TEST_CASE("list prints presets with figures") {
  const auto models = run_cli("list models");
  CHECK(models.status == 0);
  CHECK(contains(models.out, "llama-3.1-405b"));
  CHECK(contains(models.out, "6.74B"));
  const auto gpus = run_cli("list gpus");
  CHECK(contains(gpus.out, "989 TFLOP/s"));
  CHECK(run_cli("list nothing").status == 2);
}

TEST_CASE("an unknown subcommand suggests the nearest") {
  const auto r = run_cli("memroy --params 7e9");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "memory"));
}
