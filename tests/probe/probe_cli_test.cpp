// `shardplan probe` as users run it: under mpirun with the mpi back-end (then planning with the
// profile it wrote), with a rank that stops responding, with the nccl back-end on a machine
// without a GPU, and with bad flags.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;
using shardplan::test::run_command;

namespace {

std::string temp_path(const char* stem) {
  std::string path = std::string("/tmp/shardplan-") + stem + "-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  close(mkstemp(name.data()));
  std::remove(name.data());
  return std::string(name.data()) + ".json";
}

bool exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// mpirun as root in a container: allowed explicitly, more ranks than cores allowed; `timeout`
// keeps a broken watchdog from hanging the suite.
std::string mpirun(int ranks, const std::string& args) {
  return "timeout -k 5 120 " SHARDPLAN_MPIRUN " --allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks) + " " SHARDPLAN_BINARY " " + args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace

#ifdef SHARDPLAN_MPIRUN
TEST_CASE("a straggler injected into an MPI run is named, with its host and how much slower" *
          doctest::test_suite("probe_mpi")) {
  const std::string out = temp_path("probe-straggler");
  // Rank 1's GEMM calls take 2 ms longer (--debug-slow-rank, for tests): 64^3 takes ~0.01 ms.
  const auto r = run_command(mpirun(2, "probe --backend mpi --out " + out +
                                           " --collectives all_reduce --max-bytes 4KiB --iters 5"
                                           " --warmup 1 --gemm-sizes 64 --stream-bytes none"
                                           " --debug-slow-rank 1"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "# Stragglers"));
  CHECK(contains(r.out, "rank 1 on " + host_name() + ": GEMM 64x64x64 fp32 took"));
  CHECK_FALSE(contains(r.out, "rank 0 on " + host_name() + ": GEMM"));
  const auto p = read_json(out);
  // Rank 1's two GEMMs (fp32, fp64) and no GEMM of rank 0; a collective may also be flagged on
  // a loaded machine, which this test does not judge.
  int slow_gemms[2] = {0, 0};
  for (const auto& f : p.at("fit").at("stragglers").at("flagged")) {
    if (f.at("what").get<std::string>().rfind("GEMM", 0) == 0)
      ++slow_gemms[f.at("rank").get<int>()];
  }
  CHECK(slow_gemms[1] == 2);
  CHECK(slow_gemms[0] == 0);
  // Said before it started: the forecast.
  CHECK(contains(r.err, "probe: forecast:"));
  std::remove(out.c_str());
}

TEST_CASE("mpirun -np 2 probe --backend mpi: nccl-tests table, a profile, and a plan with it" *
          doctest::test_suite("probe_mpi")) {
  const std::string out = temp_path("probe-mpi");
  const auto r = run_command(mpirun(2, "probe --backend mpi --out " + out + " --html " + out +
                                           ".html --min-bytes 1KiB --max-bytes 1MiB --iters 5"
                                           " --warmup 2 --gemm-sizes 64,96 --model gpt2"
                                           " --seq-len 128 --stream-bytes 16MiB"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  // --html: the report of what was just measured (the html test renders such a page).
  const std::string page = shardplan::test::read_file(out + ".html");
  CHECK(page.find("Bus bandwidth vs message size") != std::string::npos);
  CHECK(page.find("GEMM throughput vs size") != std::string::npos);
  // The node's STREAM results are charted; no GPU fabric's nominal line is drawn over links
  // measured between CPU processes (the mpi back-end moved no GPU memory).
  CHECK(page.find("Host memory bandwidth (measured)") != std::string::npos);
  CHECK(page.find("STREAM Triad, 16 MiB arrays (per node)") != std::string::npos);
  CHECK(page.find("between CPU processes, not GPUs") != std::string::npos);
  CHECK(page.find("nominal nvlink") == std::string::npos);

  // The table: nccl-tests' names and units lines, '#' before every non-data line, nine columns.
  const std::regex heading(R"(^# (\w+) \(\w+_perf\) on the .*)");
  const std::regex names(
      R"(^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong\s*$)");
  const std::regex units(R"(^#\s+\(B\)\s+\(elements\)\s+\(us\)\s+\(GB/s\)\s+\(GB/s\)\s*$)");
  int name_lines = 0, unit_lines = 0, data = 0;
  std::string section;
  for (const std::string& line : lines_of(r.out)) {
    if (std::regex_match(line, names)) ++name_lines;
    if (std::regex_match(line, units)) ++unit_lines;
    std::smatch m;
    if (std::regex_match(line, m, heading)) section = m[1];
    if (line.rfind("# GEMM D", 0) == 0) section = "gemm";
    if (line.empty() || line[0] == '#' || section == "gemm" || section.empty()) continue;
    if (section != "all_reduce" && section != "all_gather") continue;
    const auto f = fields(line);
    REQUIRE(f.size() == 9);
    ++data;
    const double size = std::stod(f[0]), count = std::stod(f[1]), time_us = std::stod(f[5]);
    const double alg = std::stod(f[6]), bus = std::stod(f[7]);
    CHECK(count == size / 4);
    CHECK(f[2] == "float");
    CHECK(f[3] == (section == "all_reduce" ? "sum" : "none"));
    CHECK(f[8] == "0");
    // algbw = S / t in GB/s; busbw = algbw x 2(n-1)/n = 1 (all-reduce) or (n-1)/n = 1/2 (gather),
    // to the table's two decimals.
    const double expected_alg = size / time_us / 1e3;
    const double expected_bus = expected_alg * (section == "all_reduce" ? 1.0 : 0.5);
    CHECK(std::abs(alg - expected_alg) <= 0.006 + 0.01 * expected_alg);
    CHECK(std::abs(bus - expected_bus) <= 0.006 + 0.01 * expected_bus);
  }
  CHECK(name_lines == 5);  // five collectives on the one tier a single node has
  CHECK(unit_lines == 5);
  CHECK(data == 22);  // 1 KiB .. 1 MiB: 11 sizes, two sections checked
  CHECK(contains(r.out, "# Out of bounds values : 0 OK"));
  CHECK(contains(r.out, "# Avg bus bandwidth    : "));
  CHECK(contains(r.out, "# GEMM best fp32"));
  CHECK(contains(r.out, "kept out of the GPU profile"));
  CHECK(contains(r.err, "probe: intra all_reduce 1024 B"));  // progress on stderr

  // The profile: measured intra link, raw rows, GEMMs at the model's shapes, provenance.
  const auto p = read_json(out);
  const auto& intra = p.at("intra");
  CHECK(intra.at("measured") == true);
  CHECK(intra.at("busbw_gb_per_s").get<double>() > 0.01);
  CHECK(intra.at("collective_busbw_gb_per_s").size() == 5);
  // What was measured is said: CPU shared memory between processes, not the GPU's NVLink.
  CHECK(contains(intra.value("medium", ""), "CPU shared memory"));
  CHECK(contains(intra.at("description").get<std::string>(), "measured over CPU shared memory"));
  CHECK(contains(p.at("description").get<std::string>(),
                 "links measured between CPU processes, not between H100-SXM GPUs"));
  CHECK(p.at("gpus_per_node") == 2);
  CHECK(p.at("measurements").at("collectives").size() == 55);
  for (const auto& row : p.at("measurements").at("collectives")) CHECK(row.at("correct") == true);
  // Each row names the call that was timed: the blocking collective a training job makes, not a
  // non-blocking one polled by the probe (which timed its own polling).
  const std::map<std::string, std::string> blocking = {
      {"all_reduce", "MPI_Allreduce"},
      {"all_gather", "MPI_Allgather"},
      {"reduce_scatter", "MPI_Reduce_scatter_block"},
      {"all_to_all", "MPI_Alltoall"},
      {"broadcast", "MPI_Bcast"},
      {"send_recv", "MPI_Isend/MPI_Irecv, MPI_Waitsome"}};
  for (const auto& row : p.at("measurements").at("collectives")) {
    const std::string kind = row.at("collective").get<std::string>();
    REQUIRE(blocking.count(kind) == 1);
    CHECK(row.value("call", "") == blocking.at(kind));
  }
  int model_gemms = 0;
  for (const auto& g : p.at("measurements").at("gemm")) {
    model_gemms += contains(g.at("label").get<std::string>(), "gpt2");
    CHECK(g.at("tflop_per_s").get<double>() > 0);
    CHECK(g.at("correct") == true);
  }
  CHECK(model_gemms >= 4);                              // qkv, output, mlp up, mlp down, lm head
  CHECK_FALSE(p.at("gpu").value("calibrated", false));  // CPU GEMMs never calibrate the GPU
  const auto& prov = p.at("provenance");
  CHECK(prov.at("backend") == "mpi");
  CHECK(prov.at("hosts").at(0) == host_name());
  CHECK(prov.at("ranks").size() == 2);
  CHECK(contains(prov.at("libraries").at("mpi").get<std::string>(), "MPI"));
  CHECK(contains(prov.at("libraries").at("blas").get<std::string>(), "BLAS"));
  CHECK(std::regex_match(prov.at("date").get<std::string>(),
                         std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  CHECK(contains(prov.at("command_line").get<std::string>(), "--backend mpi"));

  // Plan with it.
  const auto m = run_cli("memory --cluster " + out + " --model llama-2-7b --gpus 2 --json");
  INFO(m.err);
  REQUIRE(m.status <= 1);  // 0 fits, 1 does not: either way it planned
  const auto plan = nlohmann::json::parse(m.out);
  const auto& cluster = plan.at("cluster");
  CHECK(cluster.at("name").get<std::string>().rfind("probed-", 0) == 0);
  CHECK(cluster.at("intra").at("measured") == true);
  CHECK(cluster.at("intra").at("busbw_bytes_per_s").get<double>() ==
        doctest::Approx(intra.at("busbw_gb_per_s").get<double>() * 1e9).epsilon(1e-6));
  CHECK(cluster.at("gpus_per_node") == 2);
  // Every plan on a CPU-measured profile says so, in JSON and in text.
  bool cpu_note = false;
  for (const auto& n : plan.at("notes")) {
    cpu_note |= contains(n.get<std::string>(), "the intra-node link measured-intra (") &&
                contains(n.get<std::string>(),
                         "was measured by shardplan probe over CPU shared "
                         "memory") &&
                contains(n.get<std::string>(), "not between H100-SXM GPUs");
  }
  CHECK(cpu_note);
  for (const char* command : {"memory", "comm", "estimate", "plan"}) {
    CAPTURE(command);
    const auto t = run_cli(std::string(command) + " --cluster " + out +
                           " --model gpt2 --gpus 2 --global-batch 8");
    INFO(t.err);
    CHECK(t.status <= 1);
    CHECK(contains(t.out, "measured-intra (measured between CPU processes, not GPUs)"));
    CHECK(contains(t.out, "note: the intra-node link measured-intra ("));
  }

  // The node's CPU memory bandwidth: STREAM on both ranks at once, in host.measured beside the
  // GPU profile's datasheet host, and the planner's CPU Adam priced with it.
  CHECK(contains(r.out, "# CPU memory per node (STREAM Triad, 2 rank(s) x 16777216 B arrays)"));
  REQUIRE(p.at("measurements").at("host").size() == 2);  // Copy and Triad
  for (const auto& row : p.at("measurements").at("host")) CHECK(row.at("correct") == true);
  const double dram_gb_per_s = p.at("host").at("measured").at("dram_gb_per_s").get<double>();
  CHECK(std::isfinite(dram_gb_per_s));
  CHECK(dram_gb_per_s > 0);
  CHECK(p.at("host").at("dram_gb_per_s") == 614.4);  // the datasheet figure stays beside it
  const auto e = run_cli("estimate --cluster " + out +
                         " --model llama-3.1-8b --gpus 1 --zero 1 --offload optimizer --json");
  INFO(e.err);
  REQUIRE(e.status <= 1);
  const auto est = nlohmann::json::parse(e.out);
  CHECK(est.at("cluster").at("host").at("measured_dram_bytes_per_s").get<double>() ==
        doctest::Approx(dram_gb_per_s * 1e9));
  const auto& offload = est.at("time").at("offload");
  CHECK(offload.at("dram_figure") == "measured");
  CHECK(offload.at("link_figure") == "datasheet");  // no GPU here: no copies measured
  const double params = est.at("memory").at("total_params").get<double>();
  CHECK(offload.at("cpu_adam_s").get<double>() ==
        doctest::Approx(params * 30 / (dram_gb_per_s * 1e9)));  // kCpuAdamBytesPerParam
  const auto text = run_cli("estimate --cluster " + out +
                            " --model llama-3.1-8b --gpus 1 --zero 1 --offload optimizer");
  CHECK(contains(text.out, "CPU memory measured (probe)"));

  // One node: the inter-node tier was not measured, and every output that uses it says so.
  CHECK(contains(r.out, "# WARNING: inter not measured (a single node"));
  CHECK(contains(r.err, "probe: warning: inter not measured (a single node"));
  const auto across = run_cli("comm --cluster " + out + " --model gpt2 --gpus 4 --zero 1");
  INFO(across.err);
  CHECK(contains(across.out, "2 nodes of 2"));
  CHECK(contains(across.out, "(nominal: not measured by the probe) between"));
  std::remove(out.c_str());
}

TEST_CASE("a rank that stops responding: exit 3 within the timeout plus a few seconds, naming it" *
          doctest::test_suite("probe_hang")) {
  const std::string out = temp_path("probe-hang");
  const double timeout_s = 3;
  const auto r = run_command(mpirun(2, "probe --backend mpi --out " + out +
                                           " --min-bytes 1KiB --max-bytes 64KiB --iters 3"
                                           " --gemm-sizes none --debug-hang-rank 1 --timeout-s 3"));
  INFO(r.err);
  CHECK(r.status == 3);  // MPI_Abort's status, passed on by mpirun
  CHECK(r.seconds < timeout_s + 5);
  CHECK(contains(r.err, "rank 1 on host " + host_name()));
  CHECK(contains(r.err, "did not answer"));
  // host:file:line of the wait that gave up, and the operation.
  CHECK(std::regex_search(
      r.err, std::regex(host_name() + R"(:backend_mpi\.cpp:\d+: rank 0: no progress for 3 s)")));
  CHECK(contains(r.err, "all_reduce"));
  CHECK_FALSE(exists(out));
}

TEST_CASE("--backend auto without a GPU says why and probes with MPI (one process)" *
          doctest::test_suite("probe_auto")) {
  const std::string out = temp_path("probe-auto");
  const auto r = run_cli("probe --backend auto --out " + out + " --gemm-sizes 32 --iters 2");
  INFO(r.err);
  if (access("/dev/nvidiactl", F_OK) == 0) return;  // a GPU machine takes nccl
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "using mpi"));
  CHECK(contains(r.out, "one rank per node"));  // nothing to measure between ranks
  const auto p = read_json(out);
  CHECK_FALSE(p.at("intra").value("measured", false));  // the preset's link, not measured
  CHECK(contains(p.at("intra").at("sources").at("busbw_gb_per_s").get<std::string>(),
                 "not measured"));
  CHECK(p.at("measurements").at("gemm").size() == 2);  // fp32 and fp64
  std::remove(out.c_str());
}

TEST_CASE("one rank (one GPU) writes its HTML report: no collective, and the page says why" *
          doctest::test_suite("probe_auto")) {
  // bench/gpu-probe.sh on a one-GPU machine: no tier has two ranks, so the profile has no
  // collective rows; the report's bus-bandwidth chart used to throw "the profile has no
  // collective measurements" and the probe exited 2 after writing the JSON.
  const std::string out = temp_path("probe-one-rank");
  const std::string html = out + ".html";
  const auto r = run_cli("probe --backend mpi --out " + out + " --html " + html +
                         " --gemm-sizes 32 --iters 2 --stream-bytes none");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(exists(out));
  REQUIRE(exists(html));
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(contains(page, "No collective was measured"));
  // `report` takes the same profile.
  const auto again = run_cli("report " + out + " --html " + html);
  INFO(again.err);
  CHECK(again.status == 0);
  std::remove(out.c_str());
  std::remove(html.c_str());
}
#endif

#ifdef SHARDPLAN_HAVE_NCCL_PLUGIN
TEST_CASE("--backend nccl without a GPU: exit 2 at once, naming the problem" *
          doctest::test_suite("probe_nccl_without_gpu")) {
  if (access("/dev/nvidiactl", F_OK) == 0) {
    MESSAGE("this machine has an NVIDIA GPU: bench/gpu-probe.sh covers the nccl back-end");
    return;
  }
  const std::string out = temp_path("probe-nccl");
  const auto r = run_cli("probe --backend nccl --out " + out);
  CHECK(r.status == 2);
  CHECK(r.seconds < 10);
  CHECK(contains(r.err, "--backend nccl"));
  CHECK(contains(r.err, "no usable NVIDIA GPU"));
  CHECK(contains(r.err, "driver"));
  CHECK(contains(r.err, "use --backend mpi"));
  CHECK(r.out.empty());
  CHECK_FALSE(exists(out));
}
#endif

TEST_CASE("a CPU-measured profile says so in every plan on it, old profiles without medium too" *
          doctest::test_suite("probe_cli_flags")) {
  // The fixture: `mpirun -np 2 probe --backend mpi` on one host; the same without the "medium"
  // keys is what the mpi back-end wrote before links named their medium.
  auto profile = read_json(std::string(SHARDPLAN_TEST_DATA) + "/probe/probe-mpi-2ranks.json");
  REQUIRE(contains(profile.at("intra").value("medium", ""), "CPU shared memory"));
  const std::string current = temp_path("cpu-profile");
  shardplan::test::write_file(current, profile.dump());
  profile["intra"].erase("medium");
  const std::string old = temp_path("cpu-profile-old");
  shardplan::test::write_file(old, profile.dump());
  for (const std::string& file : {current, old}) {
    CAPTURE(file);
    const auto text =
        run_cli("estimate --cluster " + file + " --model gpt2 --gpus 2 --global-batch 8");
    INFO(text.err);
    REQUIRE(text.status == 0);
    CHECK(contains(text.out, "measured-intra (measured between CPU processes, not GPUs)"));
    CHECK(contains(text.out, "note: the intra-node link measured-intra ("));
    CHECK(contains(text.out, "not between H100-SXM GPUs"));
    const auto j =
        run_cli("estimate --cluster " + file + " --model gpt2 --gpus 2 --global-batch 8 --json");
    REQUIRE(j.status == 0);
    const auto parsed = nlohmann::json::parse(j.out);
    bool noted = false;
    for (const auto& n : parsed.at("notes")) {
      noted |= contains(n.get<std::string>(), "the intra-node link measured-intra (");
    }
    CHECK(noted);
  }
  // One GPU uses no link: nothing to say.
  const auto single = run_cli("estimate --cluster " + current + " --model gpt2 --gpus 1");
  CHECK_FALSE(contains(single.out, "note: the intra-node link"));
  std::remove(current.c_str());
  std::remove(old.c_str());
}

TEST_CASE("report on a file that is not a profile: exit 2 saying where the JSON breaks" *
          doctest::test_suite("probe_cli_flags")) {
  const std::string bad = temp_path("report-bad");
  shardplan::test::write_file(bad, "{\n  \"name\": \"x\",\n  oops\n}\n");
  const auto r = run_cli("report " + bad + " --html " + bad + ".html");
  CHECK(r.status == 2);
  CHECK(contains(r.err, bad));  // the file is named
  CHECK(contains(r.err, "malformed JSON at line 3"));
  CHECK_FALSE(exists(bad + ".html"));
  shardplan::test::write_file(bad, "[1, 2]");
  const auto array = run_cli("report " + bad + " --html " + bad + ".html");
  CHECK(array.status == 2);
  CHECK(contains(array.err, "is JSON but not an object"));
  std::remove(bad.c_str());
}

TEST_CASE("probe: bad flags exit 2 naming the flag, before any process starts" *
          doctest::test_suite("probe_cli_flags")) {
  struct Case {
    const char* args;
    const char* field;
  };
  const Case cases[] = {
      {"probe --backend tpu", "--backend"},
      {"probe --backend mpi --min-bytes 1MiB --max-bytes 1KiB", "--max-bytes"},
      {"probe --backend mpi --max-bytes 9GiB", "--max-bytes"},
      {"probe --backend mpi --collectives all_reduce,allreduce", "--collectives"},
      {"probe --backend mpi --gemm-sizes 12x3", "--gemm-sizes"},
      {"probe --backend mpi --gemm-dtypes bf12", "--gemm-dtypes"},
      {"probe --backend mpi --timeout-s 0", "--timeout-s"},
      {"probe --backend mpi --iters 0", "--iters"},
      {"probe --backend mpi --gpu Z100", "--gpu"},
      {"probe --backend mpi --cluster no-such-cluster", "--cluster"},
      {"probe --backend mpi --params 7B", "--model"},
      {"probe --backend mpi --model llama-2-7b --tp 3", "--tp"},
      {"probe --backend mpi --pair-rounds -1", "'-1' must be 0 (no node pairs) to 64"},
      {"probe --backend mpi --pair-rounds 65", "--pair-rounds"},
      {"probe --job slurm --nodes 2 --out /tmp/shardplan-never.json", "--job-out"},
      {"probe --forecast --nodes 2 --gpus 16", "--nodes N or --gpus N, not both"},
  };
  for (const Case& c : cases) {
    const std::string args = c.args;
    CAPTURE(args);
    const auto r = run_cli(c.args);
    CHECK(r.status == 2);
    CHECK(contains(r.err, c.field));
    CHECK(r.out.empty());
    CHECK(r.seconds < 5);
  }
}
