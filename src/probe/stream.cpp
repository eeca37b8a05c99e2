// STREAM Copy and Triad on the CPU (stream.hpp).
#include "stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "shardplan/error.hpp"

namespace shardplan::probe {
namespace {

constexpr double kScalar = 3.0;  // STREAM's q
constexpr double kB = 2.0, kC = 1.0;

// Runs body(begin, end) over [0, n) split into `threads` slices, one thread each.
template <typename Body>
void parallel(size_t n, int threads, const Body& body) {
  std::vector<std::thread> pool;
  const size_t slice = (n + threads - 1) / static_cast<size_t>(threads);
  for (int t = 0; t < threads; ++t) {
    const size_t begin = std::min(n, slice * t), end = std::min(n, begin + slice);
    pool.emplace_back([&body, begin, end] { body(begin, end); });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace

RankTiming run_stream(const HostMoveShape& shape, int threads, int warmup, int iters,
                      const std::function<void()>& before_each) {
  SHARDPLAN_CHECK(!is_link(shape.kind), "run_stream runs STREAM kernels only");
  threads = std::max(1, threads);
  const size_t n = std::max<size_t>(1, shape.array_bytes / sizeof(double));
  // Uninitialised storage, first touched by the thread that uses each slice.
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  double* pa = a.get();
  double* pb = b.get();
  double* pc = c.get();
  parallel(n, threads, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      pa[i] = 0;
      pb[i] = kB;
      pc[i] = kC;
    }
  });
  const bool triad = shape.kind == HostMove::dram_triad;
  auto once = [&] {
    parallel(n, threads, [&](size_t i0, size_t i1) {
      if (triad) {
        for (size_t i = i0; i < i1; ++i) pa[i] = pb[i] + kScalar * pc[i];
      } else {
        for (size_t i = i0; i < i1; ++i) pa[i] = pb[i];
      }
    });
  };
  RankTiming timing;
  timing.detail = fmt::format("STREAM {} on {} thread(s)", triad ? "Triad" : "Copy", threads);
  for (int i = 0; i < warmup; ++i) {
    if (before_each) before_each();
    once();
  }
  for (int i = 0; i < iters; ++i) {
    if (before_each) before_each();
    const auto start = std::chrono::steady_clock::now();
    once();
    timing.iteration_s.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (warmup + iters == 0) return timing;
  const double expected = triad ? kTriadExpected : kB;
  const size_t step = std::max<size_t>(1, n / 4096);
  for (size_t i = 0; i < n; i += step) timing.wrong += pa[i] != expected;
  timing.wrong += pa[n - 1] != expected;
  return timing;
}

}  // namespace shardplan::probe
