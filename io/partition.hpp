#pragma once

#include "model/dataset.hpp"

#include <cstdint>
#include <vector>

namespace shardopt::io {

/// Splits rows [0, n) into k contiguous shards whose sizes differ by at most one, larger ones first.
/// k must be in 1..n (for n > 0).
std::vector<model::row_range> partition_rows(std::int64_t n, std::int64_t k);

/// Splits rows [0, n) into k contiguous shards of whole canonical blocks (model/exact_sum.hpp)
/// whose block counts differ by at most one, larger ones first: shards that make the objective's
/// sums the same bits for any k. k must be in 1..block_count(n, block_rows_for(n)).
std::vector<model::row_range> partition_blocks(std::int64_t n, std::int64_t k);

} // namespace shardopt::io
