// Host <-> device copies for the NCCL back-end (host_copy_cuda.hpp).
#include "host_copy_cuda.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <deque>

#include "cuda_support.hpp"
#include "harness.hpp"

namespace shardplan::probe {

PinnedCopies::~PinnedCopies() {
  for (auto& [device, b] : buffers_) {
    cudaSetDevice(device);
    cudaFreeHost(b.host);
    cudaFreeHost(b.check);
    cudaFree(b.device);
  }
}

namespace {

// While alive, this thread's page allocations prefer one NUMA node (set_mempolicy(2),
// MPOL_PREFERRED), so the pinned buffers of a GPU sit on the socket its PCIe link hangs off:
// one process driving every GPU would otherwise place them all on its own socket and measure
// the far GPUs' host links through the inter-socket link.
class PreferNumaNode {
 public:
  explicit PreferNumaNode(int node) {
    if (node < 0 || node >= 64) return;
    const unsigned long mask = 1UL << node;
    active_ = syscall(SYS_set_mempolicy, kMpolPreferred, &mask, 64UL) == 0;
  }
  ~PreferNumaNode() {
    if (active_) syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0UL);
  }
  PreferNumaNode(const PreferNumaNode&) = delete;
  PreferNumaNode& operator=(const PreferNumaNode&) = delete;

 private:
  static constexpr int kMpolDefault = 0, kMpolPreferred = 1;  // linux/mempolicy.h
  bool active_ = false;
};

int numa_node_of_device(int device) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) != cudaSuccess) return -1;
  return numa_node_of_pci(bus_id);
}

}  // namespace

PinnedCopies::Buffers& PinnedCopies::reserve(int device, size_t bytes) {
  Buffers& b = buffers_[device];
  if (b.bytes >= bytes) return b;
  SHARDPLAN_CUDA(watchdog_, cudaSetDevice(device));
  cudaFreeHost(b.host);
  cudaFreeHost(b.check);
  cudaFree(b.device);
  b = {};
  // Portable: pinned for every CUDA context of this process (one process may drive all GPUs);
  // on the GPU's own NUMA node.
  {
    const PreferNumaNode near(numa_node_of_device(device));
    SHARDPLAN_CUDA(watchdog_, cudaHostAlloc(&b.host, bytes, cudaHostAllocPortable));
    SHARDPLAN_CUDA(watchdog_, cudaHostAlloc(&b.check, bytes, cudaHostAllocPortable));
  }
  SHARDPLAN_CUDA(watchdog_, cudaMalloc(&b.device, bytes));
  b.bytes = bytes;
  return b;
}

// host -> device -> check, then the check buffer against the pattern (sampled).
size_t PinnedCopies::check_round_trip(const CopyGpu& gpu, Buffers& b, size_t bytes) {
  auto* words = static_cast<uint32_t*>(b.host);
  const size_t n = bytes / sizeof(uint32_t);
  for (size_t i = 0; i < n; ++i) words[i] = host_copy_word(i);
  std::memset(b.check, 0, bytes);
  SHARDPLAN_CUDA(watchdog_, cudaSetDevice(gpu.device));
  SHARDPLAN_CUDA(watchdog_,
                 cudaMemcpyAsync(b.device, b.host, bytes, cudaMemcpyHostToDevice, gpu.stream));
  SHARDPLAN_CUDA(watchdog_,
                 cudaMemcpyAsync(b.check, b.device, bytes, cudaMemcpyDeviceToHost, gpu.stream));
  std::vector<cudaEvent_t> done(1);
  wait_all({gpu}, done, "host copy round trip (correctness run)");
  const auto* back = static_cast<const uint32_t*>(b.check);
  size_t wrong = 0;
  const size_t step = n / 4096 + 1;
  for (size_t i = 0; i < n; i += step) wrong += back[i] != host_copy_word(i);
  if (n > 0) wrong += back[n - 1] != host_copy_word(n - 1);
  return wrong;
}

// Records an event on every GPU's stream and waits for all of them under the watchdog.
void PinnedCopies::wait_all(const std::vector<CopyGpu>& gpus, std::vector<cudaEvent_t>& done,
                            const std::string& what) {
  done.resize(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(gpus[i].device));
    SHARDPLAN_CUDA(watchdog_, cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    SHARDPLAN_CUDA(watchdog_, cudaEventRecord(done[i], gpus[i].stream));
  }
  watchdog_.wait(
      [&] {
        for (size_t i = 0; i < gpus.size(); ++i) {
          cudaSetDevice(gpus[i].device);
          const cudaError_t e = cudaEventQuery(done[i]);
          SHARDPLAN_CUDA(watchdog_, e);
          if (e != cudaSuccess) return false;
        }
        return true;
      },
      what, __FILE__, __LINE__);
  for (size_t i = 0; i < gpus.size(); ++i) {
    cudaSetDevice(gpus[i].device);
    cudaEventDestroy(done[i]);
  }
}

std::vector<RankTiming> PinnedCopies::run(const std::vector<CopyGpu>& gpus,
                                          const HostMoveShape& shape, const Settings& settings) {
  const bool up = shape.kind == HostMove::h2d;
  const size_t bytes = shape.array_bytes;
  std::vector<RankTiming> out(gpus.size());
  std::vector<Buffers*> bufs;
  for (size_t i = 0; i < gpus.size(); ++i) {
    bufs.push_back(&reserve(gpus[i].device, bytes));
    out[i].rank = gpus[i].rank;
    out[i].detail = fmt::format("cudaMemcpyAsync {}, pinned (cudaHostAllocPortable)",
                                up ? "HostToDevice" : "DeviceToHost");
    out[i].wrong = check_round_trip(gpus[i], *bufs[i], bytes);
  }
  auto copy = [&](size_t i) {
    const Buffers& b = *bufs[i];
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(gpus[i].device));
    SHARDPLAN_CUDA(
        watchdog_,
        up ? cudaMemcpyAsync(b.device, b.host, bytes, cudaMemcpyHostToDevice, gpus[i].stream)
           : cudaMemcpyAsync(b.host, b.device, bytes, cudaMemcpyDeviceToHost, gpus[i].stream));
  };
  const std::string what = fmt::format("host {} of {} B", to_string(shape.kind), bytes);
  std::vector<cudaEvent_t> done;
  for (int it = 0; it < settings.warmup; ++it) {
    for (size_t i = 0; i < gpus.size(); ++i) copy(i);
  }
  wait_all(gpus, done, what + ", warm-up");
  std::deque<Timeline> timelines;
  for (const CopyGpu& g : gpus)
    timelines.emplace_back(watchdog_, g.device, g.stream, settings.iters);
  for (Timeline& line : timelines) line.mark(0);
  for (int it = 1; it <= settings.iters; ++it) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      copy(i);
      timelines[i].mark(it);
    }
  }
  for (int it = 1; it <= settings.iters; ++it) {
    watchdog_.wait(
        [&] {
          for (Timeline& line : timelines) {
            if (!line.reached(it)) return false;
          }
          return true;
        },
        fmt::format("{}, iteration {}", what, it), __FILE__, __LINE__);
  }
  for (size_t i = 0; i < gpus.size(); ++i) out[i].iteration_s = timelines[i].intervals_s();
  return out;
}

}  // namespace shardplan::probe
