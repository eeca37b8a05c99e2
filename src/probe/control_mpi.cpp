// The control plane over MPI: node-local groups from MPI_COMM_TYPE_SHARED, result exchange with
// non-blocking collectives polled under the watchdog, and the roll call that names a dead peer.
// A peer blocked inside an MPI call does not answer; nothing here blocks, so the control plane
// itself always answers.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "mpi_control.hpp"

namespace shardplan::probe {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

MpiControl::MpiControl() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // The back-ends block in MPI calls while a Guard's monitor thread may have to ask the peers
    // who is alive and abort the job: that needs MPI_THREAD_MULTIPLE (MPI 4.0, section 11.6).
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Query_thread(&provided);
  }
  any_thread_ = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  MPI_Comm_dup(MPI_COMM_WORLD, &ping_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  pong_ = rank_;
  host_ = host_name();
  // Node-local groups: the processes that can share memory are one node.
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_index_);
  int leader = rank_;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(size_);
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::set<int> distinct(leaders.begin(), leaders.end());
  node_ = static_cast<int>(std::distance(distinct.begin(), distinct.find(leader)));
}

MpiControl::~MpiControl() {
  for (MPI_Comm* c : {&world_, &control_, &ping_}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiControl::wait(MPI_Request* requests, int count, const std::string& what, const char* file,
                      int line) {
  if (watchdog_ == nullptr) {
    MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
    return;
  }
  // Exchanges wait for peers that may still be measuring a tier this process is not in.
  watchdog_->wait_on_peers(
      [&] {
        int flag = 0;
        MPI_Testall(count, requests, &flag, MPI_STATUSES_IGNORE);
        return flag != 0;
      },
      what, file, line);
}

std::vector<std::string> MpiControl::allgather(const std::string& mine, const std::string& what) {
  const std::string op = "exchanging results after " + what;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size_);
  MPI_Request request;
  MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, control_, &request);
  wait(&request, 1, op, __FILE__, __LINE__);
  std::vector<int> offsets(size_, 0);
  for (int p = 1; p < size_; ++p) offsets[p] = offsets[p - 1] + lengths[p - 1];
  std::vector<char> all(static_cast<size_t>(offsets.back() + lengths.back()) + 1);
  MPI_Iallgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                  MPI_CHAR, control_, &request);
  wait(&request, 1, op, __FILE__, __LINE__);
  std::vector<std::string> out;
  out.reserve(size_);
  for (int p = 0; p < size_; ++p) out.emplace_back(all.data() + offsets[p], lengths[p]);
  return out;
}

void MpiControl::barrier(const std::string& what) {
  MPI_Request request;
  MPI_Ibarrier(control_, &request);
  wait(&request, 1, what, __FILE__, __LINE__);
}

// Takes one pending roll-call message with `tag`, answering a ping with a pong; the sender's
// rank, or -1 when none is pending.
int MpiControl::take(int tag) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, ping_, &flag, &status);
  if (!flag) return -1;
  int from = 0;
  MPI_Recv(&from, 1, MPI_INT, status.MPI_SOURCE, tag, ping_, MPI_STATUS_IGNORE);
  if (tag == kPingTag) {
    MPI_Request request;
    MPI_Isend(&pong_, 1, MPI_INT, status.MPI_SOURCE, kPongTag, ping_, &request);
    MPI_Request_free(&request);
  }
  return status.MPI_SOURCE;
}

void MpiControl::service() {
  while (take(kPingTag) >= 0) {
  }
}

std::vector<int> MpiControl::roll_call(double grace_s) {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    MPI_Request request;
    MPI_Isend(&pong_, 1, MPI_INT, p, kPingTag, ping_, &request);
    MPI_Request_free(&request);  // a dead peer never takes it; nobody waits for that
  }
  std::set<int> alive{rank_};
  const double deadline = MPI_Wtime() + grace_s;
  while (MPI_Wtime() < deadline && static_cast<int>(alive.size()) < size_) {
    // A pong answers our ping; a ping means that peer timed out too: alive either way.
    for (int tag : {kPongTag, kPingTag}) {
      const int from = take(tag);
      if (from >= 0) alive.insert(from);
    }
  }
  return {alive.begin(), alive.end()};
}

void MpiControl::abort(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::string MpiControl::library() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<size_t>(length));
  const size_t cut = s.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..." -> the name
  return cut == std::string::npos ? s : s.substr(0, cut);
}

}  // namespace shardplan::probe
