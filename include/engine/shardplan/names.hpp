// Names users type: case folding, "did you mean" for presets, profile keys, subcommands and
// flags, and the comma lists of names that flags take.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

/// The text in lower case (ASCII), for case-insensitive names.
std::string lowered(std::string_view text);

/// Levenshtein distance between two names.
size_t edit_distance(const std::string& a, const std::string& b);

/// The same, where only "within `bound` edits or not" matters: the distance when it is at most
/// `bound`, else bound + 1, found without filling the table past the bound (names whose lengths
/// differ by more than the bound are not compared at all).
size_t edit_distance(const std::string& a, const std::string& b, size_t bound);

/// Up to `count` candidates closest to `wanted`, nearest first (case-insensitive; a candidate
/// that contains what was typed counts as near).
std::vector<std::string> nearest_names(const std::string& wanted,
                                       const std::vector<std::string>& candidates,
                                       size_t count = 3);

/// The items of a comma list ("H100-SXM, H200"), each trimmed of spaces and tabs; empty items
/// (",,", a trailing comma) are dropped. Every flag that takes a list splits it here.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

/// The `field` (a name) of every row of a descriptor table joined by `separator`
/// ("1f1b | interleaved | ..."), for the help strings and messages that list a table's options.
template <typename Rows, typename Field>
std::string join_field(const Rows& rows, Field field, std::string_view separator) {
  std::string out;
  for (const auto& row : rows) {
    if (!out.empty()) out += separator;
    out += row.*field;
  }
  return out;
}

/// The row of a descriptor table whose `key` equals `value`, or nullptr: the one lookup behind
/// every table's by-id and by-name search.
template <typename Rows, typename Key, typename Value>
auto find_row(const Rows& rows, Key key, const Value& value) -> decltype(&*std::begin(rows)) {
  for (const auto& row : rows) {
    if (row.*key == value) return &row;
  }
  return nullptr;
}

/// "a, b or c" from "a, b, c": the last comma of a list as "or", for "use ..." messages.
std::string or_last(std::string list);

}  // namespace shardplan
