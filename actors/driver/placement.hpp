#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardopt::actors {

/// Spreads `shards` over nodes in proportion to their `weights` (worker threads), by largest
/// remainder (ties to the lower node index), keeping each node's shards contiguous: returns, for
/// every shard, the index of its node. Nodes with weight 0 get none unless all weights are 0.
std::vector<std::size_t> place_shards(const std::vector<std::uint32_t>& weights, std::size_t shards);

} // namespace shardopt::actors
