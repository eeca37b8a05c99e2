// Names users type: the one comma-list splitter every list flag uses, and the edit distance
// behind every "did you mean".
#include "shardplan/names.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using shardplan::split_list;
using Items = std::vector<std::string>;

TEST_CASE("split_list trims each item and drops empty ones") {
  CHECK(split_list("H100-SXM, H200") == Items{"H100-SXM", "H200"});
  CHECK(split_list(" a ,\tb\t,c ") == Items{"a", "b", "c"});
  CHECK(split_list("a,,b,") == Items{"a", "b"});
  CHECK(split_list("") == Items{});
  CHECK(split_list(" , ") == Items{});
  CHECK(split_list("one") == Items{"one"});
  CHECK(split_list("8x4, 16x2", 'x') == Items{"8", "4, 16", "2"});
}

// Levenshtein distances of textbook pairs (kitten -> sitting is 3: two substitutions and an
// insertion), and the bounded form agreeing with the full one up to its bound.
TEST_CASE("edit_distance, full and bounded") {
  using shardplan::edit_distance;
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("flaw", "lawn") == 2);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("--micro-batch-size", "--micro-batch-size") == 0);
  CHECK(edit_distance("kitten", "sitting", 3) == 3);
  CHECK(edit_distance("kitten", "sitting", 2) == 3);  // past the bound: bound + 1
  CHECK(edit_distance("flaw", "lawn", 2) == 2);
  CHECK(edit_distance("--tp", "--tensor-model-parallel-size", 2) == 3);  // lengths 24 apart
  CHECK(edit_distance("abcdef", "uvwxyz", 1) == 2);  // every row past 1 from its second on
  const std::vector<std::string> words{"zero_stage",
                                       "zero-stage",
                                       "stage",
                                       "zero_stage3",
                                       "train_batch_size",
                                       "train_micro_batch_size",
                                       ""};
  for (const std::string& a : words) {
    for (const std::string& b : words) {
      const size_t full = edit_distance(a, b);
      for (size_t bound = 0; bound <= 4; ++bound)
        CHECK(edit_distance(a, b, bound) == std::min(full, bound + 1));
    }
  }
}
