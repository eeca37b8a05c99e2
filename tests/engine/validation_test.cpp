// Accuracy against the published runs shipped in profiles/validation/published-runs.json.
#include "shardplan/validation.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "shardplan/profiles.hpp"

using namespace shardplan;

namespace {

ValidationSummary run_group(const std::string& prefix) {
  std::vector<Prediction> cases;
  static const auto runs = load_published_runs(default_published_runs(), "published-runs.json");
  for (const auto& run : runs) {
    if (run.id.rfind(prefix, 0) == 0) cases.push_back(predict(run));
  }
  return summarize(std::move(cases));
}

}  // namespace

TEST_CASE("Korthikanti et al. 2022 Table 5 iteration times: mean error below Calculon's 3.65%") {
  const ValidationSummary s = run_group("korthikanti22-t5");
  REQUIRE(s.cases.size() == 8);
  for (const auto& c : s.cases) {
    CAPTURE(c.run->id);
    CHECK(std::fabs(c.error) <= 0.12);
  }
  MESSAGE("Korthikanti Table 5: mean " << s.mean_abs_error * 100 << "%, max "
                                       << s.max_abs_error * 100 << "%");
  CHECK(s.mean_abs_error <= 0.0365);  // Calculon (Isaev et al. SC'23) reports 3.65% on these
}

TEST_CASE("Narayanan et al. 2021 Table 1 throughputs: mean error within 5%, none above 12%") {
  const ValidationSummary s = run_group("narayanan21-t1");
  REQUIRE(s.cases.size() == 10);
  for (const auto& c : s.cases) {
    CAPTURE(c.run->id);
    CHECK(std::fabs(c.error) <= 0.12);
  }
  MESSAGE("Narayanan Table 1: mean " << s.mean_abs_error * 100 << "%, max " << s.max_abs_error * 100
                                     << "%");
  CHECK(s.mean_abs_error <= 0.05);
}

TEST_CASE("Korthikanti Table 4 per-layer times within 10%") {
  const ValidationSummary s = run_group("korthikanti22-t4");
  REQUIRE(s.cases.size() == 5);
  CHECK(s.max_abs_error <= 0.10);
}

TEST_CASE("the runs fit in memory as the papers ran them") {
  for (const auto& [prefix, count] : {std::pair{"korthikanti22-t5", 8}, {"narayanan21-t1", 10}}) {
    const auto cases = run_group(prefix).cases;
    REQUIRE(cases.size() == static_cast<size_t>(count));
    for (const auto& c : cases) {
      CAPTURE(c.run->id);
      CHECK(c.fits);
    }
  }
}

TEST_CASE("held-out runs (other frameworks, H100, fp8) the efficiencies were not fitted on") {
  // profiles/validation/holdout-runs.json: each case cites its source. Every case has a bound:
  // the family's error as `validate` reports it, so a change that makes any of them worse
  // fails here. MPT-7B with PyTorch FSDP on H100 is the model's largest gap (+23%); its bound
  // records the gap, not a target.
  struct Family {
    const char* prefix;
    double max_abs_error;
  };
  const Family families[] = {
      // PyTorch FSDP on A100: the fsdp profile's eager-kernel speed (from torchtitan's H100
      // eager-vs-compiled table) makes these 12-13% slow until it is fitted per GPU generation.
      {"llmfoundry-mpt-30b", 0.15},
      {"llmfoundry-mpt-70b-64xA100", 0.15},
      {"nemo-", 0.10},
      {"megatron-", 0.10},
      {"torchtitan-", 0.10},
      {"llama3-405b", 0.10},
      {"bloom-", 0.20},
      // DeepSpeed ZeRO-3, GPT-3 175B: 384 and 768 GPUs fitted, 1,536 held out (-7.4%).
      {"narayanan21-t2-zero3", 0.10},
      {"llmfoundry-mpt-70b-512xH100", 0.05},
      {"llmfoundry-mpt-7b-512xH100", 0.25},
  };
  const auto runs = load_published_runs(default_holdout_runs(), "holdout-runs.json");
  REQUIRE(runs.size() == 14);
  for (const auto& run : runs) {
    const Prediction p = predict(run);
    CAPTURE(run.id);
    CAPTURE(p.error);
    const Family* family = nullptr;
    for (const auto& f : families) {
      if (run.id.rfind(f.prefix, 0) == 0) family = &f;
    }
    REQUIRE_MESSAGE(family != nullptr, "every held-out case needs a bound");
    CHECK(std::fabs(p.error) <= family->max_abs_error);
  }
}
