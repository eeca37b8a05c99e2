// Renderers: turn engine results into tables (fmt) and JSON. They format; they compute nothing
// the engine should own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/ladder.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

// ---- numbers as people read them ----
std::string format_gib(double bytes);          // "104.3 GiB"
std::string format_bytes(double bytes);        // "112.0 GB" / "3.4 MB" (powers of 10)
std::string format_rate(double bytes_per_s);   // "900 GB/s", "1.25 GB/s"
std::string format_seconds(double s);          // "27.2 ms", "19.6 s", "3.1 h", "2.4 d"
std::string format_percent(double share);      // "6.2%"
std::string format_count(double n);            // "6.74B", "350M", "1.2k"
std::string format_flops(double flops_per_s);  // "312 TFLOP/s"

/// A fixed-width text table: a header row, a rule, rows; numbers right-aligned.
class Table {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  void add_rule();
  std::string render(const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

// ---- JSON with units in the keys ----
nlohmann::json to_json(const ModelSpec& m);
nlohmann::json to_json(const ClusterSpec& c);
nlohmann::json to_json(const TrainingSpec& t);
nlohmann::json to_json(const ParallelPlan& p);
nlohmann::json to_json(const MemoryBreakdown& m);

/// A labelled memory line with the assumption its size rests on.
struct MemoryLine {
  std::string label;
  double bytes = 0;
  std::string assumption;
};
std::vector<MemoryLine> transient_lines(const StageMemory& s);
std::vector<MemoryLine> overhead_lines(const StageMemory& s, double fragmentation);

/// The memory table alone (per device, per stage), for commands that print more.
std::string render_memory_table(const MemoryBreakdown& m, const ParallelPlan& plan);

/// The memory table `shardplan memory` prints.
std::string render_memory(const MemoryBreakdown& m, const ModelSpec& model,
                          const TrainingSpec& training, const ParallelPlan& plan,
                          const ClusterSpec& cluster);

nlohmann::json to_json(const CommBreakdown& comm, const StepTime& step, const ParallelPlan& plan,
                       const TrainingSpec& training, const ClusterSpec& cluster);
nlohmann::json to_json(const StepTime& s);
nlohmann::json to_json(const Throughput& t);
/// The object `shardplan estimate --json` prints: memory, time, throughput, comm.
nlohmann::json to_json(const Estimate& e, const ParallelPlan& plan, const TrainingSpec& training,
                       const ClusterSpec& cluster);

/// The communication table of `shardplan comm`.
std::string render_comm(const CommBreakdown& comm, const StepTime& step, const ParallelPlan& plan,
                        const TrainingSpec& training, const ClusterSpec& cluster);
/// Step time, throughput and time to train.
std::string render_time(const Estimate& e, const TrainingSpec& training,
                        const ClusterSpec& cluster);

/// Why a rung passes or fails, in words ("optimizer state needs 84.0 GB, 85.5 GB H100-SXM card").
std::string rung_reason(const RungVerdict& v, const ClusterSpec& cluster, double max_comm_share);
nlohmann::json to_json(const LadderResult& ladder, const ClusterSpec& cluster);
std::string render_ladder(const LadderResult& ladder, const ClusterSpec& cluster);
std::string render_ranked(const std::vector<Candidate>& ranked, const ClusterSpec& cluster);

/// One line naming the model, e.g. "llama-2-7b (6.74B params, L32 h4096 a32, swiglu)".
std::string describe_model(const ModelSpec& m);
/// One line naming the cluster, e.g. "16 x H100-SXM (2 nodes of 8; nvlink4 inside, 8 x ib-ndr)".
std::string describe_cluster(const ClusterSpec& c);
/// "4.1 s to 4.6 s (fsdp x H100, 2 held-out cases)": the step interval and where it comes from.
std::string interval_text(const StepInterval& interval, const TrainingSpec& training);
/// The validation class behind a step interval: framework x GPU generation, its case count and
/// whether they were held out ("accuracy" in every command's JSON).
nlohmann::json accuracy_json(const StepInterval& interval, const TrainingSpec& training,
                             const ClusterSpec& cluster);

/// A warning when `mfu` is above the highest MFU published for the training's framework (its
/// profile's max_published_mfu), else empty.
std::string mfu_warning(double mfu, const TrainingSpec& training);

/// The profile that priced a plan, e.g. "megatron (profiles/frameworks/megatron.json)", or the
/// ideal stack when none was named.
std::string describe_framework(const FrameworkProfile& f);

}  // namespace shardplan
