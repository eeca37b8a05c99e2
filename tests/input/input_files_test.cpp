// Input files read as strictly as flags: bounded reads of regular files only, duplicate JSON keys
// refused, and config.json fields of the wrong type or out of range refused by name.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// The message of the InputError `f` throws ("" when it throws none).
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A Llama-2-7B-shaped config.json with one field set to `value` (JSON text).
std::string llama_config(const std::string& field, const std::string& value) {
  nlohmann::json j = {{"model_type", "llama"},          {"hidden_size", 4096},
                      {"num_hidden_layers", 32},        {"num_attention_heads", 32},
                      {"intermediate_size", 11008},     {"vocab_size", 32000},
                      {"max_position_embeddings", 4096}};
  j[field] = nlohmann::json::parse(value);
  return j.dump();
}

}  // namespace

TEST_CASE("a device, a FIFO or a directory is refused at once, not read forever") {
  // Before: std::ifstream read /dev/zero until memory ran out.
  const std::string why = refusal([] { read_text_file("/dev/zero", "--model"); });
  CHECK(has(why, "--model"));
  CHECK(has(why, "not a regular file"));
  CHECK(has(refusal([] { read_text_file("/tmp", "--model"); }), "directory"));
  CHECK(has(refusal([] { read_text_file("/no/such/file.json", "--model"); }), "cannot read"));
}

TEST_CASE("an output path that is a device or a pipe is written into, not replaced") {
  // Before: --trace /dev/null run as root renamed a regular file over the device node.
  const std::string dir = test::make_temp_dir();
  const std::string fifo = dir + "/out.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // The read end opened first (without waiting for a writer), so the write finds a reader; the
  // text fits in the pipe's buffer and is read back once written.
  const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  write_file_atomically(fifo, "{\"traceEvents\":[]}", "--trace");
  std::string got;
  char buffer[256];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
    got.append(buffer, static_cast<size_t>(n));
  close(fd);
  CHECK(got == "{\"traceEvents\":[]}");
  struct stat st {};
  REQUIRE(stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  // No temporary file left beside it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("an input file over the size limit is refused with the limit") {
  const std::string dir = test::make_temp_dir();
  const std::string big = dir + "/big.json";
  test::write_file(big, std::string(static_cast<size_t>(kMaxInputFileBytes) + 1, ' '));
  const std::string why = refusal([&] { read_text_file(big, "--model"); });
  CHECK(has(why, "larger than 64 MiB"));
  test::write_file(big, "{}");
  CHECK(read_text_file(big, "--model") == "{}");
}

TEST_CASE("a key given twice in one object is refused, in every JSON input") {
  const std::string dir = test::make_temp_dir();
  // Before: the second hidden_size silently replaced the first.
  std::string twice = llama_config("hidden_size", "4096");
  twice.insert(1, "\"hidden_size\": 5120, ");
  test::write_file(dir + "/config.json", twice);
  const std::string why = refusal([&] { load_model(dir + "/config.json"); });
  CHECK(has(why, "hidden_size"));
  CHECK(has(why, "given twice"));
  // Nested objects name the path; the same key in two different objects is fine.
  test::write_file(dir + "/nested.json",
                   R"({"a": {"x": 1, "y": {"x": 2}}, "b": {"x": 3, "sources": {"q": 1, "q": 2}}})");
  CHECK(has(refusal([&] { read_json_file(dir + "/nested.json", "FILE"); }), "b.sources.q"));
  test::write_file(dir + "/fine.json",
                   R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})");
  CHECK(read_json_file(dir + "/fine.json", "FILE").at("b").at("x") == 2);
}

TEST_CASE("config.json fields are checked as strictly as the flags") {
  const std::string dir = test::make_temp_dir();
  const std::string path = dir + "/config.json";
  auto why = [&](const std::string& field, const std::string& value) {
    test::write_file(path, llama_config(field, value));
    return refusal([&] { load_model(path); });
  };
  // 30 heads do not divide 4096 (--heads 33 is refused the same way); before: head_dim 136.
  const std::string heads = why("num_attention_heads", "30");
  CHECK(has(heads, "num_attention_heads"));
  CHECK(has(heads, "30 heads do not divide hidden size 4096"));
  // Before: "yes" read as false (untied embeddings, 131M more parameters).
  const std::string tie = why("tie_word_embeddings", "\"yes\"");
  CHECK(has(tie, "tie_word_embeddings"));
  CHECK(has(tie, "expected true or false"));
  CHECK(has(why("attention_bias", "1"), "attention_bias"));
  // Before: 0 became the 4,096 default without a word.
  const std::string positions = why("max_position_embeddings", "0");
  CHECK(has(positions, "max_position_embeddings"));
  CHECK(has(positions, "at least 1"));
  CHECK(has(why("num_key_value_heads", "0"), "num_key_value_heads"));
  CHECK(has(why("head_dim", "0"), "head_dim"));
  // A head_dim that is given makes any head count valid (Gemma 7B: 16 x 256 != 3072).
  nlohmann::json given = nlohmann::json::parse(llama_config("head_dim", "128"));
  given["num_attention_heads"] = 30;
  test::write_file(path, given.dump());
  CHECK(load_model(path).head_dim == 128);
}
