// The GPU probe's parts that run without a GPU: the GEMM format rows and their encodings
// (against the formats' specifications), the random-mantissa inputs and the host check, the
// timed warm-up and the median, a fake back-end through the whole harness, the GPU a process
// picks, the NUMA node of a PCI device, and a control exchange that waits for busy peers.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "fork_capture.hpp"
#include "gemm_formats.hpp"
#include "harness.hpp"
#include "shardplan/error.hpp"

using namespace shardplan;
using namespace shardplan::probe;

namespace {

const GemmFormat& format(const char* name) {
  const GemmFormat* f = find_gemm_format(name);
  REQUIRE(f != nullptr);
  return *f;
}

}  // namespace

TEST_CASE("GEMM formats encode 1.0 and their extremes as the formats' specifications do") {
  // IEEE 754 binary32 / binary16, bfloat16 (fp32's top half), OCP FP8 E4M3 ("fn": max 448 =
  // 0x7E), OCP MX FP4 E2M1 (0.5 subnormal = 0x1, 6.0 = 0x7), and the block-scale encodings:
  // MXFP8's UE8M0 (1.0 = 127) and NVFP4's UE4M3 (1.0 = 0x38).
  CHECK(encode_element(1.0, format("fp32").element) == 0x3F800000u);
  CHECK(encode_element(1.0, format("bf16").element) == 0x3F80u);
  CHECK(encode_element(-2.0, format("bf16").element) == 0xC000u);
  CHECK(encode_element(1.0, format("fp16").element) == 0x3C00u);
  CHECK(encode_element(1.0, format("fp8").element) == 0x38u);
  CHECK(encode_element(448.0, format("fp8").element) == 0x7Eu);
  CHECK(encode_element(-0.5, format("fp8").element) == 0xB0u);
  CHECK(encode_element(1.0, format("nvfp4").element) == 0x2u);
  CHECK(encode_element(0.5, format("nvfp4").element) == 0x1u);
  CHECK(encode_element(6.0, format("nvfp4").element) == 0x7u);
  CHECK(encode_element(-6.0, format("nvfp4").element) == 0xFu);
  CHECK(encode_element(1.0, format("mxfp8").scale) == 0x7Fu);
  CHECK(encode_element(1.0, format("nvfp4").scale) == 0x38u);
  CHECK(decode_element(0x7E, format("fp8").element) == 448.0);
  CHECK(decode_element(0x1, format("nvfp4").element) == 0.5);
  // Names: fp4 is NVFP4; each format states its cuBLASLt minimum and why.
  CHECK(find_gemm_format("fp4") == find_gemm_format("nvfp4"));
  CHECK(find_gemm_format("int8") == nullptr);
  CHECK(format("nvfp4").min_compute_capability == 100);
  CHECK(format("mxfp8").min_compute_capability == 100);
  CHECK(format("fp8").min_compute_capability == 89);
  CHECK(format("fp8").fast_accumulation);
  CHECK_FALSE(format("bf16").fast_accumulation);
  CHECK(format("tf32").min_compute_capability == 80);
  CHECK(format("fp64").min_compute_capability < 0);
  CHECK_THROWS_AS(gemm_shape(8, 8, 8, "int8", "", "--gemm-dtypes"), InputError);
  const GemmShape mx = gemm_shape(64, 64, 64, "mxfp8", "sweep", "--gemm-dtypes");
  CHECK(mx.dtype == MathDtype::fp8);
  CHECK(mx.block_scaled);
  CHECK(gemm_format_name(mx) == "mxfp8");
  CHECK(gemm_format_name(gemm_shape(64, 64, 64, "fp4", "", "f")) == "nvfp4");
}

TEST_CASE("GEMM inputs: random signs and mantissas, exact in the format, never zero") {
  for (const GemmFormat& f : gemm_formats()) {
    CAPTURE(f.name);
    const Encoding storage = f.dtype == MathDtype::tf32 ? format("fp32").element : f.element;
    std::set<double> distinct;
    int negative = 0;
    for (size_t i = 0; i < 4000; ++i) {
      const double v = gemm_input(f, static_cast<int>(i % 2), i);
      CHECK(v != 0);
      CHECK(std::fabs(v) <= 8);
      if (f.dtype != MathDtype::fp64)
        CHECK(decode_element(encode_element(v, storage), storage) == v);
      distinct.insert(v);
      negative += v < 0;
    }
    // Every mantissa bit is used: 2 signs x 3 exponents x 2^mantissa_bits values possible.
    const double possible = 6.0 * std::ldexp(1.0, f.element.mantissa_bits);
    CHECK(static_cast<double>(distinct.size()) >= std::min(possible * 0.95, 2500.0));
    CHECK(negative > 1700);
    CHECK(negative < 2300);
  }
}

TEST_CASE("fp4 inputs pack two per byte, the first element in the low nibble") {
  const GemmFormat& f = format("nvfp4");
  const auto bytes = encode_inputs(f, 0, 6);
  REQUIRE(bytes.size() == 3);
  for (size_t i = 0; i < 6; ++i) {
    const unsigned nibble = (bytes[i / 2] >> (i % 2 ? 4 : 0)) & 0xF;
    CHECK(decode_element(nibble, f.element) == gemm_input(f, 0, i));
  }
  const auto bf16 = encode_inputs(format("bf16"), 1, 3);
  REQUIRE(bf16.size() == 6);
  const unsigned word = bf16[2] | (bf16[3] << 8);  // little-endian
  CHECK(decode_element(word, format("bf16").element) == gemm_input(format("bf16"), 1, 1));
}

TEST_CASE("block scales: cuBLASLt's layout pads the outer dimension to 128 and the K blocks to 4") {
  CHECK(block_scale_bytes(1000, 4096, 32) == 1024u * 128u);
  CHECK(block_scale_bytes(128, 64, 16) == 128u * 4u);
  CHECK(block_scale_bytes(1, 16, 16) == 128u * 4u);
  CHECK(block_scale_bytes(8192, 8192, 16) == 8192u * 512u);
}

TEST_CASE("the GEMM check: the host's exact sum passes, 2% of sum |ab| off fails, per format") {
  for (const char* name : {"fp32", "bf16", "fp8", "nvfp4"}) {
    CAPTURE(name);
    const GemmShape s = gemm_shape(64, 48, 80, name, "test", "f");
    const GemmFormat& f = gemm_format_of(s);
    int checked = 0;
    for (const auto& [i, j] : gemm_check_points(s)) {
      double exact = 0, magnitude = 0;
      for (long l = 0; l < s.k; ++l) {
        const double p = gemm_input(f, 0, l + i * s.k) * gemm_input(f, 1, l + j * s.k);
        exact += p;
        magnitude += std::fabs(p);
      }
      CHECK(i < s.m);
      CHECK(j < s.n);
      CHECK(gemm_output_ok(s, i, j, exact));
      CHECK_FALSE(gemm_output_ok(s, i, j, exact + 0.02 * magnitude + 0.01));
      ++checked;
    }
    CHECK(checked >= 5);
  }
}

TEST_CASE("GEMM timing: a warm-up of at least the stated calls and seconds sizes the timed run") {
  // A fake device whose calls take 1 ms: 0.2 s of warm-up is at least 200 calls.
  int calls = 0, batches = 0;
  GemmTiming t;
  t.warmup_iters = 5;
  t.warmup_s = 0.2;
  t.budget_s = 1.0;
  t.min_iters = 5;
  t.max_iters = 2000;
  const double per_call = warm_up(t, [&](int n) {
    calls += n;
    ++batches;
    return n * 1e-3;
  });
  CHECK(per_call == doctest::Approx(1e-3));
  CHECK(calls >= 200);
  CHECK(calls <= 600);  // never far past the warm-up asked for
  CHECK(batches < 20);  // doubling batches, not one synchronisation per call
  CHECK(timed_iterations(t, per_call) == 1000);
  CHECK(timed_iterations(t, 1.0) == 5);      // slow calls: the minimum for a median
  CHECK(timed_iterations(t, 1e-6) == 2000);  // fast calls: the cap
  // No time asked: the count alone.
  t.warmup_s = 0;
  calls = 0;
  warm_up(t, [&](int n) {
    calls += n;
    return n * 1e-3;
  });
  CHECK(calls == 5);
}

namespace {

// A back-end with one rank that runs no collective and fakes GEMMs: every call takes 1 ms but
// the fourth of each timed run takes 5 ms (a preempted call). It refuses fp4 as a GPU below
// compute capability 10.0 does, and counts how often each GEMM is set up.
class FakeBackend final : public Backend {
 public:
  FakeBackend() {
    RankInfo r;
    r.host = "fake";
    r.device = "NVIDIA H100 80GB HBM3";
    ranks_ = {r};
  }
  const char* name() const override { return "fake"; }
  const std::vector<RankInfo>& ranks() const override { return ranks_; }
  std::vector<int> local_ranks() const override { return {0}; }
  void open(Tier) override {}
  std::vector<RankTiming> collective(Tier, const CollectiveShape&, const Settings&) override {
    return {};
  }
  std::string why_not(const GemmFormat& f) const override {
    return f.min_compute_capability > 90 ? std::string(f.why_not) : "";
  }
  std::vector<RankTiming> gemm(const GemmShape&, const GemmTiming& timing) override {
    ++setups;
    warmups.push_back(timing);
    RankTiming t;
    t.detail = "fake";
    for (int i = 0; i < 9; ++i) t.iteration_s.push_back(i == 3 ? 5e-3 : 1e-3);
    return {t};
  }
  nlohmann::json libraries() const override { return nlohmann::json::object(); }
  bool measures_gpu() const override { return true; }
  int setups = 0;
  std::vector<GemmTiming> warmups;

 private:
  std::vector<RankInfo> ranks_;
};

}  // namespace

TEST_CASE("the harness sets each GEMM up once, warms it up, reports the median, refuses by name") {
  FakeBackend backend;
  auto control = make_local_control();
  Watchdog watchdog(*control, 5);
  SweepPlan plan;
  plan.host = false;
  plan.settings.warmup = 7;
  plan.gemm_warmup_s = 0.5;
  plan.gemms = {gemm_shape(1024, 1024, 1024, "bf16", "sweep", "f"),
                gemm_shape(1024, 1024, 1024, "nvfp4", "sweep", "f")};
  Reporter quiet;
  const Results r = run_probe(backend, *control, watchdog, plan, quiet);
  CHECK(backend.setups == 1);  // bf16 once; nvfp4 never reaches the back-end
  REQUIRE(backend.warmups.size() == 1);
  CHECK(backend.warmups[0].warmup_iters == 7);
  CHECK(backend.warmups[0].warmup_s == 0.5);
  REQUIRE(r.gemms.size() == 1);
  // Median 1 ms (the mean, 1.44 ms, would have said 1.49 TFLOP/s).
  CHECK(r.gemms[0].flops_per_s == doctest::Approx(2.0 * 1024 * 1024 * 1024 / 1e-3));
  CHECK(r.gemms[0].iters == 9);
  bool refused = false;
  for (const std::string& n : r.notes) {
    refused = refused || (n.find("nvfp4") != std::string::npos &&
                          n.find("compute capability 10.0") != std::string::npos);
  }
  CHECK(refused);
}

TEST_CASE("per-task GPU binding: a process that sees one GPU drives device 0") {
  CHECK(pick_local_device(0, 8, 8, "h").device == 0);
  CHECK(pick_local_device(5, 8, 8, "h").device == 5);
  // srun --gpus-per-task=1 / one CUDA_VISIBLE_DEVICES per rank: every process sees one GPU.
  CHECK(pick_local_device(5, 8, 1, "h").device == 0);
  CHECK(pick_local_device(3, 8, 1, "h").error.empty());
  // Four visible GPUs for eight processes: no choice is right, and the message says what to do.
  const DevicePick bad = pick_local_device(5, 8, 4, "gpu-node-3");
  CHECK(bad.device < 0);
  CHECK(bad.error.find("gpu-node-3") != std::string::npos);
  CHECK(bad.error.find("--gpus-per-task=1") != std::string::npos);
}

TEST_CASE("the NUMA node of a GPU's PCI device, from sysfs") {
  char dir[] = "/tmp/shardplan-sysfs-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string root = dir;
  for (const auto& [id, node] : {std::pair{"0000:18:00.0", "1"}, std::pair{"0000:9a:00.0", "-1"}}) {
    const std::string d = root + "/bus/pci/devices/" + id;
    REQUIRE(system(("mkdir -p " + d).c_str()) == 0);
    std::ofstream(d + "/numa_node") << node << "\n";
  }
  // cudaDeviceGetPCIBusId writes an 8-digit domain in capitals.
  CHECK(numa_node_of_pci("00000000:18:00.0", root) == 1);
  CHECK(numa_node_of_pci("0000:18:00.0", root) == 1);
  CHECK(numa_node_of_pci("00000000:9A:00.0", root) == -1);
  CHECK(numa_node_of_pci("0000:00:01.0", root) == -1);
  REQUIRE(system(("rm -rf " + root).c_str()) == 0);
}

namespace {

// Two processes of which only this one waits; the roll call finds `answering` of them.
class TwoProcesses final : public Control {
 public:
  explicit TwoProcesses(int answering) : answering_(answering) {}
  int process() const override { return 0; }
  int processes() const override { return 2; }
  int node() const override { return 0; }
  int local_index() const override { return 0; }
  std::string host() const override { return "idle-node"; }
  std::vector<std::string> allgather(const std::string& mine, const std::string&) override {
    return {mine, mine};
  }
  void barrier(const std::string&) override {}
  std::vector<int> roll_call(double) override {
    ++roll_calls;
    return answering_ == 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
  }
  [[noreturn]] void abort(int status) override { _exit(status); }
  std::string library() const override { return ""; }
  int roll_calls = 0;

 private:
  int answering_;
};

}  // namespace

TEST_CASE(
    "an idle rank waits past the timeout while its busy peers answer, and not once one "
    "is silent") {
  // The peer measures an inter-node tier for 3 timeouts; this process waits in the exchange.
  TwoProcesses busy(2);
  Watchdog watchdog(busy, 0.1);
  const auto start = std::chrono::steady_clock::now();
  watchdog.wait_on_peers(
      [&] { return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(350); },
      "exchanging results after all_reduce on the inter tier", "control_mpi.cpp", 1);
  CHECK(busy.roll_calls >= 3);

  // A silent peer: exit 3 after one timeout, naming it.
  const test::Forked f = test::run_forked([] {
    TwoProcesses silent(1);
    Watchdog w(silent, 0.1);
    RankInfo peer;
    peer.rank = peer.process = 1;
    peer.host = "busy-node";
    RankInfo me;
    me.host = "idle-node";
    w.set_local_ranks({0}, {me, peer});
    w.wait_on_peers([] { return false; }, "exchanging results", "control_mpi.cpp", 2);
  });
  REQUIRE(f.exited);
  CHECK(f.status == kExitTimeout);
  CHECK(f.err.find("rank 1 on host busy-node") != std::string::npos);
}
