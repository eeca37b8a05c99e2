// Wall time of whole shardplan runs, process start included, as a user meets them: `memory`,
// `estimate` and `plan` for a 70B model. Usage: run_latency [path/to/shardplan]
// Exit status 1 is shardplan's answer "does not fit" (the estimate of a plan that needs more
// memory than the GPU has), a run like any other; 2 and up, or a signal, is a failure.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string binary = argc > 1 ? argv[1] : "build/shardplan";
  const std::vector<std::string> commands = {
      "memory --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --zero 3 --recompute full --json",
      "estimate --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --tp 8 --pp 2 --zero 1 --json",
      "plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256 --json",
      "plan --model gpt3-175b --cluster dgx-a100 --gpus 512 --global-batch 1536 --json",
  };
  fmt::print("# wall time per run, process start included (20 runs each)\n");
  for (const std::string& args : commands) {
    const std::string cmd = binary + " " + args + " >/dev/null";
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const int status = std::system(cmd.c_str());
      if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        fmt::print(stderr, "failed (status {}): {}\n", status, cmd);
        return 1;
      }
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    fmt::print("{:<100} median {:6.1f} ms  min {:6.1f} ms\n", args, ms[ms.size() / 2], ms.front());
  }
  return 0;
}
