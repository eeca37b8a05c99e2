// The fields of the plan and spec objects that `--json` writes (json_out.cpp) and plan files
// read back (plan_file.cpp): one row each, so a new field is one row here.
#pragma once

#include "json_fields.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

const JsonFields<ParallelPlan>& plan_fields();
const JsonFields<Offload>& offload_fields();
const JsonFields<TrainingSpec>& training_fields();
const JsonFields<LinkSpec>& link_fields();
const JsonFields<HostSpec>& host_fields();
}  // namespace shardplan
