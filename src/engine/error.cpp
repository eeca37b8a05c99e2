// The abort path for broken internal invariants (bugs), with file:line.
#include "shardplan/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace shardplan {

void check_failed(const char* expr, const char* file, int line, std::string_view why) {
  std::fprintf(stderr, "shardplan: internal error at %s:%d: %s (%.*s)\n", file, line, expr,
               static_cast<int>(why.size()), why.data());
  std::abort();
}

}  // namespace shardplan
