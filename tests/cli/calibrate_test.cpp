// `shardplan calibrate --log FILE`: a short run's log (written as Megatron-LM writes it,
// training_log.cpp cites the line) calibrates the stack's speed; the file it writes makes
// estimate reproduce the logged step, and logs of another run are refused.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::make_temp_dir;
using shardplan::test::run_cli;
using shardplan::test::write_file;

namespace {

const std::string kRun =
    "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --tp 1 --zero 1 --micro-batch 1 "
    "--global-batch 128 --seq-len 8192";

nlohmann::json estimate_json(const std::string& args) {
  const auto r = run_cli("estimate " + args + " --json");
  INFO(r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  return nlohmann::json::parse(r.out);
}

// A Megatron-LM log of `steps` iterations at `step_s` seconds (the first 8x: start-up), with
// the TFLOP/s per GPU `tflops` and global batch `batch` on every line.
std::string megatron_log(int steps, double step_s, double tflops, int batch) {
  std::string out;
  for (int i = 1; i <= steps; ++i) {
    const double t = i == 1 ? 8 * step_s : step_s * (1 + 0.004 * (i % 3 - 1));
    out += fmt::format(
        " [2026-07-10 05:46:31.627699] iteration {:8d}/{:8d} | consumed samples: {:12d} | "
        "elapsed time per iteration (ms): {:.1f} | throughput per GPU (TFLOP/s/GPU): {:.1f} | "
        "learning rate: 1.000000E-04 | global batch size: {:5d} | lm loss: 7.1E+00 |\n",
        i, steps, i * batch, t * 1000, tflops * step_s / t, batch);
  }
  return out;
}

// torchtitan prints tps as f"{round(tps):,}": thousands separated by commas.
std::string with_commas(long n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

TEST_CASE("calibrate: the logged step comes back from estimate --calibration") {
  const nlohmann::json before = estimate_json(kRun);
  const double predicted = before.at("time").at("step_s").get<double>();
  const double tflops = before.at("throughput").at("tflops_per_gpu").get<double>();
  // The run took 15% longer per step than the profiles predict.
  const double logged = predicted * 1.15;
  const std::string dir = make_temp_dir();
  write_file(dir + "/train.log", megatron_log(21, logged, tflops * predicted / logged, 128));
  const auto r = run_cli("calibrate " + kRun + " --log " + dir + "/train.log -o " + dir +
                         "/calibration.json --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json c = nlohmann::json::parse(r.out);
  CHECK(c.at("log").at("format") == "Megatron-LM / Megatron-Bridge");
  CHECK(c.at("log").at("steps") == 21);
  CHECK(c.at("log").at("steps_skipped") == 3);  // the first, then 20 / 10
  CHECK(c.at("log").at("step_s").at("median").get<double>() ==
        doctest::Approx(logged).epsilon(0.005));
  CHECK(c.at("datasheet_error").get<double>() == doctest::Approx(1 / 1.15 - 1).epsilon(0.05));
  // The interval is the held-out one of calibrated predictions, never a point.
  CHECK(c.at("interval").at("low").get<double>() < 0);
  CHECK(c.at("interval").at("high").get<double>() > 0);
  const nlohmann::json after =
      estimate_json(kRun + " --calibration " + dir + "/calibration.json");
  CHECK(after.at("time").at("step_s").get<double>() == doctest::Approx(logged).epsilon(0.01));
  // A plan past what the run spans (8 times the GPUs) takes the wider interval and says why.
  const auto wide = run_cli(
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 64 --tp 1 --zero 1 "
      "--global-batch 128 --seq-len 8192 --calibration " + dir + "/calibration.json");
  CHECK(contains(wide.out, "do not span 64 GPUs"));
  // Another GPU class: the file does not describe it.
  const auto other = run_cli("estimate --model llama-3.1-8b --gpu B200 --gpus 8 --calibration " +
                             dir + "/calibration.json");
  CHECK(other.status == 2);
  CHECK(contains(other.err, "--calibration"));
  CHECK(contains(other.err, "stack megatron x B200"));
}

TEST_CASE("calibrate refuses a log of another run, naming what differs") {
  const std::string dir = make_temp_dir();
  const nlohmann::json e = estimate_json(kRun);
  const double step = e.at("time").at("step_s").get<double>();
  const double tflops = e.at("throughput").at("tflops_per_gpu").get<double>();
  // Another global batch on the log's lines than the plan's.
  write_file(dir + "/batch.log", megatron_log(5, step, tflops, 256));
  const auto batch =
      run_cli("calibrate " + kRun + " --log " + dir + "/batch.log -o " + dir + "/c.json");
  CHECK(batch.status == 2);
  CHECK(contains(batch.err, "line 1 reports global batch size 256, the plan has 128"));
  // Another model: the log's TFLOP/s x its step time is 2.5 times the plan's FLOPs.
  write_file(dir + "/model.log", megatron_log(5, step, tflops * 2.5, 128));
  const auto model =
      run_cli("calibrate " + kRun + " --log " + dir + "/model.log -o " + dir + "/c.json");
  CHECK(model.status == 2);
  CHECK(contains(model.err, "a log of another model, sequence length or batch"));
  // A file that is no launcher's log.
  write_file(dir + "/empty.log", "nothing here\n");
  const auto empty =
      run_cli("calibrate " + kRun + " --log " + dir + "/empty.log -o " + dir + "/c.json");
  CHECK(empty.status == 2);
  CHECK(contains(empty.err, "no step line of a launcher"));
  // Nothing was written by the refusals.
  CHECK_FALSE(std::ifstream(dir + "/c.json").good());
}

TEST_CASE("calibrate reads torchtitan's tps (per device) and DeepSpeed's samples/s (per job)") {
  const std::string titan =
      "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --framework torchtitan --zero 3 "
      "--micro-batch 1 --global-batch 64 --seq-len 8192";
  const double predicted = estimate_json(titan).at("time").at("step_s").get<double>();
  // 20% slower than predicted: tps = 64 x 8192 / 8 tokens per GPU per step over the step.
  const double step = predicted * 1.2;
  const double tps = 64.0 * 8192 / 8 / step;
  std::string log;
  for (int i : {1, 10, 20, 30, 40})
    log += fmt::format(
        "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: {:2}  loss:  3.24405  "
        "grad_norm:  0.8319  memory: 59.46GiB(74.99%)  tps: {}  tflops: 0  mfu: 0.00%\n",
        i, with_commas(std::lround(i == 1 ? tps / 10 : tps)));
  const std::string dir = make_temp_dir();
  write_file(dir + "/titan.log", log);
  const auto r = run_cli("calibrate " + titan + " --log " + dir + "/titan.log -o " + dir +
                         "/c.json --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json c = nlohmann::json::parse(r.out);
  CHECK(c.at("log").at("format") == "torchtitan");
  CHECK(c.at("log").at("step_s").at("median").get<double>() ==
        doctest::Approx(step).epsilon(0.002));
  CHECK(c.at("constants").at(0).at("name") == "stack torchtitan x H100");
  // DeepSpeed: CurrSamplesPerSec counts the whole job's sequences.
  const std::string ds =
      "--model llama-3.1-8b --cluster dgx-h100 --gpus 8 --framework deepspeed --zero 3 "
      "--micro-batch 1 --global-batch 64 --seq-len 8192";
  const double ds_step = estimate_json(ds).at("time").at("step_s").get<double>() * 0.9;
  std::string dlog;
  for (int i = 2; i <= 6; ++i)
    dlog += fmt::format(
        "[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step={}/global_step="
        "{}, RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, MemAllocated=59.65GB, "
        "MaxMemAllocated=63.31GB\n",
        i, i, 64 / ds_step, 64 / ds_step);
  write_file(dir + "/ds.log", dlog);
  const auto d = run_cli("calibrate " + ds + " --log " + dir + "/ds.log -o " + dir +
                         "/d.json --json");
  INFO(d.err);
  REQUIRE(d.status == 0);
  const nlohmann::json dj = nlohmann::json::parse(d.out);
  CHECK(dj.at("log").at("format") == "DeepSpeed");
  CHECK(dj.at("log").at("step_s").at("median").get<double>() ==
        doctest::Approx(ds_step).epsilon(0.002));
}
