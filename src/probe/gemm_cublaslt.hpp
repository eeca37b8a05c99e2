// GEMMs through cublasLtMatmul for the NCCL back-end: D = A^T B, column-major "TN" (what FP8
// kernels require), in bf16, fp16, fp8 E4M3 (bf16 output) and tf32, on every local GPU at once.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "control.hpp"

namespace shardplan::probe {

/// One GPU as the GEMM runner needs it.
struct GemmGpu {
  int rank = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  int compute_capability = 0;  // 90 for sm_90
};

class CublasLtGemm {
 public:
  explicit CublasLtGemm(Watchdog& watchdog) : watchdog_(watchdog) {}
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// bf16 needs Ampere (8.0), fp8 Ada or Hopper (8.9) onwards; fp64 is not offered.
  static bool supports(int compute_capability, MathDtype dtype);
  /// "13.1.0"
  static std::string version();

  /// Warm-up, then `iters` timed GEMMs per GPU; checks a few outputs. A shape cuBLASLt has no
  /// kernel for comes back with no iterations and the reason in `detail`.
  std::vector<RankTiming> run(const std::vector<GemmGpu>& gpus, const GemmShape& shape, int warmup,
                              int iters);

 private:
  struct Handle;
  Handle& handle(int device);
  Watchdog& watchdog_;
  std::map<int, Handle*> handles_;
};

}  // namespace shardplan::probe
