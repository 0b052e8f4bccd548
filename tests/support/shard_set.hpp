#pragma once

// Shard actors in this process over blocks of a dataset, with what a sharded objective expects of
// them, made as sharded_objective::local makes them (block numbers follow the shards).

#include "actors/shard.hpp"
#include "model/block_bounds.hpp"

#include <memory>
#include <vector>

namespace shardopt::test {

struct shard_set {
  std::vector<actors::shard_actor> shards;
  std::vector<actors::peer_share> shares;
  std::vector<actors::block_layout> layouts;
  model::data_bounds bounds;
};

inline shard_set spawn_shards(actors::runtime& rt, const model::model_shape& shape,
                              const std::shared_ptr<const model::dataset>& data,
                              const std::vector<model::row_range>& blocks,
                              const actors::access_token& token) {
  shard_set out;
  std::int64_t rows = 0;
  for (const auto& block : blocks)
    rows += block.size();
  out.bounds.block_rows = model::block_rows_for(rows);
  for (const auto& block : blocks) {
    const auto count = model::block_count(block.size(), out.bounds.block_rows);
    out.layouts.push_back({out.bounds.blocks, out.bounds.block_rows});
    out.shards.push_back(actors::spawn_shard(rt.system(), shape, data, block, out.layouts.back(), token));
    out.shares.push_back({{{out.bounds.blocks, count}}, block.size(), {}});
    out.bounds += model::bounds_of(*data, block, out.bounds.block_rows);
  }
  return out;
}

} // namespace shardopt::test
