#pragma once

// A root or child of a reduction tree that lies about its slices, for tests of what the driver and
// a node's tree do with such answers (test_driver_slices.cpp, test_tree_children.cpp).

#include "actors/wire/messages.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace shardopt::test {

/// What a lying root does with every slice it is sent.
enum class lie { repeat_first, wrong_length };

/// A root that answers each slice, but wrongly: always as slice 0 (with slice 0's length), or with
/// no sums at all. Counts the slices it was sent.
inline actors::tree_actor::behavior_type lying_root(actors::tree_actor::pointer, lie how,
                                                    std::shared_ptr<std::atomic<int>> asked) {
  using sums_result = caf::result<std::uint64_t, actors::block_sums>;
  return {
    [](actors::eval_atom, const actors::access_token&, std::uint64_t, const actors::exact_grid&,
       const actors::dense_vector&) -> sums_result { return actors::refused("whole"); },
    [](actors::quality_atom, const actors::access_token&, std::uint64_t,
       const actors::dense_vector&) -> sums_result { return actors::refused("whole"); },
    [](actors::hessvec_atom, const actors::access_token&, std::uint64_t, std::uint64_t,
       const actors::exact_grid&, const actors::dense_vector&, const actors::dense_vector&)
      -> sums_result { return actors::refused("whole"); },
    [](actors::line_atom, const actors::access_token&, std::uint64_t, std::uint64_t, std::uint64_t,
       const actors::dense_vector&, const actors::dense_vector&, const actors::dense_vector&)
      -> sums_result { return actors::refused("whole"); },
    [how, asked](actors::part_atom, const actors::access_token&, std::uint64_t round,
                 const actors::tree_slice& slice, const actors::exact_grid&,
                 const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, std::uint32_t, actors::block_sums> {
      ++*asked;
      actors::block_sums sums;
      if (how == lie::repeat_first) {
        const auto [first, last] = actors::slice_bounds(slice.grid_size, 0, slice.count);
        sums.words.assign(last - first, 0);
        sums.length = last - first;
        return {round, std::uint32_t{0}, std::move(sums)};
      }
      return {round, slice.index, std::move(sums)};
    },
  };
}

} // namespace shardopt::test
