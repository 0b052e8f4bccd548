#pragma once

// A dataset that arrives in pieces of consecutive rows: how a node receives a shipped shard, so
// that no message (and no network buffer, which keeps the size of the largest message it held) is
// larger than a piece. The whole is allocated once, from the totals the first piece announces, and
// each piece is copied into place: a node holds the shard's bytes plus one piece, never the shard
// twice.

#include "model/dataset.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <memory>

namespace shardopt::io {

/// The shape of a whole dataset: rows, features, and for sparse data its non-zeros.
struct data_extent {
  bool sparse = false;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t nonzeros = 0;  ///< 0 for dense data
};

/// Bytes data of this extent holds in memory: float32 features (and for CSR, 32-bit column indices
/// and row starts) and double labels. Extents past 2^40 rows, columns or cells are refused before
/// this is asked (see `dataset_assembly::start`).
std::int64_t bytes_of(const data_extent& extent);

/// Fails, naming the reason, on an impossible extent: negative sizes, more than 2^40 rows or
/// columns, dense data of more than 2^40 cells or with non-zeros, sparse data of more than 2^31 - 1
/// columns or non-zeros (32-bit indices and row offsets) or more non-zeros than cells.
result<void> check_extent(const data_extent& extent);

/// The extent of `data`, or of its rows `rows`.
data_extent extent_of(const model::dataset& data);

/// The bytes `data` holds in memory: bytes_of(extent_of(data)).
inline std::int64_t bytes_of(const model::dataset& data) { return bytes_of(extent_of(data)); }
data_extent extent_of(const model::dataset& data, model::row_range rows);

/// Rows [range.begin, range.end) of `data` cut into consecutive pieces of at most `max_bytes`
/// bytes each (as `bytes_of` counts them; a single row larger than that is a piece of its own).
/// An empty range gives no pieces.
std::vector<model::row_range> pieces_of(const model::dataset& data, model::row_range range,
                                        std::int64_t max_bytes);

/// A dataset being filled with pieces of consecutive rows.
class dataset_assembly {
public:
  /// Allocates the whole dataset. Fails on an impossible extent (`check_extent`).
  static result<dataset_assembly> start(const data_extent& whole);

  const data_extent& whole() const { return whole_; }
  std::int64_t rows_received() const { return rows_; }
  bool complete() const { return rows_ == whole_.rows && nonzeros_ == whole_.nonzeros; }

  /// Copies rows `piece` of `source` in as rows first_row.. of the whole. Fails, naming what, when
  /// first_row is not the next row expected, the source's kind or features differ from the
  /// whole's, the rows are not the source's, or they hold more rows or non-zeros than are left.
  result<void> append(std::int64_t first_row, const model::dataset& source, model::row_range piece);

  /// The complete dataset; leaves this assembly empty. Only when `complete()`.
  std::shared_ptr<model::dataset> finish();

private:
  dataset_assembly(const data_extent& whole, std::shared_ptr<model::dataset> data)
    : whole_(whole), data_(std::move(data)) {}

  data_extent whole_;
  std::shared_ptr<model::dataset> data_;
  std::int64_t rows_ = 0;
  std::int64_t nonzeros_ = 0;
};

} // namespace shardopt::io
