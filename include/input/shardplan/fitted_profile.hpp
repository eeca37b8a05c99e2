// The fitted step-time constants as a file: the ones this build ships
// (profiles/fit/step-time.json, written by `validate --cross-validate --write-fit`) and the
// reader and writer of that format. The GPU and framework profile readers apply the shipped ones.
#pragma once

#include <string>

#include "shardplan/calibration.hpp"

namespace shardplan {

/// The constants compiled into this build (profiles/fit/step-time.json), read once.
const FittedConstants& shipped_fit();

/// A fitted-constants file's JSON text; InputError naming the field for a malformed one (an
/// unknown constant, a multiplier that is not a positive number).
FittedConstants fitted_from_text(const std::string& text, const std::string& where);
/// The file's text (2-space JSON, one constant per entry with the figure it scales).
std::string fitted_to_text(const FittedConstants& fit);

}  // namespace shardplan
