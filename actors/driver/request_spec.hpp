#pragma once

// Internal to the sharded objective's source: what one request of the driver asks, whichever way
// it travels. Not part of the actors library's interface.

#include "actors/wire/messages.hpp"

#include <cstdint>

namespace shardopt::actors {

/// What one request asks: sent whole to a peer, or in slices down a tree.
struct request_spec {
  tree_kind kind = tree_kind::eval;
  std::uint64_t at = 0;               ///< products: the evaluation's round; lines: the first's
  const exact_grid* grid = nullptr;   ///< none for quality and lines
  dense_vector theta, v;              ///< lines: theta the first evaluation's, v the alphas
  std::uint64_t to = 0;               ///< lines: the second evaluation's round
  dense_vector theta_to;              ///< lines: its theta

  /// The grid, or an empty one for quality.
  const exact_grid& grid_or_none() const {
    static const exact_grid none;
    return grid ? *grid : none;
  }
};

} // namespace shardopt::actors
