#pragma once

#include "model/dataset.hpp"

#include <cstdint>
#include <vector>

namespace shardopt::io {

/// Splits rows [0, n) into k contiguous shards whose sizes differ by at most one, larger ones first.
/// k must be in 1..n (for n > 0).
std::vector<model::row_range> partition_rows(std::int64_t n, std::int64_t k);

} // namespace shardopt::io
