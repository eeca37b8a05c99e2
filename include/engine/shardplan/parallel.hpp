// Independent pieces of work spread over threads: the search's plan groups, the estimates of the
// plans a report shows. Each piece writes only its own slot, so the answer does not depend on
// which thread ran it or when.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace shardplan {

/// The threads a `--threads` value asks for: 0 (or less) means all cores; at least one.
inline int thread_count(int threads) {
  return std::max(1, threads > 0 ? threads
                                 : static_cast<int>(std::thread::hardware_concurrency()));
}

/// Calls fn(worker, i) once for every i in [0, n), on min(thread_count(threads), n) threads
/// (worker: the thread's index, from 0), handing out indices in order as threads free up.
/// Returns when every call has returned; the first exception a call throws is rethrown here.
template <class Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  const size_t workers =
      std::min(static_cast<size_t>(thread_count(threads)), std::max<size_t>(n, 1));
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t worker) {
    try {
      for (size_t i = next++; i < n; i = next++) fn(worker, i);
    } catch (...) {
      errors[worker] = std::current_exception();
      next = n;  // the others stop at their next index
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace shardplan
