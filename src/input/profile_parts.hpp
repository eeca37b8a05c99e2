// The pieces of profile loading that GPU, link and cluster loaders share (profiles.cpp defines
// them; cluster_profiles.cpp builds clusters from them). Internal to the input library.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "json_reader.hpp"
#include "shardplan/presets.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// A link profile and how its NICs are counted.
struct LinkProfile {
  LinkSpec link;
  bool nic_per_gpu = false;  // scale-out links: one NIC per GPU (rail-optimised) by default
};

/// The profile's JSON for a preset name or a file path, and where it came from.
std::pair<nlohmann::json, std::string> resolve_profile(ProfileKind kind, const std::string& name,
                                                       const std::string& field);
/// A link by preset name, typed bandwidth or inline object.
LinkProfile resolve_link(const nlohmann::json& value, const std::string& field);
GpuSpec gpu_from_json(const nlohmann::json& j, const std::string& where);
/// The "host" member of a GPU or cluster profile; all zero when there is none.
HostSpec host_from_json(StrictObject& parent);
/// Profiles carry a "sources" object with an entry for each figure they state.
void require_sources(StrictObject& o, const std::vector<std::string>& figures);

/// `shardplan list clusters`: a cluster profile's tiers, formatted.
std::vector<std::pair<std::string, std::string>> cluster_figures(const nlohmann::json& j,
                                                                 const std::string& where);

}  // namespace shardplan
