// `comm` and `estimate` from the command line: the 7B gradient-sync numbers and the JSON contract.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;

TEST_CASE("comm --params 7e9 --gpus 8 --link 900GB/s --json: 27 ms, 6% of the step") {
  const auto r = run_cli("comm --params 7e9 --gpus 8 --link 900GB/s --global-batch 8 --json");
  REQUIRE(r.status == 0);
  const auto dp = nlohmann::json::parse(r.out).at("comm").at("data_parallel");
  CHECK(dp.at("time_s").get<double>() == doctest::Approx(0.027).epsilon(0.03));
  CHECK(dp.at("bytes_per_step").get<double>() == doctest::Approx(24.5e9));
  // 27 ms against a step of about 0.45 s: 6% of it, all of it hidden behind the backward.
  const double step = nlohmann::json::parse(r.out).at("time").at("step_s").get<double>();
  CHECK(std::round(dp.at("time_s").get<double>() / step * 100) == 6);
  // One share everywhere: the exposed time over the step, as the step table's.
  CHECK(dp.at("share_of_step").get<double>() ==
        doctest::Approx(dp.at("exposed_s").get<double>() / step));
  for (const char* key : {"bytes_per_step", "time_s", "exposed_s", "share_of_step"})
    CHECK(dp.contains(key));
  const auto j = nlohmann::json::parse(r.out).at("comm");
  CHECK(j.contains("tensor_parallel"));
  CHECK(j.contains("pipeline_parallel"));
}

TEST_CASE("comm over 10 Gbit/s: 19.6 s, 98% of the step") {
  const auto r = run_cli("comm --params 7e9 --gpus 8 --link 10Gbit/s --global-batch 8 --json");
  REQUIRE(r.status == 0);
  const auto dp = nlohmann::json::parse(r.out).at("comm").at("data_parallel");
  CHECK(dp.at("time_s").get<double>() == doctest::Approx(19.6).epsilon(0.03));
  CHECK(std::round(dp.at("share_of_step").get<double>() * 100) == 98);
  const auto table = run_cli("comm --params 7e9 --gpus 8 --link 10Gbit/s --global-batch 8");
  CHECK(contains(table.out, "19.60 s"));
  CHECK(contains(table.out, "98%"));
}

TEST_CASE("estimate --json has memory, time, throughput and comm") {
  const auto r = run_cli(
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 8 --zero 1 --global-batch 64 "
      "--recompute full "
      "--tokens 1T --gpu-hour-cost 2.5 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"step_s", "compute_s", "bubble_s", "exposed_comm_s", "optimizer_s"})
    CHECK(j.at("time").contains(k));
  for (const char* k : {"tokens_per_s", "tflops_per_gpu", "mfu", "hfu"})
    CHECK(j.at("throughput").contains(k));
  CHECK(j.at("memory").contains("total_bytes"));
  CHECK(j.at("comm").contains("data_parallel"));
  const auto& t = j.at("time");
  CHECK(t.at("step_s").get<double>() ==
        doctest::Approx(t.at("compute_s").get<double>() + t.at("bubble_s").get<double>() +
                        t.at("exposed_comm_s").get<double>() + t.at("optimizer_s").get<double>()));
  const double mfu = j.at("throughput").at("mfu");
  CHECK(mfu > 0.25);
  CHECK(mfu < 0.6);
  CHECK(j.at("training_run").at("cost").get<double>() > 0);
}

TEST_CASE("comm and estimate reject bad input naming the field") {
  struct Case {
    const char* args;
    const char* field;
  };
  const Case cases[] = {
      {"comm --params 7e9 --gpus 8 --link 10parsecs", "--link"},
      {"comm --params 7e9 --gpus 8 --dp 3", "--dp"},
      {"estimate --model llama-3.1-70b --gpus 16 --tp 16", "--tp"},  // across nodes
      {"estimate --params 7e9 --gpus 8 --tp 2", "--tp"},             // needs shapes
      {"estimate --model llama-2-7b --gpus 8 --inter warp-drive", "--inter"},
      {"estimate --model llama-2-7b --gpu A100-80GB --precision fp8", "--precision"},
      {"estimate --model llama-2-7b --framework megatron --precision bf16-pure", "--precision"},
      {"estimate --model llama-2-7b --fragmentation 0.05abc", "--fragmentation"},
      {"estimate --model llama-2-7b --gpu-hour-cost 2x", "--gpu-hour-cost"},
  };
  for (const Case& c : cases) shardplan::test::check_refused(c.args, c.field);
}

TEST_CASE("--allow-tp-across-nodes lets tensor parallel span nodes") {
  const auto r =
      run_cli("comm --model llama-3.1-70b --gpus 16 --tp 16 --allow-tp-across-nodes --json");
  CHECK(r.status == 0);
}

TEST_CASE("validate prints every published case with the aggregate errors") {
  const auto r = run_cli("validate");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "korthikanti22-t5-175B-selective+sp"));
  CHECK(contains(r.out, "narayanan21-t1-1008.0B"));
  CHECK(contains(r.out, "mean |error|"));
  CHECK(run_cli("validate --only nobody").status == 2);
  CHECK(run_cli("validate /no/such/file.json").status == 2);
}

TEST_CASE("validate shows the runs their source flags apart: predicted, never counted") {
  // Megatron-Bridge docs/performance-summary.md at 381d0b825 footnotes its two 26.06.01 GPT-OSS
  // 120B rows: "Performance regression in GPT-OSS 120B pre-training is a known issue"
  // (NVIDIA/cudnn-frontend#256). Its other releases' rows of the same model carry no flag.
  const auto r = run_cli("validate --json --only 'holdout: mbridge-2606'");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> flagged, counted;
  for (const auto& c : j.at("flagged")) {
    flagged.insert(c.at("id").get<std::string>());
    CHECK(contains(c.at("source_flags").at(0).get<std::string>(), "cudnn-frontend#256"));
    CHECK(c.at("predicted").get<double>() > 0);
  }
  for (const auto& g : j.at("groups"))
    for (const auto& c : g.at("cases")) counted.insert(c.at("id").get<std::string>());
  CHECK(flagged == std::set<std::string>{"holdout: mbridge-260601-gpt-oss-120b-64xGB300-mxfp8",
                                         "holdout: mbridge-260601-gpt-oss-120b-64xGB200-mxfp8"});
  CHECK(counted.count("holdout: mbridge-2606-gpt-oss-120b-64xGB200-mxfp8") == 1);
  for (const std::string& id : flagged) CHECK(counted.count(id) == 0);
  const auto text = run_cli("validate --only 'holdout: mbridge-260601-gpt-oss'");
  REQUIRE(text.status == 0);
  CHECK(contains(text.out, "# flagged by their source (2 cases)"));
  // Both rows share the source's one footnote: it prints once, naming both runs.
  size_t footnotes = 0;
  for (size_t at = text.out.find("cudnn-frontend#256"); at != std::string::npos;
       at = text.out.find("cudnn-frontend#256", at + 1))
    ++footnotes;
  CHECK(footnotes == 1);
  CHECK(contains(text.out,
                 "holdout: mbridge-260601-gpt-oss-120b-64xGB300-mxfp8, "
                 "holdout: mbridge-260601-gpt-oss-120b-64xGB200-mxfp8:\n"));
  CHECK_FALSE(contains(text.out, "mean |error|"));  // nothing else matched: no aggregate
}

namespace {

// The text of `doc` between "<!-- NAME:begin -->" and "<!-- NAME:end -->".
std::string between_markers(const std::string& doc, const std::string& name) {
  const std::string begin = "<!-- " + name + ":begin -->\n", end = "<!-- " + name + ":end -->";
  const size_t from = doc.find(begin);
  REQUIRE(from != std::string::npos);
  const size_t to = doc.find(end, from);
  REQUIRE(to != std::string::npos);
  return doc.substr(from + begin.size(), to - from - begin.size());
}

}  // namespace

// The README and docs/validation-corpus.md quote the cross-validated accuracy only as `validate
// --cross-validate --markdown` / `--markdown-groups` print it (tools/update_accuracy.py pastes it
// between the markers): no hand-copied figure.
TEST_CASE("the accuracy paragraph and held-out tables in the docs are the cross-validation's") {
  const auto paragraph = run_cli("validate --cross-validate --markdown");
  REQUIRE(paragraph.status == 0);
  CHECK(between_markers(shardplan::test::read_file(SHARDPLAN_SOURCE_DIR "/README.md"),
                        "accuracy") == paragraph.out);
  const auto groups = run_cli("validate --cross-validate --markdown-groups");
  REQUIRE(groups.status == 0);
  CHECK(
      between_markers(shardplan::test::read_file(SHARDPLAN_SOURCE_DIR "/docs/validation-corpus.md"),
                      "held-out-groups") == groups.out);
}

TEST_CASE(
    "estimate --plan FILE re-prices the plan a `plan --json` file holds, without retyping it") {
  const std::string file = "/tmp/shardplan-estimate-plan-file.json";
  const auto planned = run_cli("plan --model llama-2-7b --cluster dgx-h100 --gpus 16 --json");
  REQUIRE(planned.status == 0);
  {
    std::ofstream out(file);
    out << planned.out;
  }
  const auto p = nlohmann::json::parse(planned.out);
  for (const char* pick : {"recommended", "fastest"}) {
    CAPTURE(pick);
    const auto r = run_cli("estimate --plan " + file + " --pick " + pick + " --json");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    // The same plan and, priced by the same build, the same step.
    CHECK(j.at("plan").at("summary") == p.at(pick).at("plan").at("summary"));
    CHECK(j.at("time").at("step_s").get<double>() ==
          doctest::Approx(p.at(pick).at("time").at("step_s").get<double>()));
  }
  const auto text = run_cli("estimate --plan " + file);
  CHECK(contains(text.out, "plan from " + file + ": recommended, re-priced by this build"));
  // A plan flag beside --plan would be ignored: refused.
  const auto both = run_cli("estimate --plan " + file + " --tp 2");
  CHECK(both.status == 2);
  CHECK(contains(both.err, "--tp: the plan comes from --plan FILE"));
  std::remove(file.c_str());
}
