// A short training run's log, as each launcher writes it: the per-step lines `shardplan
// calibrate` reads its measured step from. Each format follows the launcher's own source (the
// line that prints it is cited in training_log.cpp); anything else is refused with the line.
#pragma once

#include <string>
#include <vector>

namespace shardplan {

enum class LogFormat {
  megatron,         // Megatron-LM / Megatron-Bridge iteration lines
  nemo,             // NeMo 2 (Lightning) progress lines: "train_step_timing in s"
  torchtitan,       // torchtitan's "step: ... tps: ... tflops: ..." lines
  deepspeed,        // DeepSpeed's ThroughputTimer lines: "CurrSamplesPerSec=..."
  hf_trainer,       // Hugging Face Trainer's final metrics: "train_steps_per_second"
};
const char* to_string(LogFormat f);

/// One logged step: what the line says, in base units; 0 where the line has no such figure.
struct LogStep {
  int line = 0;                 // 1-based line in the file
  long step = 0;                // the launcher's iteration / step number (0: not given)
  double step_s = 0;            // seconds per step (Megatron, NeMo, Trainer)
  double tokens_per_s = 0;      // per GPU (torchtitan's tps)
  double samples_per_s = 0;     // every GPU together (DeepSpeed's CurrSamplesPerSec)
  double tflops_per_gpu = 0;    // model TFLOP/s per GPU as the launcher counts them
  long global_batch = 0;        // sequences per step the line reports (Megatron, NeMo)
  double memory_gib = 0;        // the peak the line reports (torchtitan: max reserved)
};

struct TrainingLog {
  LogFormat format = LogFormat::megatron;
  std::string source;          // the file
  std::vector<LogStep> steps;  // every step line, in file order
  // Megatron's memory report ("[Rank R] (after N iterations) memory (MB) | ... max allocated:
  // ... | max reserved: ..."), the largest over ranks and reports, GiB; 0: none.
  double max_allocated_gib = 0;
  double max_reserved_gib = 0;
};

/// Reads a log; the format is told by its step lines. InputError naming `where` (and the line)
/// for a file with no step line of any known launcher, or a step line that does not parse.
TrainingLog read_training_log(const std::string& text, const std::string& where);

/// The steps a calibration uses: every logged step but the first (it carries start-up: Megatron
/// logs iteration 1 "to document initialization overhead", torchtitan's step 1 timer starts at
/// construction) and the first 10% of the rest, so compilation and warm-up stay out.
struct StepSample {
  std::vector<const LogStep*> used;
  int skipped = 0;
};
StepSample steady_steps(const TrainingLog& log);

}  // namespace shardplan
