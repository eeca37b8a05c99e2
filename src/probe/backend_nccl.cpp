// The NCCL back-end, built as a plug-in (libshardplan_nccl.so) that the registry loads only when
// asked for, so the CLI starts fast and runs where the CUDA libraries are absent. One rank per
// GPU: one process drives every local GPU (nccl-tests' -g), or one process per GPU under
// mpirun/srun (the NCCL unique ids travel over the control plane). Collectives run on
// non-blocking communicators polled under the watchdog, which aborts them; GEMMs go to
// gemm_cublaslt.cpp. No kernels of our own: buffers are filled by copies and checked on the
// host. Nothing CUDA is touched before cuda_unavailable(): no driver means a message, not a crash.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "backends.hpp"
#include "cuda_support.hpp"
#include "gemm_cublaslt.hpp"
#include "harness.hpp"
#include "host_copy_cuda.hpp"
#include "shardplan/error.hpp"

namespace shardplan::probe {
namespace {

std::string cuda_unavailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);  // 0 when no driver is installed
  if (e == cudaErrorInsufficientDriver && driver > 0) {
    return fmt::format(
        "the NVIDIA driver supports CUDA {}.{} but this build's runtime is CUDA {}.{} "
        "(cudaErrorInsufficientDriver): CUDA 13 needs driver R580 or newer (nvidia-smi shows "
        "the driver version); update the driver, or build with an older toolkit "
        "(CUDAToolkit_ROOT)",
        driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  }
  if (e != cudaSuccess) {
    return fmt::format(
        "no usable NVIDIA GPU: cudaGetDeviceCount returned {} ({}); this needs an "
        "NVIDIA GPU and its driver (libcuda.so.1)",
        cudaGetErrorName(e), cudaGetErrorString(e));
  }
  if (count == 0) return "no GPU: cudaGetDeviceCount found 0 devices (check CUDA_VISIBLE_DEVICES)";
  return "";
}

// The calls issue() makes for each collective, recorded with every measurement.
const char* call_of(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "ncclAllReduce";
    case Collective::all_gather:
      return "ncclAllGather";
    case Collective::reduce_scatter:
      return "ncclReduceScatter";
    case Collective::broadcast:
      return "ncclBroadcast";
    case Collective::all_to_all:
      return "ncclSend/ncclRecv pairs";
    case Collective::send_recv:
      return "ncclSend/ncclRecv";
  }
  return "";
}

std::string version_of(int code, int major_div) {
  return fmt::format("{}.{}.{}", code / major_div, code % major_div / 100, code % 100);
}

// One GPU this process drives, with its communicators and buffers.
struct Device {
  int rank = 0;
  int index = 0;               // CUDA device
  int compute_capability = 0;  // 90 for sm_90
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  size_t capacity = 0;
  ncclComm_t comm[3] = {nullptr, nullptr, nullptr};
  int group_rank[3] = {0, 0, 0};
  bool hung = false;  // --debug-hang-rank: issues no work
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(Control& control, Watchdog& watchdog)
      : control_(control), watchdog_(watchdog), gemm_(watchdog), copies_(watchdog) {
    int count = 0;
    SHARDPLAN_CUDA(watchdog_, cudaGetDeviceCount(&count));
    if (control.processes() == 1) {
      for (int d = 0; d < count; ++d) add_device(d, d);
    } else {
      // One GPU per process, picked from the process's place on its node; every process learns
      // every other's choice first, so one that cannot start stops them all at once with its
      // reason (not with a peer timeout on the others a minute later).
      const auto nodes =
          control_.allgather(std::to_string(control.node()), "counting processes per node");
      const int local_processes =
          static_cast<int>(std::count(nodes.begin(), nodes.end(), std::to_string(control.node())));
      const DevicePick pick =
          pick_local_device(control.local_index(), local_processes, count, control.host());
      std::string first_error;
      for (const std::string& e : control_.allgather(pick.error, "choosing each process's GPU")) {
        if (first_error.empty() && !e.empty()) first_error = e;
      }
      if (!first_error.empty()) throw InputError("--backend nccl", first_error);
      add_device(pick.device, control.process());
    }
    if (devices_.size() > 1) {
      notes_.push_back(fmt::format(
          "one process drives {} GPUs (nccl-tests' -g): every iteration pays a group call and "
          "{} device switches on one host thread, which adds to the smallest sizes' latency; "
          "for latency figures start one process per GPU (mpirun -np {})",
          devices_.size(), devices_.size(), devices_.size()));
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
    std::vector<std::pair<Device*, std::pair<std::string, int>>>
        members;  // (device, (group, size))
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
    for (const auto& text :
         control_.allgather(hex(mine), fmt::format("NCCL ids for the {} tier", to_string(tier)))) {
      for (const auto& [group, id] : unhex(text).items()) ids[group] = id.get<std::string>();
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so the watchdog can abort a communicator that waits for a dead peer
    nccl(ncclGroupStart(), nullptr, "ncclGroupStart", __FILE__, __LINE__);
    for (auto& [d, group] : members) {
      ncclUniqueId id;
      std::memcpy(id.internal, ids.at(group.first).data(), sizeof(id.internal));
      SHARDPLAN_CUDA(watchdog_, cudaSetDevice(d->index));
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
    const std::string what =
        fmt::format("NCCL {} of {} B ({} tier)", info(s.kind).name, s.bytes, to_string(tier));
    return measure(
        members, t, s, settings, what, call_of(s.kind),
        [&](const Device* d) { return d->group_rank[t]; }, [&] { launch(members, t, s, what); });
  }

  std::vector<RankTiming> exchange(const std::vector<int>& partner_node, const CollectiveShape& s,
                                   const Settings& settings) override {
    const int t = static_cast<int>(Tier::inter);
    Device* d = nullptr;
    for (Device& dev : devices_) {
      if (dev.comm[t] != nullptr) d = &dev;
    }
    if (d == nullptr) return {};
    const int node = d->group_rank[t];  // the inter tier's ranks are the nodes in order
    const int partner = partner_node.at(static_cast<size_t>(node));
    if (partner < 0) return {};
    const int me = node < partner ? 0 : 1;
    const std::string what =
        fmt::format("NCCL exchange of {} B between nodes {} and {}", s.bytes, node, partner);
    auto once = [&] {
      nccl(ncclGroupStart(), nullptr, "ncclGroupStart", __FILE__, __LINE__);
      nccl(ncclSend(d->send, s.send_count, ncclFloat, partner, d->comm[t], d->stream), d->comm[t],
           "ncclSend", __FILE__, __LINE__);
      nccl(ncclRecv(d->recv, s.recv_count, ncclFloat, partner, d->comm[t], d->stream), d->comm[t],
           "ncclRecv", __FILE__, __LINE__);
      const ncclResult_t ended = ncclGroupEnd();
      nccl(ended, nullptr, "ncclGroupEnd", __FILE__, __LINE__);
      if (ended == ncclInProgress) settle(d->comm[t], what + ", enqueue");
    };
    return measure(
        {d}, t, s, settings, what, "ncclSend/ncclRecv with one peer",
        [me](const Device*) { return me; }, once);
  }

  std::string why_not(const GemmFormat& f) const override {
    for (const Device& d : devices_) {
      std::string why = CublasLtGemm::why_not(d.compute_capability, f);
      if (!why.empty()) return why;
    }
    return "";
  }
  bool measures_gpu() const override { return true; }

  std::vector<RankTiming> gemm(const GemmShape& s, const GemmTiming& timing) override {
    std::vector<GemmGpu> gpus;
    for (const Device& d : devices_)
      gpus.push_back({d.rank, d.index, d.stream, d.compute_capability});
    return gemm_.run(gpus, s, timing);
  }

  // Each GPU's host link: pinned copies up and down, every GPU of the node at once (the
  // processes of a node start each size together after a barrier); and the node's CPU memory
  // (STREAM on every process of the node at once, each on its share of the cores), which CPU
  // Adam under optimizer offload runs at.
  std::vector<HostMove> host_moves() const override {
    return {HostMove::h2d, HostMove::d2h, HostMove::dram_copy, HostMove::dram_triad};
  }
  std::vector<RankTiming> host_move(const HostMoveShape& s, const Settings& settings) override {
    const std::string what =
        fmt::format("before host {} of {} B", to_string(s.kind), s.array_bytes);
    if (!is_link(s.kind)) {
      const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                          std::max(1, processes_on_node()));
      return {stream_on_process(s, settings, threads, devices_.front().rank,
                                [&] { control_.barrier(what); })};
    }
    std::vector<CopyGpu> gpus;
    for (const Device& d : devices_) gpus.push_back({d.rank, d.index, d.stream});
    control_.barrier(what);
    return copies_.run(gpus, s, settings);
  }

  std::vector<std::string> notes() const override { return notes_; }

  nlohmann::json libraries() const override {
    int driver = 0, runtime = 0, nccl_code = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    ncclGetVersion(&nccl_code);
    nlohmann::json j = {
        {"cuda_driver_api", fmt::format("{}.{}", driver / 1000, driver % 1000 / 10)},
        {"cuda_runtime", fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10)},
        {"nccl", version_of(nccl_code, 10000)},
        {"cublaslt", CublasLtGemm::version()}};
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
      const bool same = tier == Tier::world   ? true
                        : tier == Tier::intra ? r.node == me.node
                                              : r.local_rank == 0;
      if (!same) continue;
      const bool before = tier == Tier::intra   ? r.local_rank < me.local_rank
                          : tier == Tier::inter ? r.node < me.node
                                                : r.rank < me.rank;
      index += before;
      ++size;
    }
    if (tier == Tier::inter && me.local_rank != 0) return {"", 0, 0};
    const std::string group =
        tier == Tier::intra ? fmt::format("intra-{}", me.node) : std::string(to_string(tier));
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
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(index));
    cudaDeviceProp prop{};
    SHARDPLAN_CUDA(watchdog_, cudaGetDeviceProperties(&prop, index));
    d.compute_capability = prop.major * 10 + prop.minor;
    SHARDPLAN_CUDA(watchdog_, cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
    device_names_.push_back({prop.name, static_cast<double>(prop.totalGlobalMem)});
    devices_.push_back(d);
  }

  void share_rank_list() {
    nlohmann::json mine = nlohmann::json::array();
    for (size_t i = 0; i < devices_.size(); ++i) {
      mine.push_back({{"rank", devices_[i].rank},
                      {"device", device_names_[i].first},
                      {"memory", device_names_[i].second},
                      {"local", i}});
    }
    const auto all = control_.allgather(nlohmann::json{{"host", control_.host()},
                                                       {"node", control_.node()},
                                                       {"local", control_.local_index()},
                                                       {"ranks", mine}}
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
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(d.index));
    cudaFree(d.send);
    cudaFree(d.recv);
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&d.send, bytes));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&d.recv, bytes));
    d.capacity = bytes;
  }

  // One measurement on `members` (a tier's, or one pair's GPU), as nccl-tests makes it: each
  // member's data staged, one correctness run checked on the host (`rank_in_shape` places a
  // member in the shape's pattern), the warm-up, then `iters` timed runs with an event after each
  // on every stream. `launch` issues one run on every member.
  std::vector<RankTiming> measure(const std::vector<Device*>& members, int t,
                                  const CollectiveShape& s, const Settings& settings,
                                  const std::string& what, const std::string& detail,
                                  const std::function<int(const Device*)>& rank_in_shape,
                                  const std::function<void()>& launch_all) {
    // Copies on the member's own stream, so the runs after them wait for them (our streams do not
    // synchronise with the default one). Two host buffers, and the member's stream waited for
    // before either is written again: CUDA's API synchronisation rules do not let a pageable
    // source be reused while an asynchronous copy from it may still run.
    std::vector<float> data(s.send_count), poison(s.recv_count, kPoison), host(s.recv_count);
    for (Device* d : members) {
      reserve(*d, std::max(s.send_count, s.recv_count) * sizeof(float));
      fill_send(s, rank_in_shape(d), data);
      SHARDPLAN_CUDA(watchdog_, cudaSetDevice(d->index));
      SHARDPLAN_CUDA(watchdog_, cudaMemcpyAsync(d->send, data.data(), s.send_count * sizeof(float),
                                                cudaMemcpyHostToDevice, d->stream));
      SHARDPLAN_CUDA(watchdog_,
                     cudaMemcpyAsync(d->recv, poison.data(), s.recv_count * sizeof(float),
                                     cudaMemcpyHostToDevice, d->stream));
      synchronize({d}, t, what + ", staging the data");
    }
    std::vector<RankTiming> out(members.size());
    launch_all();
    synchronize(members, t, what + ", correctness run");
    for (size_t i = 0; i < members.size(); ++i) {
      SHARDPLAN_CUDA(watchdog_, cudaSetDevice(members[i]->index));
      SHARDPLAN_CUDA(watchdog_, cudaMemcpy(host.data(), members[i]->recv,
                                           s.recv_count * sizeof(float), cudaMemcpyDeviceToHost));
      out[i].rank = members[i]->rank;
      out[i].detail = detail;
      out[i].wrong = count_wrong(s, rank_in_shape(members[i]), host);
    }
    for (int i = 0; i < settings.warmup; ++i) launch_all();
    synchronize(members, t, what + ", warm-up");
    std::deque<Timeline> timelines;
    for (Device* d : members)
      timelines.emplace_back(watchdog_, d->index, d->stream, settings.iters);
    for (Timeline& line : timelines) line.mark(0);
    for (int it = 1; it <= settings.iters; ++it) {
      launch_all();
      for (Timeline& line : timelines) line.mark(it);
    }
    for (int it = 1; it <= settings.iters; ++it) {
      watchdog_.wait([&] { return all_reached(members, t, timelines, it); },
                     fmt::format("{}, iteration {}", what, it), __FILE__, __LINE__,
                     [&] { return progress(members, timelines, it); });
    }
    for (size_t i = 0; i < members.size(); ++i) out[i].iteration_s = timelines[i].intervals_s();
    return out;
  }

  // One operation on every member, in one NCCL group (one process may drive several GPUs).
  void launch(const std::vector<Device*>& members, int t, const CollectiveShape& s,
              const std::string& what) {
    nccl(ncclGroupStart(), nullptr, "ncclGroupStart", __FILE__, __LINE__);
    for (Device* d : members) {
      if (d->hung) continue;
      issue(*d, t, s);
    }
    const ncclResult_t ended = ncclGroupEnd();
    nccl(ended, nullptr, "ncclGroupEnd", __FILE__, __LINE__);
    // A non-blocking communicator that took the calls at once returns ncclSuccess; only one
    // still enqueueing (ncclInProgress) must be polled before the next call. Polling every
    // member every iteration cost the small sizes their latency.
    if (ended == ncclInProgress) {
      for (Device* d : members) settle(d->comm[t], what + ", enqueue");
    }
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

  // Whether every member passed mark `it`; a member still running is asked for NCCL's errors.
  bool all_reached(const std::vector<Device*>& members, int t, std::deque<Timeline>& timelines,
                   int it) {
    bool all = true;
    for (size_t i = 0; i < members.size(); ++i) {
      if (timelines[i].reached(it)) continue;
      all = false;
      async_error(members[i]->comm[t]);
    }
    return all;
  }

  // For the timeout report: which local ranks finished the operation and which still run.
  std::string progress(const std::vector<Device*>& members, std::deque<Timeline>& timelines,
                       int it) {
    std::string running, finished;
    for (size_t i = 0; i < members.size(); ++i) {
      std::string& list = timelines[i].reached(it) ? finished : running;
      if (!list.empty()) list += ',';
      list += std::to_string(members[i]->rank);
    }
    if (finished.empty()) return "";
    return fmt::format(
        "local ranks still waiting: {}; finished: {} (a rank that finished while "
        "its peers wait did not take part)",
        running, finished);
  }

  void synchronize(const std::vector<Device*>& members, int t, const std::string& what) {
    std::deque<Timeline> timelines;
    for (Device* d : members) timelines.emplace_back(watchdog_, d->index, d->stream, 0).mark(0);
    watchdog_.wait([&] { return all_reached(members, t, timelines, 0); }, what, __FILE__, __LINE__,
                   [&] { return progress(members, timelines, 0); });
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

  void nccl(ncclResult_t r, ncclComm_t comm, const char* call, const char* file, int line) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    std::string detail =
        fmt::format("NCCL error {} ({})", static_cast<int>(r), ncclGetErrorString(r));
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') detail += fmt::format(": {}", last);
    watchdog_.fire(call, file, line, detail);
  }

  Control& control_;
  Watchdog& watchdog_;
  CublasLtGemm gemm_;
  PinnedCopies copies_;
  std::vector<Device> devices_;
  std::vector<std::pair<std::string, double>> device_names_;
  std::vector<RankInfo> ranks_;
  std::vector<std::string> notes_;

  int processes_on_node() const {
    std::set<int> processes;
    const int node = ranks_.at(devices_.front().rank).node;
    for (const RankInfo& r : ranks_) {
      if (r.node == node) processes.insert(r.process);
    }
    return static_cast<int>(processes.size());
  }
};

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
