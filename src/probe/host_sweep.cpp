// The host-memory sweep: copies between pinned host memory and every GPU (several sizes) and
// STREAM's Copy and Triad on every rank of a node at once. The back-ends move the bytes; the
// sizes, the per-GPU and per-node rates and their definitions are here.
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "harness.hpp"
#include "stream.hpp"

namespace shardplan::probe {

const char* to_string(HostMove m) {
  switch (m) {
    case HostMove::h2d:
      return "h2d";
    case HostMove::d2h:
      return "d2h";
    case HostMove::dram_copy:
      return "stream_copy";
    case HostMove::dram_triad:
      return "stream_triad";
  }
  return "";
}

bool is_link(HostMove m) {
  return m == HostMove::h2d || m == HostMove::d2h;
}

double HostMoveShape::moved_bytes() const {
  const double a = static_cast<double>(array_bytes);
  switch (kind) {
    case HostMove::dram_copy:
      return 2 * a;
    case HostMove::dram_triad:
      return 3 * a;
    default:
      return a;
  }
}

uint32_t host_copy_word(size_t index) {
  return static_cast<uint32_t>(index * 2654435761u) ^ 0x5a5a5a5au;
}

size_t stream_array_bytes(size_t llc_bytes, int ranks_on_node) {
  const size_t share = 4 * llc_bytes / static_cast<size_t>(std::max(1, ranks_on_node));
  return std::max(kMinStreamArrayBytes, share);
}

namespace {

// "32768K" / "36M" as sysfs writes cache sizes.
size_t parse_cache_size(const std::string& text) {
  size_t end = 0;
  const unsigned long long v = std::stoull(text, &end);
  const char unit = end < text.size() ? text[end] : ' ';
  return static_cast<size_t>(v) * (unit == 'K' ? 1024u : unit == 'M' ? 1024u * 1024u : 1u);
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

size_t node_llc_bytes() {
  // Each last-level cache once: CPUs that share one list the same shared_cpu_list.
  std::map<std::string, size_t> caches;
  DIR* dir = opendir("/sys/devices/system/cpu");
  if (dir == nullptr) return 0;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(name[3])) continue;
    for (int index = 4; index >= 0; --index) {
      const std::string base =
          fmt::format("/sys/devices/system/cpu/{}/cache/index{}/", name, index);
      const std::string size = read_line(base + "size");
      if (size.empty()) continue;
      try {
        caches[read_line(base + "level") + ":" + read_line(base + "shared_cpu_list")] =
            parse_cache_size(size);
      } catch (const std::exception&) {
      }
      break;  // the highest index is the last level
    }
  }
  closedir(dir);
  size_t total = 0;
  for (const auto& [key, bytes] : caches) total += bytes;
  return total;
}

RankTiming stream_on_process(const HostMoveShape& shape, const Settings& settings, int threads,
                             int rank, const std::function<void()>& barrier) {
  RankTiming t = run_stream(shape, threads, settings.warmup, settings.iters, barrier);
  t.rank = rank;
  return t;
}

DevicePick pick_local_device(int local_index, int local_processes, int visible,
                             const std::string& host) {
  DevicePick p;
  if (visible >= local_processes && local_index < visible) {
    p.device = local_index;
  } else if (visible == 1) {
    p.device = 0;  // each task sees its own GPU only
  } else {
    p.error = fmt::format(
        "{} runs {} probe processes but they see {} GPU(s) each: start one process per GPU "
        "(mpirun -np <GPUs per node> per node), or bind each task to one GPU (srun "
        "--gpus-per-task=1, or a CUDA_VISIBLE_DEVICES of one device per rank)",
        host, local_processes, visible);
  }
  return p;
}

int numa_node_of_pci(const std::string& bus_id, const std::string& sysfs) {
  std::string id = bus_id;
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // cudaDeviceGetPCIBusId writes an 8-digit domain ("00000000:18:00.0"); sysfs uses 4.
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  const std::string text = read_line(sysfs + "/bus/pci/devices/" + id + "/numa_node");
  try {
    return text.empty() ? -1 : std::max(-1, std::stoi(text));
  } catch (const std::exception&) {
    return -1;
  }
}

namespace {

int ranks_on_busiest_node(const std::vector<RankInfo>& ranks) {
  std::map<int, int> per_node;
  for (const RankInfo& r : ranks) ++per_node[r.node];
  int most = 1;
  for (const auto& [node, n] : per_node) most = std::max(most, n);
  return most;
}

// The slowest node's sum over its ranks of moved bytes / the rank's mean iteration.
double node_rate(const HostMoveShape& shape, const Gathered& g,
                 const std::vector<RankInfo>& ranks) {
  std::map<int, double> per_node;
  for (const auto& [rank, s] : g.rank_s) {
    if (s > 0) per_node[ranks.at(rank).node] += shape.moved_bytes() / s;
  }
  double slowest = 0;
  for (const auto& [node, rate] : per_node) slowest = slowest == 0 ? rate : std::min(slowest, rate);
  return slowest;
}

}  // namespace

void measure_host(Backend& backend, Control& control, const SweepPlan& plan, Reporter& reporter,
                  Results& results) {
  const bool lead = control.process() == 0;
  std::vector<HostMoveShape> shapes;
  size_t stream_bytes = plan.stream_array_bytes;
  if (stream_bytes == 0) {
    stream_bytes = stream_array_bytes(node_llc_bytes(), ranks_on_busiest_node(results.ranks));
  }
  for (HostMove m : backend.host_moves()) {
    if (is_link(m)) {
      for (size_t bytes : plan.host_link_bytes) shapes.push_back({m, bytes});
    } else {
      shapes.push_back({m, stream_bytes});
    }
  }
  for (const HostMoveShape& shape : shapes) {
    const std::string what =
        fmt::format("host {} of {} B per rank", to_string(shape.kind), shape.array_bytes);
    const Gathered all = gather(control, backend.host_move(shape, plan.settings), what);
    HostRow row;
    row.shape = shape;
    row.time = all.time;
    row.rank_bytes_per_s = all.time.avg_s > 0 ? shape.moved_bytes() / all.time.avg_s : 0;
    row.node_bytes_per_s = node_rate(shape, all, results.ranks);
    row.wrong = all.wrong;
    row.rank_s = all.rank_s;
    results.host.push_back(row);
    if (lead) reporter.host_row(row);
  }
}

}  // namespace shardplan::probe
