// What validation says of the model: what a plan is (PlanScope), what one class's published runs
// span (CorpusReach), the interval its held-out residuals give (AccuracyClass) and the highest
// MFU published (PublishedMfu). The framework profiles carry them (framework.hpp); a plan's step
// interval reads them (interval.hpp).
#pragma once

#include <string>
#include <vector>

namespace shardplan {

/// What a plan is, for the question whether validation saw plans like it: a mixture of experts
/// or dense, the element type of its GEMMs, its context-parallel degree and its GPU count.
struct PlanScope {
  bool moe = false;
  // The token mixers besides softmax attention its layers run (to_string(MixerKind): mamba2,
  // gated-deltanet, lightning), sorted.
  std::vector<std::string> mixers;
  std::string gemm_dtype = "bf16";  // to_string(MathDtype): bf16, fp16, fp8, fp4
  int cp = 1;
  int gpus = 1;
  bool ulysses = false;  // its context parallelism is Ulysses all-to-alls, not ring attention
};

/// What one class's validation cases span. A plan outside it extrapolates (a MoE plan where the
/// class has dense runs only, a Mamba-2 hybrid where its runs are all attention, FP4 where it
/// has BF16 and FP8, CP 16 where its runs reach 8, 8192 GPUs where they reach 1024), and its
/// step takes the interval for plans beyond the corpus.
struct CorpusReach {
  bool dense = false;                    // some case trains a dense model
  bool moe = false;                      // some case trains a mixture of experts
  std::vector<std::string> mixers;       // the recurrent token mixers its cases train, sorted
  std::vector<std::string> gemm_dtypes;  // the GEMM element types its cases train in, sorted
  int max_cp = 1;
  bool ulysses = false;  // some case runs Ulysses context parallelism
  int max_gpus = 0;
  /// Widens the reach to hold `s`.
  void add(const PlanScope& s);
  /// "" when `s` lies inside; else what lies outside and how far the cases reach, e.g.
  /// "context parallel 16 (they reach 8)".
  std::string outside(const PlanScope& s) const;
};

/// An accuracy class's name below the framework: the GPU class, and "MoE" after it for mixtures
/// of experts ("H100", "H100 MoE"). Validation's classes and the profiles' rows both read it.
inline std::string accuracy_class_name(const std::string& gpu_class, bool moe) {
  return moe ? gpu_class + " MoE" : gpu_class;
}

/// How far measured steps fall from predicted ones for one GPU generation and model kind: the
/// 80% interval of measured step / predicted step - 1 that `shardplan validate --cross-validate`
/// derives from leave-one-source-group-out residuals (tools/update_accuracy.py writes it into
/// the profile).
struct AccuracyClass {
  std::string gpu_class;  // "A100", "H100": a GpuSpec::accuracy_class its profile declares
  bool moe = false;       // its cases are mixtures of experts (profile "models": "moe")
  int cases = 0;
  int groups = 0;        // source groups among the cases
  bool held_out = true;  // false: only fitted cases exist for this class
  double step_error_low = 0;
  double step_error_high = 0;
  std::string source;  // the validation case ids
  CorpusReach reach;   // what its cases span (the beyond-corpus row: none, every plan is)
  /// "H100", "H100 MoE": the GPU class and, for mixtures of experts, the kind.
  std::string name() const { return accuracy_class_name(gpu_class, moe); }
};

/// The highest MFU published for a framework on one GPU generation, and where.
struct PublishedMfu {
  std::string gpu_class;  // "A100", "H100"; empty: the framework's figure on any generation
  double mfu = 0;         // 0 = none published
  std::string source;
};

}  // namespace shardplan
