#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <cstdint>
#include <variant>
#include <vector>

namespace shardopt::model {

/// Dense features, one example per row, stored as float32 (half the memory traffic of double);
/// every computation on them accumulates in double.
using dense_features = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Sparse features in CSR layout (row-major, 32-bit column indices), values in float32.
using sparse_features = Eigen::SparseMatrix<float, Eigen::RowMajor, std::int32_t>;

/// A block of labelled examples: features (dense or sparse) and one label per row.
/// Labels are already encoded for the model (see `model_kind`): a real target for least squares,
/// +1/-1 for binary models, a class index 0..K-1 for multiclass models.
struct dataset {
  std::variant<dense_features, sparse_features> x;
  Eigen::VectorXd y;

  std::int64_t rows() const {
    return std::visit([](const auto& m) { return static_cast<std::int64_t>(m.rows()); }, x);
  }
  std::int64_t cols() const {
    return std::visit([](const auto& m) { return static_cast<std::int64_t>(m.cols()); }, x);
  }
  bool is_sparse() const { return x.index() == 1; }
  const dense_features& dense() const { return std::get<0>(x); }
  const sparse_features& sparse() const { return std::get<1>(x); }
};

/// A half-open range [begin, end) of rows of a dataset.
struct row_range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  friend bool operator==(row_range a, row_range b) { return a.begin == b.begin && a.end == b.end; }
};

/// The rows an evaluation visits: a contiguous range, or an explicit list (a minibatch).
using row_selection = std::variant<row_range, std::vector<std::int64_t>>;

} // namespace shardopt::model
