#pragma once

// Slices of a tree's requests and answers (messages.hpp, the `part` request): what a tree's
// gatherer keeps of a request, checking a slice, cutting vectors into slices, joining them again,
// and putting a request's answered slices together. No actors here: node/tree.cpp moves the slices,
// node/group.cpp checks them.

#include "actors/wire/messages.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace shardopt::actors {

/// One slice of one request: which children answered it (or were left out) and their sum so far.
struct slice_state {
  bool sent = false;
  std::vector<char> settled;  // per child
  std::size_t left = 0;
  std::optional<block_sums> children;
  bool done = false;
};

/// One request, arriving slice by slice (from the parent, or the driver at a root).
struct request_state {
  std::uint64_t round = 0;
  std::uint64_t opened = 0;  // order of arrival, for evicting the oldest
  access_token token;
  tree_slice shape;  // index unused
  std::vector<access_token> tickets;  // slices: each arrived slice's ticket
  std::uint32_t arrivals = 0;
  // Slices: kept as they arrive (nothing is allocated ahead of the bytes), joined when all are in.
  std::vector<dense_vector> theta_parts, v_parts;
  std::vector<exact_grid> grid_parts;
  bool own_asked = false;
  std::vector<char> own_settled;
  std::size_t own_left = 0;
  std::optional<block_sums> own;
  std::vector<slice_state> slices;
  std::uint32_t finished = 0;
  bool closed = false;
};

/// Checks a slice request's shape against the protocol's limits, the model's `dimension` (theta
/// and v at most that long, the grid twice that for the diagonal's) and its vectors' lengths; the
/// error (errc::refused) says what is wrong; none when it is well formed.
caf::error check_slice(const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
                       const dense_vector& v, std::uint64_t dimension = max_wire_elements);

/// True when two slices belong to requests of the same shape (all but the index agree).
bool same_shape(const tree_slice& a, const tree_slice& b);

/// `slice`'s share of a vector of `size` entries (a copy), or of a grid.
dense_vector vector_slice(const dense_vector& values, std::uint64_t size, const tree_slice& slice);
exact_grid grid_slice(const exact_grid& grid, const tree_slice& slice);

/// A request's vector, or grid, from all of its slices in order.
dense_vector join_vectors(const std::vector<dense_vector>& parts, std::uint64_t size);
exact_grid join_grid(const std::vector<exact_grid>& parts, const tree_slice& slice);

/// `sums` with only entries [first, last) of its exact sums, counted from `first` (a slice's sums
/// are its own vector of last - first entries).
block_sums share_of(const block_sums& sums, std::uint64_t first, std::uint64_t last);

/// A whole answer from its slices' answers, in order: the same blocks, values and counts (the
/// first slice's), the largest max_units, the slices' sums one after another (sparse when every
/// slice's is). Fails when the slices cover different blocks (a child lost part-way through the
/// request) or the sums do not add up to `size` entries. The slices' words are consumed: once
/// copied they are given back for later answers (base/spare_words.hpp).
caf::expected<block_sums> put_together(std::vector<block_sums>& slices, std::uint64_t size);

} // namespace shardopt::actors
