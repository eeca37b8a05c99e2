// Runs an emitted Megatron-LM script with a stand-in torchrun and reads back what
// pretrain_gpt.py would receive (megatron_rules.hpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>

#include "megatron_rules.hpp"
#include "support.hpp"

namespace shardplan::test {

MegatronLaunch run_megatron_script(const std::string& script) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/megatron.sh";
  write_file(path, script);
  write_file(dir + "/torchrun",
             "#!/bin/sh\nprintf '%s\\n' \"CDMC=${CUDA_DEVICE_MAX_CONNECTIONS:-}\" > \"$OUT\"\n"
             "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$OUT\"\n");
  const std::string cmd = "chmod +x " + dir + "/torchrun && cd " + dir + " && PATH=" + dir +
                          ":$PATH OUT=" + dir +
                          "/args NODE_RANK=1 MASTER_ADDR=10.0.0.1 CHECKPOINT_DIR=/ckpt "
                          "DATA_PATH=/data/c4 TOKENIZER_MODEL=gpt2 TRAIN_ITERS=100000 bash " +
                          path + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::istringstream lines(read_file(dir + "/args"));
  MegatronLaunch l;
  std::string line, flag;
  bool script_args = false;
  long long nnodes = 1, nproc = 1;
  std::getline(lines, line);
  l.cuda_device_max_connections = line.substr(5);
  while (std::getline(lines, line)) {
    if (!script_args) {
      if (line == "pretrain_gpt.py") script_args = true;
      if (flag == "--nnodes") nnodes = std::stoll(line);
      if (flag == "--nproc_per_node") nproc = std::stoll(line);
      flag = line;
      continue;
    }
    if (line.rfind("--", 0) == 0) {
      flag = line;
      l.args[flag] = "";
    } else if (!flag.empty()) {
      // An nargs='*' flag (--recompute-modules) takes every word up to the next flag.
      std::string& v = l.args[flag];
      v = v.empty() ? line : v + " " + line;
    }
  }
  l.world_size = static_cast<int>(nnodes * nproc);
  return l;
}

}  // namespace shardplan::test
