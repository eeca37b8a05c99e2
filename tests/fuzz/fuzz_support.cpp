// The one temporary file each harness process reuses for parsers that read a path.
#include "fuzz_support.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace shardplan::fuzz {

std::string write_input(const std::string& text, const char* suffix) {
  const std::string path =
      "/tmp/shardplan-fuzz-" + std::to_string(static_cast<long>(::getpid())) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

}  // namespace shardplan::fuzz
