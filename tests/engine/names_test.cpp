// Names users type: the one comma-list splitter every list flag uses.
#include "shardplan/names.hpp"

#include <doctest/doctest.h>

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
