#pragma once

// How a run's evaluations travel among its nodes (docs/cluster.md, "Topology"). No CAF: the
// applications' option structs name it.

#include <cstddef>
#include <cstdint>

namespace shardopt::actors {

/// `star`: the driver asks every node. `tree`: a reduction tree among the nodes (theta down, exact
/// sums up, each node adding its own), the driver asking the root only. `automatic`: a tree from
/// 3 nodes up. The sums are the same bits either way.
enum class topology { star, tree, automatic };

/// The fan-in of a tree over `nodes` nodes for a model of `dimension` parameters when none is
/// given: 2 when a node's link is bandwidth-bound (17 x dimension bytes of at least 1 MiB travel
/// per child), else the fewest children that keep the tree 2 levels deep.
std::size_t automatic_fan_in(std::size_t nodes, std::int64_t dimension);

} // namespace shardopt::actors
