// Slices of tree requests without actors: the bounds tile every vector, cutting and joining give
// the vector back, and a whole answer is put together only from slices that cover the same blocks.

#include "actors/wire/tree_slices.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace actors = shardopt::actors;

TEST_CASE("slice bounds tile a vector in order, and cutting then joining gives it back bit for bit") {
  for (const std::uint64_t size : {0ull, 1ull, 7ull, 65536ull, 160200ull}) {
    for (const std::uint32_t count : {1u, 2u, 3u, 7u}) {
      CAPTURE(size);
      CAPTURE(count);
      std::uint64_t next = 0;
      for (std::uint32_t i = 0; i < count; ++i) {
        const auto [first, last] = actors::slice_bounds(size, i, count);
        CHECK(first == next);
        CHECK(last >= first);
        next = last;
      }
      CHECK(next == size);
      const Eigen::VectorXd values = Eigen::VectorXd::LinSpaced(static_cast<Eigen::Index>(size), -1.0, 3.0);
      actors::tree_slice slice{0, 0, 0, count, size, 0, size, -30};
      std::vector<actors::dense_vector> parts;
      std::vector<actors::exact_grid> grids;
      const actors::exact_grid grid{-30, std::make_shared<const std::vector<std::uint8_t>>(size, 0), size};
      for (std::uint32_t i = 0; i < count; ++i) {
        slice.index = i;
        parts.push_back(actors::vector_slice(actors::dense_vector{values}, size, slice));
        grids.push_back(actors::grid_slice(grid, slice));
        CHECK_FALSE(actors::check_slice(slice, actors::grid_slice(grid, slice), parts.back(), {}));
      }
      CHECK(actors::join_vectors(parts, size) == actors::dense_vector{values});
      const auto joined = actors::join_grid(grids, slice);
      CHECK(joined.entries == grid.entries);
      CHECK(std::equal(joined.below(), joined.below() + joined.entries, grid.below()));
    }
  }
}

TEST_CASE("a whole answer joins its slices' sums when every slice covers the same blocks, and fails when a child was lost part-way or the sums do not add up") {
  auto answer = [](std::vector<std::int64_t> runs, std::vector<std::int64_t> words, double max_units) {
    actors::block_sums sums;
    sums.runs = std::move(runs);
    sums.values.assign(sums.runs.size() / 2, 0.5);
    sums.length = words.size();
    sums.words = std::move(words);
    sums.max_units = max_units;
    sums.count = 10;
    return sums;
  };
  std::vector<actors::block_sums> slices{answer({0, 2, 5, 1}, {1, 2}, 3.0), answer({5, 1, 0, 2}, {3}, 9.0)};
  auto whole = actors::put_together(slices, 3);
  REQUIRE(whole);
  CHECK(whole->words == std::vector<std::int64_t>{1, 2, 3});
  CHECK(whole->max_units == 9.0);
  CHECK(whole->runs == std::vector<std::int64_t>{0, 2, 5, 1});
  CHECK(whole->count == 10);

  slices = {answer({0, 2}, {1, 2}, 1.0), answer({0, 2}, {3}, std::numeric_limits<double>::quiet_NaN())};
  whole = actors::put_together(slices, 3);
  REQUIRE(whole);
  CHECK(std::isnan(whole->max_units));

  slices = {answer({0, 2, 5, 1}, {1, 2}, 1.0), answer({0, 2}, {3}, 1.0)};  // block 5 lost part-way
  whole = actors::put_together(slices, 3);
  REQUIRE_FALSE(whole);
  CHECK(caf::to_string(whole.error()).find("lost part-way") != std::string::npos);

  slices = {answer({0, 2}, {1, 2}, 1.0), answer({0, 2}, {3, 4}, 1.0)};
  CHECK_FALSE(actors::put_together(slices, 3));
}
