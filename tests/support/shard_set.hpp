#pragma once

// Shard actors in this process over blocks of a dataset, with what a sharded objective expects of
// them, made as sharded_objective::local makes them (block numbers follow the shards).

#include "actors/driver/peers.hpp"
#include "actors/wire/shard.hpp"
#include "model/block_bounds.hpp"

#include <algorithm>
#include <memory>
#include <random>
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

/// K contiguous blocks with random cut points (at least one row each).
inline std::vector<model::row_range> random_blocks(std::mt19937& rng, std::int64_t n, std::int64_t k) {
  std::vector<std::int64_t> cuts(static_cast<std::size_t>(n - 1));
  for (std::int64_t i = 0; i < n - 1; ++i)
    cuts[static_cast<std::size_t>(i)] = i + 1;
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(static_cast<std::size_t>(k - 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<model::row_range> blocks;
  std::int64_t begin = 0;
  for (auto cut : cuts) {
    blocks.push_back({begin, cut});
    begin = cut;
  }
  blocks.push_back({begin, n});
  return blocks;
}

/// |a - b| relative to |b| (at least 1).
inline double relative_error(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / std::max(1.0, b.norm());
}


} // namespace shardopt::test
