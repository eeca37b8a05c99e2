// Training logs as each launcher writes them: every line below is written the way the
// launcher's own source formats it (cited per case); the reader takes the step figures from
// them, skips warm-up, and refuses what it cannot read with the line.
#include "shardplan/training_log.hpp"

#include <doctest/doctest.h>

#include <string>

#include "shardplan/error.hpp"
#include "support.hpp"

using namespace shardplan;
using shardplan::test::contains;

namespace {

std::string refused(const std::string& text) {
  try {
    read_training_log(text, "run.log");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("Megatron-LM iteration lines and the memory report") {
  // megatron/training/training.py training_log(): ' iteration {:8d}/{:8d} |', ' consumed
  // samples: {:12d} |', ' elapsed time per iteration (ms): {:.1f} |', ' throughput per GPU
  // (TFLOP/s/GPU): {:.1f} |', ' global batch size: {:5d} |'; the memory report
  // (report_memory) '[Rank R] (after N iterations) memory (MB) | allocated: ... | max
  // allocated: ... | reserved: ... | max reserved: ...' in MiB. Timestamp as core_v0.16.
  const std::string log =
      "some start-up line\n"
      " [2026-07-10 05:46:31.627699] iteration        1/      20 | consumed samples:           "
      "16 | elapsed time per iteration (ms): 79489.9 | throughput per GPU (TFLOP/s/GPU): 18.0 | "
      "learning rate: 0.000000E+00 | global batch size:    16 | lm loss: 1.020935E+00 | "
      "number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 3270.16 | max allocated: 5670.39 "
      "| reserved: 6406.00 | max reserved: 6406.00\n"
      " [2026-07-10 05:46:32.371699] iteration       10/      20 | consumed samples:          "
      "160 | elapsed time per iteration (ms): 744.0 | throughput per GPU (TFLOP/s/GPU): 401.5 | "
      "learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 9.2E+00 |\n"
      " [2026-07-10 05:46:40.000000] iteration       20/      20 | consumed samples:          "
      "320 | elapsed time per iteration (ms): 750.0 | throughput per GPU (TFLOP/s/GPU): 398.3 | "
      "learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 8.1E+00 |\n";
  const TrainingLog t = read_training_log(log, "run.log");
  CHECK(t.format == LogFormat::megatron);
  REQUIRE(t.steps.size() == 3);
  CHECK(t.steps[0].line == 2);
  CHECK(t.steps[0].step == 1);
  CHECK(t.steps[0].step_s == doctest::Approx(79.4899));
  CHECK(t.steps[1].step_s == doctest::Approx(0.744));
  CHECK(t.steps[1].tflops_per_gpu == doctest::Approx(401.5));
  CHECK(t.steps[2].global_batch == 16);
  CHECK(t.max_allocated_gib == doctest::Approx(5670.39 / 1024));
  CHECK(t.max_reserved_gib == doctest::Approx(6406.0 / 1024));
  // The first logged iteration carries initialisation ("to document initialization overhead"):
  // skipped; with 3 lines, 1 + 2 / 10 = 1 skipped.
  const StepSample s = steady_steps(t);
  CHECK(s.skipped == 1);
  REQUIRE(s.used.size() == 2);
  CHECK(s.used[0]->step == 10);
}

TEST_CASE("torchtitan step lines, colour codes and all") {
  // torchtitan/components/metrics.py MetricsProcessor.log(): f"{color.red}step: {step:2}  "
  // f"{color.green}loss: {loss:8.5f}  " ... f"{color.turquoise}memory: {gib:5.2f}GiB({pct:.2f}%)
  // " f"{color.blue}tps: {round(tps):,}  " f"{color.cyan}tflops: {tflops:,.2f}  "
  // f"{color.magenta}mfu: {mfu:.2f}%{color.reset}", behind the logger's '[titan] ... - INFO - '
  // and torchrun's '[rank0]:'.
  const std::string esc = "\x1b[";
  std::string log;
  for (int step : {1, 10, 20, 30}) {
    log += "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - " + esc + "31mstep: " +
           std::to_string(step) + "  " + esc + "32mloss:  3.24405  " + esc +
           "38;2;180;60;0mgrad_norm:  0.8319  " + esc + "38;2;54;234;195mmemory: 59.46GiB(74.99%)  " +
           esc + "34mtps: " + (step == 1 ? "375" : "7,282") + "  " + esc + "36mtflops: 421.52  " +
           esc + "35mmfu: 42.62%" + esc + "39m\n";
  }
  const TrainingLog t = read_training_log(log, "run.log");
  CHECK(t.format == LogFormat::torchtitan);
  REQUIRE(t.steps.size() == 4);
  CHECK(t.steps[0].tokens_per_s == 375);
  CHECK(t.steps[1].tokens_per_s == 7282);  // the thousands separator is read
  CHECK(t.steps[1].tflops_per_gpu == doctest::Approx(421.52));
  CHECK(t.steps[1].memory_gib == doctest::Approx(59.46));
  CHECK(steady_steps(t).used.size() == 3);
}

TEST_CASE("DeepSpeed ThroughputTimer lines") {
  // deepspeed/utils/timer.py ThroughputTimer: "epoch={}/micro_step={}/global_step={},
  // RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, MemAllocated={}GB, MaxMemAllocated={}GB"
  // behind the logger's "[time] [INFO] [timer.py:NNN:stop] ".
  const std::string log =
      "[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=34/global_step=34, "
      "RunningAvgSamplesPerSec=7.864669709950182, CurrSamplesPerSec=8.00912418308922, "
      "MemAllocated=59.65GB, MaxMemAllocated=63.31GB\n"
      "[2023-07-25 21:03:18,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=35/global_step=35, "
      "RunningAvgSamplesPerSec=7.9, CurrSamplesPerSec=8.1, MemAllocated=59.65GB, "
      "MaxMemAllocated=63.31GB\n";
  const TrainingLog t = read_training_log(log, "run.log");
  CHECK(t.format == LogFormat::deepspeed);
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].step == 34);
  CHECK(t.steps[0].samples_per_s == doctest::Approx(8.00912418308922));
  CHECK(t.steps[1].memory_gib == doctest::Approx(63.31));
}

TEST_CASE("NeMo 2 progress lines and the Hugging Face Trainer's final metrics") {
  // nemo/lightning/pytorch/callbacks/progress_printer.py: "Training epoch {E}, iteration
  // {n}/{N}" then " | {metric}: {value:.4}", train_step_timing from TimingCallback ("in s").
  const std::string nemo =
      "Training epoch 0, iteration 8/29 | lr: 5.389e-06 | global_batch_size: 512 | "
      "global_step: 8 | reduced_train_loss: 10.22 | train_step_timing in s: 27.01 | "
      "consumed_samples: 4608 | TFLOPS_per_GPU: 48.58\n"
      "Training epoch 0, iteration 9/29 | lr: 5.4e-06 | global_batch_size: 512 | "
      "global_step: 9 | reduced_train_loss: 10.1 | train_step_timing in s: 26.9 | "
      "consumed_samples: 5120 | TFLOPS_per_GPU: 48.7\n";
  const TrainingLog n = read_training_log(nemo, "run.log");
  CHECK(n.format == LogFormat::nemo);
  REQUIRE(n.steps.size() == 2);
  CHECK(n.steps[0].step_s == doctest::Approx(27.01));
  CHECK(n.steps[0].global_batch == 512);
  CHECK(n.steps[1].tflops_per_gpu == doctest::Approx(48.7));
  // transformers trainer.py: speed_metrics("train", ...) then the dict the Trainer prints.
  const std::string hf =
      "{'loss': 2.119, 'grad_norm': 37.657958984375, 'learning_rate': 4.58e-05, 'epoch': 0.25}\n"
      "{'train_runtime': 116.1914, 'train_samples_per_second': 6.885, "
      "'train_steps_per_second': 1.721, 'train_loss': 2.819730052947998, 'epoch': 0.15}\n";
  const TrainingLog h = read_training_log(hf, "run.log");
  CHECK(h.format == LogFormat::hf_trainer);
  REQUIRE(h.steps.size() == 1);
  CHECK(h.steps[0].step_s == doctest::Approx(1 / 1.721));
  CHECK(steady_steps(h).used.size() == 1);  // one figure for the run: nothing to skip
}

TEST_CASE("logs it cannot read are refused with the line") {
  CHECK(contains(refused("hello\nworld\n"), "run.log: no step line of a launcher"));
  CHECK(contains(refused(" iteration        2/      20 | elapsed time per iteration (ms): "
                         "n/a |\n"),
                 "run.log: line 1"));
  CHECK(contains(refused(" iteration        2/      20 | elapsed time per iteration (ms): "
                         "n/a |\n"),
                 "'elapsed time per iteration (ms)'"));
  // Two launchers' step lines in one file: two runs.
  const std::string mixed =
      " iteration        2/      20 | elapsed time per iteration (ms): 744.0 |\n"
      "step: 10  loss:  3.2  memory: 9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%\n";
  CHECK(contains(refused(mixed), "run.log: line 2"));
  CHECK(contains(refused(mixed), "give one run's log"));
  // One step only: nothing left after the start-up step.
  const TrainingLog one = read_training_log(
      " iteration        1/      20 | elapsed time per iteration (ms): 744.0 |\n", "run.log");
  CHECK(steady_steps(one).used.empty());
}
