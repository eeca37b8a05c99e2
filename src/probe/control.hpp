// The control plane (processes finding each other, exchanging results, giving up together) and
// the watchdog every wait goes through (watchdog.cpp, control_mpi.cpp).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shapes.hpp"

namespace shardplan::probe {

/// The control plane: how processes find each other, exchange results and give up together.
/// MPI when launched by mpirun/srun, or a single process. Waits go through the Watchdog.
class Watchdog;
class Control {
 public:
  virtual ~Control() = default;
  virtual int process() const = 0;
  virtual int processes() const = 0;
  virtual int node() const = 0;         // this process's node, 0 .. nodes-1
  virtual int local_index() const = 0;  // this process's position inside its node
  virtual std::string host() const = 0;
  /// Every process's `mine`, in process order.
  virtual std::vector<std::string> allgather(const std::string& mine, const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;
  /// Called while waiting: answers peers that ask whether this process is alive.
  virtual void service() {}
  /// After a timeout: the processes that answer within `grace_s` (this one included).
  virtual std::vector<int> roll_call(double grace_s) = 0;
  [[noreturn]] virtual void abort(int status) = 0;
  /// "Open MPI v4.1.4 ..." or empty.
  virtual std::string library() const = 0;
  /// Whether another thread may call roll_call and abort while this one is blocked inside the
  /// library (MPI_THREAD_MULTIPLE): then a Guard's timeout names the silent peers too.
  virtual bool callable_from_any_thread() const { return true; }
  void attach(Watchdog* watchdog) { watchdog_ = watchdog; }

 protected:
  Watchdog* watchdog_ = nullptr;
};

/// A single process: the NCCL back-end driving every local GPU, as nccl-tests' `-g`.
std::unique_ptr<Control> make_local_control();

/// Every wait in a back-end polls through here. When nothing completes for `timeout_s` the
/// watchdog prints host:file:line, the rank and the operation, asks which peers still answer,
/// names those that do not, and ends the probe with kExitTimeout: a probe never hangs.
class Watchdog {
 public:
  Watchdog(Control& control, double timeout_s);
  ~Watchdog();
  /// Polls `done` (serving peers in between) until it returns true or the timeout passes;
  /// `describe` may add what the back-end knows at that moment (which ranks finished).
  void wait(const std::function<bool()>& done, const std::string& what, const char* file, int line,
            const std::function<std::string()>& describe = {});
  /// A control-plane exchange, which waits for peers that may be busy measuring a tier this
  /// process is not in (an inter-node tier on a slow network can take minutes). At each timeout
  /// it asks who answers: while every process does, it keeps waiting (a busy peer's own
  /// operations are under its own watchdog, which ends the probe if they stall); once one does
  /// not, it reports and ends the probe as `wait` does.
  void wait_on_peers(const std::function<bool()>& done, const std::string& what, const char* file,
                     int line);
  /// Reports a timeout (or a peer's failure in `detail`) and ends the probe.
  [[noreturn]] void fire(const std::string& what, const char* file, int line,
                         const std::string& detail = "");
  /// Runs before the report is printed: back-ends abort their communicators here.
  void on_fire(std::function<void()> cleanup) { cleanup_ = std::move(cleanup); }
  /// Which global ranks this process drives, for the report.
  void set_local_ranks(std::vector<int> ranks, std::vector<RankInfo> all);
  double timeout_s() const { return timeout_s_; }

  /// For calls that block (communicator creation, the MPI back-end's timed collectives): a
  /// monitor thread ends the probe with the same report as wait(), the roll call included where
  /// the control plane allows it, when the scope makes no progress for the timeout. Nothing runs
  /// on the blocked thread, so a blocking call is timed as it runs, not as it is polled.
  class Guard {
   public:
    Guard(Watchdog& w, std::string what, const char* file, int line);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    /// One call finished: the timeout starts again. One relaxed atomic increment, so it may sit
    /// between timed iterations.
    void progress();

   private:
    struct State;
    std::shared_ptr<State> state_;
  };

 private:
  std::string who() const;
  /// Polls `done` (serving peers in between) for up to the timeout; whether it completed.
  bool poll(const std::function<bool()>& done);
  Control& control_;
  double timeout_s_;
  std::atomic<bool> fired_{false};  // a Guard's monitor and the waiting thread report once
  std::function<void()> cleanup_;
  std::vector<int> local_ranks_;
  std::vector<RankInfo> ranks_;
};

}  // namespace shardplan::probe
