// How long `provision`'s default grid takes, in the engine (no start-up, no rendering): every
// GPU preset with a list price x 8..4096 GPUs (10 counts), the ladder and the search run per
// (GPU type, count), with the training `shardplan provision --model M --tokens 2T` resolves
// (the Megatron-LM framework profile, BF16, the model's default sequence). Each model runs on
// one thread and on every core. Usage: provision_bench [repeats] [model ...]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/provision.hpp"

using namespace shardplan;

namespace {

void run(const std::string& model_name, int threads, int repeats) {
  const ModelSpec model = load_model(model_name);
  TrainingSpec training = default_training(model);  // the CLI's, with --tokens 2T
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
  rq.planning.search.threads = threads;
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
      "provision {:<14} {} x {} counts ({} options, {} fit), {:>2} thread{}: median {:.3f} s, "
      "min {:.3f} s over {} runs\n",
      model_name, rq.offers.size(), rq.counts.size(), rq.offers.size() * rq.counts.size(), fits,
      threads, threads == 1 ? " " : "s", seconds[seconds.size() / 2], seconds.front(), repeats);
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::vector<std::string> models;
  for (int i = 2; i < argc; ++i) models.emplace_back(argv[i]);
  if (models.empty()) models = {"llama-3.1-70b", "deepseek-v3"};
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  fmt::print("# provision's default grid in the engine; {} hardware threads\n", cores);
  for (const std::string& m : models) {
    run(m, 1, repeats);
    if (cores > 1) run(m, cores, repeats);
  }
  return 0;
}
