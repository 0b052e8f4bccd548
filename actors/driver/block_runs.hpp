#pragma once

// The blocks a reply answers for, as (first, count) runs: one form for one set of blocks, so that
// a group's or a tree's reply (its members' runs in the order they answered) can be checked against
// what the driver expects of it. Internal to the sharded objective.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardopt::actors {

namespace detail {

using block_runs = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// `runs` sorted, empty runs dropped and adjacent runs joined: one form for one set of blocks.
inline block_runs normalized(block_runs runs) {
  std::sort(runs.begin(), runs.end());
  block_runs out;
  for (const auto& run : runs) {
    if (run.second == 0)
      continue;
    if (!out.empty() && out.back().first + out.back().second == run.first)
      out.back().second += run.second;
    else
      out.push_back(run);
  }
  return out;
}

/// Whether a reply's flattened (first, count) pairs name exactly the blocks of `expected` (a group
/// lists its members' runs in the order they answered).
inline bool runs_match(const std::vector<std::int64_t>& flat, const block_runs& expected) {
  block_runs got;
  for (std::size_t r = 0; r + 1 < flat.size(); r += 2)
    got.emplace_back(flat[r], flat[r + 1]);
  return normalized(std::move(got)) == normalized(expected);
}

} // namespace detail

} // namespace shardopt::actors
