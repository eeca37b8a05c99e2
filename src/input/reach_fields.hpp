// The validation reach a framework profile's accuracy rows carry (CorpusReach): what
// `validate --cross-validate --json` writes, the fitted-constants file keeps and the framework
// profiles read back, one row per field.
#pragma once

#include "json_fields.hpp"
#include "shardplan/accuracy.hpp"

namespace shardplan {

/// What a validation class's cases span: `validate --cross-validate --json` writes it and the
/// framework profiles' accuracy rows read it back.
const JsonFields<CorpusReach>& reach_fields();

}  // namespace shardplan
