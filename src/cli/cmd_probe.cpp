// `shardplan probe`: measures this cluster's collectives and GEMMs (NCCL + cuBLASLt on GPUs, or
// MPI + OpenBLAS on CPUs) and writes a calibrated cluster profile for `--cluster FILE`.
// Exit status: 0 ok, 1 a correctness check failed (no profile written), 2 bad input or no
// GPU / back-end here, 3 a peer stopped responding (the watchdog's report names it).
#include "shardplan/probe.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "options.hpp"
#include "planning_flags.hpp"
#include "shardplan/emit.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/names.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/reports.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {
namespace {

using probe::GemmShape;

struct ProbeOptions {
  PlanningOptions model;  // --model and its overrides, --seq-len, --micro-batch, --tp, --precision
  std::string backend = "auto";
  std::string out;
  std::string min_bytes = "8";
  std::string max_bytes;
  std::string iters = "20";
  std::string warmup = "5";
  std::string timeout_s = "60";
  std::string collectives = "all_reduce,all_gather,reduce_scatter,all_to_all,send_recv";
  std::string gemm_sizes;
  std::string gemm_dtypes;
  std::string gemm_warmup_s, gemm_budget_s;
  std::string stream_bytes;
  std::string gpu, cluster, gpus_per_node, nics_per_node;
  bool json = false;
  std::string html;
  int debug_hang_rank = -1;
  int debug_slow_rank = -1;
  // At scale: node pairs, the forecast, and the probe as a cluster job.
  std::string pair_rounds, pair_bytes, nodes_per_domain, nodes_per_leaf;
  bool forecast = false;
  std::string job, job_out, nodes, gpus, image, volume_claim, shardplan_path = "shardplan";
  std::string slurm_mpi = "pmix";
};

size_t as_bytes(const std::string& text, const std::string& field) {
  const double b = parse_bytes(text, field);
  if (b < 1 || b > 4.0 * kGiB) {
    throw InputError(field, fmt::format("'{}' must be between 1 B and 4 GiB", text));
  }
  return static_cast<size_t>(b);
}

// "4096" (square) or "8192x4096x1024" (m x n x k).
std::vector<GemmShape> sweep_shapes(const std::string& text,
                                    const std::vector<std::string>& formats) {
  std::vector<GemmShape> out;
  if (text == "none") return out;
  for (const auto& item : split_list(text)) {
    std::vector<long> dims;
    std::stringstream in(item);
    std::string part;
    while (std::getline(in, part, 'x')) dims.push_back(parse_int(part, "--gemm-sizes", 1 << 20));
    if (dims.size() == 1) dims = {dims[0], dims[0], dims[0]};
    if (dims.size() != 3) {
      throw InputError("--gemm-sizes", fmt::format("'{}' is neither N (square) nor MxNxK", item));
    }
    for (const std::string& f : formats) {
      out.push_back(probe::gemm_shape(dims[0], dims[1], dims[2], f, "sweep", "--gemm-dtypes"));
    }
  }
  return out;
}

// The GEMMs of one micro-batch of the model (describe_micro_batch), as the planner sees them.
std::vector<GemmShape> model_shapes(const PlanningOptions& o, const std::string& format) {
  const ModelSpec model = resolve_model(o);
  if (!model.has_architecture()) {
    throw InputError("--model", "GEMM shapes need an architecture; --params gives only a count");
  }
  TrainingSpec training = resolve_training(o, model);
  ParallelPlan plan;
  plan.tp = parse_int_or(o.tp, "--tp", 1, 1024);
  plan.micro_batch = parse_int_or(o.micro_batch, "--micro-batch", 1, 1 << 20);
  training.global_batch = plan.micro_batch;
  ClusterSpec one_replica;
  one_replica.gpus = one_replica.gpus_per_node = plan.tp;
  require_runnable(plan, {model, training, one_replica, {}});
  const MicroBatchWork work = describe_micro_batch(model, training, plan);
  std::vector<GemmShape> out;
  for (const Block* block : {&work.layer, &work.head}) {
    for (const Op& op : block->ops) {
      if (op.kind != OpKind::gemm) continue;
      const GemmShape s = probe::gemm_shape(
          static_cast<long>(op.m), static_cast<long>(op.n), static_cast<long>(op.k), format,
          fmt::format("{} {}{}", model.name, op.name,
                      op.batch > 1 ? fmt::format(" (one of {:.0f})", op.batch) : ""),
          "--precision");
      const bool seen = std::any_of(out.begin(), out.end(), [&](const GemmShape& g) {
        return g.m == s.m && g.n == s.n && g.k == s.k;
      });
      if (!seen && s.m > 0 && s.n > 0 && s.k > 0) out.push_back(s);
    }
  }
  return out;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(all.begin(), all.end(), '\0', ' ');
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

void add_probe_options(CLI::App& sub, ProbeOptions& o) {
  sub.add_option("--backend", o.backend, "auto | nccl | mpi (auto: nccl when a GPU is usable)");
  sub.add_option("--out", o.out,
                 "The calibrated cluster profile to write (default "
                 "probe-<host>-<yyyymmdd>.json)");
  sub.add_option("--min-bytes", o.min_bytes, "Smallest collective size S (default 8)");
  sub.add_option("--max-bytes", o.max_bytes,
                 "Largest collective size S, doubling from "
                 "--min-bytes (default 1GiB on GPUs, 64MiB on CPUs)");
  sub.add_option("--iters", o.iters, "Timed iterations per size (default 20)");
  sub.add_option("--warmup", o.warmup, "Warm-up iterations per size (default 5)");
  sub.add_option("--timeout-s", o.timeout_s,
                 "Watchdog: longest wait for any one operation before "
                 "the probe names the silent rank and exits 3 "
                 "(default 60)");
  sub.add_option("--collectives", o.collectives,
                 "Comma-separated: all_reduce, all_gather, "
                 "reduce_scatter, all_to_all, send_recv, broadcast");
  sub.add_option("--gemm-sizes", o.gemm_sizes,
                 "GEMM sweep: N (square) or MxNxK, comma-separated, "
                 "or none (default 512..16384 on GPUs, 128..1024 "
                 "on CPUs)");
  sub.add_option("--gemm-dtypes", o.gemm_dtypes,
                 "GEMM formats for the sweep: " + probe::gemm_format_names() +
                     " (default: those the GPU runs, nvfp4 and mxfp8 on compute capability "
                     "10.0+; fp32,fp64 on CPUs)");
  sub.add_option("--gemm-warmup-s", o.gemm_warmup_s,
                 "Warm-up per GEMM shape before timing, at least --warmup calls (default 0.5s on "
                 "GPUs, 0 on CPUs)");
  sub.add_option("--gemm-budget-s", o.gemm_budget_s,
                 "Timed calls per GEMM shape fill this long, at least 5 (default 1s; at most "
                 "2000 calls on GPUs, --iters on CPUs)");
  sub.add_option("--stream-bytes", o.stream_bytes,
                 "Each STREAM array per rank for the CPU memory bandwidth, or none to skip the "
                 "host-memory measurements (default 4x the last-level cache shared by the "
                 "node's ranks, at least 64MiB)");
  sub.add_option("--gpu", o.gpu,
                 "The GPU preset or file the profile carries (peak, memory; default "
                 "matched from the device name, H100-SXM for the mpi back-end)");
  sub.add_option("--cluster", o.cluster,
                 "A cluster preset or file to start from (GPU, node size, "
                 "links for tiers not measured)");
  sub.add_option("--gpus-per-node", o.gpus_per_node,
                 "GPUs per node the profile states (default: "
                 "the ranks per node measured)");
  sub.add_option("--nics-per-node", o.nics_per_node,
                 "Scale-out NICs per node (default: fitted "
                 "from the world measurement, or the preset)");
  sub.add_flag("--json", o.json, "Print the profile JSON on stdout instead of the table");
  sub.add_option("--html", o.html, "Also write a self-contained HTML report with charts");
  sub.add_option("--debug-hang-rank", o.debug_hang_rank, "Tests: this rank stops responding")
      ->group("");  // hidden
  sub.add_option("--debug-slow-rank", o.debug_slow_rank,
                 "Tests: this rank's GEMMs take 2 ms longer (the mpi back-end)")
      ->group("");  // hidden
  sub.add_option("--pair-rounds", o.pair_rounds,
                 "Rounds of disjoint node pairs measured after the tiers, chosen to cover inside "
                 "a domain, across domains and across the spine (default 4; 0 skips)")
      ->group("At scale");
  sub.add_option("--pair-bytes", o.pair_bytes,
                 "Bytes each pair exchanges both ways (default 256MiB on GPUs, 1MiB on CPUs)")
      ->group("At scale");
  sub.add_option("--nodes-per-domain", o.nodes_per_domain,
                 "Nodes per scale-up (NVLink) domain (default: the --cluster preset's, e.g. 18 "
                 "for GB200 NVL72; else 1)")
      ->group("At scale");
  sub.add_option("--nodes-per-leaf", o.nodes_per_leaf,
                 "Nodes under one leaf switch, to tell pairs across the spine (default unknown)")
      ->group("At scale");
  sub.add_flag("--forecast", o.forecast,
               "Print what the probe would measure on --nodes nodes and how long it takes, then "
               "exit without starting")
      ->group("At scale");
  sub.add_option("--job", o.job,
                 "slurm | k8s: write the probe as a cluster job (sbatch script or Kubeflow "
                 "MPIJob) to --job-out instead of running it; the job writes --out")
      ->group("At scale");
  sub.add_option("--job-out", o.job_out, "The job file --job writes")->group("At scale");
  sub.add_option("--nodes", o.nodes, "Nodes the job or forecast spans")->group("At scale");
  sub.add_option("--gpus", o.gpus,
                 "GPUs the job or forecast spans, in whole nodes of --gpus-per-node (or the "
                 "--cluster preset's)")
      ->group("At scale");
  sub.add_option("--image", o.image,
                 "Container image holding shardplan (Kubernetes: required; Slurm: pyxis "
                 "--container-image)")
      ->group("At scale");
  sub.add_option("--volume-claim", o.volume_claim,
                 "Kubernetes: the PersistentVolumeClaim mounted at --out's folder, where the "
                 "profile is kept")
      ->group("At scale");
  sub.add_option("--shardplan", o.shardplan_path,
                 "The shardplan binary's path on the job's nodes (default: shardplan on PATH)")
      ->group("At scale");
  sub.add_option("--slurm-mpi", o.slurm_mpi, "srun --mpi for the Slurm job (default pmix)")
      ->group("At scale");
  add_model_options(sub, o.model);
  sub.add_option("--seq-len", o.model.seq_len, "Sequence length for --model's GEMM shapes")
      ->group("Model");
  sub.add_option("--micro-batch", o.model.micro_batch, "Micro-batch for --model's GEMM shapes")
      ->group("Model");
  sub.add_option("--tp", o.model.tp, "Tensor-parallel degree for --model's GEMM shapes")
      ->group("Model");
  sub.add_option("--precision", o.model.precision,
                 "bf16 | fp16 | fp8 | fp32: the dtype of "
                 "--model's GEMMs (default bf16)")
      ->group("Model");
}

struct Prepared {
  probe::SweepPlan plan;
  probe::ProfileInputs inputs;
  bool max_given = false;
  std::vector<std::string> formats;  // empty: the back-end's
  std::string model_format = "bf16";
  bool warmup_given = false;
  bool pair_bytes_given = false;
  // The cluster whose links the forecast prices: --cluster, else dgx-h100 (loaded once).
  ClusterSpec links;
};

// Everything that can be checked before any process starts talking to another.
Prepared prepare(const ProbeOptions& o) {
  Prepared p;
  probe::Settings& s = p.plan.settings;
  s.iters = parse_int(o.iters, "--iters", 100000);
  s.warmup = o.warmup == "0" ? 0 : parse_int(o.warmup, "--warmup", 100000);
  s.timeout_s = parse_duration(o.timeout_s, "--timeout-s");
  if (!(s.timeout_s >= 0.1 && s.timeout_s <= 86400)) {
    throw InputError("--timeout-s",
                     fmt::format("'{}' must be between 0.1 s and one day", o.timeout_s));
  }
  s.debug_hang_rank = o.debug_hang_rank;
  s.debug_slow_rank = o.debug_slow_rank;
  // 0 skips the rounds, which the whole-number parser (counts from 1) would word as an error.
  if (!o.pair_rounds.empty() && o.pair_rounds.front() == '-') {
    throw InputError("--pair-rounds",
                     fmt::format("'{}' must be 0 (no node pairs) to 64", o.pair_rounds));
  }
  p.plan.max_pair_rounds =
      o.pair_rounds == "0" ? 0 : parse_int_or(o.pair_rounds, "--pair-rounds", 4, 64);
  p.pair_bytes_given = !o.pair_bytes.empty();
  if (p.pair_bytes_given) p.plan.pair_bytes = as_bytes(o.pair_bytes, "--pair-bytes");
  p.plan.nodes_per_leaf = parse_int_or(o.nodes_per_leaf, "--nodes-per-leaf", 0, 1 << 20);
  p.plan.min_bytes = as_bytes(o.min_bytes, "--min-bytes");
  p.max_given = !o.max_bytes.empty();
  if (p.max_given) p.plan.max_bytes = as_bytes(o.max_bytes, "--max-bytes");
  if (p.max_given && p.plan.max_bytes < p.plan.min_bytes) {
    throw InputError("--max-bytes",
                     fmt::format("{} is below --min-bytes {}", o.max_bytes, o.min_bytes));
  }
  for (const auto& name : split_list(o.collectives)) {
    p.plan.collectives.push_back(parse_collective(name.c_str(), "--collectives"));
  }
  for (const auto& name : split_list(o.gemm_dtypes)) {
    probe::gemm_shape(1, 1, 1, name, "", "--gemm-dtypes");  // a format, or exit 2 naming them
    p.formats.push_back(name);
  }
  p.warmup_given = !o.gemm_warmup_s.empty();
  if (p.warmup_given) p.plan.gemm_warmup_s = parse_duration(o.gemm_warmup_s, "--gemm-warmup-s");
  if (!o.gemm_budget_s.empty())
    p.plan.gemm_budget_s = parse_duration(o.gemm_budget_s, "--gemm-budget-s");
  for (const auto& [value, field] : {std::pair{p.plan.gemm_warmup_s, "--gemm-warmup-s"},
                                     std::pair{p.plan.gemm_budget_s, "--gemm-budget-s"}}) {
    if (!(value >= 0 && value <= 600)) {
      throw InputError(field, fmt::format("{} s must be between 0 and 600 s", value));
    }
  }
  p.plan.host = o.stream_bytes != "none";
  if (p.plan.host && !o.stream_bytes.empty()) {
    p.plan.stream_array_bytes = as_bytes(o.stream_bytes, "--stream-bytes");
  }
  if (!o.model.precision.empty()) {
    const Precision named = parse_precision(o.model.precision, "--precision");
    const PrecisionRecipe recipe = load_recipe(resolve_precision(named, FrameworkProfile{}));
    // MXFP8 and NVFP4 recipes run block-scaled GEMMs; the FP8 recipes scale per tensor (the
    // blockwise recipe's 1x128 / 128x128 scales are timed as per-tensor FP8 here).
    p.model_format = recipe.id == Precision::mxfp8   ? "mxfp8"
                     : recipe.id == Precision::nvfp4 ? "nvfp4"
                                                     : to_string(recipe.gemm_dtype);
  }
  probe::ProfileInputs& in = p.inputs;
  in.gpu = o.gpu;
  in.cluster = o.cluster;
  // Nodes per NVLink domain: the flag, else the --cluster preset's domain (NVL72: 72 / 4 = 18),
  // else 1.
  p.links = load_cluster(o.cluster.empty() ? "dgx-h100" : o.cluster, "--cluster");
  p.plan.nodes_per_domain =
      !o.nodes_per_domain.empty() || o.cluster.empty()
          ? parse_int_or(o.nodes_per_domain, "--nodes-per-domain", 1, 1 << 20)
          : std::max(1, p.links.domain_gpus() / std::max(1, p.links.gpus_per_node));
  if (!o.gpu.empty()) load_gpu(o.gpu, "--gpu");
  in.gpus_per_node = parse_int_or(o.gpus_per_node, "--gpus-per-node", 0, 1024);
  in.nics_per_node = parse_int_or(o.nics_per_node, "--nics-per-node", 0, 1024);
  in.command_line = command_line();
  in.date_utc = utc_now();
  return p;
}

// Defaults that depend on the hardware the back-end measures: the largest size, the GEMM data
// types and sweep, and the GPU preset the device name matches.
// The sweep's defaults for the hardware measured (`gpu`: GPUs, else CPUs): the largest size, the
// pair bytes, the GEMM warm-up and count, and the sweep in `formats` unless --gemm-dtypes names
// them. The run takes them from the back-end it started; the forecast and the job, before any
// back-end, from what a GPU of the preset's generation runs.
void apply_sweep_defaults(const ProbeOptions& o, bool gpu, const std::vector<std::string>& formats,
                          Prepared& p) {
  if (!p.max_given) p.plan.max_bytes = gpu ? (1ull << 30) : (64ull << 20);
  p.plan.max_bytes = std::max(p.plan.max_bytes, p.plan.min_bytes);
  for (auto& g : p.plan.gemms) {
    if (!gpu) g = probe::gemm_shape(g.m, g.n, g.k, "fp32", g.label, "--precision");  // CPU: fp32
  }
  if (!p.pair_bytes_given) p.plan.pair_bytes = gpu ? (256ull << 20) : (1ull << 20);
  // CPUs: no clocks to settle and slow calls, so the --warmup / --iters counts bound the GEMMs.
  if (!gpu && !p.warmup_given) p.plan.gemm_warmup_s = 0;
  if (!gpu) p.plan.gemm_max_iters = p.plan.settings.iters;
  const std::string sizes = !o.gemm_sizes.empty() ? o.gemm_sizes
                            : gpu                 ? "512,1024,2048,4096,8192,16384"
                                                  : "128,256,512,1024";
  for (const auto& g : sweep_shapes(sizes, p.formats.empty() ? formats : p.formats)) {
    p.plan.gemms.push_back(g);
  }
}

void apply_hardware_defaults(const ProbeOptions& o, const probe::Session& session, Prepared& p) {
  const bool gpu = session.measures_gpu();
  apply_sweep_defaults(o, gpu, session.gemm_formats(), p);
  if (p.inputs.gpu.empty() && p.inputs.cluster.empty()) {
    const std::string device = session.device();
    p.inputs.gpu = gpu ? gpu_preset_for_device(device) : "H100-SXM";
    if (p.inputs.gpu.empty()) {
      throw InputError("--gpu",
                       fmt::format("the device '{}' matches no GPU preset; pass --gpu NAME "
                                   "(see `shardplan list gpus`) or a GPU profile file "
                                   "with its peak TFLOP/s",
                                   device));
    }
  }
}

// --out, or probe-<host>-<yyyymmdd>.json.
std::string out_path_of(const ProbeOptions& o, const Prepared& p) {
  if (!o.out.empty()) return o.out;
  const std::string& d = p.inputs.date_utc;
  return fmt::format("probe-{}-{}.json", host_name(),
                     d.substr(0, 4) + d.substr(5, 2) + d.substr(8, 2));
}

// The lead rank's part after the measurements: the summary, and the profile written (only when
// every element was correct) and loaded back.
int finish_lead(const ProbeOptions& o, const probe::Calibration& result,
                const std::string& out_path) {
  const nlohmann::json& profile = result.profile;
  if (!o.json) std::fputs(result.summary.c_str(), stdout);
  if (result.wrong != 0) {
    std::fprintf(stderr,
                 "probe: %zu wrong element(s): the correctness check failed, so no "
                 "profile was written\n",
                 result.wrong);
    return 1;
  }
  write_file_atomically(out_path, profile.dump(2) + "\n", "--out");
  load_cluster(out_path, "--out");  // what was written must plan: fail loudly if not
  if (!o.html.empty()) write_html(o.html, probe_report(profile, out_path), "--html");
  if (o.json) {
    // The profile exactly as written, so that it loads as --cluster: no schema_version stamp.
    std::printf("%s\n", profile.dump(2).c_str());
  } else {
    std::printf("# Calibrated cluster profile: %s (plan with --cluster %s)\n", out_path.c_str(),
                out_path.c_str());
  }
  std::fprintf(stderr, "probe: wrote %s\n", out_path.c_str());
  for (const std::string& w : result.warnings)
    std::fprintf(stderr, "probe: warning: %s\n", w.c_str());
  return 0;
}

// The network the forecast and the job describe: --nodes, the GPUs per node of the flag or the
// --cluster preset (8 without either), the domain and leaf sizes.
struct JobShape {
  probe::NetworkShape net;
  int gpus_per_node = 8;
  ClusterSpec cluster;
};

JobShape job_shape(const ProbeOptions& o, const Prepared& p, const std::string& why) {
  JobShape j;
  j.cluster = p.links;
  j.gpus_per_node = p.inputs.gpus_per_node > 0 ? p.inputs.gpus_per_node : j.cluster.gpus_per_node;
  if (!o.nodes.empty() && !o.gpus.empty()) {
    throw InputError("--gpus", "give the job's size once: --nodes N or --gpus N, not both");
  }
  if (!o.gpus.empty()) {
    // --gpus: whole nodes of the GPUs per node (the flag's, else the cluster preset's).
    const int gpus = parse_int(o.gpus, "--gpus", 1 << 24);
    if (gpus % j.gpus_per_node != 0) {
      throw InputError("--gpus", fmt::format("{} GPUs do not fill whole nodes of {}; give a "
                                             "multiple of {} or --nodes",
                                             gpus, j.gpus_per_node, j.gpus_per_node));
    }
    j.net.nodes = gpus / j.gpus_per_node;
  } else if (o.nodes.empty()) {
    throw InputError("--nodes",
                     why + " needs the size the probe spans: give --nodes N or --gpus N");
  } else {
    j.net.nodes = parse_int(o.nodes, "--nodes", 1 << 20);
  }
  j.net.nodes_per_domain = p.plan.nodes_per_domain;
  j.net.nodes_per_leaf = p.plan.nodes_per_leaf;
  return j;
}

// The forecast from the cluster preset's links. `default_sweep`: before any GPU is seen (the
// forecast and the job), the sweep a GPU of Hopper's generation would run (fp8, bf16, fp16,
// tf32), or a CPU's (fp32, fp64).
probe::ProbeForecast forecast_of(const ProbeOptions& o, const Prepared& prepared, const JobShape& j,
                                 bool gpu, bool default_sweep) {
  Prepared p = prepared;
  if (default_sweep) {
    apply_sweep_defaults(o, gpu,
                         gpu ? std::vector<std::string>{"fp8", "bf16", "fp16", "tf32"}
                             : std::vector<std::string>{"fp32", "fp64"},
                         p);
  }
  const ClusterSpec& c = j.cluster;
  return probe::forecast_probe(p.plan, j.net, j.gpus_per_node, c.intra.busbw_bytes_per_s,
                               c.inter.busbw_bytes_per_s, c.intra.latency_s, c.inter.latency_s);
}

std::string forecast_text(const probe::ProbeForecast& f, const JobShape& j) {
  std::string out = fmt::format(
      "# probe forecast: {} node(s) x {} rank(s) ({} node(s) per NVLink domain{}): {} "
      "measurements, about {:.1f} min, from the {} preset's links\n",
      j.net.nodes, j.gpus_per_node, j.net.nodes_per_domain,
      j.net.nodes_per_leaf > 0 ? fmt::format(", {} per leaf", j.net.nodes_per_leaf) : "",
      f.measurements(), f.seconds / 60, j.cluster.name);
  for (const std::string& line : f.lines) out += "#   " + line + "\n";
  return out;
}

// The probe's own arguments for the job: what the user typed after `probe`, less the flags that
// describe the job rather than the probe.
std::vector<std::string> probe_args_for_job() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
  static const std::set<std::string> with_value = {"--job",       "--job-out",   "--nodes",
                                                   "--gpus",      "--image",     "--volume-claim",
                                                   "--shardplan", "--slurm-mpi", "--out"};
  std::vector<std::string> out;
  bool after_probe = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!after_probe) {
      after_probe = a == "probe";
      continue;
    }
    const std::string name = a.substr(0, a.find('='));
    if (a == "--forecast") continue;
    if (with_value.count(name)) {
      if (a.find('=') == std::string::npos) ++i;  // its value is the next word
      continue;
    }
    out.push_back(a);
  }
  return out;
}

int write_probe_job(const ProbeOptions& o, const Prepared& p) {
  if (o.job != "slurm" && o.job != "k8s") {
    throw InputError("--job", fmt::format("'{}' is not a scheduler; use slurm or k8s", o.job));
  }
  if (o.job_out.empty()) throw InputError("--job-out", "--job needs the file to write the job to");
  if (o.out.empty()) {
    throw InputError("--out",
                     "the job's probe writes its profile to --out: give a path on "
                     "storage the nodes share");
  }
  if (o.job == "k8s" && o.image.empty()) {
    throw InputError("--image", "the Kubernetes job needs a container image holding shardplan");
  }
  const bool gpu = o.backend != "mpi";
  const JobShape j = job_shape(o, p, "--job");
  const probe::ProbeForecast f = forecast_of(o, p, j, gpu, true);
  ProbeJob job;
  job.nodes = j.net.nodes;
  job.ranks_per_node = j.gpus_per_node;
  job.gpus_per_node = gpu ? j.gpus_per_node : 0;
  job.nodes_per_domain = j.net.nodes_per_domain;
  job.image = o.image;
  job.out_path = o.out;
  job.volume_claim = o.volume_claim;
  job.mpi = o.slurm_mpi;
  job.shardplan = o.shardplan_path;
  job.probe_args = probe_args_for_job();
  job.forecast_s = f.seconds;
  // Twice the forecast, plus five minutes for start-up and the roll call of a failure.
  job.time_limit_s = std::ceil((2 * f.seconds + 300) / 60) * 60;
  const std::string text = o.job == "slurm" ? probe_slurm_job(job) : probe_k8s_job(job);
  write_file_atomically(o.job_out, text, "--job-out");
  std::fputs(forecast_text(f, j).c_str(), stdout);
  std::printf(
      "# wrote %s (%s, %d nodes x %d ranks, bounded at %.0f min); the profile lands at %s\n",
      o.job_out.c_str(), o.job == "slurm" ? "Slurm batch script" : "Kubeflow MPIJob", job.nodes,
      job.ranks_per_node, job.time_limit_s / 60, o.out.c_str());
  return 0;
}

int run_probe_command(const ProbeOptions& o) {
  Prepared p = prepare(o);
  if (!o.job.empty()) return write_probe_job(o, p);
  if (o.forecast) {
    const JobShape j = job_shape(o, p, "--forecast");
    std::fputs(forecast_text(forecast_of(o, p, j, o.backend != "mpi", true), j).c_str(), stdout);
    return 0;
  }
  if (!o.model.model.empty() || !o.model.params.empty() || !o.model.layers.empty()) {
    p.plan.gemms = model_shapes(o.model, p.model_format);  // validated before the launch
  }
  probe::Session session = probe::start_session(o.backend, p.plan.settings);
  if (!session.note().empty()) p.plan.notes.push_back(session.note());  // the table and profile
  apply_hardware_defaults(o, session, p);
  const GpuSpec gpu_spec = probe::profile_gpu(p.inputs);
  const std::string out_path = out_path_of(o, p);
  if (!session.measures_gpu()) {
    p.plan.notes.push_back(
        fmt::format("the {} back-end measures CPU GEMMs: they go into the "
                    "profile's measurements and fit only, never into the {} "
                    "efficiency curve",
                    session.backend(), gpu_spec.name));
  }
  if (session.lead()) {
    // Said before the sweep starts: what it will measure and how long it will take.
    JobShape j;
    j.net.nodes = session.nodes();
    j.gpus_per_node = session.ranks() / std::max(1, session.nodes());
    j.net.nodes_per_domain = p.plan.nodes_per_domain;
    j.net.nodes_per_leaf = p.plan.nodes_per_leaf;
    j.cluster = p.links;
    const probe::ProbeForecast f = forecast_of(o, p, j, session.measures_gpu(), false);
    std::fprintf(stderr,
                 "probe: forecast: %d measurements, about %.1f min (from the %s preset's links)\n",
                 f.measurements(), f.seconds / 60, j.cluster.name.c_str());
  }
  const probe::Calibration result = probe::calibrate(session, p.plan, p.inputs, gpu_spec, !o.json);
  if (!session.lead()) return result.wrong == 0 ? 0 : 1;
  return finish_lead(o, result, out_path);
}

}  // namespace

Runner setup_probe(CLI::App& sub) {
  auto o = std::make_shared<ProbeOptions>();
  add_probe_options(sub, *o);
  return [o]() { return run_probe_command(*o); };
}

}  // namespace shardplan::cli
