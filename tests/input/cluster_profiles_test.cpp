// Cluster presets as tiers: the rack-scale systems' domain, host and NICs as their datasheets
// give them, a GPU sold only as a rack bringing the rack, and bad tier sizes refused.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"

using namespace shardplan;

namespace {

ClusterSpec built(const std::string& cluster, const std::string& gpu, int gpus,
                  int gpus_per_node = 0, int gpus_per_domain = 0) {
  ClusterOptions o;
  o.cluster = cluster;
  o.gpu = gpu;
  o.gpus = gpus;
  o.gpus_per_node = gpus_per_node;
  o.gpus_per_domain = gpus_per_domain;
  return build_cluster(o);
}

}  // namespace

TEST_CASE("gb200-nvl72: 72 GPUs on NVLink, trays of 4 with 2 Graces over NVLink-C2C") {
  const ClusterSpec c = load_cluster("gb200-nvl72");
  CHECK(c.gpus_per_node == 4);
  CHECK(c.domain_gpus() == 72);
  CHECK(c.rack_scale());
  CHECK(c.nics_per_node == 4);
  CHECK(c.intra.bytes_per_s == doctest::Approx(900e9));
  CHECK(c.inter.busbw_bytes_per_s == doctest::Approx(47e9));  // one ConnectX-7 per GPU
  CHECK(c.host.link_name == "nvlink-c2c");
  // 900 GB/s bidirectional per superchip of 2 GPUs: 225 GB/s per GPU per direction.
  CHECK(c.host.link_bytes_per_s == doctest::Approx(225e9));
  // 2 Graces x 480 GB LPDDR5X at 512 GB/s each.
  CHECK(c.host.memory_bytes == doctest::Approx(960e9).epsilon(1e-4));
  CHECK(c.host.dram_bytes_per_s == doctest::Approx(1024e9));
}

TEST_CASE("--gpu GB200 alone plans on its NVL72 rack; GB300 on its own") {
  const ClusterSpec gb200 = built("", "GB200", 144);
  CHECK(gb200.name == "gb200-nvl72");
  CHECK(gb200.nodes() == 36);
  CHECK(gb200.domains() == 2);
  const ClusterSpec gb300 = built("", "GB300", 72);
  CHECK(gb300.name == "gb300-nvl72");
  CHECK(gb300.gpu.memory_bytes == doctest::Approx(284208.0 * 1024 * 1024).epsilon(1e-4));
  CHECK(gb300.inter.bytes_per_s == doctest::Approx(100e9));  // ConnectX-8, 800 Gb/s per GPU
}

TEST_CASE("a domain never exceeds the cluster's hosts, and follows the node on 8-GPU servers") {
  CHECK(built("gb200-nvl72", "", 8).domain_gpus() == 8);
  CHECK(built("gb200-nvl72", "", 256).domain_gpus() == 72);
  const ClusterSpec h100 = built("dgx-h100", "", 64, 4);
  CHECK(h100.gpus_per_node == 4);
  CHECK(h100.domain_gpus() == 4);
  CHECK(built("", "H100-SXM", 64).domain_gpus() == 8);
  CHECK(built("dgx-h100", "", 64, 0, 16).domain_gpus() == 16);
}

TEST_CASE("a domain that is not whole hosts is refused, naming the flag") {
  CHECK_THROWS_AS(built("gb200-nvl72", "", 144, 0, 6), InputError);
  try {
    built("gb200-nvl72", "", 144, 0, 6);
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--gpus-per-domain") != std::string::npos);
  }
}

TEST_CASE("the new GPUs' datasheet figures") {
  const GpuSpec b300 = load_gpu("B300");
  CHECK(b300.peak_flops[static_cast<int>(MathDtype::bf16)] == doctest::Approx(2250e12));
  CHECK(b300.peak_flops[static_cast<int>(MathDtype::fp8)] == doctest::Approx(4500e12));
  CHECK(b300.memory_bytes == doctest::Approx(275040.0 * 1024 * 1024).epsilon(1e-4));
  const GpuSpec mi355x = load_gpu("MI355X");
  CHECK(mi355x.peak_flops[static_cast<int>(MathDtype::bf16)] == doctest::Approx(2516.6e12));
  CHECK(mi355x.hbm_bytes_per_s == doctest::Approx(8e12));
  const GpuSpec mi325x = load_gpu("MI325X");
  CHECK(mi325x.hbm_bytes_per_s == doctest::Approx(6e12));
  const GpuSpec v100 = load_gpu("V100");
  CHECK(v100.peak_flops[static_cast<int>(MathDtype::bf16)] == 0);  // Volta: fp16 only
  CHECK(v100.peak_flops[static_cast<int>(MathDtype::fp16)] == doctest::Approx(125e12));
  const ClusterSpec dgx2 = load_cluster("dgx-2");
  CHECK(dgx2.gpus_per_node == 16);
  CHECK(dgx2.domain_gpus() == 16);
  CHECK(dgx2.inter.bytes_per_s == doctest::Approx(12.5e9 * 8 / 16));  // 8 EDR NICs, 16 GPUs
}

TEST_CASE("list clusters shows each tier") {
  bool found = false;
  for (const PresetSummary& s : list_presets(ProfileKind::cluster)) {
    if (s.name != "gb200-nvl72") continue;
    found = true;
    std::map<std::string, std::string> f(s.figures.begin(), s.figures.end());
    CHECK(f["gpus/node"] == "4");
    CHECK(f["domain"] == "72 x nvlink5-nvl72");
    CHECK(f["host"] == "894 GiB, nvlink-c2c");
    CHECK(f["inter"] == "4 x ib-ndr");
  }
  CHECK(found);
}
