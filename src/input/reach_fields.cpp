// The validation reach's fields (reach_fields.hpp).
#include "reach_fields.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shardplan/error.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {
namespace {

using nlohmann::json;

// The reach's recurrent mixers by name (to_string(MixerKind)).
JsonField<CorpusReach> mixers_field() {
  return {"mixers", [](const CorpusReach& r) { return json(r.mixers); },
          [](StrictObject& o, const std::string& k, CorpusReach& r) {
            const json& raw = o.raw(k);
            if (!raw.is_array()) throw InputError(o.field(k), "expected a list of token mixers");
            for (const json& v : raw) {
              if (!v.is_string()) throw InputError(o.field(k), "expected mixer names");
              r.mixers.emplace_back(to_string(parse_mixer(v.get<std::string>(), o.field(k))));
            }
          },
          {}};
}

// The GEMM element types a class's cases run, each a name to_string(MathDtype) gives.
JsonField<CorpusReach> gemm_dtypes_field() {
  return {"gemm_dtypes", [](const CorpusReach& r) { return json(r.gemm_dtypes); },
          [](StrictObject& o, const std::string& k, CorpusReach& r) {
            const json& raw = o.raw(k);
            std::vector<std::string> names;
            names.reserve(kMathDtypes);
            for (int d = 0; d < kMathDtypes; ++d)
              names.emplace_back(to_string(static_cast<MathDtype>(d)));
            if (!raw.is_array() || raw.empty())
              throw InputError(o.field(k), "expected a list of GEMM element types");
            for (const json& v : raw) {
              if (!v.is_string() ||
                  std::find(names.begin(), names.end(), v.get<std::string>()) == names.end())
                throw InputError(o.field(k), fmt::format("'{}' is not one of: {}", v.dump(),
                                                         fmt::join(names, ", ")));
              r.gemm_dtypes.push_back(v.get<std::string>());
            }
          },
          {}};
}

}  // namespace

const JsonFields<CorpusReach>& reach_fields() {
  using R = CorpusReach;
  static const JsonFields<R> rows = {
      member("dense", &R::dense),
      member("moe", &R::moe),
      only_when(mixers_field(), [](const R& r) { return !r.mixers.empty(); }),
      gemm_dtypes_field(),
      checked(member("max_cp", &R::max_cp), [](const R& r) { return r.max_cp >= 1; },
              "must be >= 1"),
      only_when(member("ulysses", &R::ulysses), [](const R& r) { return r.ulysses; }),
      checked(member("max_gpus", &R::max_gpus), [](const R& r) { return r.max_gpus >= 1; },
              "must be >= 1"),
  };
  return rows;
}

}  // namespace shardplan
