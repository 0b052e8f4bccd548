#include "io/partition.hpp"

#include "model/exact_sum.hpp"

#include <algorithm>

namespace shardopt::io {

std::vector<model::row_range> partition_rows(std::int64_t n, std::int64_t k) {
  std::vector<model::row_range> shards;
  if (k <= 0 || n < 0)
    return shards;
  // The first n % k shards take one row more than the rest. (With k > n, the last k - n are empty.)
  const std::int64_t base = n / k;
  const std::int64_t larger = n % k;
  shards.reserve(static_cast<std::size_t>(k));
  std::int64_t begin = 0;
  for (std::int64_t s = 0; s < k; ++s) {
    const std::int64_t end = begin + base + (s < larger ? 1 : 0);
    shards.push_back({begin, end});
    begin = end;
  }
  return shards;
}

std::vector<model::row_range> partition_blocks(std::int64_t n, std::int64_t k) {
  const auto block_rows = model::block_rows_for(n);
  auto shards = partition_rows(model::block_count(n, block_rows), k);
  for (auto& shard : shards)
    shard = {std::min(shard.begin * block_rows, n), std::min(shard.end * block_rows, n)};
  return shards;
}

} // namespace shardopt::io
