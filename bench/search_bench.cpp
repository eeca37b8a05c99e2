// Search speed: points of the search space visited per second for GPT-3 175B on 512 and 16,384 A100s
// (Calculon, the reference analytic planner, evaluates about 250 per second on this kind of
// machine; its own space for 175B on 512 GPUs is 6.6 million configurations).
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/search.hpp"

using namespace shardplan;

namespace {

void run(int gpus, int global_batch, int threads, int repeats) {
  const ModelSpec m = load_model("gpt3-175b");
  ClusterOptions co;
  co.cluster = "dgx-a100";
  co.gpus = gpus;
  const ClusterSpec c = build_cluster(co);
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = global_batch;
  const SearchSpace space = full_space(m, t, c);
  SearchOptions opt;
  opt.threads = threads;
  double best = 1e30;
  SearchResult r;
  for (int i = 0; i < repeats; ++i) {
    r = search(m, t, c, space, opt);
    best = std::min(best, r.seconds);
  }
  const double rate = r.evaluated / best;
  fmt::print(
      "gpt3-175b on {:>6} x A100-80GB, global batch {:>5}, {} thread{}: {:>7} configurations "
      "({} modelled, {} feasible) in {:.4f} s = {:.2f} M/s ({:.2f} M/s per thread; {:.2f} M "
      "modelled/s per thread)\n",
      gpus, global_batch, threads, threads == 1 ? " " : "s", r.evaluated, r.modelled, r.feasible,
      best, rate / 1e6, rate / 1e6 / threads, r.modelled / best / 1e6 / threads);
  if (!r.ranked.empty()) {
    fmt::print("    fastest: {} -> {:.2f} s/step\n", describe(r.ranked.front().plan),
               r.ranked.front().step_s);
  }
}

}  // namespace

int main() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  fmt::print("# shardplan search benchmark (best of 3 runs; {} hardware threads)\n", cores);
  for (int threads : {1, cores}) {
    run(512, 1536, threads, 3);
    run(16384, 16384, threads, 3);
  }
  return 0;
}
