// What the NCCL back-end's files share: a CUDA error ends the probe through the watchdog with
// host:file:line, and a timeline of events times each iteration on the GPU's own clock.
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <vector>

#include "control.hpp"

namespace shardplan::probe {

inline void check_cuda(Watchdog& watchdog, cudaError_t e, const char* call, const char* file,
                       int line) {
  if (e == cudaSuccess || e == cudaErrorNotReady) return;
  watchdog.fire(call, file, line,
                fmt::format("CUDA error {} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
}

#define SHARDPLAN_CUDA(watchdog, call) \
  ::shardplan::probe::check_cuda((watchdog), (call), #call, __FILE__, __LINE__)

/// Events on one GPU's stream: mark(0) before the first iteration, mark(i) after iteration i.
/// Keep timelines in a std::deque (they own events and do not move).
class Timeline {
 public:
  Timeline(Watchdog& watchdog, int device, cudaStream_t stream, int iterations)
      : watchdog_(watchdog), device_(device), stream_(stream), events_(iterations + 1) {
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(device_));
    for (cudaEvent_t& e : events_) SHARDPLAN_CUDA(watchdog_, cudaEventCreate(&e));
  }
  ~Timeline() {
    cudaSetDevice(device_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void mark(int i) {
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(device_));
    SHARDPLAN_CUDA(watchdog_, cudaEventRecord(events_[i], stream_));
  }
  /// Whether the GPU has passed mark i; a CUDA error ends the probe.
  bool reached(int i) {
    cudaSetDevice(device_);
    const cudaError_t e = cudaEventQuery(events_[i]);
    SHARDPLAN_CUDA(watchdog_, e);
    return e == cudaSuccess;
  }
  /// Seconds between consecutive marks, once the last is reached.
  std::vector<double> intervals_s() {
    std::vector<double> out;
    for (size_t i = 1; i < events_.size(); ++i) {
      float ms = 0;
      SHARDPLAN_CUDA(watchdog_, cudaEventElapsedTime(&ms, events_[i - 1], events_[i]));
      out.push_back(ms * 1e-3);
    }
    return out;
  }

 private:
  Watchdog& watchdog_;
  int device_;
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace shardplan::probe
