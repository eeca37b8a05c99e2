// STREAM's Copy and Triad kernels on the CPU (McCalpin, www.cs.virginia.edu/stream/ref.html), for
// back-ends that measure a node's memory bandwidth: plain loops over double arrays, split across
// threads that also first-touch their slice (so pages land on the threads' NUMA nodes).
#pragma once

#include <functional>

#include "shapes.hpp"

namespace shardplan::probe {

/// `shape` (dram_copy or dram_triad) on `threads` threads: `warmup` untimed and `iters` timed
/// iterations, `before_each` before every one (the node's barrier, so its ranks run together).
/// iteration_s holds the timed iterations; `wrong` counts sampled elements that differ from
/// STREAM's expected values.
RankTiming run_stream(const HostMoveShape& shape, int threads, int warmup, int iters,
                      const std::function<void()>& before_each);

}  // namespace shardplan::probe
