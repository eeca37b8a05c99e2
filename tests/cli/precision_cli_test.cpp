// --precision recipes from the command line: mxfp8 / nvfp4 priced on Blackwell with the extra
// weight copies in the memory table, refused on Hopper with the reason by every planning
// command, and written into the launchers as Megatron-LM and torchtitan spell them.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;

namespace {
const std::string kB200 = "--model llama-3.1-8b --gpu B200 --gpus 8 --global-batch 64";
const std::string kH100 = "--model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 64";
}  // namespace

TEST_CASE("estimate --precision mxfp8 on a B200: the row's 2.0625 B/param of copies in memory") {
  const auto r = run_cli("estimate " + kB200 + " --tp 1 --zero 1 --precision mxfp8 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& mem = j.at("memory");
  CHECK(mem.at("bytes_per_param").at("weight_copies").get<double>() == 2.0625);
  CHECK(mem.at("weight_copies_bytes").get<double>() > 0);
  CHECK(j.at("training").at("precision") == "mxfp8");
  const auto text = run_cli("memory " + kB200 + " --tp 1 --zero 1 --precision mxfp8");
  REQUIRE(text.status == 0);
  CHECK(contains(text.out, "low-precision weight copies"));
  const auto bf16 = run_cli("memory " + kB200 + " --tp 1 --zero 1 --precision bf16");
  REQUIRE(bf16.status == 0);
  CHECK_FALSE(contains(bf16.out, "low-precision weight copies"));
}

TEST_CASE("mxfp8 and nvfp4 are faster than bf16 on a B200 and slower than their GEMM peak ratio") {
  // Llama 3.1 70B on 64: nvfp4 keeps the first 2 and last 8 layers in bf16 (NVIDIA's recipe,
  // arXiv:2509.25149 Sec. 4.1), an eighth of 80 layers; on an 8B model it is a third of 32, and
  // what fp4 saves on the rest its 5.125 B/element casts spend again.
  auto step = [](const std::string& precision) {
    const auto r = run_cli(
        "estimate --model llama-3.1-70b --gpu B200 --gpus 64 --global-batch 128 --tp 4 --zero 1 "
        "--precision " + precision + " --json");
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out).at("time").at("step_s").get<double>();
  };
  const double bf16 = step("bf16"), mxfp8 = step("mxfp8"), nvfp4 = step("nvfp4");
  CHECK(mxfp8 < bf16);
  CHECK(nvfp4 < mxfp8);
  CHECK(mxfp8 > bf16 / 2);  // fp8 doubles only the linears' peak, and casting costs bandwidth
}

TEST_CASE("mxfp8 on an H100 is refused with the reason by estimate, memory, plan and provision") {
  for (const std::string cmd : {"estimate", "memory", "plan"}) {
    CAPTURE(cmd);
    const auto r = run_cli(cmd + " " + kH100 + " --precision mxfp8");
    CHECK(r.status == 2);
    CHECK(contains(r.err, "--precision"));
    CHECK(contains(r.err, "mxfp8 needs Blackwell (B200, B300, GB200, GB300); H100-SXM is Hopper"));
    CHECK(r.out.empty());
  }
  const auto provision = run_cli(
      "provision --model llama-3.1-8b --gpu H100-SXM --gpus 8 --tokens 1T --precision mxfp8");
  CHECK(provision.status == 2);
  CHECK(contains(provision.err, "mxfp8 needs Blackwell"));
  // A grid with a Blackwell GPU plans on it and says why the H100 left.
  const auto mixed = run_cli(
      "provision --model llama-3.1-8b --gpu H100-SXM,B200 --gpus 8 --tokens 1T --precision mxfp8");
  CHECK(mixed.status == 0);
  CHECK(contains(mixed.err, "H100-SXM left out: mxfp8 needs Blackwell"));
  CHECK(contains(mixed.out, "B200"));
  const auto fp4 = run_cli("estimate " + kH100 + " --precision nvfp4");
  CHECK(fp4.status == 2);
  CHECK(contains(fp4.err, "nvfp4 needs Blackwell"));
}

TEST_CASE("--precision fp8 prices each framework's default recipe, and the JSON names it") {
  auto recipe = [](const std::string& framework) {
    const auto r = run_cli("estimate " + kH100 + " --tp 1 --zero 3 --recompute full --precision fp8 --framework " +
                           framework + " --json");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    const auto& t = j.at("training");
    CHECK(t.at("precision") == "fp8");
    return t.at("precision_recipe").get<std::string>();
  };
  CHECK(recipe("megatron") == "fp8-delayed");
  CHECK(recipe("torchtitan") == "fp8-tensorwise");
  CHECK(recipe("fsdp") == "fp8-tensorwise");
}

TEST_CASE("a recipe the framework does not run is refused: nvfp4 under torchtitan") {
  const auto r = run_cli("estimate " + kB200 + " --precision nvfp4 --framework torchtitan");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "torchtitan does not run the nvfp4 recipe"));
}

TEST_CASE("emit writes the recipe's flags: Megatron-LM --fp8-recipe / --fp4-recipe, torchtitan converters") {
  const auto mx = run_cli("emit --format megatron " + kB200 + " --precision mxfp8");
  REQUIRE(mx.status == 0);
  CHECK(contains(mx.out, "--fp8-format e4m3"));
  CHECK(contains(mx.out, "--fp8-recipe mxfp8"));
  const auto fp4 = run_cli("emit --format megatron " + kB200 + " --precision nvfp4");
  REQUIRE(fp4.status == 0);
  CHECK(contains(fp4.out, "--fp4-format e2m1"));
  CHECK(contains(fp4.out, "--fp4-recipe nvfp4"));
  CHECK(contains(fp4.out, "--first-last-layers-bf16"));
  const auto fp8 = run_cli("emit --format megatron " + kH100 + " --precision fp8");
  REQUIRE(fp8.status == 0);
  CHECK(contains(fp8.out, "--fp8-recipe delayed"));  // megatron's default recipe
  const auto titan = run_cli("emit --format torchtitan " + kB200 + " --precision mxfp8");
  REQUIRE(titan.status == 0);
  CHECK(contains(titan.out, "quantize.linear.mx"));
  const auto titan8 = run_cli("emit --format torchtitan " + kH100 + " --precision fp8");
  REQUIRE(titan8.status == 0);
  CHECK(contains(titan8.out, "quantize.linear.float8"));
}
