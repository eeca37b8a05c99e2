// The interface a back-end fills: a communication library and a GEMM library; the harness owns
// everything else.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemm_formats.hpp"
#include "shapes.hpp"

namespace shardplan::probe {

/// A back-end: a communication library and a GEMM library behind a small interface. The harness
/// owns everything else. Groups follow Tier: intra = ranks of a node by local rank, inter = local
/// rank 0 of every node by node, world = all ranks by rank.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  /// Every rank of the job (the same list on every process) and those this process drives.
  virtual const std::vector<RankInfo>& ranks() const = 0;
  virtual std::vector<int> local_ranks() const = 0;
  /// Creates the communicators of a tier (collective over all processes).
  virtual void open(Tier tier) = 0;
  /// Fills with fill_send, runs once and counts wrong elements, then warm-up and timed
  /// iterations. One RankTiming per local rank that belongs to one of the tier's groups.
  virtual std::vector<RankTiming> collective(Tier tier, const CollectiveShape& shape,
                                             const Settings& settings) = 0;
  /// One round of node pairs (sampling.hpp): the first rank of node i exchanges `shape.bytes`
  /// both ways with the first rank of node partner_node[i] (-1: idle this round) over the inter
  /// tier's communicator, which the harness has opened; `shape` is a two-rank send_recv, the
  /// lower node of a pair its rank 0. One RankTiming per local rank that took part.
  virtual std::vector<RankTiming> exchange(const std::vector<int>& /*partner_node*/,
                                           const CollectiveShape& /*shape*/,
                                           const Settings& /*settings*/) {
    return {};
  }
  /// The rank stops issuing work (tests of the watchdog); false: the harness stops the process.
  virtual bool hang(int /*rank*/) { return false; }
  /// Why this back-end's devices cannot run a GEMM format ("" when they can): the format row's
  /// reason with the device's figure, e.g. its compute capability.
  virtual std::string why_not(const GemmFormat& format) const = 0;
  /// Runs the GEMM on every local rank at once, timed as `timing` says (one set-up, the warm-up,
  /// then the timed calls); `wrong` counts checked outputs off by more than 1%. A shape the
  /// library has no kernel for comes back with no iterations and the library's status in
  /// `detail`, for every local rank.
  virtual std::vector<RankTiming> gemm(const GemmShape& shape, const GemmTiming& timing) = 0;
  /// Library versions, driver, devices: the provenance block's "libraries".
  virtual nlohmann::json libraries() const = 0;
  /// The GEMM formats worth sweeping on this hardware, fastest first.
  std::vector<const GemmFormat*> gemm_formats_here() const;
  /// Whether GEMM measurements describe the GPU the profile is for (not a CPU stand-in).
  virtual bool measures_gpu() const = 0;
  /// What a tier's bytes move over when it is not GPU to GPU ("CPU shared memory ..."), for the
  /// profile and every plan on it; empty when the back-end moves GPU memory.
  virtual std::string link_medium(Tier /*tier*/) const { return ""; }
  /// What the table and profile should say about how this back-end measured (one sentence each).
  virtual std::vector<std::string> notes() const { return {}; }
  /// The host-memory measurements this back-end makes (none by default).
  virtual std::vector<HostMove> host_moves() const { return {}; }
  /// Runs one on every local rank at once, the node's ranks starting each iteration together;
  /// `wrong` counts checked elements that differ from what the move must leave. Every wait goes
  /// through the watchdog.
  virtual std::vector<RankTiming> host_move(const HostMoveShape& /*shape*/,
                                            const Settings& /*settings*/) {
    return {};
  }
};

}  // namespace shardplan::probe
