// Case folding and nearest-name suggestions for everything a user names.
#include "shardplan/names.hpp"

#include <algorithm>
#include <cctype>

namespace shardplan {

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b, size_t bound) {
  const size_t apart = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (apart > bound) return bound + 1;  // each edit changes the length by one at most
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t least = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
      least = std::min(least, row[j]);
    }
    // A row's minimum never falls from one row to the next: once past the bound, stop.
    if (least > bound) return bound + 1;
  }
  return std::min(row[b.size()], bound + 1);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  // No two names are further apart than the longer one's length, so this bound never cuts.
  return edit_distance(a, b, std::max(a.size(), b.size()));
}

std::vector<std::string> nearest_names(const std::string& wanted,
                                       const std::vector<std::string>& candidates, size_t count) {
  const std::string key = lowered(wanted);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string lc = lowered(c);
    size_t d = edit_distance(key, lc);
    // A name that contains what was typed (h100 -> h100-sxm) is a better hint than its
    // edit distance says.
    if (!key.empty() && lc.find(key) != std::string::npos) d = std::min<size_t>(d, 1);
    scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, name] : scored) {
    if (out.size() == count) break;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::string or_last(std::string list) {
  if (const size_t last = list.rfind(", "); last != std::string::npos) list.replace(last, 2, " or ");
  return list;
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    std::string_view item = text.substr(start, end - start);
    const size_t first = item.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      item = item.substr(first, item.find_last_not_of(" \t") - first + 1);
      out.emplace_back(item);
    }
    start = end + 1;
  }
  return out;
}

}  // namespace shardplan
