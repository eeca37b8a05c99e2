// One-line descriptions of the inputs, shared by every command's header lines.
#pragma once

#include <string>
#include <vector>

#include "shardplan/framework.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// One line naming the model, e.g. "llama-2-7b (6.74B params, L32 h4096 a32, swiglu)".
std::string describe_model(const ModelSpec& m);
/// One line naming the cluster, e.g. "16 x H100-SXM (2 nodes of 8; nvlink4 inside, 8 x ib-ndr)".
std::string describe_cluster(const ClusterSpec& c);
/// " less the 8.0 GiB headroom kept free" when --headroom asked for one; "" otherwise.
std::string headroom_clause(const ClusterSpec& c);
/// What a plan on this cluster must be told about its links: one note per link in use that a
/// probe measured between CPU processes (LinkSpec::medium) rather than between its GPUs.
std::vector<std::string> cluster_notes(const ClusterSpec& c);
/// The profile that priced a plan, e.g. "megatron (profiles/frameworks/megatron.json)", or the
/// ideal stack when none was named.
std::string describe_framework(const FrameworkProfile& f);
/// The training precision in words, e.g. "bf16 mixed precision", "bf16 pure (no fp32 master
/// weights)" or "fp32".
std::string describe_precision(const TrainingSpec& training);
/// The warning a precision carries for the notes of every command, or "" when it has none.
std::string precision_warning(Precision p);

}  // namespace shardplan
