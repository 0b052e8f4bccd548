#pragma once

// What a model evaluates: labelled examples whose features are dense rows or CSR rows, held by the
// dataset or borrowed from storage that someone else owns (a memory-mapped binary cache, a caller's
// NumPy array), and the row ranges and selections that evaluations visit.

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

namespace shardopt::model {

/// Dense features, one example per row, stored as float32 (half the memory traffic of double);
/// every computation on them accumulates in double.
using dense_features = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Sparse features in CSR layout (row-major, 32-bit column indices), values in float32.
using sparse_features = Eigen::SparseMatrix<float, Eigen::RowMajor, std::int32_t>;

/// Read-only views of either layout: what every computation reads.
using dense_view = Eigen::Map<const dense_features>;
using sparse_view = Eigen::Map<const sparse_features>;

/// Dense rows in shared storage: `owner` keeps `values` (rows x cols floats, row-major) alive for as
/// long as any dataset refers to them: a memory-mapped cache, a caller's array, or arrays a reader
/// filled. `writable` when the storage may be changed in place (a reader's arrays; not a mapping or
/// a caller's array), which a dataset does only while it is the owner's sole user.
struct shared_dense {
  float* values = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::shared_ptr<void> owner;
  bool writable = false;
};

/// CSR rows in shared storage (see `shared_dense`): `starts` has rows + 1 entries from 0,
/// `indices` and `values` starts[rows] each; indices within a row strictly increase and are below
/// `cols` (checked by whoever fills or maps them).
struct shared_sparse {
  const std::int32_t* starts = nullptr;
  const std::int32_t* indices = nullptr;
  float* values = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::shared_ptr<void> owner;
  bool writable = false;
};

/// A block of labelled examples: features (dense or sparse; in Eigen's own storage, or shared) and
/// one label per row. Labels are already encoded for the model (see `model_kind`): a real target
/// for least squares, +1/-1 for binary models, a class index 0..K-1 for multiclass models. Copying
/// a dataset copies features in Eigen's storage and shares shared ones.
struct dataset {
  std::variant<dense_features, sparse_features, shared_dense, shared_sparse> x;
  Eigen::VectorXd y;

  std::int64_t rows() const;
  std::int64_t cols() const;
  std::int64_t nonzeros() const;  ///< stored entries: rows x cols for dense data
  bool is_sparse() const { return x.index() == 1 || x.index() == 3; }
  bool is_shared() const { return x.index() >= 2; }
  /// The features as views. Preconditions: `is_sparse()` false / true.
  dense_view dense() const;
  sparse_view sparse() const;
  /// The stored values (rows x cols row-major, or the CSR values), to change in place: shared
  /// storage that is not writable, or that another dataset also uses, is copied into this
  /// dataset's own first.
  float* writable_values();
  /// Widens sparse features to `cols` columns (no copy: indices stay valid). Precondition: sparse,
  /// cols >= cols().
  void widen(std::int64_t cols);
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
