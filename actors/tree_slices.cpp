#include "actors/tree_slices.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace shardopt::actors {

caf::error check_slice(const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
                       const dense_vector& v) {
  const auto kind = static_cast<tree_kind>(slice.kind);
  if (kind != tree_kind::eval && kind != tree_kind::quality && kind != tree_kind::hessvec)
    return refused("invalid slice: no request of kind " + std::to_string(slice.kind));
  if (slice.count == 0 || slice.count > max_tree_slices || slice.index >= slice.count)
    return refused("invalid slice: slice " + std::to_string(slice.index) + " of "
                   + std::to_string(slice.count) + " (at most "
                   + std::to_string(max_tree_slices) + " slices)");
  if (slice.theta_size > max_wire_elements || slice.v_size > max_wire_elements
      || slice.grid_size > max_wire_elements)
    return refused("invalid slice: vectors longer than " + std::to_string(max_wire_elements));
  if ((kind != tree_kind::hessvec && slice.v_size != 0)
      || (kind == tree_kind::quality && slice.grid_size != 0))
    return refused("invalid slice: vectors its kind does not have");
  const auto length = [&](std::uint64_t size) {
    const auto [first, last] = slice_bounds(size, slice.index, slice.count);
    return last - first;
  };
  if (theta.size() != length(slice.theta_size) || v.size() != length(slice.v_size)
      || grid.below.size() != length(slice.grid_size) || grid.base != slice.grid_base)
    return refused("invalid slice: slice " + std::to_string(slice.index) + " of "
                   + std::to_string(slice.count) + " does not have its share of the vectors");
  return {};
}

bool same_shape(const tree_slice& a, const tree_slice& b) {
  return a.kind == b.kind && a.at == b.at && a.count == b.count && a.theta_size == b.theta_size
         && a.v_size == b.v_size && a.grid_size == b.grid_size && a.grid_base == b.grid_base;
}

dense_vector vector_slice(const dense_vector& values, std::uint64_t size, const tree_slice& slice) {
  if (size == 0)
    return {};
  const auto [first, last] = slice_bounds(size, slice.index, slice.count);
  return dense_vector{Eigen::VectorXd{values.map().segment(static_cast<Eigen::Index>(first),
                                                          static_cast<Eigen::Index>(last - first))}};
}

exact_grid grid_slice(const exact_grid& grid, const tree_slice& slice) {
  exact_grid part{grid.base, {}};
  if (slice.grid_size != 0) {
    const auto [first, last] = slice_bounds(slice.grid_size, slice.index, slice.count);
    part.below.assign(grid.below.begin() + static_cast<std::ptrdiff_t>(first),
                      grid.below.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return part;
}

dense_vector join_vectors(const std::vector<dense_vector>& parts, std::uint64_t size) {
  if (size == 0)
    return {};
  auto values = std::make_shared<Eigen::VectorXd>(static_cast<Eigen::Index>(size));
  Eigen::Index at = 0;
  for (const auto& part : parts) {
    values->segment(at, static_cast<Eigen::Index>(part.size())) = part.map();
    at += static_cast<Eigen::Index>(part.size());
  }
  return dense_vector{std::shared_ptr<const Eigen::VectorXd>(std::move(values))};
}

exact_grid join_grid(const std::vector<std::vector<std::uint8_t>>& parts, const tree_slice& slice) {
  exact_grid whole{slice.grid_base, {}};
  whole.below.reserve(slice.grid_size);
  for (const auto& part : parts)
    whole.below.insert(whole.below.end(), part.begin(), part.end());
  return whole;
}

block_sums share_of(const block_sums& sums, std::uint64_t first, std::uint64_t last) {
  block_sums out{sums.runs, sums.values, {}, sums.max_units, sums.correct, sums.count};
  out.words.assign(sums.words.begin() + static_cast<std::ptrdiff_t>(first),
                   sums.words.begin() + static_cast<std::ptrdiff_t>(last));
  return out;
}

caf::expected<block_sums> put_together(std::vector<block_sums>& slices, std::uint64_t size) {
  auto runs_of = [](const block_sums& sums) {
    std::vector<std::pair<std::int64_t, std::int64_t>> runs;
    for (std::size_t i = 0; i + 1 < sums.runs.size(); i += 2)
      runs.emplace_back(sums.runs[i], sums.runs[i + 1]);
    std::sort(runs.begin(), runs.end());
    return runs;
  };
  if (slices.empty())
    return make_error(errc::shard_failed, "a request without slices");
  auto& first = slices.front();
  const auto covered = runs_of(first);
  std::uint64_t entries = 0;
  for (const auto& slice : slices) {
    if (runs_of(slice) != covered || slice.count != first.count)
      return make_error(errc::shard_failed, "a child's sums were lost part-way through the request");
    if (std::isnan(slice.max_units) || slice.max_units > first.max_units)
      first.max_units = slice.max_units;
    entries += slice.words.size();
  }
  if (entries != size)
    return make_error(errc::shard_failed, "the slices hold " + std::to_string(entries)
                                            + " sums, not " + std::to_string(size));
  block_sums out{std::move(first.runs), std::move(first.values), {}, first.max_units,
                 first.correct, first.count};
  out.words.reserve(size);
  for (const auto& slice : slices)
    out.words.insert(out.words.end(), slice.words.begin(), slice.words.end());
  return out;
}

} // namespace shardopt::actors
