// Wall and CPU time of whole shardplan runs, process start included, as a user meets them:
// `--version` (start-up alone), `memory`, `estimate` (one with `--trace`) and `plan`. Each run is
// spawned directly (no shell) with its output to /dev/null; CPU is the child's user + system time
// (wait4), so a spinning library thread shows as CPU above wall. Usage: run_latency
// [path/to/shardplan] [runs] Exit status 1 is shardplan's answer "does not fit" (the estimate of a
// plan that needs more memory than the GPU has), a run like any other; 2 and up, or a signal, is a
// failure.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Run {
  double wall_ms = 0;
  double cpu_ms = 0;
  int status = 0;
};

Run spawn(const std::string& binary, const std::string& args) {
  std::vector<std::string> words{binary};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  Run r;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    r.status = -1;
    return r;
  }
  rusage usage{};
  wait4(pid, &r.status, 0, &usage);
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.cpu_ms = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
             (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-3;
  posix_spawn_file_actions_destroy(&actions);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string binary = argc > 1 ? argv[1] : "build/shardplan";
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  const std::vector<std::string> commands = {
      "--version",
      "memory --model llama-3-8b --gpu h100",
      "memory --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --zero 3 --recompute full --json",
      "estimate --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --tp 8 --pp 2 --zero 1 --json",
      "plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256 --json",
      "plan --model gpt3-175b --cluster dgx-a100 --gpus 512 --global-batch 1536 --json",
      // The same 405B step with and without its trace (17,642 events, 3.7 MB of JSON).
      "estimate --model llama-3.1-405b --gpu H100-SXM --gpus 2048 --tp 8 --pp 16 --interleave 2 "
      "--first-stage-layers 3 --last-stage-layers 3 --global-batch 2048 --recompute selective "
      "--sequence-parallel --zero 1",
      "estimate --model llama-3.1-405b --gpu H100-SXM --gpus 2048 --tp 8 --pp 16 --interleave 2 "
      "--first-stage-layers 3 --last-stage-layers 3 --global-batch 2048 --recompute selective "
      "--sequence-parallel --zero 1 --trace /dev/null",
  };
  fmt::print("# {} runs each, process start included; wall and CPU (user + system) medians\n",
             runs);
  for (const std::string& args : commands) {
    std::vector<double> wall, cpu;
    for (int i = 0; i < runs; ++i) {
      const Run r = spawn(binary, args);
      if (r.status < 0 || !WIFEXITED(r.status) || WEXITSTATUS(r.status) > 1) {
        fmt::print(stderr, "failed (status {}): {} {}\n", r.status, binary, args);
        return 1;
      }
      wall.push_back(r.wall_ms);
      cpu.push_back(r.cpu_ms);
    }
    fmt::print("{:<92} wall {:6.1f} ms (min {:6.1f})  cpu {:6.1f} ms\n", args, median(wall),
               *std::min_element(wall.begin(), wall.end()), median(cpu));
  }
  return 0;
}
