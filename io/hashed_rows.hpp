#pragma once

// Internal to io/: the CSR arrays that hashed text formats (VW, CSV with string columns) parse
// into with parse_text (text_parse.hpp). Every row is a `hashed_row` made whole first (sorted
// columns, summed values), then copied into the region parse_text reserved for its piece.

#include "io/hashing.hpp"
#include "io/text_parse.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace shardopt::io::detail {

/// Rows of 2^bits hashed columns in CSR arrays sized once by parse_text's counts.
class hashed_rows {
public:
  hashed_rows(std::string name, hashing_options hashing)
    : name_(std::move(name)), hashing_(std::move(hashing)), bits_(hashing_.bits) {}

  result<void> allocate(const piece_counts& total) {
    constexpr auto max_items = std::int64_t{std::numeric_limits<std::int32_t>::max()};
    capacity_ = std::min(total.items, max_items);
    storage_ = std::make_shared<storage>();
    storage_->starts = uninitialised<std::int32_t>(total.rows + 1);
    storage_->indices = uninitialised<std::int32_t>(capacity_);
    storage_->values = uninitialised<float>(capacity_);
    if (!storage_->starts || !storage_->indices || !storage_->values || !rows_.allocate(total.rows))
      return fail_runtime(name_ + ": not enough memory for " + std::to_string(total.rows) + " rows and "
                          + std::to_string(capacity_) + " hashed features");
    storage_->starts[0] = 0;
    return {};
  }

  /// Stores `row` (finished here) as the piece's next row; the error text when it does not fit
  /// what the counts reserved or a value overflows a float.
  std::optional<std::string> store(hashed_row& row, double label, std::int64_t line, region at,
                                   piece_result& out, const piece_counts& room) {
    row.finish(bits_);
    const auto n = static_cast<std::int64_t>(row.size());
    if (out.rows == room.rows || out.items + n > room.items || at.item + out.items + n > capacity_)
      return std::string{"more features than the counts allow; too many for one dataset"};
    for (const auto& [column, value] : row.items())
      if (!(std::fabs(value) <= std::numeric_limits<float>::max()))
        return "a feature's value (" + std::to_string(value) + ", column " + std::to_string(column)
               + ") is not a finite float";
    auto* indices = &storage_->indices[static_cast<std::size_t>(at.item + out.items)];
    auto* values = &storage_->values[static_cast<std::size_t>(at.item + out.items)];
    for (const auto& [column, value] : row.items()) {
      *indices++ = static_cast<std::int32_t>(column);
      *values++ = static_cast<float>(value);
    }
    out.items += n;
    const auto r = at.row + out.rows;
    rows_.set(r, label, line);
    storage_->starts[static_cast<std::size_t>(r + 1)] = static_cast<std::int32_t>(at.item + out.items);
    ++out.rows;
    return std::nullopt;
  }

  void move(region from, region to, const piece_result& stored) {
    const auto shift = from.item - to.item;
    rows_.move(from.row, to.row, stored.rows);
    for (std::int64_t r = 0; r < stored.rows; ++r)
      storage_->starts[static_cast<std::size_t>(to.row + r + 1)] =
        static_cast<std::int32_t>(storage_->starts[static_cast<std::size_t>(from.row + r + 1)] - shift);
    const auto n = static_cast<std::size_t>(stored.items);
    std::memmove(&storage_->indices[static_cast<std::size_t>(to.item)],
                 &storage_->indices[static_cast<std::size_t>(from.item)], n * sizeof(std::int32_t));
    std::memmove(&storage_->values[static_cast<std::size_t>(to.item)],
                 &storage_->values[static_cast<std::size_t>(from.item)], n * sizeof(float));
  }

  std::int64_t items_before(std::int64_t row) const { return storage_->starts[static_cast<std::size_t>(row)]; }

  /// The rows as a dataset of 2^bits columns sharing the arrays.
  raw_dataset finish(const parsed_text& stored) {
    raw_dataset out;
    rows_.finish(stored.rows, out);
    model::shared_sparse x;
    x.starts = storage_->starts.get();
    x.indices = storage_->indices.get();
    x.values = storage_->values.get();
    x.rows = stored.rows;
    x.cols = std::int64_t{1} << bits_;
    x.owner = std::move(storage_);
    x.writable = true;
    out.data.x = std::move(x);
    out.source = name_;
    out.hashing = hashing_;
    return out;
  }

private:
  struct storage {
    std::unique_ptr<std::int32_t[]> starts;   // rows + 1
    std::unique_ptr<std::int32_t[]> indices;  // hashed columns
    std::unique_ptr<float[]> values;
  };

  std::string name_;
  hashing_options hashing_;
  int bits_;
  std::int64_t capacity_ = 0;
  std::shared_ptr<storage> storage_;
  row_labels rows_;
};

} // namespace shardopt::io::detail
