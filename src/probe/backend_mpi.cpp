// The MPI back-end: blocking MPI collectives between processes (one rank each), the calls a
// training job makes, timed as they run while a Guard's thread watches for a peer that never
// arrives; OpenBLAS sgemm/dgemm for the GEMM sweep. A CPU stand-in for NCCL where there is no GPU;
// its GEMMs describe the CPU, never the GPU profile's efficiency curve. Built with
// control_mpi.cpp as a plug-in (libshardplan_mpi.so) that the registry loads only when a probe
// starts, so no other command loads Open MPI, OpenBLAS (and its spinning threads) or gfortran.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "backend.hpp"
#include "harness.hpp"
#include "mpi_control.hpp"
#include "shardplan/error.hpp"
#include "stream.hpp"

namespace shardplan::probe {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "CPU";
}

// Send/recv between nodes streams its message as eager-sized pieces (32 KiB, under Open MPI's
// 64 KiB TCP eager limit), 64 in flight each way. One large message needs rendezvous control
// messages that queue behind the other direction's bulk data on the same TCP connection: through
// a tbf-shaped 1 Gbit/s veth pair one 32 MiB message per direction moved at 59 MB/s, the same
// bytes as 32 KiB pieces at 105-117 MB/s (line rate 125 MB/s). Inside a node shared memory
// moves one message best (single copy), so it stays whole there.
constexpr size_t kPieceCount = 8192;  // floats: 32 KiB
constexpr int kWindow = 64;

// The call run() makes for each collective, recorded with every measurement.
std::string call_of(Collective c, bool network) {
  switch (c) {
    case Collective::all_reduce:
      return "MPI_Allreduce";
    case Collective::all_gather:
      return "MPI_Allgather";
    case Collective::reduce_scatter:
      return "MPI_Reduce_scatter_block";
    case Collective::all_to_all:
      return "MPI_Alltoall";
    case Collective::broadcast:
      return "MPI_Bcast";
    case Collective::send_recv:
      return network ? fmt::format("MPI_Isend/MPI_Irecv of {} B pieces, {} in flight, MPI_Waitsome",
                                   kPieceCount * sizeof(float), kWindow)
                     : "MPI_Isend/MPI_Irecv, MPI_Waitsome";
  }
  return "";
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(MpiControl& control, Watchdog& watchdog) : control_(control), watchdog_(watchdog) {
    const nlohmann::json mine = {{"host", control.host()},
                                 {"node", control.node()},
                                 {"local", control.local_index()},
                                 {"device", cpu_model()}};
    const auto all = control.allgather(mine.dump(), "sharing the rank list");
    int local_ranks = 0;
    for (size_t p = 0; p < all.size(); ++p) {
      const auto j = nlohmann::json::parse(all[p]);
      RankInfo r;
      r.rank = r.process = static_cast<int>(p);
      r.node = j.at("node").get<int>();
      r.local_rank = j.at("local").get<int>();
      r.host = j.at("host").get<std::string>();
      r.device = j.at("device").get<std::string>();
      local_ranks += r.node == control.node();
      ranks_.push_back(r);
    }
    // The ranks of a node share its cores: one BLAS thread per core and rank.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    blas_threads_ = std::max(1, cores / std::max(1, local_ranks));
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(blas_threads_);
#endif
  }

  ~MpiBackend() override {
    for (MPI_Comm& c : comms_) {
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    }
    if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  }

  const char* name() const override {
    return "mpi";
  }
  const std::vector<RankInfo>& ranks() const override {
    return ranks_;
  }
  std::vector<int> local_ranks() const override {
    return {control_.process()};
  }

  void open(Tier tier) override {
    const RankInfo& me = ranks_[control_.process()];
    int color = 0, key = me.rank;
    if (tier == Tier::intra) {
      color = me.node;
      key = me.local_rank;
    } else if (tier == Tier::inter) {
      color = me.local_rank == 0 ? 0 : MPI_UNDEFINED;
      key = me.node;
    }
    // MPI has no non-blocking split; the guard ends the probe if a peer never arrives.
    Watchdog::Guard guard(watchdog_, fmt::format("MPI_Comm_split for the {} tier", to_string(tier)),
                          __FILE__, __LINE__);
    MPI_Comm_split(control_.world(), color, key, &comms_[static_cast<int>(tier)]);
  }

  std::vector<RankTiming> collective(Tier tier, const CollectiveShape& shape,
                                     const Settings& settings) override {
    MPI_Comm comm = comms_[static_cast<int>(tier)];
    if (comm == MPI_COMM_NULL) return {};
    int me = 0, n = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    SHARDPLAN_CHECK(n == shape.ranks, "group size differs from the planned shape");
    const std::string what =
        fmt::format("MPI {} of {} B ({} tier, rank {} of {})", info(shape.kind).name, shape.bytes,
                    to_string(tier), me, n);
    const bool network = tier != Tier::intra;
    return {measure(shape, me, settings, what, call_of(shape.kind, network),
                    [&](Watchdog::Guard& guard) { run(comm, shape, me, n, network, guard); })};
  }

  std::vector<RankTiming> exchange(const std::vector<int>& partner_node,
                                   const CollectiveShape& shape,
                                   const Settings& settings) override {
    MPI_Comm comm = comms_[static_cast<int>(Tier::inter)];
    if (comm == MPI_COMM_NULL) return {};
    int node = 0;
    MPI_Comm_rank(comm, &node);  // the inter tier's ranks are the nodes in order
    const int partner = partner_node.at(static_cast<size_t>(node));
    if (partner < 0) return {};
    const int me = node < partner ? 0 : 1;
    const std::string what =
        fmt::format("MPI exchange of {} B between nodes {} and {}", shape.bytes, node, partner);
    return {measure(shape, me, settings, what, call_of(Collective::send_recv, true),
                    [&](Watchdog::Guard& guard) {
                      stream(comm, shape.send_count, partner, partner, kPieceCount, guard);
                    })};
  }

  std::string why_not(const GemmFormat& f) const override {
    if (f.dtype == MathDtype::fp32 || f.dtype == MathDtype::fp64) return "";
    return "the mpi back-end times OpenBLAS sgemm and dgemm on CPUs: fp32 and fp64 only";
  }
  bool measures_gpu() const override {
    return false;
  }
  // Open MPI moves bytes between processes of one host through shared memory (the vader/sm
  // BTL) and between hosts through its network BTL or UCX: TCP/IP unless InfiniBand or RoCE
  // hardware is set up for it.
  std::string link_medium(Tier tier) const override {
    switch (tier) {
      case Tier::intra:
        return "CPU shared memory (MPI between CPU processes on one host, no GPU involved)";
      case Tier::inter:
        return "the hosts' network between CPU processes (MPI over TCP/IP unless the MPI "
               "library uses InfiniBand or RoCE, no GPU involved)";
      case Tier::world:
        return "CPU shared memory and the hosts' network (MPI between CPU processes, no GPU "
               "involved)";
    }
    return "";
  }

  std::vector<RankTiming> gemm(const GemmShape& s, const GemmTiming& timing) override {
    return s.dtype == MathDtype::fp64 ? gemm_typed<double>(s, timing)
                                      : gemm_typed<float>(s, timing);
  }

  // The node's memory bandwidth: STREAM on every rank of the node at once, each on its share of
  // the cores (as its BLAS threads), the node's ranks released together by a barrier.
  std::vector<HostMove> host_moves() const override {
    return {HostMove::dram_copy, HostMove::dram_triad};
  }
  std::vector<RankTiming> host_move(const HostMoveShape& shape, const Settings& settings) override {
    if (node_comm_ == MPI_COMM_NULL) {
      Watchdog::Guard guard(watchdog_, "MPI_Comm_split for the node's STREAM barrier", __FILE__,
                            __LINE__);
      MPI_Comm_split(control_.world(), control_.node(), control_.local_index(), &node_comm_);
    }
    const std::string what =
        fmt::format("node barrier before {} of {} B", to_string(shape.kind), shape.array_bytes);
    Watchdog::Guard guard(watchdog_, what, __FILE__, __LINE__);
    return {stream_on_process(shape, settings, blas_threads_, control_.process(), [&] {
      MPI_Barrier(node_comm_);
      guard.progress();
    })};
  }

  nlohmann::json libraries() const override {
    nlohmann::json j = {{"mpi", control_.library()}, {"blas_threads_per_rank", blas_threads_}};
#ifdef OPENBLAS_VERSION
    j["blas"] = std::string(openblas_get_config());
#else
    j["blas"] = "CBLAS";
#endif
    return j;
  }

 private:
  // One measurement as nccl-tests makes it: this rank's data in the send buffer (`me` places it in
  // the shape's pattern), one correctness run checked, the warm-up, then `iters` timed runs.
  // `once` runs the operation once; the guard's monitor thread watches every blocking call.
  RankTiming measure(const CollectiveShape& shape, int me, const Settings& settings,
                     const std::string& what, const std::string& detail,
                     const std::function<void(Watchdog::Guard&)>& once) {
    send_.resize(std::max<size_t>(shape.send_count, 1));
    recv_.assign(std::max<size_t>(shape.recv_count, 1), kPoison);
    fill_send(shape, me, send_);
    RankTiming timing;
    timing.rank = control_.process();
    timing.detail = detail;
    {
      Watchdog::Guard guard(watchdog_, what + ", correctness run", __FILE__, __LINE__);
      once(guard);
    }
    timing.wrong = count_wrong(shape, me, recv_);
    {
      Watchdog::Guard guard(watchdog_, what + ", warm-up", __FILE__, __LINE__);
      for (int i = 0; i < settings.warmup; ++i) once(guard);
    }
    Watchdog::Guard guard(watchdog_, what, __FILE__, __LINE__);
    for (int i = 0; i < settings.iters; ++i) {
      const double start = MPI_Wtime();
      once(guard);
      timing.iteration_s.push_back(MPI_Wtime() - start);
    }
    return timing;
  }

  // One blocking collective (the guard's thread watches it); guard.progress() when it returns.
  void run(MPI_Comm comm, const CollectiveShape& s, int me, int n, bool network,
           Watchdog::Guard& guard) {
    float* send = send_.data();
    float* recv = recv_.data();
    const int count = static_cast<int>(s.send_count);
    switch (s.kind) {
      case Collective::all_reduce:
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, comm);
        break;
      case Collective::all_gather:
        MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, comm);
        break;
      case Collective::reduce_scatter:
        MPI_Reduce_scatter_block(send, recv, static_cast<int>(s.recv_count), MPI_FLOAT, MPI_SUM,
                                 comm);
        break;
      case Collective::all_to_all:
        MPI_Alltoall(send, count / n, MPI_FLOAT, recv, count / n, MPI_FLOAT, comm);
        break;
      case Collective::broadcast:
        if (me == 0) std::copy(send, send + s.send_count, recv);
        MPI_Bcast(recv, count, MPI_FLOAT, 0, comm);
        break;
      case Collective::send_recv:
        stream(comm, s.send_count, (me + 1) % n, (me + n - 1) % n,
               network ? kPieceCount : s.send_count, guard);
        break;
    }
    guard.progress();
  }

  // nccl-tests' send/recv (to rank + 1, from rank - 1) as pieces of `piece` floats, kWindow in
  // flight each way, refilled as MPI_Waitsome returns finished ones. Same source, tag and
  // communicator: MPI matches the pieces in order.
  void stream(MPI_Comm comm, size_t total, int to, int from, size_t piece, Watchdog::Guard& guard) {
    const size_t pieces = (total + piece - 1) / piece;
    const int window = static_cast<int>(std::min<size_t>(kWindow, pieces));
    // Receives in slots [0, window), sends in [window, 2 window): one MPI_Waitsome serves both.
    std::vector<MPI_Request> requests(2 * static_cast<size_t>(window), MPI_REQUEST_NULL);
    size_t next_receive = 0, next_send = 0, finished_pieces = 0;
    auto post = [&](int slot) {
      const bool receive = slot < window;
      size_t& next = receive ? next_receive : next_send;
      if (next == pieces) return;
      const size_t at = next++ * piece;
      const int len = static_cast<int>(std::min(piece, total - at));
      if (receive) {
        MPI_Irecv(recv_.data() + at, len, MPI_FLOAT, from, 0, comm, &requests[slot]);
      } else {
        MPI_Isend(send_.data() + at, len, MPI_FLOAT, to, 0, comm, &requests[slot]);
      }
    };
    for (int slot = 0; slot < 2 * window; ++slot) post(slot);
    std::vector<int> finished(requests.size());
    while (finished_pieces < 2 * pieces) {
      int count = 0;
      MPI_Waitsome(static_cast<int>(requests.size()), requests.data(), &count, finished.data(),
                   MPI_STATUSES_IGNORE);
      SHARDPLAN_CHECK(count != MPI_UNDEFINED, "send/recv: no request left before the last piece");
      for (int i = 0; i < count; ++i) {
        ++finished_pieces;
        post(finished[i]);
      }
      guard.progress();
    }
  }

  template <typename T>
  std::vector<RankTiming> gemm_typed(const GemmShape& s, const GemmTiming& t) {
    const size_t m = s.m, n = s.n, k = s.k;
    const GemmFormat& f = gemm_format_of(s);
    std::vector<T> a(k * m), b(k * n), d(m * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(gemm_input(f, 0, i));
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(gemm_input(f, 1, i));
    // D (m x n) = A^T B with A stored k x m: the TN layout the GPU back-end uses.
    auto call = [&] {
      if constexpr (sizeof(T) == 8) {
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0, a.data(), s.k,
                    b.data(), s.k, 0.0, d.data(), s.m);
      } else {
        cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                    b.data(), s.k, 0.0f, d.data(), s.m);
      }
    };
    using Clock = std::chrono::steady_clock;
    auto seconds_since = [](Clock::time_point start) {
      return std::chrono::duration<double>(Clock::now() - start).count();
    };
    RankTiming timing;
    timing.rank = control_.process();
    timing.detail =
        fmt::format("cblas_{}gemm, {} thread(s)", sizeof(T) == 8 ? 'd' : 's', blas_threads_);
    const double per_call = warm_up(t, [&](int calls) {
      const auto start = Clock::now();
      for (int i = 0; i < calls; ++i) call();
      return seconds_since(start);
    });
    const int iters = timed_iterations(t, per_call);
    for (int i = 0; i < iters; ++i) {
      const auto start = Clock::now();
      call();
      if (t.debug_delay_s > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(t.debug_delay_s));
      timing.iteration_s.push_back(seconds_since(start));
    }
    for (const auto& [i, j] : gemm_check_points(s)) {
      timing.wrong += !gemm_output_ok(s, i, j, d[static_cast<size_t>(i + j * s.m)]);
    }
    return {timing};
  }

  MpiControl& control_;
  Watchdog& watchdog_;
  std::vector<RankInfo> ranks_;
  MPI_Comm comms_[3] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  MPI_Comm node_comm_ = MPI_COMM_NULL;  // this node's ranks (the STREAM barrier)
  std::vector<float> send_, recv_;
  int blas_threads_ = 1;
};

}  // namespace

}  // namespace shardplan::probe

// The plug-in's entry points (libshardplan_mpi.so), found by the registry with dlsym. They build
// the objects themselves: a C++ factory here would share its name with the registry's loader in
// the executable, which the dynamic linker would bind first.
extern "C" __attribute__((visibility("default"))) shardplan::probe::Control*
shardplan_make_mpi_control() {
  return new shardplan::probe::MpiControl();
}

extern "C" __attribute__((visibility("default"))) shardplan::probe::Backend*
shardplan_make_mpi_backend(shardplan::probe::Control* control,
                           shardplan::probe::Watchdog* watchdog) {
  return new shardplan::probe::MpiBackend(static_cast<shardplan::probe::MpiControl&>(*control),
                                          *watchdog);
}
