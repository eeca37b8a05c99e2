// Clusters as tiers: a scale-up domain, the hosts in it and the scale-out network, from a
// cluster preset, a profile file, or a GPU and flags.
#include <fmt/format.h>

#include <algorithm>

#include "profile_parts.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"

namespace shardplan {
namespace {

void check_counts(const ClusterOptions& o) {
  if (o.gpus < 0 || o.gpus > 10'000'000) {
    throw InputError("--gpus", fmt::format("{} is not a GPU count; use 1 to 10,000,000", o.gpus));
  }
  if (o.gpus_per_node < 0 || o.gpus_per_node > 1024) {
    throw InputError("--gpus-per-node",
                     fmt::format("{} is not a node size; use 1 to 1024", o.gpus_per_node));
  }
  if (o.gpus_per_domain < 0 || o.gpus_per_domain > 100'000) {
    throw InputError("--gpus-per-domain", fmt::format("{} is not a scale-up domain size; use 1 "
                                                      "to 100,000",
                                                      o.gpus_per_domain));
  }
  if (o.nics_per_node < 0 || o.nics_per_node > 1024) {
    throw InputError("--nics-per-node",
                     fmt::format("{} is not a NIC count; use 1 to 1024", o.nics_per_node));
  }
}

// The host size and the domain around it. A preset whose domain is its host (every 8-GPU
// server) keeps them equal under --gpus-per-node; a rack-scale domain stays as the preset says.
void size_tiers(ClusterSpec& c, const ClusterOptions& o) {
  const bool domain_is_host = !c.rack_scale();
  if (o.gpus_per_node > 0) c.gpus_per_node = o.gpus_per_node;
  c.gpus_per_domain = domain_is_host ? c.gpus_per_node : c.domain_gpus();
  if (o.gpus_per_domain > 0) c.gpus_per_domain = o.gpus_per_domain;
  c.gpus = o.gpus > 0 ? o.gpus : c.gpus_per_node;
  c.gpus_per_node = std::min(c.gpus_per_node, c.gpus);
  if (c.gpus_per_domain % c.gpus_per_node != 0) {
    throw InputError(o.gpus_per_domain > 0 ? "--gpus-per-domain" : "--gpus-per-node",
                     fmt::format("a scale-up domain of {} GPUs is not a whole number of {}-GPU "
                                 "nodes; give a --gpus-per-domain that is a multiple of {}",
                                 c.gpus_per_domain, c.gpus_per_node, c.gpus_per_node));
  }
  // No domain is larger than the cluster's hosts (4 GPUs of an NVL72 rack are one tray).
  c.gpus_per_domain = std::min(c.gpus_per_domain, c.nodes() * c.gpus_per_node);
}

// Links the user typed replace the preset's (or, without a preset, the GPU's reference node's).
void choose_links(ClusterSpec& c, const ClusterOptions& o, bool preset) {
  if (!o.intra.empty()) {
    c.intra = resolve_link(nlohmann::json(o.intra), "--intra").link;
  } else if (!o.link.empty()) {
    c.intra = resolve_link(nlohmann::json(o.link), "--link").link;
  } else if (!preset) {
    c.intra = resolve_link(nlohmann::json(c.gpu.intra_link), c.gpu.source + ": intra_link").link;
  }
  if (!o.inter.empty() || (!o.link.empty()) || !preset) {
    LinkProfile nic;
    if (!o.inter.empty()) {
      nic = resolve_link(nlohmann::json(o.inter), "--inter");
    } else if (!o.link.empty()) {
      nic = resolve_link(nlohmann::json(o.link), "--link");
      nic.nic_per_gpu = true;  // one flat link per GPU, inside a node or across
    } else {
      nic = resolve_link(nlohmann::json(c.gpu.inter_link), c.gpu.source + ": inter_link");
    }
    c.nic = nic.link;
    c.nics_per_node = nic.nic_per_gpu ? c.gpus_per_node : 1;
  }
  if (o.nics_per_node > 0) c.nics_per_node = o.nics_per_node;
  share_nics(c);
}

std::string link_name(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "-";
  return j.at(key).is_string() ? j.at(key).get<std::string>() : "measured";
}

}  // namespace

ClusterSpec build_cluster(const ClusterOptions& o) {
  check_counts(o);
  ClusterSpec c;
  std::string system = o.cluster;
  if (system.empty()) {
    const GpuSpec gpu = load_gpu(o.gpu.empty() ? "H100-SXM" : o.gpu, "--gpu");
    system = gpu.system;  // a GPU sold only as a rack comes with the rack's tiers
    if (system.empty()) {
      c.gpu = gpu;
      c.name = c.gpu.name;
      c.host = c.gpu.host;
      c.gpus_per_node = o.gpus > 0 ? std::min(o.gpus, 8) : 8;
    }
  }
  const bool preset = !system.empty();
  if (preset) {
    c = load_cluster(system, o.cluster.empty() ? "--gpu" : "--cluster");
    if (!o.gpu.empty()) c.gpu = load_gpu(o.gpu, "--gpu");
  }
  size_tiers(c, o);
  choose_links(c, o, preset);
  return c;
}

ClusterSpec load_cluster(const std::string& name_or_path, const std::string& field) {
  auto [json, where] = resolve_profile(ProfileKind::cluster, name_or_path, field);
  StrictObject o(json, where);
  ClusterSpec c;
  c.name = o.string("name");
  o.strings_or_empty("aliases");
  o.string_or("description", "");
  const auto& gpu = o.raw("gpu");
  c.gpu = gpu.is_object() ? gpu_from_json(gpu, o.field("gpu"))
                          : load_gpu(gpu.get<std::string>(), o.field("gpu"));
  c.gpus_per_node = o.integer("gpus_per_node");
  if (c.gpus_per_node < 1) throw InputError(o.field("gpus_per_node"), "must be at least 1");
  // The scale-up domain: absent on servers whose NVLink/xGMI ends at the host.
  c.gpus_per_domain = o.integer_or("gpus_per_domain", c.gpus_per_node);
  if (c.gpus_per_domain < c.gpus_per_node || c.gpus_per_domain % c.gpus_per_node != 0) {
    throw InputError(o.field("gpus_per_domain"),
                     fmt::format("{} is not a whole number of {}-GPU hosts", c.gpus_per_domain,
                                 c.gpus_per_node));
  }
  c.intra = resolve_link(o.raw("intra"), o.field("intra")).link;
  c.nic = resolve_link(o.raw("inter"), o.field("inter")).link;
  // A profile of the probe's mpi back-end written before links named their medium: its links
  // moved CPU memory all the same, and plans on it must say so.
  if (o.has("provenance") && o.raw("provenance").is_object() &&
      o.raw("provenance").value("backend", "") == "mpi") {
    for (LinkSpec* l : {&c.intra, &c.nic}) {
      if (l->measured && l->medium.empty()) {
        l->medium = "CPU memory between MPI processes (the probe's mpi back-end), no GPU involved";
      }
    }
  }
  c.nics_per_node = o.integer("nics_per_node");
  if (c.nics_per_node < 1) throw InputError(o.field("nics_per_node"), "must be at least 1");
  share_nics(c);
  c.gpus = c.gpus_per_node;
  c.host = o.has("host") ? host_from_json(o) : c.gpu.host;
  // A probe's output keeps its raw data and provenance beside the fitted figures.
  if (o.has("measurements")) o.raw("measurements");
  if (o.has("provenance")) o.raw("provenance");
  if (o.has("fit")) o.raw("fit");
  c.source = where;
  require_sources(o, {"gpus_per_node", "gpus_per_domain", "nics_per_node"});
  o.finish();
  return c;
}

std::vector<std::pair<std::string, std::string>> cluster_figures(const nlohmann::json& j,
                                                                 const std::string& where) {
  const ClusterSpec c = load_cluster(j.at("name").get<std::string>(), where);
  const int host = c.gpus_per_node;
  const std::string host_side =
      c.host.memory_bytes > 0
          ? fmt::format("{:.0f} GiB, {}", c.host.memory_bytes / kGiB,
                        c.host.link_name.empty() ? "-" : c.host.link_name)
          : "-";
  return {{"gpu", j.at("gpu").is_string() ? j.at("gpu").get<std::string>() : "inline"},
          {"gpus/node", std::to_string(host)},
          {"domain", fmt::format("{} x {}", c.domain_gpus(), link_name(j, "intra"))},
          {"host", host_side},
          {"inter", fmt::format("{} x {}", c.nics_per_node, link_name(j, "inter"))}};
}

}  // namespace shardplan
