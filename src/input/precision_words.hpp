// Words for the precision rules (rules.hpp: precision_supported, precision_generation,
// framework_precision): which GPU generations and frameworks run a recipe, by preset name.
#pragma once

#include <string>

#include "shardplan/rules.hpp"

namespace shardplan {

/// "mxfp8 needs Blackwell (B200, B300, GB200, GB300); H100-SXM is Hopper".
std::string generation_words(const RuleContext& context);

/// The frameworks a recipe row names, comma-separated.
std::string recipe_frameworks(const PrecisionRecipe& recipe);

}  // namespace shardplan
