// `shardplan provision`: which GPUs and how many. Plans every (GPU type, count) as `plan` does,
// prices each at the GPU's list price (or --gpu-hour-cost) and names the best option under
// --deadline and --budget; exit 1 when none meets them.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <utility>

#include "commands.hpp"
#include "options.hpp"
#include "planning_flags.hpp"
#include "shardplan/describe.hpp"
#include "shardplan/error.hpp"
#include "shardplan/html_report.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/names.hpp"
#include "shardplan/provision.hpp"
#include "shardplan/render_provision.hpp"
#include "shardplan/reports.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {
namespace {

struct ProvisionFlags {
  PlanningOptions o;
  std::string gpu_list, counts = "8..4096", deadline, budget, objective = "cost", html;
  int gpus_per_node = 0;
  double max_comm_share = 0.5;
  int threads = 0;
};

// "64,128,256" as given, or "8..4096": the powers of two from the first to the last.
std::vector<int> parse_counts(const std::string& text) {
  const std::string field = "--gpus";
  std::vector<int> counts;
  if (const size_t dots = text.find(".."); dots != std::string::npos) {
    const long long lo = parse_positive_int(text.substr(0, dots), field);
    const long long hi = parse_positive_int(text.substr(dots + 2), field);
    if (hi < lo || hi > 10'000'000) {
      throw InputError(field, "'" + text + "' is not a range LOW..HIGH with LOW <= HIGH <= 10M");
    }
    for (long long n = lo; n <= hi; n *= 2) counts.push_back(static_cast<int>(n));
  } else {
    for (const std::string& item : split_list(text)) {
      const long long n = parse_positive_int(item, field);
      if (n > 10'000'000) throw InputError(field, item + " GPUs is more than 10M");
      counts.push_back(static_cast<int>(n));
    }
  }
  if (counts.empty()) throw InputError(field, "give counts such as 64,128,256 or a range 8..4096");
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

// --gpu-hour-cost: one price for every GPU type ("2.5"), or per type ("H100=2.5,H200=3.1").
std::map<std::string, double> parse_prices(const std::string& text,
                                           const std::vector<GpuOffer>& offers) {
  const std::string field = "--gpu-hour-cost";
  std::map<std::string, double> prices;
  auto check = [&](double v, const std::string& item) {
    if (!(v > 0 && v < 1e6)) throw InputError(field, "'" + item + "' must be a positive price");
    return v;
  };
  for (const std::string& item : split_list(text)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      const double v = check(parse_number(item, field), item);
      for (const GpuOffer& offer : offers) prices[offer.cluster.gpu.name] = v;
      continue;
    }
    const std::string name = load_gpu(item.substr(0, eq), field).name;
    const bool offered = std::any_of(offers.begin(), offers.end(),
                                     [&](const GpuOffer& g) { return g.cluster.gpu.name == name; });
    if (!offered) throw InputError(field, "'" + name + "' is not one of the --gpu types");
    prices[name] = check(parse_number(item.substr(eq + 1), field), item);
  }
  return prices;
}

std::vector<GpuOffer> resolve_offers(const ProvisionFlags& f) {
  std::vector<std::string> names = split_list(f.gpu_list);
  if (f.gpu_list.empty()) {
    for (const PresetSummary& s : list_presets(ProfileKind::gpu)) names.push_back(s.name);
  }
  if (names.empty()) throw InputError("--gpu", "give GPU presets or profile files, e.g. H100,H200");
  std::vector<GpuOffer> offers;
  for (const std::string& name : names) {
    ClusterOptions c;
    c.gpu = name;
    c.gpus_per_node = f.gpus_per_node;
    GpuOffer offer;
    offer.cluster = build_cluster(c);
    if (!f.o.headroom.empty())
      offer.cluster.headroom_bytes = parse_headroom(f.o.headroom, offer.cluster.gpu);
    offer.gpu_hour_cost = offer.cluster.gpu.list_price_usd_per_gpu_hour;
    offer.price_source = offer.cluster.gpu.list_price_source;
    offers.push_back(offer);
  }
  const auto prices = parse_prices(f.o.gpu_hour_cost, offers);
  for (GpuOffer& offer : offers) {
    if (auto it = prices.find(offer.cluster.gpu.name); it != prices.end()) {
      offer.gpu_hour_cost = it->second;
      offer.price_source = "--gpu-hour-cost";
    }
    if (offer.gpu_hour_cost <= 0 && !f.gpu_list.empty()) {
      throw InputError("--gpu-hour-cost",
                       fmt::format("{} has no list price in its profile; give "
                                   "one, e.g. --gpu-hour-cost {}=2.5",
                                   offer.cluster.gpu.name, offer.cluster.gpu.name));
    }
  }
  // The default grid is the presets with a list price (the H800, sold in China only, has none);
  // a GPU named in --gpu must have a price, from its profile or --gpu-hour-cost. The ones left
  // out are named, with how to bring them in.
  std::string unpriced;
  for (const GpuOffer& o : offers) {
    if (o.gpu_hour_cost <= 0) unpriced += (unpriced.empty() ? "" : ", ") + o.cluster.gpu.name;
  }
  if (!unpriced.empty()) {
    std::fprintf(stderr,
                 "shardplan: note: left out of the grid, no public list price in their profiles: "
                 "%s; price them with --gpu NAME,... --gpu-hour-cost NAME=USD,...\n",
                 unpriced.c_str());
  }
  std::erase_if(offers, [](const GpuOffer& o) { return o.gpu_hour_cost <= 0; });
  return offers;
}

// A progress line on stderr once planning has taken a second, and only on a terminal.
std::function<void(size_t, size_t)> progress_line() {
  if (!isatty(fileno(stderr))) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start](size_t done, size_t total) {
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) return;
    std::fprintf(stderr, "\rprovision: planned %zu of %zu (GPU type, count) options", done, total);
    if (done == total) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  };
}

ProvisionRequest resolve_request(const ProvisionFlags& f) {
  ProvisionRequest rq;
  rq.offers = resolve_offers(f);
  rq.counts = parse_counts(f.counts);
  if (f.objective != "cost" && f.objective != "time") {
    throw InputError("--objective", "'" + f.objective + "' is not one of: cost, time");
  }
  rq.objective = f.objective == "time" ? ProvisionObjective::time : ProvisionObjective::cost;
  if (!f.deadline.empty()) rq.deadline_s = parse_duration(f.deadline, "--deadline");
  if (!f.budget.empty()) {
    const std::string text = f.budget.front() == '$' ? f.budget.substr(1) : f.budget;
    rq.budget = parse_count(text, "--budget");
  }
  if (!(f.max_comm_share > 0 && f.max_comm_share <= 1)) {
    throw InputError("--max-comm-share",
                     fmt::format("{} is not a share between 0 and 1", f.max_comm_share));
  }
  if (f.threads < 0 || f.threads > 1024)
    throw InputError("--threads", "must be between 1 and 1024");
  // A framework flag resolves here, into rq.planning (its rules) and the training spec, so every
  // option is planned and estimated with it (engine: plan_option in provision.cpp).
  rq.planning.max_comm_share = f.max_comm_share;
  rq.planning.search.top_k = 1;
  rq.planning.search.threads = f.threads;
  rq.planning.search.rules.allow_tp_across_nodes = f.o.allow_tp_across_nodes;
  rq.on_progress = progress_line();
  return rq;
}

std::string constraint_words(const ProvisionRequest& rq) {
  std::string words;
  if (rq.deadline_s > 0) words += "the deadline of " + format_seconds(rq.deadline_s);
  if (rq.budget > 0)
    words += (words.empty() ? "" : " and ") + ("the budget of " + format_usd(rq.budget));
  return words;
}

// GPUs that cannot run the training spec at all (a precision recipe their generation lacks)
// leave the grid with a note saying why; when none is left, the first one's reason is the
// error (exit 2), as estimate and plan give it.
void keep_offers_that_run(ProvisionRequest& rq, const Inputs& in) {
  std::vector<GpuOffer> kept;
  std::vector<std::string> notes;
  for (const GpuOffer& o : rq.offers) {
    const RuleContext c{in.model, in.training, o.cluster, rq.planning.search.rules};
    const auto problems = check_inputs(c);
    if (problems.empty()) {
      kept.push_back(o);
    } else {
      notes.push_back(o.cluster.gpu.name + " left out: " + words(problems.front(), c).message);
    }
  }
  if (kept.empty() && !rq.offers.empty()) {
    require_runnable_inputs(
        {in.model, in.training, rq.offers.front().cluster, rq.planning.search.rules});
  }
  for (const std::string& n : notes) std::fprintf(stderr, "shardplan: note: %s\n", n.c_str());
  rq.offers = kept;
}

int report(const ProvisionResult& r, const ProvisionRequest& rq, const Inputs& in, bool json) {
  const bool constrained = rq.deadline_s > 0 || rq.budget > 0;
  if (json) {
    nlohmann::json j = {{"model", to_json(in.model)}, {"training", to_json(in.training)}};
    j["provision"] = to_json(r, rq);
    print_json(std::move(j));
    return r.best ? 0 : 1;
  }
  std::cout << fmt::format(
      "model    {}\ntraining {} tokens, sequence {}, global batch {}\n\n", describe_model(in.model),
      format_count(in.training.tokens), in.training.seq_len,
      in.training.global_batch > 0 ? std::to_string(in.training.global_batch)
                                   : fmt::format("{} (the default of {} tokens per step; the same "
                                                 "run on every option)",
                                                 default_global_batch(in.training.seq_len),
                                                 format_count(kDefaultTokensPerStep)));
  std::cout << render_provision(r, rq);
  std::cout << fmt::format("  > best by {}{}   * Pareto frontier of time to train vs cost\n",
                           to_string(rq.objective),
                           constrained ? " that meets " + constraint_words(rq) : "");
  std::cout << "\nPrices per GPU-hour:";
  for (const GpuOffer& o : rq.offers) {
    std::cout << fmt::format(" {} ${:.2f}{};", o.cluster.gpu.name, o.gpu_hour_cost,
                             o.price_source == "--gpu-hour-cost" ? " (given)" : " (list)");
  }
  std::cout << "\n  List prices are public on-demand rates (see each GPU profile's source); "
               "give yours with --gpu-hour-cost.\n\n";
  if (r.best) {
    std::cout << fmt::format("Best: {}\n  the {} option{}.\n", describe_option(r.options[*r.best]),
                             rq.objective == ProvisionObjective::cost ? "cheapest" : "fastest",
                             constrained ? " that meets " + constraint_words(rq) : "");
    return 0;
  }
  if (!r.fastest) {
    std::cout << "No option fits: no plan fits the device memory at any of these counts.\n";
    return 1;
  }
  std::cout << fmt::format("No option meets {}. The fastest is {}; the cheapest is {}.\n",
                           constraint_words(rq), describe_option(r.options[*r.fastest]),
                           describe_option(r.options[*r.cheapest]));
  return 1;
}

}  // namespace

Runner setup_provision(CLI::App& sub) {
  auto f = std::make_shared<ProvisionFlags>();
  add_model_options(sub, f->o);
  add_training_options(sub, f->o);
  sub.add_option("--gpu", f->gpu_list,
                 "GPU presets or profile files, comma-separated (default: every GPU preset)")
      ->group("Provision");
  sub.add_option("--gpus", f->counts,
                 "GPU counts: a list (64,128,256) or a range of powers of two (default 8..4096)")
      ->group("Provision");
  sub.add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node (default: the GPU's node)")
      ->group("Provision");
  sub.add_option("--deadline", f->deadline, "Train within this long, e.g. 30d, 720h")
      ->group("Provision");
  sub.add_option("--budget", f->budget, "Spend at most this much, e.g. 2M or $500k")
      ->group("Provision");
  sub.add_option("--objective", f->objective, "Rank by cost | time (default cost)")
      ->group("Provision");
  sub.add_option("--headroom", f->o.headroom,
                 "Memory each GPU keeps free, a size (8GiB) or a share of each GPU type (10%) "
                 "(default 0)")
      ->group("Provision");
  add_search_plan_options(sub, f->o, false);
  sub.add_option("--max-comm-share", f->max_comm_share,
                 "Exposed communication a rung may have, as a share of the step (default 0.5)")
      ->group("Plan");
  sub.add_option("--threads", f->threads, "Search threads (default: all cores)")->group("Plan");
  sub.add_option("--html", f->html, "Also write a self-contained HTML report with charts");
  add_json_option(sub, f->o);
  return [f]() {
    Inputs in;
    in.model = resolve_model(f->o);
    if (!in.model.has_architecture()) {
      throw InputError("--params",
                       "provision searches tensor and pipeline parallel plans, which "
                       "need the layer shapes; give --model or --layers/--hidden");
    }
    if (f->o.tokens.empty()) throw InputError("--tokens", "required: the training budget, e.g. 2T");
    PlanningOptions training_flags = f->o;
    training_flags.gpu_hour_cost.clear();  // per GPU type here, parsed by resolve_offers
    in.training = resolve_training(training_flags, in.model);
    ProvisionRequest rq = resolve_request(*f);
    keep_offers_that_run(rq, in);
    const ProvisionResult r = provision(in.model, in.training, rq);
    if (!f->html.empty()) write_html(f->html, provision_report(r, rq, in.model), "--html");
    return report(r, rq, in, f->o.json);
  };
}

}  // namespace shardplan::cli
