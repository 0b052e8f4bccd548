#include "io/assembly.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace shardopt::io {

namespace {

constexpr std::int64_t largest = std::int64_t{1} << 40;

std::int64_t row_bytes(const model::dataset& data, std::int64_t row) {
  if (!data.is_sparse())
    return data.cols() * static_cast<std::int64_t>(sizeof(float)) + static_cast<std::int64_t>(sizeof(double));
  const auto* outer = data.sparse().outerIndexPtr();
  return (outer[row + 1] - outer[row]) * 8 + 4 + static_cast<std::int64_t>(sizeof(double));
}

} // namespace

std::int64_t bytes_of(const data_extent& extent) {
  const std::int64_t labels = extent.rows * static_cast<std::int64_t>(sizeof(double));
  if (!extent.sparse)
    return labels + extent.rows * extent.cols * static_cast<std::int64_t>(sizeof(float));
  return labels + (extent.rows + 1) * 4 + extent.nonzeros * 8;
}

data_extent extent_of(const model::dataset& data) {
  return extent_of(data, {0, data.rows()});
}

data_extent extent_of(const model::dataset& data, model::row_range rows) {
  if (!data.is_sparse())
    return {false, rows.size(), data.cols(), 0};
  const auto* outer = data.sparse().outerIndexPtr();
  return {true, rows.size(), data.cols(), outer[rows.end] - outer[rows.begin]};
}

std::vector<model::row_range> pieces_of(const model::dataset& data, model::row_range range,
                                        std::int64_t max_bytes) {
  std::vector<model::row_range> pieces;
  // CSR holds one more row start than rows: each piece counts it once, as bytes_of does.
  const std::int64_t fixed = data.is_sparse() ? 4 : 0;
  auto begin = range.begin;
  std::int64_t bytes = fixed;
  for (auto row = range.begin; row < range.end; ++row) {
    const auto more = row_bytes(data, row);
    if (row > begin && bytes + more > max_bytes) {
      pieces.push_back({begin, row});
      begin = row;
      bytes = fixed;
    }
    bytes += more;
  }
  if (range.end > begin)
    pieces.push_back({begin, range.end});
  return pieces;
}

result<void> check_extent(const data_extent& whole) {
  const auto describe = [&] {
    return "impossible data extent: " + std::to_string(whole.rows) + " rows of "
           + std::to_string(whole.cols) + " features";
  };
  if (whole.rows < 0 || whole.cols < 0 || whole.nonzeros < 0 || whole.rows > largest || whole.cols > largest)
    return fail_invalid(describe());
  const bool cells_past = whole.cols > 0 && whole.rows > largest / whole.cols;  // rows x cols > 2^40
  if (!whole.sparse) {
    if (whole.nonzeros != 0)
      return fail_invalid("impossible data extent: non-zeros given for dense data");
    if (cells_past)
      return fail_invalid(describe() + ", more than 2^40 dense cells");
    return {};
  }
  if (whole.cols > std::numeric_limits<std::int32_t>::max())
    return fail_invalid(describe() + ", more than 32-bit column indices allow");
  if (whole.nonzeros > std::numeric_limits<std::int32_t>::max())
    return fail_invalid("impossible data extent: " + std::to_string(whole.nonzeros)
                + " non-zeros, more than 32-bit offsets allow");
  if (!cells_past && whole.nonzeros > whole.rows * whole.cols)
    return fail_invalid("impossible data extent: " + std::to_string(whole.nonzeros) + " non-zeros in "
                + std::to_string(whole.rows) + " rows of " + std::to_string(whole.cols) + " features");
  return {};
}

result<dataset_assembly> dataset_assembly::start(const data_extent& whole) {
  if (auto ok = check_extent(whole); !ok)
    return ok.error();
  auto data = std::make_shared<model::dataset>();
  data->y.resize(whole.rows);
  if (whole.sparse) {
    model::sparse_features x(whole.rows, whole.cols);
    x.resizeNonZeros(whole.nonzeros);
    x.outerIndexPtr()[0] = 0;
    data->x = std::move(x);
  } else {
    data->x = model::dense_features(whole.rows, whole.cols);
  }
  return dataset_assembly{whole, std::move(data)};
}

result<void> dataset_assembly::append(std::int64_t first_row, const model::dataset& source,
                                      model::row_range piece) {
  if (!data_)
    return fail_invalid("this data is already complete");
  if (first_row != rows_)
    return fail_invalid("a piece starting at row " + std::to_string(first_row) + ", expected row "
                + std::to_string(rows_));
  if (source.is_sparse() != whole_.sparse || source.cols() != whole_.cols)
    return fail_invalid("a piece of " + std::to_string(source.cols()) + (source.is_sparse() ? " sparse" : " dense")
                + " features, the data has " + std::to_string(whole_.cols)
                + (whole_.sparse ? " sparse" : " dense"));
  if (piece.begin < 0 || piece.end > source.rows() || piece.begin > piece.end)
    return fail_invalid("a piece of rows " + std::to_string(piece.begin) + "-" + std::to_string(piece.end)
                + " of data with " + std::to_string(source.rows()));
  const auto rows = piece.size();
  if (rows > whole_.rows - rows_)
    return fail_invalid("a piece of " + std::to_string(rows) + " rows, only " + std::to_string(whole_.rows - rows_)
                + " are left");
  data_->y.segment(rows_, rows) = source.y.segment(piece.begin, rows);
  if (!whole_.sparse) {
    if (rows > 0)
      std::memcpy(std::get<model::dense_features>(data_->x).data() + rows_ * whole_.cols,
                  source.dense().data() + piece.begin * whole_.cols,
                  static_cast<std::size_t>(rows * whole_.cols) * sizeof(float));
  } else {
    const auto& from = source.sparse();
    const auto* outer = from.outerIndexPtr() + piece.begin;
    const auto nonzeros = static_cast<std::int64_t>(outer[rows] - outer[0]);
    if (nonzeros > whole_.nonzeros - nonzeros_)
      return fail_invalid("a piece of " + std::to_string(nonzeros) + " non-zeros, only "
                  + std::to_string(whole_.nonzeros - nonzeros_) + " are left");
    auto& into = std::get<model::sparse_features>(data_->x);
    const auto first = outer[0];
    for (std::int64_t i = 1; i <= rows; ++i)
      into.outerIndexPtr()[rows_ + i] = static_cast<std::int32_t>(nonzeros_ + outer[i] - first);
    std::copy_n(from.innerIndexPtr() + first, nonzeros, into.innerIndexPtr() + nonzeros_);
    std::copy_n(from.valuePtr() + first, nonzeros, into.valuePtr() + nonzeros_);
    nonzeros_ += nonzeros;
  }
  rows_ += rows;
  if (rows_ == whole_.rows && nonzeros_ != whole_.nonzeros)
    return fail_invalid("the pieces hold " + std::to_string(nonzeros_) + " non-zeros, "
                + std::to_string(whole_.nonzeros) + " were announced");
  return {};
}

std::shared_ptr<model::dataset> dataset_assembly::finish() {
  return complete() ? std::move(data_) : nullptr;
}

} // namespace shardopt::io
