// The watchdog every wait goes through, and the single-process control plane. A probe that
// loses a peer reports host:file:line, the operation and the silent ranks, then exits 3.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "control.hpp"

namespace shardplan::probe {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSpin = std::chrono::microseconds(100);

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string local_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

class LocalControl final : public Control {
 public:
  int process() const override { return 0; }
  int processes() const override { return 1; }
  int node() const override { return 0; }
  int local_index() const override { return 0; }
  std::string host() const override { return local_host(); }
  std::vector<std::string> allgather(const std::string& mine, const std::string&) override {
    return {mine};
  }
  void barrier(const std::string&) override {}
  std::vector<int> roll_call(double) override { return {0}; }
  [[noreturn]] void abort(int status) override {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
  }
  std::string library() const override { return ""; }
};

}  // namespace

std::unique_ptr<Control> make_local_control() {
  return std::make_unique<LocalControl>();
}

Watchdog::Watchdog(Control& control, double timeout_s) : control_(control), timeout_s_(timeout_s) {
  control_.attach(this);
  prctl(PR_SET_TIMERSLACK, 1UL);  // sleeps of microseconds, not the default 50 us slack
}

Watchdog::~Watchdog() {
  control_.attach(nullptr);
}

void Watchdog::set_local_ranks(std::vector<int> ranks, std::vector<RankInfo> all) {
  local_ranks_ = std::move(ranks);
  ranks_ = std::move(all);
}

std::string Watchdog::who() const {
  if (local_ranks_.empty()) return fmt::format("process {}", control_.process());
  std::string list;
  for (int r : local_ranks_) {
    if (!list.empty()) list += ',';
    list += std::to_string(r);
  }
  return (local_ranks_.size() == 1 ? "rank " : "ranks ") + list;
}

bool Watchdog::poll(const std::function<bool()>& done) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_s_);
  while (!done()) {
    control_.service();
    const auto now = Clock::now();
    // Spin for short operations (their times stay exact); then poll at 1/50 of the time waited
    // so far (at most 1 ms), which bounds the timing error at 2% and leaves the CPU to the
    // kernel: a process spinning on every core starves the network stack it waits for (on a
    // 2-core machine, TCP between namespaces went from 4 ms to 0.3 ms per 1 KiB message).
    const auto waited = now - start;
    if (waited > kSpin) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(waited / 50, std::chrono::milliseconds(1)));
    }
    if (now > deadline) return false;
  }
  return true;
}

void Watchdog::wait(const std::function<bool()>& done, const std::string& what, const char* file,
                    int line, const std::function<std::string()>& describe) {
  if (poll(done)) return;
  const std::string known = describe ? describe() : "";
  fire(what, file, line,
       fmt::format("no progress for {} s (--timeout-s){}", timeout_s_,
                   known.empty() ? "" : "; " + known));
}

void Watchdog::wait_on_peers(const std::function<bool()>& done, const std::string& what,
                             const char* file, int line) {
  double waited_s = 0;
  while (!poll(done)) {
    waited_s += timeout_s_;
    if (control_.processes() > 1) {
      const double grace_s = std::clamp(timeout_s_ / 4, 0.5, 2.0);
      if (static_cast<int>(control_.roll_call(grace_s).size()) == control_.processes()) {
        if (waited_s == timeout_s_) {
          std::fprintf(stderr,
                       "probe: %s %s: %s: no answer after %g s (--timeout-s), but every process "
                       "answers: the others are busy measuring; waiting on\n",
                       control_.host().c_str(), who().c_str(), what.c_str(), timeout_s_);
          std::fflush(stderr);
        }
        continue;
      }
    }
    fire(what, file, line, fmt::format("no progress for {} s (--timeout-s)", waited_s));
  }
}

void Watchdog::fire(const std::string& what, const char* file, int line,
                    const std::string& detail) {
  if (fired_.exchange(true)) {
    // The other thread (a Guard's monitor, or the waiting one) is reporting and will end the
    // process; a second report would only interleave with it.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (cleanup_) {
    auto cleanup = std::move(cleanup_);
    cleanup_ = nullptr;
    cleanup();
  }
  const std::string host = control_.host();
  std::fprintf(
      stderr, "probe: %s:%s:%d: %s: %s in %s\n", host.c_str(), base_name(file), line, who().c_str(),
      detail.empty() ? fmt::format("no progress for {} s (--timeout-s)", timeout_s_).c_str()
                     : detail.c_str(),
      what.c_str());
  std::fflush(stderr);
  // Ask who is still there; everyone still polling answers at once.
  const double grace_s = std::clamp(timeout_s_ / 4, 0.5, 2.0);
  const auto alive_list = control_.roll_call(grace_s);
  const std::set<int> alive(alive_list.begin(), alive_list.end());
  int silent = 0;
  for (const RankInfo& r : ranks_) {
    if (alive.count(r.process) != 0) continue;
    ++silent;
    std::fprintf(stderr,
                 "probe: %s %s: rank %d on host %s (process %d) did not answer within %.1f s: "
                 "it is hung or dead\n",
                 host.c_str(), who().c_str(), r.rank, r.host.c_str(), r.process, grace_s);
  }
  if (silent == 0 && control_.processes() > 1) {
    std::fprintf(stderr,
                 "probe: %s: every process answered; the operation is slower than --timeout-s %g "
                 "or stuck inside the library\n",
                 host.c_str(), timeout_s_);
  }
  std::fprintf(stderr, "probe: %s: giving up (exit status %d: a peer timed out)\n", host.c_str(),
               kExitTimeout);
  std::fflush(stderr);
  control_.abort(kExitTimeout);
  std::_Exit(kExitTimeout);  // abort() does not return; this tells the compiler so
}

struct Watchdog::Guard::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::atomic<uint64_t> calls{0};  // progress() count
  std::thread thread;
};

namespace {

// How often the monitor looks at the progress count: a 20th of the timeout, within 10-250 ms,
// so a timeout fires at most 5% late and an idle monitor wakes a few times a second.
Clock::duration monitor_slice(double timeout_s) {
  const auto slice =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s / 20));
  return std::clamp<Clock::duration>(slice, std::chrono::milliseconds(10),
                                     std::chrono::milliseconds(250));
}

}  // namespace

Watchdog::Guard::Guard(Watchdog& w, std::string what, const char* file, int line)
    : state_(std::make_shared<State>()) {
  Watchdog* watchdog = &w;
  const std::string report = fmt::format(
      "probe: {}:{}:{}: {}: no progress for {} s (--timeout-s) in "
      "{}; giving up (exit status {}: a peer timed out)\n",
      w.control_.host(), base_name(file), line, w.who(), w.timeout_s_, what, kExitTimeout);
  state_->thread =
      std::thread([state = state_, watchdog, what = std::move(what), file, line, report] {
        const auto timeout = std::chrono::duration<double>(watchdog->timeout_s_);
        const auto slice = monitor_slice(watchdog->timeout_s_);
        uint64_t seen = 0;
        auto last_progress = Clock::now();
        std::unique_lock<std::mutex> lock(state->mutex);
        while (!state->cv.wait_for(lock, slice, [&] { return state->done; })) {
          const uint64_t calls = state->calls.load(std::memory_order_relaxed);
          const auto now = Clock::now();
          if (calls != seen) {
            seen = calls;
            last_progress = now;
            continue;
          }
          if (now - last_progress < timeout) continue;
          if (watchdog->control_.callable_from_any_thread()) {
            lock.unlock();  // the blocked thread stays blocked; its destructor never runs
            watchdog->fire(what, file, line);
          }
          // The library must not be entered from here: report and end the process.
          std::fputs(report.c_str(), stderr);
          std::fflush(stdout);
          std::fflush(stderr);
          std::_Exit(kExitTimeout);
        }
      });
}

void Watchdog::Guard::progress() {
  state_->calls.fetch_add(1, std::memory_order_relaxed);
}

Watchdog::Guard::~Guard() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->done = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
}

}  // namespace shardplan::probe
