// Host <-> device copies for the NCCL back-end: one pinned host buffer (cudaHostAlloc, portable
// across the process's CUDA contexts) to or from device memory with cudaMemcpyAsync on the GPU's
// own stream, timed with CUDA events, on every local GPU at once.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <vector>

#include "control.hpp"

namespace shardplan::probe {

/// One GPU as the copy runner needs it.
struct CopyGpu {
  int rank = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
};

class PinnedCopies {
 public:
  explicit PinnedCopies(Watchdog& watchdog) : watchdog_(watchdog) {}
  ~PinnedCopies();
  PinnedCopies(const PinnedCopies&) = delete;
  PinnedCopies& operator=(const PinnedCopies&) = delete;

  /// `shape` (h2d or d2h): a correctness round trip of host_copy_word's pattern, warm-up, then
  /// `iters` timed copies per GPU, every GPU's stream running at once.
  std::vector<RankTiming> run(const std::vector<CopyGpu>& gpus, const HostMoveShape& shape,
                              const Settings& settings);

 private:
  struct Buffers {
    void* host = nullptr;   // pinned: the source (h2d) or destination (d2h) of timed copies
    void* check = nullptr;  // pinned: where the round trip lands for the check
    void* device = nullptr;
    size_t bytes = 0;
  };
  Buffers& reserve(int device, size_t bytes);
  size_t check_round_trip(const CopyGpu& gpu, Buffers& b, size_t bytes);
  void wait_all(const std::vector<CopyGpu>& gpus, std::vector<cudaEvent_t>& done,
                const std::string& what);
  Watchdog& watchdog_;
  std::map<int, Buffers> buffers_;
};

}  // namespace shardplan::probe
