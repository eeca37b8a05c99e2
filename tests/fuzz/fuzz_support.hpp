// What every libFuzzer harness shares: bad input must come back as InputError (exit 2 in the
// CLI); any other exception, a crash or a sanitizer report is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shardplan/specs.hpp"

namespace shardplan::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Writes `text` to a per-process file under /tmp and returns its path, for parsers that take a
/// path (profiles and model files are loaded by name or path).
std::string write_input(const std::string& text, const char* suffix);

/// What every command does next with a model it accepted: counts it and lays out its ops (a
/// layer pattern indexed past its end, a mixer with no shapes, would show here).
void exercise_model(const ModelSpec& model);

}  // namespace shardplan::fuzz
