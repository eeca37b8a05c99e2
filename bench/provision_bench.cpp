// How long the default provision grid takes on one core: every GPU preset x 8..4096 GPUs (10
// counts) for a 70B model, the ladder and the search run per (GPU type, count) on one thread.
// Usage: provision_bench [model] [repeats] [plans re-ranked by simulation per option]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "shardplan/profiles.hpp"
#include "shardplan/provision.hpp"

using namespace shardplan;

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "llama-3.1-70b";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const ModelSpec model = load_model(model_name);
  TrainingSpec training;
  training.seq_len = model.seq_len > 0 ? model.seq_len : 4096;
  training.tokens = 2e12;
  ProvisionRequest rq;
  for (const PresetSummary& gpu : list_presets(ProfileKind::gpu)) {
    ClusterOptions c;
    c.gpu = gpu.name;
    GpuOffer offer{build_cluster(c), 0, ""};
    offer.gpu_hour_cost = offer.cluster.gpu.list_price_usd_per_gpu_hour;
    // The CLI's default grid: the GPU presets with a list price.
    if (offer.gpu_hour_cost > 0) rq.offers.push_back(offer);
  }
  for (int n = 8; n <= 4096; n *= 2) rq.counts.push_back(n);
  rq.planning.search.top_k = 1;
  rq.planning.search.threads = 1;  // one core
  if (argc > 3) rq.planning.rerank.at_most = std::atoi(argv[3]);
  std::vector<double> seconds;
  size_t fits = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const ProvisionResult r = provision(model, training, rq);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    fits = static_cast<size_t>(std::count_if(r.options.begin(), r.options.end(),
                                             [](const ProvisionOption& o) { return o.fits; }));
  }
  std::sort(seconds.begin(), seconds.end());
  fmt::print(
      "provision {} x {} counts ({} options, {} fit) for {}, one thread: median {:.3f} s, "
      "min {:.3f} s over {} runs\n",
      rq.offers.size(), rq.counts.size(), rq.offers.size() * rq.counts.size(), fits, model_name,
      seconds[seconds.size() / 2], seconds.front(), repeats);
  return 0;
}
