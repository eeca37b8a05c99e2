// The NCCL back-end, built as a plug-in (libshardplan_nccl.so) that the registry loads only when
// asked for, so the CLI starts fast and runs on machines without CUDA libraries: one rank per GPU, driven by one process for every local GPU (nccl-tests'
// -g) or one process per GPU under mpirun/srun (the NCCL unique ids travel over the control
// plane). Collectives run on non-blocking communicators polled under the watchdog, which aborts
// them; GEMMs run through cublasLtMatmul in bf16, fp16, fp8 (E4M3, "TN") and tf32. No kernels
// of our own: buffers are filled with cudaMemcpy and checked on the host. Nothing CUDA is
// touched before cuda_unavailable(), so a machine without a driver gets a message, not a crash.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <cmath>
#include <map>
#include <tuple>

#include "backends.hpp"
#include "shardplan/error.hpp"

namespace shardplan::probe {
namespace {

std::string cuda_unavailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return fmt::format("no usable NVIDIA GPU: cudaGetDeviceCount returned {} ({}); this needs an "
                       "NVIDIA GPU and its driver (libcuda.so.1)",
                       cudaGetErrorName(e), cudaGetErrorString(e));
  }
  if (count == 0) return "no GPU: cudaGetDeviceCount found 0 devices (check CUDA_VISIBLE_DEVICES)";
  return "";
}

constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt workspace; 32 MiB suits Hopper

// Element encodings of kGemmValues {-1, -0.5, 0, 0.5, 1} in each storage type.
constexpr uint16_t kBf16Bits[5] = {0xBF80, 0xBF00, 0x0000, 0x3F00, 0x3F80};
constexpr uint16_t kFp16Bits[5] = {0xBC00, 0xB800, 0x0000, 0x3800, 0x3C00};
constexpr uint8_t kFp8E4m3Bits[5] = {0xB8, 0xB0, 0x00, 0x30, 0x38};

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double v = exponent == 0 ? std::ldexp(mantissa, -24)
                           : std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}

double bf16_to_double(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

std::string version_of(int code, int major_div) {
  return fmt::format("{}.{}.{}", code / major_div, code % major_div / 100, code % 100);
}

// One GPU this process drives, with its communicators and buffers.
struct Device {
  int rank = 0;
  int index = 0;  // CUDA device
  int major = 0, minor = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  size_t capacity = 0;
  ncclComm_t comm[3] = {nullptr, nullptr, nullptr};
  int group_rank[3] = {0, 0, 0};
  bool hung = false;  // --debug-hang-rank: issues no work
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(Control& control, Watchdog& watchdog) : control_(control), watchdog_(watchdog) {
    int count = 0;
    cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount", __FILE__, __LINE__);
    if (control.processes() == 1) {
      for (int d = 0; d < count; ++d) add_device(d, d);
    } else {
      // One GPU per process: the process's place on its node picks the GPU.
      if (control.local_index() >= count) {
        throw InputError("--backend", fmt::format("{} has {} GPU(s) but at least {} processes; start "
                                                  "one process per GPU",
                                                  control.host(), count, control.local_index() + 1));
      }
      add_device(control.local_index(), control.process());
    }
    share_rank_list();
    watchdog_.on_fire([this] {
      for (Device& d : devices_) {
        for (ncclComm_t& c : d.comm) {
          if (c != nullptr) ncclCommAbort(c);
          c = nullptr;
        }
      }
    });
  }

  ~NcclBackend() override {
    Watchdog::Guard guard(watchdog_, "finalising the NCCL communicators", __FILE__, __LINE__);
    for (Device& d : devices_) {
      cudaSetDevice(d.index);
      for (ncclComm_t& c : d.comm) {
        if (c == nullptr) continue;
        ncclCommFinalize(c);
        ncclResult_t state = ncclInProgress;
        while (ncclCommGetAsyncError(c, &state) == ncclSuccess && state == ncclInProgress) {
        }
        ncclCommDestroy(c);
      }
      cudaFree(d.send);
      cudaFree(d.recv);
      cudaFree(d.workspace);
      if (d.lt != nullptr) cublasLtDestroy(d.lt);
      if (d.stream != nullptr) cudaStreamDestroy(d.stream);
    }
  }

  const char* name() const override { return "nccl"; }
  const std::vector<RankInfo>& ranks() const override { return ranks_; }
  std::vector<int> local_ranks() const override {
    std::vector<int> out;
    for (const Device& d : devices_) out.push_back(d.rank);
    return out;
  }

  bool hang(int rank) override {
    if (control_.processes() > 1) return false;  // the harness stops the whole process
    for (Device& d : devices_) d.hung = d.hung || d.rank == rank;
    return true;
  }

  void open(Tier tier) override {
    const int t = static_cast<int>(tier);
    // Each group's rank 0 makes the unique id; every process learns all ids at once.
    nlohmann::json mine = nlohmann::json::object();
    std::vector<std::pair<Device*, std::pair<std::string, int>>> members;  // (device, (group, size))
    for (Device& d : devices_) {
      const auto [group, rank_in_group, size] = place(tier, d.rank);
      if (group.empty()) continue;
      d.group_rank[t] = rank_in_group;
      members.push_back({&d, {group, size}});
      if (rank_in_group == 0) {
        ncclUniqueId id;
        nccl(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId", __FILE__, __LINE__);
        mine[group] = std::string(id.internal, sizeof(id.internal));
      }
    }
    std::map<std::string, std::string> ids;
    for (const auto& text : control_.allgather(hex(mine), fmt::format("NCCL ids for the {} tier",
                                                                      to_string(tier)))) {
      for (const auto& [group, id] : unhex(text).items()) ids[group] = id.get<std::string>();
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so the watchdog can abort a communicator that waits for a dead peer
    nccl(ncclGroupStart(), nullptr, "ncclGroupStart", __FILE__, __LINE__);
    for (auto& [d, group] : members) {
      ncclUniqueId id;
      std::memcpy(id.internal, ids.at(group.first).data(), sizeof(id.internal));
      cuda(cudaSetDevice(d->index), "cudaSetDevice", __FILE__, __LINE__);
      nccl(ncclCommInitRankConfig(&d->comm[t], group.second, id, d->group_rank[t], &config),
           nullptr, "ncclCommInitRankConfig", __FILE__, __LINE__);
    }
    nccl(ncclGroupEnd(), nullptr, "ncclGroupEnd", __FILE__, __LINE__);
    for (auto& [d, group] : members) {
      settle(d->comm[t], fmt::format("ncclCommInitRankConfig ({} tier)", to_string(tier)));
    }
  }

  std::vector<RankTiming> collective(Tier tier, const CollectiveShape& s,
                                     const Settings& settings) override {
    const int t = static_cast<int>(tier);
    std::vector<Device*> members;
    for (Device& d : devices_) {
      if (d.comm[t] != nullptr) members.push_back(&d);
    }
    if (members.empty()) return {};
    const std::string what = fmt::format("NCCL {} of {} B ({} tier)", info(s.kind).name, s.bytes,
                                         to_string(tier));
    const size_t need = std::max(s.send_count, s.recv_count) * sizeof(float);
    std::vector<float> host(std::max(s.send_count, s.recv_count));
    for (Device* d : members) {
      reserve(*d, need);
      fill_send(s, d->group_rank[t], host);
      cuda(cudaMemcpy(d->send, host.data(), s.send_count * sizeof(float), cudaMemcpyHostToDevice),
           "cudaMemcpy", __FILE__, __LINE__);
      std::fill(host.begin(), host.end(), kPoison);
      cuda(cudaMemcpy(d->recv, host.data(), s.recv_count * sizeof(float), cudaMemcpyHostToDevice),
           "cudaMemcpy", __FILE__, __LINE__);
    }
    std::vector<RankTiming> out(members.size());
    // The correctness run, then the check on the host.
    launch(members, t, s, what);
    synchronize(members, t, what + ", correctness run");
    for (size_t i = 0; i < members.size(); ++i) {
      cuda(cudaMemcpy(host.data(), members[i]->recv, s.recv_count * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "cudaMemcpy", __FILE__, __LINE__);
      out[i].rank = members[i]->rank;
      out[i].wrong = count_wrong(s, members[i]->group_rank[t], std::span(host.data(), s.recv_count));
    }
    for (int i = 0; i < settings.warmup; ++i) launch(members, t, s, what);
    synchronize(members, t, what + ", warm-up");
    // Timed: an event after every iteration on every stream, as nccl-tests times the loop.
    const int iters = settings.iters;
    std::vector<std::vector<cudaEvent_t>> events(members.size(), std::vector<cudaEvent_t>(iters + 1));
    for (size_t i = 0; i < members.size(); ++i) {
      cuda(cudaSetDevice(members[i]->index), "cudaSetDevice", __FILE__, __LINE__);
      for (auto& e : events[i]) cuda(cudaEventCreate(&e), "cudaEventCreate", __FILE__, __LINE__);
      cuda(cudaEventRecord(events[i][0], members[i]->stream), "cudaEventRecord", __FILE__, __LINE__);
    }
    for (int it = 1; it <= iters; ++it) {
      launch(members, t, s, what);
      for (size_t i = 0; i < members.size(); ++i) {
        cuda(cudaSetDevice(members[i]->index), "cudaSetDevice", __FILE__, __LINE__);
        cuda(cudaEventRecord(events[i][it], members[i]->stream), "cudaEventRecord", __FILE__,
             __LINE__);
      }
    }
    for (int it = 1; it <= iters; ++it) {
      watchdog_.wait([&] { return all_done(members, t, events, it); },
                     fmt::format("{}, iteration {}", what, it), __FILE__, __LINE__,
                     [&] { return progress(members, events, it); });
    }
    for (size_t i = 0; i < members.size(); ++i) {
      for (int it = 1; it <= iters; ++it) {
        float ms = 0;
        cuda(cudaEventElapsedTime(&ms, events[i][it - 1], events[i][it]), "cudaEventElapsedTime",
             __FILE__, __LINE__);
        out[i].iteration_s.push_back(ms * 1e-3);
      }
      for (auto& e : events[i]) cudaEventDestroy(e);
    }
    return out;
  }

  bool supports(MathDtype dtype) const override {
    for (const Device& d : devices_) {
      const int cc = d.major * 10 + d.minor;
      if (dtype == MathDtype::fp8 && cc < 89) return false;   // Ada (8.9) and Hopper onwards
      if (dtype == MathDtype::bf16 && cc < 80) return false;  // Ampere onwards
      if (dtype == MathDtype::fp64) return false;
    }
    return true;
  }
  std::vector<MathDtype> gemm_dtypes() const override {
    std::vector<MathDtype> out;
    for (MathDtype d : {MathDtype::fp8, MathDtype::bf16, MathDtype::fp16, MathDtype::tf32}) {
      if (supports(d)) out.push_back(d);
    }
    return out;
  }
  bool measures_gpu() const override { return true; }

  std::vector<RankTiming> gemm(const GemmShape& s, int warmup, int iters) override;

  nlohmann::json libraries() const override {
    int driver = 0, runtime = 0, nccl_code = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    ncclGetVersion(&nccl_code);
    nlohmann::json j = {
        {"cuda_driver_api", fmt::format("{}.{}", driver / 1000, driver % 1000 / 10)},
        {"cuda_runtime", fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10)},
        {"nccl", version_of(nccl_code, 10000)},
        {"cublaslt", version_of(static_cast<int>(cublasLtGetVersion()), 10000)}};
    std::ifstream driver_file("/proc/driver/nvidia/version");
    std::string line;
    if (std::getline(driver_file, line)) j["nvidia_driver"] = line;
    if (!control_.library().empty()) j["mpi"] = control_.library();
    return j;
  }

 private:
  // The group a rank belongs to on a tier: (name, rank in group, group size), or "" if none.
  std::tuple<std::string, int, int> place(Tier tier, int rank) const {
    const RankInfo& me = ranks_[rank];
    int index = 0, size = 0;
    for (const RankInfo& r : ranks_) {
      const bool same = tier == Tier::world  ? true
                        : tier == Tier::intra ? r.node == me.node
                                              : r.local_rank == 0;
      if (!same) continue;
      const bool before = tier == Tier::intra ? r.local_rank < me.local_rank
                          : tier == Tier::inter ? r.node < me.node
                                                : r.rank < me.rank;
      index += before;
      ++size;
    }
    if (tier == Tier::inter && me.local_rank != 0) return {"", 0, 0};
    const std::string group = tier == Tier::intra ? fmt::format("intra-{}", me.node)
                                                  : std::string(to_string(tier));
    return {group, index, size};
  }

  static std::string hex(const nlohmann::json& j) {
    std::string out;
    for (const auto& [group, id] : j.items()) {
      out += group + "=";
      for (unsigned char c : id.get<std::string>()) out += fmt::format("{:02x}", c);
      out += ";";
    }
    return out;
  }
  static nlohmann::json unhex(const std::string& text) {
    nlohmann::json j = nlohmann::json::object();
    size_t at = 0;
    while (at < text.size()) {
      const size_t eq = text.find('=', at), end = text.find(';', at);
      std::string bytes;
      for (size_t i = eq + 1; i + 1 < end; i += 2) {
        bytes += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
      }
      j[text.substr(at, eq - at)] = bytes;
      at = end + 1;
    }
    return j;
  }

  void add_device(int index, int rank) {
    Device d;
    d.index = index;
    d.rank = rank;
    cuda(cudaSetDevice(index), "cudaSetDevice", __FILE__, __LINE__);
    cudaDeviceProp prop{};
    cuda(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties", __FILE__, __LINE__);
    d.major = prop.major;
    d.minor = prop.minor;
    cuda(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate", __FILE__,
         __LINE__);
    device_names_.push_back({prop.name, static_cast<double>(prop.totalGlobalMem)});
    devices_.push_back(d);
  }

  void share_rank_list() {
    nlohmann::json mine = nlohmann::json::array();
    for (size_t i = 0; i < devices_.size(); ++i) {
      mine.push_back({{"rank", devices_[i].rank}, {"device", device_names_[i].first},
                      {"memory", device_names_[i].second}, {"local", i}});
    }
    const auto all = control_.allgather(
        nlohmann::json{{"host", control_.host()}, {"node", control_.node()},
                       {"local", control_.local_index()}, {"ranks", mine}}
            .dump(),
        "sharing the rank list");
    for (size_t p = 0; p < all.size(); ++p) {
      const auto j = nlohmann::json::parse(all[p]);
      for (const auto& r : j.at("ranks")) {
        RankInfo info;
        info.rank = r.at("rank").get<int>();
        info.process = static_cast<int>(p);
        info.node = j.at("node").get<int>();
        // One process per node drives all its GPUs; otherwise one GPU per process.
        info.local_rank = all.size() == 1 ? r.at("local").get<int>() : j.at("local").get<int>();
        info.host = j.at("host").get<std::string>();
        info.device = r.at("device").get<std::string>();
        info.device_memory_bytes = r.at("memory").get<double>();
        ranks_.push_back(info);
      }
    }
    std::sort(ranks_.begin(), ranks_.end(),
              [](const RankInfo& a, const RankInfo& b) { return a.rank < b.rank; });
  }

  void reserve(Device& d, size_t bytes) {
    if (d.capacity >= bytes) return;
    cuda(cudaSetDevice(d.index), "cudaSetDevice", __FILE__, __LINE__);
    cudaFree(d.send);
    cudaFree(d.recv);
    cuda(cudaMalloc(&d.send, bytes), "cudaMalloc", __FILE__, __LINE__);
    cuda(cudaMalloc(&d.recv, bytes), "cudaMalloc", __FILE__, __LINE__);
    d.capacity = bytes;
  }

  // One operation on every member, in one NCCL group (one process may drive several GPUs).
  void launch(const std::vector<Device*>& members, int t, const CollectiveShape& s,
              const std::string& what) {
    nccl(ncclGroupStart(), nullptr, "ncclGroupStart", __FILE__, __LINE__);
    for (Device* d : members) {
      if (d->hung) continue;
      issue(*d, t, s);
    }
    nccl(ncclGroupEnd(), nullptr, "ncclGroupEnd", __FILE__, __LINE__);
    for (Device* d : members) settle(d->comm[t], what + ", enqueue");
  }

  void issue(Device& d, int t, const CollectiveShape& s) {
    ncclComm_t comm = d.comm[t];
    const int n = s.ranks, me = d.group_rank[t];
    auto* send = static_cast<float*>(d.send);
    auto* recv = static_cast<float*>(d.recv);
    const char* op = info(s.kind).name;
    switch (s.kind) {
      case Collective::all_reduce:
        nccl(ncclAllReduce(send, recv, s.send_count, ncclFloat, ncclSum, comm, d.stream), comm, op,
             __FILE__, __LINE__);
        break;
      case Collective::all_gather:
        nccl(ncclAllGather(send, recv, s.send_count, ncclFloat, comm, d.stream), comm, op, __FILE__,
             __LINE__);
        break;
      case Collective::reduce_scatter:
        nccl(ncclReduceScatter(send, recv, s.recv_count, ncclFloat, ncclSum, comm, d.stream), comm,
             op, __FILE__, __LINE__);
        break;
      case Collective::broadcast:
        nccl(ncclBroadcast(send, recv, s.send_count, ncclFloat, 0, comm, d.stream), comm, op,
             __FILE__, __LINE__);
        break;
      case Collective::all_to_all: {
        // Point-to-point pairs work with every NCCL since 2.7 (ncclAlltoAll is 2.28+).
        const size_t chunk = s.send_count / n;
        for (int p = 0; p < n; ++p) {
          nccl(ncclSend(send + p * chunk, chunk, ncclFloat, p, comm, d.stream), comm, op, __FILE__,
               __LINE__);
          nccl(ncclRecv(recv + p * chunk, chunk, ncclFloat, p, comm, d.stream), comm, op, __FILE__,
               __LINE__);
        }
        break;
      }
      case Collective::send_recv:
        nccl(ncclSend(send, s.send_count, ncclFloat, (me + 1) % n, comm, d.stream), comm, op,
             __FILE__, __LINE__);
        nccl(ncclRecv(recv, s.recv_count, ncclFloat, (me + n - 1) % n, comm, d.stream), comm, op,
             __FILE__, __LINE__);
        break;
    }
  }

  // t < 0: no communicator to ask for asynchronous errors (GEMMs).
  bool all_done(const std::vector<Device*>& members, int t,
                const std::vector<std::vector<cudaEvent_t>>& events, int it) {
    bool done = true;
    for (size_t i = 0; i < members.size(); ++i) {
      cudaSetDevice(members[i]->index);
      const cudaError_t e = cudaEventQuery(events[i][it]);
      if (e == cudaErrorNotReady) {
        done = false;
        if (t >= 0) async_error(members[i]->comm[t]);
      } else {
        cuda(e, "cudaEventQuery", __FILE__, __LINE__);
      }
    }
    return done;
  }

  // For the timeout report: which local ranks finished the operation and which still run.
  std::string progress(const std::vector<Device*>& members,
                       const std::vector<std::vector<cudaEvent_t>>& events, int it) {
    std::string running, finished;
    for (size_t i = 0; i < members.size(); ++i) {
      cudaSetDevice(members[i]->index);
      std::string& list = cudaEventQuery(events[i][it]) == cudaErrorNotReady ? running : finished;
      if (!list.empty()) list += ',';
      list += std::to_string(members[i]->rank);
    }
    if (finished.empty()) return "";
    return fmt::format("local ranks still waiting: {}; finished: {} (a rank that finished while "
                       "its peers wait did not take part)",
                       running, finished);
  }

  void synchronize(const std::vector<Device*>& members, int t, const std::string& what) {
    std::vector<cudaEvent_t> done(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      cuda(cudaSetDevice(members[i]->index), "cudaSetDevice", __FILE__, __LINE__);
      cuda(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming), "cudaEventCreate", __FILE__,
           __LINE__);
      cuda(cudaEventRecord(done[i], members[i]->stream), "cudaEventRecord", __FILE__, __LINE__);
    }
    std::vector<std::vector<cudaEvent_t>> wrapped;
    for (cudaEvent_t e : done) wrapped.push_back({e, e});
    watchdog_.wait([&] { return all_done(members, t, wrapped, 1); }, what, __FILE__, __LINE__,
                   [&] { return progress(members, wrapped, 1); });
    for (cudaEvent_t e : done) cudaEventDestroy(e);
  }

  // A non-blocking communicator finishes its calls in the background: wait for that.
  void settle(ncclComm_t comm, const std::string& what) {
    if (comm == nullptr) return;
    watchdog_.wait(
        [&] {
          ncclResult_t state = ncclSuccess;
          nccl(ncclCommGetAsyncError(comm, &state), comm, "ncclCommGetAsyncError", __FILE__,
               __LINE__);
          if (state == ncclInProgress) return false;
          nccl(state, comm, what.c_str(), __FILE__, __LINE__);
          return true;
        },
        what, __FILE__, __LINE__);
  }

  void async_error(ncclComm_t comm) {
    if (comm == nullptr) return;
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      nccl(state, comm, "NCCL (asynchronous error)", __FILE__, __LINE__);
    }
  }

  void cuda(cudaError_t e, const char* call, const char* file, int line) {
    if (e == cudaSuccess || e == cudaErrorNotReady) return;
    watchdog_.fire(call, file, line,
                   fmt::format("CUDA error {} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
  }

  void nccl(ncclResult_t r, ncclComm_t comm, const char* call, const char* file, int line) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    std::string detail = fmt::format("NCCL error {} ({})", static_cast<int>(r), ncclGetErrorString(r));
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') detail += fmt::format(": {}", last);
    watchdog_.fire(call, file, line, detail);
  }

  struct GemmRun;

  Control& control_;
  Watchdog& watchdog_;
  std::vector<Device> devices_;
  std::vector<std::pair<std::string, double>> device_names_;
  std::vector<RankInfo> ranks_;
};

// ---- GEMM through cuBLASLt ----------------------------------------------------------------------

struct Types {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  size_t ab_size, cd_size;
};

Types types_of(MathDtype dtype) {
  switch (dtype) {
    case MathDtype::fp8:  // E4M3 inputs, bf16 output (cuBLASLt FP8 rules: C and D bf16 here)
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    case MathDtype::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case MathDtype::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case MathDtype::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    default: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
  }
}

// The inputs in the storage type's bytes.
std::vector<unsigned char> encode_inputs(int matrix, size_t count, MathDtype dtype) {
  const Types t = types_of(dtype);
  std::vector<unsigned char> out(count * t.ab_size);
  for (size_t i = 0; i < count; ++i) {
    const int code = gemm_input_code(matrix, i);
    unsigned char* at = out.data() + i * t.ab_size;
    switch (dtype) {
      case MathDtype::fp8: *at = kFp8E4m3Bits[code]; break;
      case MathDtype::bf16: std::memcpy(at, &kBf16Bits[code], 2); break;
      case MathDtype::fp16: std::memcpy(at, &kFp16Bits[code], 2); break;
      default: std::memcpy(at, &kGemmValues[code], 4); break;
    }
  }
  return out;
}

double decode_output(const unsigned char* at, MathDtype dtype) {
  uint16_t h = 0;
  float f = 0;
  switch (dtype) {
    case MathDtype::fp8:
    case MathDtype::bf16: std::memcpy(&h, at, 2); return bf16_to_double(h);
    case MathDtype::fp16: std::memcpy(&h, at, 2); return half_to_double(h);
    default: std::memcpy(&f, at, 4); return f;
  }
}

// Everything one device needs for one GEMM shape; released on destruction.
struct NcclBackend::GemmRun {
  Device* device = nullptr;
  void *a = nullptr, *b = nullptr, *d = nullptr, *scales = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  bool ok = false;
  std::string why;
  ~GemmRun() {
    cudaSetDevice(device->index);
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto l : {la, lb, ld}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
    for (void* p : {a, b, d, scales}) cudaFree(p);
  }
};

std::vector<RankTiming> NcclBackend::gemm(const GemmShape& s, int warmup, int iters) {
  const Types t = types_of(s.dtype);
  const size_t m = s.m, n = s.n, k = s.k;
  const std::string what = fmt::format("cublasLtMatmul {}x{}x{} {}", s.m, s.n, s.k,
                                       to_string(s.dtype));
  std::vector<std::unique_ptr<GemmRun>> runs;
  const auto a_host = encode_inputs(0, k * m, s.dtype);
  const auto b_host = encode_inputs(1, k * n, s.dtype);
  for (Device& dev : devices_) {
    auto run = std::make_unique<GemmRun>();
    run->device = &dev;
    cuda(cudaSetDevice(dev.index), "cudaSetDevice", __FILE__, __LINE__);
    if (dev.lt == nullptr) {
      if (cublasLtCreate(&dev.lt) != CUBLAS_STATUS_SUCCESS) {
        watchdog_.fire("cublasLtCreate", __FILE__, __LINE__, "cuBLASLt could not start");
      }
      cuda(cudaMalloc(&dev.workspace, kWorkspaceBytes), "cudaMalloc", __FILE__, __LINE__);
    }
    cuda(cudaMalloc(&run->a, a_host.size()), "cudaMalloc", __FILE__, __LINE__);
    cuda(cudaMalloc(&run->b, b_host.size()), "cudaMalloc", __FILE__, __LINE__);
    cuda(cudaMalloc(&run->d, m * n * t.cd_size), "cudaMalloc", __FILE__, __LINE__);
    cuda(cudaMemcpy(run->a, a_host.data(), a_host.size(), cudaMemcpyHostToDevice), "cudaMemcpy",
         __FILE__, __LINE__);
    cuda(cudaMemcpy(run->b, b_host.data(), b_host.size(), cudaMemcpyHostToDevice), "cudaMemcpy",
         __FILE__, __LINE__);
    // D = A^T B: A stored k x m, B k x n, D m x n, column-major ("TN", required for FP8).
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    bool ok = cublasLtMatmulDescCreate(&run->op, t.compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulDescSetAttribute(run->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                              sizeof(trans_a)) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulDescSetAttribute(run->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                              sizeof(trans_b)) == CUBLAS_STATUS_SUCCESS;
    if (ok && s.dtype == MathDtype::fp8) {
      // Per-tensor scales of 1 (device pointers, fp32 like the compute type).
      const float ones[2] = {1.0f, 1.0f};
      cuda(cudaMalloc(&run->scales, sizeof(ones)), "cudaMalloc", __FILE__, __LINE__);
      cuda(cudaMemcpy(run->scales, ones, sizeof(ones), cudaMemcpyHostToDevice), "cudaMemcpy",
           __FILE__, __LINE__);
      const float* scale_a = static_cast<float*>(run->scales);
      const float* scale_b = scale_a + 1;
      ok = cublasLtMatmulDescSetAttribute(run->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a,
                                          sizeof(scale_a)) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulDescSetAttribute(run->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b,
                                          sizeof(scale_b)) == CUBLAS_STATUS_SUCCESS;
    }
    ok = ok && cublasLtMatrixLayoutCreate(&run->la, t.ab, k, m, k) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&run->lb, t.ab, k, n, k) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&run->ld, t.cd, m, n, m) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreference_t pref = nullptr;
    int found = 0;
    if (ok && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS) {
      const size_t workspace = kWorkspaceBytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace, sizeof(workspace));
      if (cublasLtMatmulAlgoGetHeuristic(dev.lt, run->op, run->la, run->lb, run->ld, run->ld, pref,
                                         1, &run->algo, &found) != CUBLAS_STATUS_SUCCESS) {
        found = 0;
      }
      cublasLtMatmulPreferenceDestroy(pref);
    }
    run->ok = ok && found > 0;
    if (!run->ok) {
      run->why = fmt::format("unsupported: cuBLASLt has no {} kernel for {}x{}x{} on this GPU "
                             "(FP8 needs dimensions that are multiples of 16)",
                             to_string(s.dtype), s.m, s.n, s.k);
    }
    runs.push_back(std::move(run));
  }
  std::vector<RankTiming> out(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    out[i].rank = runs[i]->device->rank;
    out[i].detail = runs[i]->ok ? fmt::format("cublasLtMatmul {}", to_string(s.dtype)) : runs[i]->why;
  }
  for (const auto& run : runs) {
    if (!run->ok) return out;  // empty iterations: the harness notes the shape as unsupported
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](GemmRun& r) {
    Device& dev = *r.device;
    const cublasStatus_t status =
        cublasLtMatmul(dev.lt, r.op, &alpha, r.a, r.la, r.b, r.lb, &beta, r.d, r.ld, r.d, r.ld,
                       &r.algo.algo, dev.workspace, kWorkspaceBytes, dev.stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      watchdog_.fire(what.c_str(), __FILE__, __LINE__,
                     fmt::format("cublasLtMatmul failed with status {}", static_cast<int>(status)));
    }
  };
  std::vector<std::vector<cudaEvent_t>> events(runs.size(), std::vector<cudaEvent_t>(iters + 1));
  for (size_t i = 0; i < runs.size(); ++i) {
    cuda(cudaSetDevice(runs[i]->device->index), "cudaSetDevice", __FILE__, __LINE__);
    for (int w = 0; w < warmup; ++w) matmul(*runs[i]);
    for (auto& e : events[i]) cuda(cudaEventCreate(&e), "cudaEventCreate", __FILE__, __LINE__);
    cuda(cudaEventRecord(events[i][0], runs[i]->device->stream), "cudaEventRecord", __FILE__,
         __LINE__);
    for (int it = 1; it <= iters; ++it) {
      matmul(*runs[i]);
      cuda(cudaEventRecord(events[i][it], runs[i]->device->stream), "cudaEventRecord", __FILE__,
           __LINE__);
    }
  }
  std::vector<Device*> devices;
  for (const auto& r : runs) devices.push_back(r->device);
  for (int it = 1; it <= iters; ++it) {
    watchdog_.wait([&] { return all_done(devices, -1, events, it); },
                   fmt::format("{}, iteration {}", what, it), __FILE__, __LINE__);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    cuda(cudaSetDevice(runs[i]->device->index), "cudaSetDevice", __FILE__, __LINE__);
    for (int it = 1; it <= iters; ++it) {
      float ms = 0;
      cuda(cudaEventElapsedTime(&ms, events[i][it - 1], events[i][it]), "cudaEventElapsedTime",
           __FILE__, __LINE__);
      out[i].iteration_s.push_back(ms * 1e-3);
    }
    for (auto& e : events[i]) cudaEventDestroy(e);
    std::vector<unsigned char> value(t.cd_size);
    for (const auto& [row, col] : gemm_check_points(s)) {
      const size_t offset = (static_cast<size_t>(row) + static_cast<size_t>(col) * m) * t.cd_size;
      cuda(cudaMemcpy(value.data(), static_cast<unsigned char*>(runs[i]->d) + offset, t.cd_size,
                      cudaMemcpyDeviceToHost),
           "cudaMemcpy", __FILE__, __LINE__);
      out[i].wrong += !gemm_output_ok(s, row, col, decode_output(value.data(), s.dtype));
    }
  }
  return out;
}

}  // namespace
}  // namespace shardplan::probe

// The plug-in's entry points, found by the registry with dlsym.
extern "C" __attribute__((visibility("default"))) const char* shardplan_nccl_unavailable() {
  static std::string why;
  why = shardplan::probe::cuda_unavailable();
  return why.c_str();
}

extern "C" __attribute__((visibility("default"))) shardplan::probe::Backend*
shardplan_make_nccl_backend(shardplan::probe::Control* control,
                            shardplan::probe::Watchdog* watchdog) {
  return new shardplan::probe::NcclBackend(*control, *watchdog);
}
