#pragma once

// Groups and reduction trees on a node: one actor that answers for several peers (a group the
// shard protocol, a tree its slices; wire/messages.hpp). group.cpp holds their fronts, gatherer.hpp
// says how a front and its gatherer split the work, tree.cpp holds a tree's gatherer.

#include "actors/wire/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardopt::actors {

/// Spawns a group over shards of this process: it answers the shard protocol with the sum of its
/// members' replies (one request and one reply per node instead of per shard), goes down when a
/// member does, and ends its members when it ends. It asks `window` members at a time (the
/// node's worker threads: more would not compute sooner, and each holds dimension-sized buffers
/// while it computes).
shard_actor spawn_group(caf::actor_system& system, std::vector<shard_actor> members,
                        std::size_t window, const access_token& token);

/// Spawns a node's part of a reduction tree: the tree protocol (wire/messages.hpp) over `own`, this
/// node's peers of the driver, and `children`, the trees of the nodes below (reached directly).
/// Theta goes down to every member and their sums come up added (exact: the bits of one shard
/// holding everything). It takes requests in slices only (from its parent, or at the root from the
/// driver), forwarding each as it arrives, so a level of the tree adds a slice's latency, not the
/// whole vector's. A member that goes down or fails is left out, and the tree answers the sum of
/// the others, whose blocks say what it covers; the driver asks the missing blocks' peers itself
/// and builds a new tree. Slices that disagree on what they cover (a child lost part-way) make the
/// driver drop the tree's answer and ask every peer. Ending a tree ends none of its members.
/// Slices of vectors longer than `dimension` (the driver's largest model here; twice it for a
/// grid with the diagonal's) are refused before any part is kept.
tree_actor spawn_tree(caf::actor_system& system, std::vector<shard_actor> own,
                       std::vector<tree_actor> children, const access_token& token, std::int64_t dimension);

} // namespace shardopt::actors
