// Where a driver puts its shards, without any actor: place_shards by weight, each node's shards
// contiguous, ties to the lower node.

#include "actors/driver/placement.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

namespace actors = shardopt::actors;

TEST_CASE("place_shards: in proportion to the weights, contiguous, ties to the lower node") {
  using plan = std::vector<std::size_t>;
  CHECK(actors::place_shards({2, 1}, 6) == plan{0, 0, 0, 0, 1, 1});
  CHECK(actors::place_shards({1, 1}, 3) == plan{0, 0, 1});         // remainder 1/2 each: node 0
  CHECK(actors::place_shards({1, 0, 1}, 4) == plan{0, 0, 2, 2});   // weight 0: no shard
  CHECK(actors::place_shards({0, 0}, 2) == plan{0, 1});            // all 0: as equal weights
  CHECK(actors::place_shards({3}, 5) == plan{0, 0, 0, 0, 0});
  CHECK(actors::place_shards({4, 2, 2}, 3) == plan{0, 1, 2});     // 1.5, 0.75, 0.75 by remainder
  for (std::size_t shards : {1u, 7u, 64u}) {
    const auto placed = actors::place_shards({8, 2, 5}, shards);
    REQUIRE(placed.size() == shards);
    for (std::size_t i = 1; i < placed.size(); ++i)
      CHECK(placed[i - 1] <= placed[i]);  // each node's shards contiguous, nodes in order
  }
}
