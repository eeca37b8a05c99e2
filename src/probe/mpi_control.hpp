// The MPI control plane, shared by the MPI back-end and the NCCL back-end under mpirun/srun.
#pragma once

#include <mpi.h>

#include "control.hpp"

namespace shardplan::probe {

class MpiControl final : public Control {
 public:
  MpiControl();
  ~MpiControl() override;
  MpiControl(const MpiControl&) = delete;
  MpiControl& operator=(const MpiControl&) = delete;

  int process() const override { return rank_; }
  int processes() const override { return size_; }
  int node() const override { return node_; }
  int local_index() const override { return local_index_; }
  std::string host() const override { return host_; }
  std::vector<std::string> allgather(const std::string& mine, const std::string& what) override;
  void barrier(const std::string& what) override;
  void service() override;
  std::vector<int> roll_call(double grace_s) override;
  [[noreturn]] void abort(int status) override;
  std::string library() const override;
  bool callable_from_any_thread() const override { return any_thread_; }

  /// The communicator the back-end splits its groups from (a duplicate of MPI_COMM_WORLD).
  MPI_Comm world() const { return world_; }
  /// Waits for every request under the watchdog (plain MPI_Waitall before one is attached).
  void wait(MPI_Request* requests, int count, const std::string& what, const char* file, int line);

 private:
  static constexpr int kPingTag = 1;
  static constexpr int kPongTag = 2;
  int take(int tag);

  int rank_ = 0, size_ = 1, node_ = 0, local_index_ = 0;
  std::string host_;
  MPI_Comm world_ = MPI_COMM_NULL;    // for the back-end's groups
  MPI_Comm control_ = MPI_COMM_NULL;  // for allgather/barrier
  MPI_Comm ping_ = MPI_COMM_NULL;     // for the roll call
  int pong_ = 0;                      // what this process answers (its rank)
  bool any_thread_ = false;           // MPI_THREAD_MULTIPLE was provided
};

}  // namespace shardplan::probe
