// The fields of the plan and spec objects that `--json` writes (json_out.cpp) and plan files
// read back (plan_file.cpp), and the validation reach the framework profiles carry: one row
// each, so a new field is one row here.
#pragma once

#include "json_fields.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

const JsonFields<ParallelPlan>& plan_fields();
const JsonFields<Offload>& offload_fields();
const JsonFields<TrainingSpec>& training_fields();
const JsonFields<LinkSpec>& link_fields();
const JsonFields<HostSpec>& host_fields();
/// What a validation class's cases span: `validate --cross-validate --json` writes it and the
/// framework profiles' accuracy rows read it back.
const JsonFields<CorpusReach>& reach_fields();

}  // namespace shardplan
