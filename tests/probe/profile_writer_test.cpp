// The calibrated profile: synthetic measurements of known links go through the fit and the
// writer, load back through load_cluster, and the planner's placement model reproduces them.
#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "fit.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/compute.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"

using namespace shardplan;
using namespace shardplan::probe;

namespace {

// The gemm_share_of_mamf multiplier profiles/fit/step-time.json ships.
double shipped_gemm_share() {
  for (const FittedConstant& c : shipped_fit().constants)
    if (c.name == "gemm_share_of_mamf") return c.multiplier;
  return 1;
}

struct Link {
  double latency_s;
  double busbw;
};

void add_rows(Results& r, const GroupInfo& g, Collective c, Link link) {
  for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 4) {
    CollectiveRow row;
    row.group = g;
    row.shape = shape_of(c, bytes, g.ranks);
    const double t = link.latency_s + row.shape.bytes * info(c).bus_factor(g.ranks) / link.busbw;
    row.time = {t, t, t, t};
    row.algbw_bytes_per_s = algbw(row.shape.bytes, t);
    row.busbw_bytes_per_s = busbw(c, g.ranks, row.shape.bytes, t);
    for (const RankInfo& rank : r.ranks) row.rank_s.emplace_back(rank.rank, t);
    r.rows.push_back(row);
  }
}

std::vector<RankInfo> layout(int nodes, int per_node, const std::string& device, double memory) {
  std::vector<RankInfo> ranks;
  for (int n = 0; n < nodes; ++n) {
    for (int l = 0; l < per_node; ++l) {
      RankInfo r;
      r.rank = r.process = static_cast<int>(ranks.size());
      r.node = n;
      r.local_rank = l;
      r.host = "node" + std::to_string(n);
      r.device = device;
      r.device_memory_bytes = memory;
      ranks.push_back(r);
    }
  }
  return ranks;
}

GemmRow gemm_row(long n, MathDtype dtype, double flops_per_s) {
  GemmRow g;
  g.shape = {n, n, n, dtype, "sweep"};
  g.flops_per_s = flops_per_s;
  const double t = g.shape.flops() / flops_per_s;
  g.time = {t, t, t, t};
  g.iters = 10;
  return g;
}

std::string temp_path() {
  char path[] = "/tmp/shardplan-probe-profile-XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  return std::string(path) + ".json";
}

ProfileInputs inputs(const std::string& gpu, const std::string& cluster = "") {
  ProfileInputs in;
  in.gpu = gpu;
  in.cluster = cluster;
  in.command_line = "shardplan probe --test";
  in.date_utc = "2025-01-31T12:00:00Z";
  return in;
}

// Two nodes of four H100s: NVLink-like inside (300 GB/s all-reduce busbw), 40 GB/s per NIC,
// and a world all-reduce at 80 GB/s = min(300, 4 x 40 x nics / 4) with 2 NICs per node.
Results two_nodes() {
  Results r;
  r.backend = "nccl";
  r.ranks = layout(2, 4, "NVIDIA H100 80GB HBM3", 85520809984.0);
  r.groups = plan_groups(r.ranks);
  r.plan.min_bytes = 1024;
  r.plan.max_bytes = 64u << 20;
  r.plan.collectives = {Collective::all_reduce, Collective::send_recv};
  r.libraries = {{"nccl", "2.28.9"}};
  r.gemm_on_gpu = true;
  add_rows(r, r.groups[0], Collective::all_reduce, {20e-6, 300e9});
  add_rows(r, r.groups[0], Collective::send_recv, {8e-6, 350e9});
  add_rows(r, r.groups[1], Collective::all_reduce, {10e-6, 40e9});
  add_rows(r, r.groups[1], Collective::send_recv, {6e-6, 45e9});
  add_rows(r, r.groups[2], Collective::all_reduce, {30e-6, 80e9});
  // Rank 5 is slow at the largest intra all-reduce.
  for (CollectiveRow& row : r.rows) {
    if (row.group.tier == Tier::intra && row.shape.kind == Collective::all_reduce &&
        row.shape.bytes == (64u << 20)) {
      row.rank_s[5].second *= 1.5;
    }
  }
  r.gemms = {gemm_row(1024, MathDtype::bf16, 400e12), gemm_row(8192, MathDtype::bf16, 790e12),
             gemm_row(8192, MathDtype::fp8, 1500e12)};
  return r;
}

// One node of two CPU ranks, as the mpi back-end measures it: the intra tier's all-reduce only.
Results one_node_of_two() {
  Results r;
  r.backend = "mpi";
  r.ranks = layout(1, 2, "AMD EPYC", 0);
  r.groups = plan_groups(r.ranks);
  r.plan.collectives = {Collective::all_reduce};
  add_rows(r, r.groups[0], Collective::all_reduce, {5e-6, 3e9});
  return r;
}

}  // namespace

TEST_CASE("a two-node profile round-trips through load_cluster with the measured figures") {
  const Results r = two_nodes();
  const FitResult fit = fit_results(r, load_gpu("H100-SXM"));
  const nlohmann::json profile = build_profile(r, fit, inputs("H100-SXM"));
  const std::string path = temp_path();
  write_file_atomically(path, profile.dump(2), "--out");
  const ClusterSpec c = load_cluster(path);

  CHECK(c.name == "probed-node0-20250131");
  CHECK(c.gpus_per_node == 4);
  CHECK(c.intra.measured);
  CHECK(c.intra.busbw_bytes_per_s == doctest::Approx(300e9).epsilon(1e-5));
  CHECK(c.intra.bytes_per_s == doctest::Approx(350e9).epsilon(1e-5));    // send/recv, one direction
  CHECK(c.intra.latency_s == doctest::Approx(20e-6 / 6).epsilon(1e-3));  // 2(n-1) ring steps
  CHECK(c.nic.measured);
  CHECK(c.nic.busbw_bytes_per_s == doctest::Approx(40e9).epsilon(1e-5));
  CHECK(c.nic.bytes_per_s == doctest::Approx(45e9).epsilon(1e-5));
  // NICs fitted from the world measurement: 80 = 4 x 40 x nics / 4.
  CHECK(c.nics_per_node == 2);
  CHECK(profile.at("sources").at("nics_per_node").get<std::string>().find("fitted") == 0);
  // Each GPU's share of the node's NICs, the per-collective figure scaled alike.
  CHECK(c.inter.busbw_bytes_per_s == doctest::Approx(20e9).epsilon(1e-5));
  CHECK(c.inter.collective_busbw[static_cast<int>(Collective::all_reduce)] ==
        doctest::Approx(20e9).epsilon(1e-5));
  // The planner reproduces what was measured.
  ClusterSpec sixteen = c;
  sixteen.gpus = 8;
  CHECK(placement_busbw(Collective::all_reduce, {8, 4}, sixteen) ==
        doctest::Approx(80e9).epsilon(1e-5));
  CHECK(placement_busbw(Collective::all_reduce, {4, 4}, sixteen) ==
        doctest::Approx(300e9).epsilon(1e-5));
  CHECK(placement_busbw(Collective::all_reduce, {2, 1}, sixteen) ==
        doctest::Approx(20e9).epsilon(1e-5));

  // The GPU: memory and a bf16 curve measured, marked calibrated.
  CHECK(c.gpu.calibrated);
  CHECK(c.gpu.memory_bytes == doctest::Approx(85520809984.0).epsilon(1e-4));
  REQUIRE(c.gpu.gemm_efficiency.size() == 2);
  CHECK(c.gpu.gemm_efficiency[0].flops == doctest::Approx(2.0 * 1024 * 1024 * 1024));
  // 0.84 x the isolated figure: the in-step share every GPU preset applies to MAMF.
  CHECK(c.gpu.gemm_efficiency[0].efficiency == doctest::Approx(in_step_share() * 400.0 / 989.4).epsilon(1e-3));
  CHECK(c.gpu.gemm_efficiency[1].efficiency == doctest::Approx(in_step_share() * 790.0 / 989.4).epsilon(1e-3));
  CHECK(c.gpu.peak_flops[static_cast<int>(MathDtype::bf16)] == doctest::Approx(989.4e12));

  // Raw rows, fit, stragglers and provenance travel with it.
  CHECK(profile.at("measurements").at("collectives").size() == r.rows.size());
  CHECK(profile.at("measurements").at("gemm").size() == 3);
  const auto& row = profile.at("measurements").at("collectives").at(0);
  for (const char* key :
       {"count", "type", "time_us", "algbw_gb_per_s", "busbw_gb_per_s", "correct"}) {
    CHECK(row.contains(key));
  }
  CHECK(profile.at("fit")
            .at("tiers")
            .at("inter")
            .at("collectives")
            .at("all_reduce")
            .at("busbw_gb_per_s")
            .get<double>() == doctest::Approx(40.0).epsilon(1e-5));
  const auto& stragglers = profile.at("fit").at("stragglers");
  CHECK(stragglers.at("threshold").get<double>() == doctest::Approx(1.2));
  REQUIRE(stragglers.at("flagged").size() == 1);
  CHECK(stragglers.at("flagged").at(0).at("rank") == 5);
  CHECK(stragglers.at("flagged").at(0).at("host") == "node1");
  CHECK(profile.at("fit").at("per_rank").size() == 8);
  const auto& prov = profile.at("provenance");
  CHECK(prov.at("hosts") == nlohmann::json({"node0", "node1"}));
  CHECK(prov.at("date") == "2025-01-31T12:00:00Z");
  CHECK(prov.at("libraries").at("nccl") == "2.28.9");
  CHECK(prov.at("devices").at(0) == "NVIDIA H100 80GB HBM3");
  std::remove(path.c_str());
}

TEST_CASE(
    "one node on CPUs: the inter link stays the preset's, the CPU GEMMs stay out of the GPU") {
  Results r = one_node_of_two();
  r.gemms = {gemm_row(512, MathDtype::fp32, 50e9)};
  const FitResult fit = fit_results(r, load_gpu("A100-80GB"));
  CHECK(fit.gemm_curve.empty());
  const nlohmann::json profile = build_profile(r, fit, inputs("A100-80GB"));
  const std::string path = temp_path();
  write_file_atomically(path, profile.dump(2), "--out");
  const ClusterSpec c = load_cluster(path);
  const GpuSpec preset = load_gpu("A100-80GB");
  CHECK_FALSE(c.gpu.calibrated);
  REQUIRE(c.gpu.gemm_efficiency.size() == preset.gemm_efficiency.size());
  CHECK(c.gpu.gemm_efficiency.back().efficiency ==
        doctest::Approx(preset.gemm_efficiency.back().efficiency));
  CHECK(c.gpu.memory_bytes == doctest::Approx(preset.memory_bytes));
  CHECK(c.intra.measured);
  CHECK(c.intra.busbw_bytes_per_s == doctest::Approx(3e9).epsilon(1e-5));
  // No send/recv measured: the link's figure is the best collective's.
  CHECK(c.intra.bytes_per_s == doctest::Approx(3e9).epsilon(1e-5));
  CHECK_FALSE(c.nic.measured);
  CHECK(c.nic.name == "ib-hdr");  // the A100's scale-out preset
  const std::string why = profile.at("inter").at("sources").at("busbw_gb_per_s").get<std::string>();
  CHECK(why.find("not measured (a single node") == 0);
  CHECK(profile.at("fit").at("gemm").at("applied_to_gpu_profile") == false);
  CHECK(profile.at("fit").at("gemm").at("note").get<std::string>().find("CPU") !=
        std::string::npos);
  CHECK(profile.at("fit").at("skipped_tiers").contains("inter"));
  std::remove(path.c_str());
}

TEST_CASE("a calibrated GEMM curve prices a step as the preset does for the same silicon") {
  // An H100 whose isolated bf16 GEMM reaches the published MAMF (794.5 TFLOP/s, ml-engineering's
  // table): its calibrated ceiling must be the preset's e_max, 0.84 x 794.5 / 989.4 = 0.675 (times
  // the gemm_share_of_mamf multiplier profiles/fit ships, as the preset's curve), not
  // the raw 0.803 that made a calibrated profile price every step 1.19x faster.
  Results r = two_nodes();
  r.gemms = {gemm_row(16384, MathDtype::bf16, 794.5e12)};
  const FitResult fit = fit_results(r, load_gpu("H100-SXM"));
  REQUIRE(fit.gemm_curve.size() == 1);
  CHECK(in_step_share() == doctest::Approx(0.84 * shipped_gemm_share()));
  CHECK(fit.gemm_curve[0].efficiency ==
        doctest::Approx(0.675 * shipped_gemm_share()).epsilon(2e-3));
  const GpuSpec preset = load_gpu("H100-SXM");
  CHECK(fit.gemm_curve[0].efficiency ==
        doctest::Approx(gemm_efficiency(preset, 1e18)).epsilon(5e-3));
  // The raw figure stays in the measurements, labelled.
  const nlohmann::json profile = build_profile(r, fit, inputs("H100-SXM"));
  CHECK(profile.at("measurements").at("gemm").at(0).at("tflop_per_s").get<double>() ==
        doctest::Approx(794.5));
  CHECK(profile.at("fit").at("gemm").at("in_step_share").get<double>() == doctest::Approx(in_step_share()));
}

TEST_CASE(
    "a tiny --gemm-sizes writes a profile that loads: efficiencies keep 4 significant digits") {
  // 16^3 GEMMs at 2 GFLOP/s: 2e-6 of the H100's peak, which 4 decimals rounded to 0 and the
  // loader then refused ("gemm_efficiency ... must be > 0").
  Results r = two_nodes();
  r.gemms = {gemm_row(16, MathDtype::bf16, 2e9), gemm_row(32, MathDtype::bf16, 9e9)};
  const FitResult fit = fit_results(r, load_gpu("H100-SXM"));
  const nlohmann::json profile = build_profile(r, fit, inputs("H100-SXM"));
  const std::string path = temp_path();
  write_file_atomically(path, profile.dump(2), "--out");
  const ClusterSpec c = load_cluster(path);
  REQUIRE(c.gpu.gemm_efficiency.size() == 2);
  CHECK(c.gpu.gemm_efficiency[0].efficiency ==
        doctest::Approx(in_step_share() * 2e9 / 989.4e12).epsilon(1e-3));
  CHECK(c.gpu.gemm_efficiency[0].efficiency > 0);
  std::remove(path.c_str());
}

TEST_CASE("starting from a cluster preset: its GPU, inter link and NIC ratio") {
  const Results r = one_node_of_two();
  const FitResult fit = fit_results(r, load_gpu("H100-SXM"));
  ProfileInputs in = inputs("", "dgx-a100");
  const nlohmann::json profile = build_profile(r, fit, in);
  const std::string path = temp_path();
  write_file_atomically(path, profile.dump(2), "--out");
  const ClusterSpec c = load_cluster(path);
  CHECK(c.gpu.name == "A100-80GB");
  CHECK(c.gpus_per_node == 2);
  CHECK(c.nics_per_node == 2);  // DGX A100: 8 NICs for 8 GPUs, scaled to 2
  CHECK(c.nic.name == "ib-hdr");
  std::remove(path.c_str());
  // --gpus-per-node and --nics-per-node win.
  in.gpus_per_node = 8;
  in.nics_per_node = 1;
  const nlohmann::json stated = build_profile(r, fit, in);
  CHECK(stated.at("gpus_per_node") == 8);
  CHECK(stated.at("nics_per_node") == 1);
  CHECK(stated.at("sources").at("nics_per_node") == "--nics-per-node");
}

TEST_CASE("the profile is written atomically: all or nothing, no temporary left") {
  char dir[] = "/tmp/shardplan-atomic-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/profile.json";
  write_file_atomically(path, "{\"a\": 1}\n", "--out");
  write_file_atomically(path, "{\"a\": 2}\n", "--out");  // replaces
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "{\"a\": 2}\n");
  int entries = 0;
  DIR* d = opendir(dir);
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  CHECK(entries == 1);
  std::remove(path.c_str());
  rmdir(dir);
  try {
    write_file_atomically("/nonexistent-dir-for-shardplan/p.json", "{}", "--out");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "--out");
  }
}

// Device names as nvidia-smi --query-gpu=name and rocm-smi print them; the preset is the one
// whose name or alias the device name holds as whole words (the profiles' aliases), the longest.
TEST_CASE("device names map to GPU presets") {
  CHECK(gpu_preset_for_device("NVIDIA H100 80GB HBM3") == "H100-SXM");
  CHECK(gpu_preset_for_device("NVIDIA H100 PCIe") == "H100-PCIe");
  CHECK(gpu_preset_for_device("NVIDIA H200") == "H200");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-40GB") == "A100-40GB");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-80GB") == "A100-80GB");
  CHECK(gpu_preset_for_device("NVIDIA B200") == "B200");
  CHECK(gpu_preset_for_device("NVIDIA GeForce RTX 4090").empty());
  // Whole words: GB200's name holds "B200" inside a word, not as one.
  CHECK(gpu_preset_for_device("NVIDIA GB200") == "GB200");
  CHECK(gpu_preset_for_device("NVIDIA A100-PCIE-40GB") == "A100-40GB");
  CHECK(gpu_preset_for_device("AMD Instinct MI300X") == "MI300X");
  CHECK(gpu_preset_for_device("Tesla V100-SXM2-32GB") == "V100");
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA L40S"}) {
    CHECK(load_gpu(gpu_preset_for_device(name)).memory_bytes > 0);
  }
}
