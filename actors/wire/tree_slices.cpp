#include "actors/wire/tree_slices.hpp"

#include "base/spare_words.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace shardopt::actors {

caf::error check_slice(const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
                       const dense_vector& v, std::uint64_t dimension) {
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
  if (slice.theta_size > dimension || slice.v_size > dimension || slice.grid_size > 2 * dimension)
    return refused("invalid slice: vectors of " + std::to_string(std::max(slice.theta_size, slice.v_size))
                   + " entries and a grid of " + std::to_string(slice.grid_size) + ", past the "
                   + std::to_string(dimension) + " parameters of this driver's models here");
  if ((kind != tree_kind::hessvec && slice.v_size != 0)
      || (kind == tree_kind::quality && slice.grid_size != 0))
    return refused("invalid slice: vectors its kind does not have");
  const auto length = [&](std::uint64_t size) {
    const auto [first, last] = slice_bounds(size, slice.index, slice.count);
    return last - first;
  };
  if (theta.size() != length(slice.theta_size) || v.size() != length(slice.v_size)
      || grid.entries != length(slice.grid_size) || grid.base != slice.grid_base)
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
  auto part = kept_vector(last - first);
  *part = values.map().segment(static_cast<Eigen::Index>(first), static_cast<Eigen::Index>(last - first));
  return dense_vector{std::shared_ptr<const Eigen::VectorXd>(std::move(part))};
}

exact_grid grid_slice(const exact_grid& grid, const tree_slice& slice) {
  exact_grid part{grid.base, nullptr, 0};
  if (slice.grid_size != 0) {
    const auto [first, last] = slice_bounds(slice.grid_size, slice.index, slice.count);
    part.table = std::make_shared<const std::vector<std::uint8_t>>(grid.below() + first, grid.below() + last);
    part.entries = last - first;
  }
  return part;
}

dense_vector join_vectors(const std::vector<dense_vector>& parts, std::uint64_t size) {
  if (size == 0)
    return {};
  auto values = kept_vector(size);  // the parts fill it: check_slice held each to its share of `size`
  Eigen::Index at = 0;
  for (const auto& part : parts) {
    values->segment(at, static_cast<Eigen::Index>(part.size())) = part.map();
    at += static_cast<Eigen::Index>(part.size());
  }
  return dense_vector{std::shared_ptr<const Eigen::VectorXd>(std::move(values))};
}

exact_grid join_grid(const std::vector<exact_grid>& parts, const tree_slice& slice) {
  auto table = std::make_shared<std::vector<std::uint8_t>>();
  table->reserve(slice.grid_size);
  for (const auto& part : parts)
    table->insert(table->end(), part.below(), part.below() + part.entries);
  exact_grid whole{slice.grid_base, nullptr, table->size()};
  whole.table = std::move(table);
  return whole;
}

block_sums share_of(const block_sums& sums, std::uint64_t first, std::uint64_t last) {
  block_sums out;
  out.runs = sums.runs;
  out.values = sums.values;
  out.length = last - first;
  out.max_units = sums.max_units;
  out.correct = sums.correct;
  out.count = sums.count;
  if (!sums.entries) {
    out.words.assign(sums.words.begin() + static_cast<std::ptrdiff_t>(first),
                     sums.words.begin() + static_cast<std::ptrdiff_t>(last));
    return out;
  }
  const auto& entries = *sums.entries;
  const auto begin = std::lower_bound(entries.begin(), entries.end(), static_cast<std::int64_t>(first));
  const auto end = std::lower_bound(entries.begin(), entries.end(), static_cast<std::int64_t>(last));
  auto part = std::make_shared<std::vector<std::int32_t>>();
  part->reserve(static_cast<std::size_t>(end - begin));
  for (auto it = begin; it != end; ++it)
    part->push_back(static_cast<std::int32_t>(*it - static_cast<std::int64_t>(first)));
  out.words.assign(sums.words.begin() + (begin - entries.begin()), sums.words.begin() + (end - entries.begin()));
  out.entries = std::move(part);
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
  bool sparse = true;
  for (const auto& slice : slices) {
    if (runs_of(slice) != covered || slice.count != first.count)
      return make_error(errc::shard_failed, "a child's sums were lost part-way through the request");
    if (!sums_fit(slice))
      return make_error(errc::shard_failed, "a slice's sums are malformed");
    if (std::isnan(slice.max_units) || slice.max_units > first.max_units)
      first.max_units = slice.max_units;
    entries += slice.length;
    sparse = sparse && slice.entries;
  }
  if (entries != size)
    return make_error(errc::shard_failed, "the slices hold " + std::to_string(entries)
                                            + " sums, not " + std::to_string(size));
  block_sums out;
  out.runs = std::move(first.runs);
  out.values = std::move(first.values);
  out.length = size;
  out.max_units = first.max_units;
  out.correct = first.correct;
  out.count = first.count;
  std::uint64_t at = 0;  // the slice's first entry in the whole
  // The whole's words in a kept buffer, and each slice's given back once copied (the next
  // round's slices take them): the driver then holds no more buffers than it reuses.
  if (sparse) {
    std::size_t words = 0;
    for (const auto& slice : slices)
      words += slice.words.size();
    auto list = std::make_shared<std::vector<std::int32_t>>();
    list->reserve(words);
    out.words = shardopt::spare_words(words);
    auto next = out.words.begin();
    for (auto& slice : slices) {
      for (const auto entry : *slice.entries)
        list->push_back(static_cast<std::int32_t>(static_cast<std::uint64_t>(entry) + at));
      next = std::copy(slice.words.begin(), slice.words.end(), next);
      at += slice.length;
      shardopt::give_back_words(std::move(slice.words));
    }
    out.entries = std::move(list);
    return out;
  }
  out.words = shardopt::spare_words(static_cast<std::size_t>(size));
  for (auto& slice : slices) {
    const auto whole = out.words.begin() + static_cast<std::ptrdiff_t>(at);
    if (slice.entries) {
      std::fill(whole, whole + static_cast<std::ptrdiff_t>(slice.length), 0);
      for (std::size_t k = 0; k < slice.entries->size(); ++k)
        out.words[at + static_cast<std::uint64_t>((*slice.entries)[k])] = slice.words[k];
    } else {
      std::copy(slice.words.begin(), slice.words.end(), whole);
    }
    at += slice.length;
    shardopt::give_back_words(std::move(slice.words));
  }
  return out;
}

} // namespace shardopt::actors
