// The one doctest main shared by every suite.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support.hpp"

namespace shardplan::test {

ModelSpec gpt(int layers, int hidden, int heads, int vocab, int seq) {
  ModelSpec m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.seq_len = m.max_positions = seq;
  return m;  // ModelSpec's defaults are GPT-3's: GeLU, LayerNorm, biases, dropout, tied
}

ClusterSpec cluster(int gpus, const std::string& preset) {
  ClusterOptions o;
  o.cluster = preset;
  o.gpus = gpus;
  return build_cluster(o);
}

ParallelPlan plan(int dp, int tp, int pp, int micro_batch) {
  ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.micro_batch = micro_batch;
  return p;
}

double tile_wave_share(double rows, double cols, double problems, double sms) {
  const double tiles = problems * std::ceil(rows / 128) * std::ceil(cols / 256);
  const double waves = std::ceil(tiles / sms);
  return problems * rows * cols / (waves * sms * 128 * 256);
}

TrainingSpec training(int seq_len, int global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.global_batch = global_batch;
  return t;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string make_temp_dir() {
  char dir[] = "/tmp/shardplan-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

ModelSpec params_only(double params) {
  ModelSpec m;
  m.params_only = params;
  return m;
}

CliResult run_cli(const std::string& args) {
  return run_command(std::string(SHARDPLAN_BINARY) + " " + args);
}

CliResult run_command(const std::string& command) {
  char out_path[] = "/tmp/shardplan-cli-out-XXXXXX";
  char err_path[] = "/tmp/shardplan-cli-err-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  close(out_fd);
  close(err_fd);
  const std::string cmd = command + " >" + out_path + " 2>" + err_path;
  const auto start = std::chrono::steady_clock::now();
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  std::remove(out_path);
  std::remove(err_path);
  return r;
}

void check_refused(const std::string& args, const std::string& needle) {
  CAPTURE(args);
  const CliResult r = run_cli(args);
  CHECK(r.status == 2);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(r.out.empty());
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool references_remote(const std::string& page) {
  for (const std::string needle : {"src=", "href=", "url("}) {
    for (size_t at = page.find(needle); at != std::string::npos; at = page.find(needle, at + 1)) {
      size_t i = at + needle.size();
      while (i < page.size() && (page[i] == ' ' || page[i] == '"' || page[i] == '\'')) ++i;
      const std::string rest = page.substr(i, 8);
      if (rest.rfind("http:", 0) == 0 || rest.rfind("https:", 0) == 0 || rest.rfind("//", 0) == 0)
        return true;
    }
  }
  return false;
}

double rel_err(double a, double b) {
  return std::fabs(a - b) / std::fabs(b);
}

}  // namespace shardplan::test
