// Reads the per-step lines of a launcher's training log. Each pattern follows the line the
// launcher's source prints:
//  * Megatron-LM megatron/training/training.py training_log(): " iteration {:8d}/{:8d} |
//    consumed samples: ... | elapsed time per iteration (ms): {:.1f} | throughput per GPU
//    (TFLOP/s/GPU): {:.1f} | ... | global batch size: {:5d} | ..."; Megatron-Bridge
//    train_utils.py training_log() prints the same line; the memory report
//    (megatron/training/utils report_memory) "[Rank R] (after N iterations) memory (MB) |
//    allocated: ... | max allocated: ... | reserved: ... | max reserved: ..." in MiB.
//  * NeMo 2 nemo/lightning/pytorch/callbacks/progress_printer.py: "Training epoch E, iteration
//    n/N | ... | global_batch_size: B | ... | train_step_timing in s: T | ...".
//  * torchtitan torchtitan/components/metrics.py MetricsProcessor.log(): "step: {step:2}  loss:
//    ...  memory: {:5.2f}GiB({:.2f}%)  tps: {round(tps):,}  tflops: {:,.2f}  mfu: {:.2f}%", with
//    ANSI colour codes around the fields (stripped here); tps and tflops are per device.
//  * DeepSpeed deepspeed/utils/timer.py ThroughputTimer: "epoch={}/micro_step={}/global_step={},
//    RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, MemAllocated={}GB,
//    MaxMemAllocated={}GB" (samples of the whole job, GB meaning GiB).
//  * Hugging Face transformers trainer.py: the final metrics dict, {'train_runtime': ...,
//    'train_samples_per_second': ..., 'train_steps_per_second': ..., ...}.
#include "shardplan/training_log.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "shardplan/error.hpp"

namespace shardplan {

const char* to_string(LogFormat f) {
  switch (f) {
    case LogFormat::megatron:
      return "Megatron-LM / Megatron-Bridge";
    case LogFormat::nemo:
      return "NeMo 2";
    case LogFormat::torchtitan:
      return "torchtitan";
    case LogFormat::deepspeed:
      return "DeepSpeed";
    case LogFormat::hf_trainer:
      return "Hugging Face Trainer";
  }
  return "";
}

namespace {

std::string strip_ansi(const std::string& s) {
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  return std::regex_replace(s, ansi, "");
}

// The number after `key` (a regex, its value the first group), or nullopt-as-false.
bool find_number(const std::string& line, const std::regex& re, double* out) {
  std::smatch m;
  if (!std::regex_search(line, m, re)) return false;
  std::string v = m[1].str();
  v.erase(std::remove(v.begin(), v.end(), ','), v.end());
  try {
    size_t used = 0;
    *out = std::stod(v, &used);
    return used == v.size() && std::isfinite(*out);
  } catch (const std::exception&) {
    return false;
  }
}

const std::string kNum = R"(([-+0-9.,eE]+))";

struct Patterns {
  std::regex megatron_iteration{R"(\biteration\s+(\d+)\s*/\s*\d+\s*\|)"};
  std::regex megatron_elapsed{R"(elapsed time per iteration \(ms\):\s*)" + kNum};
  std::regex megatron_tflops{R"(throughput per GPU \(TFLOP/s/GPU\):\s*)" + kNum};
  std::regex megatron_batch{R"(global batch size:\s*(\d+))"};
  std::regex megatron_memory{R"(\(after \d+ iterations\) memory \(MB\))"};
  std::regex megatron_max_alloc{R"(max allocated:\s*)" + kNum};
  std::regex megatron_max_reserved{R"(max reserved:\s*)" + kNum};
  std::regex nemo_line{R"(Training epoch \d+, iteration (\d+)/\d+)"};
  std::regex nemo_timing{R"(train_step_timing in s:\s*)" + kNum};
  std::regex nemo_batch{R"(global_batch_size:\s*)" + kNum};
  std::regex nemo_tflops{R"(TFLOPS_per_GPU:\s*)" + kNum};
  std::regex titan_step{R"(\bstep:\s*(\d+)\s)"};
  std::regex titan_tps{R"(\btps:\s*)" + kNum};
  std::regex titan_tflops{R"(\btflops:\s*)" + kNum};
  std::regex titan_memory{R"(\bmemory:\s*([0-9.]+)GiB)"};
  std::regex ds_step{R"(global_step=(\d+))"};
  std::regex ds_samples{R"(CurrSamplesPerSec=)" + kNum};
  std::regex ds_memory{R"(MaxMemAllocated=([0-9.]+)GB)"};
  std::regex hf_steps{R"('train_steps_per_second':\s*'?)" + kNum};
};

const Patterns& patterns() {
  static const Patterns p;
  return p;
}

[[noreturn]] void bad_line(const std::string& where, int line, const std::string& what) {
  throw InputError(where + ": line " + std::to_string(line), what);
}

// One figure a step line of `format` must carry, or the line is refused.
double required(const std::string& text, const std::regex& re, const std::string& where,
                int line, const char* figure, const char* format) {
  double v = 0;
  if (!find_number(text, re, &v) || !(v > 0)) {
    bad_line(where, line,
             std::string("a ") + format + " step line without a readable " + figure +
                 " (a positive number); is the line cut or edited?");
  }
  return v;
}

}  // namespace

TrainingLog read_training_log(const std::string& text, const std::string& where) {
  const Patterns& p = patterns();
  TrainingLog log;
  log.source = where;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  bool have_format = false;
  auto set_format = [&](LogFormat f, int line) {
    if (have_format && log.format != f) {
      bad_line(where, line,
               std::string("a ") + to_string(f) + " step line in a " + to_string(log.format) +
                   " log: give one run's log");
    }
    log.format = f;
    have_format = true;
  };
  while (std::getline(in, raw)) {
    ++number;
    const std::string line = strip_ansi(raw);
    std::smatch m;
    double v = 0;
    if (std::regex_search(line, p.megatron_memory)) {
      if (find_number(line, p.megatron_max_alloc, &v))
        log.max_allocated_gib = std::max(log.max_allocated_gib, v / 1024);
      if (find_number(line, p.megatron_max_reserved, &v))
        log.max_reserved_gib = std::max(log.max_reserved_gib, v / 1024);
      continue;
    }
    if (std::regex_search(line, m, p.megatron_iteration) &&
        line.find("elapsed time per iteration") != std::string::npos) {
      set_format(LogFormat::megatron, number);
      LogStep s;
      s.line = number;
      s.step = std::stol(m[1].str());
      s.step_s = required(line, p.megatron_elapsed, where, number,
                          "'elapsed time per iteration (ms)'", "Megatron") / 1000;
      if (find_number(line, p.megatron_tflops, &v)) s.tflops_per_gpu = v;
      if (find_number(line, p.megatron_batch, &v)) s.global_batch = std::lround(v);
      log.steps.push_back(s);
      continue;
    }
    if (std::regex_search(line, m, p.nemo_line) &&
        line.find("train_step_timing in s") != std::string::npos) {
      set_format(LogFormat::nemo, number);
      LogStep s;
      s.line = number;
      s.step = std::stol(m[1].str());
      s.step_s = required(line, p.nemo_timing, where, number, "'train_step_timing in s'", "NeMo");
      if (find_number(line, p.nemo_batch, &v)) s.global_batch = std::lround(v);
      if (find_number(line, p.nemo_tflops, &v)) s.tflops_per_gpu = v;
      log.steps.push_back(s);
      continue;
    }
    if (std::regex_search(line, m, p.titan_step) && line.find("tps:") != std::string::npos) {
      set_format(LogFormat::torchtitan, number);
      LogStep s;
      s.line = number;
      s.step = std::stol(m[1].str());
      s.tokens_per_s = required(line, p.titan_tps, where, number, "'tps'", "torchtitan");
      if (find_number(line, p.titan_tflops, &v)) s.tflops_per_gpu = v;
      if (find_number(line, p.titan_memory, &v)) s.memory_gib = v;
      log.steps.push_back(s);
      continue;
    }
    if (std::regex_search(line, m, p.ds_step) && line.find("CurrSamplesPerSec") != std::string::npos) {
      set_format(LogFormat::deepspeed, number);
      LogStep s;
      s.line = number;
      s.step = std::stol(m[1].str());
      s.samples_per_s = required(line, p.ds_samples, where, number, "'CurrSamplesPerSec'",
                                 "DeepSpeed");
      if (find_number(line, p.ds_memory, &v)) s.memory_gib = v;
      log.steps.push_back(s);
      continue;
    }
    if (line.find("'train_steps_per_second'") != std::string::npos) {
      set_format(LogFormat::hf_trainer, number);
      LogStep s;
      s.line = number;
      s.step_s = 1.0 / required(line, p.hf_steps, where, number, "'train_steps_per_second'",
                                "Hugging Face Trainer");
      log.steps.push_back(s);
      continue;
    }
  }
  if (log.steps.empty()) {
    throw InputError(where,
                     "no step line of a launcher shardplan reads: Megatron-LM / Megatron-Bridge "
                     "('iteration N/M | ... elapsed time per iteration (ms): ...'), NeMo 2 "
                     "('... train_step_timing in s: ...'), torchtitan ('step: N ... tps: ...'), "
                     "DeepSpeed ('global_step=N, ... CurrSamplesPerSec=...', printed with "
                     "steps_per_print) or the Hugging Face Trainer's final "
                     "'train_steps_per_second'");
  }
  return log;
}

StepSample steady_steps(const TrainingLog& log) {
  StepSample out;
  if (log.format == LogFormat::hf_trainer) {
    // One figure for the whole run: nothing to skip (and start-up is inside it).
    for (const LogStep& s : log.steps) out.used.push_back(&s);
    return out;
  }
  const size_t n = log.steps.size();
  // The first line, then a tenth of the rest.
  const size_t skip = n <= 1 ? n : 1 + (n - 1) / 10;
  out.skipped = static_cast<int>(std::min(skip, n));
  for (size_t i = out.skipped; i < n; ++i) out.used.push_back(&log.steps[i]);
  return out;
}

}  // namespace shardplan
