// GEMMs through cublasLtMatmul for the NCCL back-end: D = A^T B, column-major "TN" (what FP8
// kernels require), in every format of gemm_formats.cpp a GPU runs (NVFP4 and MXFP8 block-scaled,
// FP8 per-tensor with fast accumulation, bf16, fp16, tf32, fp32), on every local GPU at once.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "control.hpp"
#include "gemm_formats.hpp"

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

  /// Why a GPU of this compute capability (90 = sm_90) cannot run the format ("" when it can).
  static std::string why_not(int compute_capability, const GemmFormat& format);
  /// "13.1.0"
  static std::string version();

  /// One set-up per GPU, the warm-up, then the timed GEMMs (harness.cpp's GemmTiming); checks a
  /// few outputs. A shape cuBLASLt has no kernel for comes back with no iterations and, for every
  /// GPU, the call that refused and its cublasStatus_t name in `detail`.
  std::vector<RankTiming> run(const std::vector<GemmGpu>& gpus, const GemmShape& shape,
                              const GemmTiming& timing);

 private:
  struct Handle;
  Handle& handle(int device);
  Watchdog& watchdog_;
  std::map<int, Handle*> handles_;
};

}  // namespace shardplan::probe
