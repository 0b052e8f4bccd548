#pragma once

// Internal to the model layer: the linear models on CSR features, as plain loops over each row's
// non-zeros. Two kinds of pass:
// - `sparse_products`: scores and backward products summed in double (minibatches, scores, the
//   plain sums), one gather of theta per non-zero forward and one scatter backward;
// - `sparse_layout::pass`: the exact block sums of exact_sum.hpp over a shard's rows, rounding
//   each term x_ij r_ik (and x_ij^2 d_ik for the Hessian's diagonal) to its entry's grid as it is
//   scattered, in buffers of the features the rows touch.
// Not part of the interface: linear_model.hpp's and block_evaluator.hpp's functions choose these.

#include "model/dataset.hpp"
#include "model/exact_sum.hpp"
#include "model/kernels.hpp"
#include "model/linear_model.hpp"
#include "model/model_shape.hpp"
#include "base/large_buffer.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace shardopt::model::detail {

/// Scores and backward products of a linear model (weights W: features x outputs, biases b, as
/// theta lays them out) over the rows of a CSR dataset, summed in double. Reads `theta` (or a
/// direction v in its place), which must outlive it.
class sparse_products {
public:
  sparse_products(const model_shape& shape, const dataset& data,
                  Eigen::Ref<const Eigen::VectorXd> theta);

  /// zt (outputs x m) = W^T x + b for the chunk's rows; row j's sum runs over its non-zeros in order.
  void forward(const chunk& c, Eigen::MatrixXd& zt) const;

  /// Adds X_c^T R (R = rt^T) to `grad_rows` (features x outputs, row-major: for one output, the
  /// weights' entries of a gradient-shaped vector) and R's column sums to `grad_b`.
  void backward(const chunk& c, const Eigen::MatrixXd& rt, double* grad_rows,
                Eigen::Ref<Eigen::VectorXd> grad_b) const;

private:
  sparse_view x_;
  std::int64_t outputs_;
  const double* w_;                  // W row-major: theta itself for one output
  Eigen::Map<const Eigen::VectorXd> b_;
  std::vector<double> w_rows_;       // several outputs: W copied row-major
};

/// How far ahead, in non-zeros, a pass asks for the cache line of the feature it will read: enough
/// to keep some twenty misses in flight where the records do not fit in cache.
constexpr std::int32_t prefetch_distance = 32;

/// A shard's CSR rows with its columns, the features its passes keep, numbered 0..m-1 in
/// increasing order, and the records its exact passes work in (block_evaluator.hpp): per column,
/// the coefficients a pass gathers (theta's or v's, every output) next to the fixed-point words
/// its terms are added to, so that a row's gather brings in the cache lines its scatter writes.
/// The columns are the features the rows touch, with the rows' indices renumbered to them, or,
/// when most features are touched (all but a third or fewer, and keeping the others costs no more
/// bytes), every feature, with the dataset's own indices read and a dense answer. Built once; a pass refills the m records (no pass touches the dimension unless
/// its columns are the dimension) and takes its answer's words from base/spare_words.hpp.
class sparse_layout {
public:
  sparse_layout(const model_shape& shape, const dataset& data, row_range rows);

  /// Features the rows touch.
  std::int64_t touched() const { return touched_; }

  /// Features the passes keep: the touched ones, or every feature.
  std::int64_t columns() const { return features_ > 0 ? features_ : static_cast<std::int64_t>(columns_.size()); }

  /// Whether the rows' indices are renumbered to the columns (else the dataset's own are read).
  bool renumbered() const { return features_ == 0; }

  /// Raises `feature_max` (dimension-sized) to each touched feature's largest |value| over the
  /// layout's rows, found in the numbering pass, and forgets those maxima. False, and nothing
  /// changed, once they are forgotten.
  bool max_into(Eigen::Ref<Eigen::VectorXd> feature_max);

  /// Whether the maxima are still held (not yet forgotten).
  bool holds_maxima() const { return !maxima_read_; }

  /// Raises the entries [begin, end) of `feature_max` to the maxima of the touched features in
  /// that range, leaving the others alone: threads given disjoint ranges may share one vector.
  /// Only while the maxima are held.
  void max_range(Eigen::Ref<Eigen::VectorXd> feature_max, std::int64_t begin, std::int64_t end) const;

  /// Forgets the maxima (their memory freed).
  void forget_maxima();

  /// The largest Euclidean norm of the layout's rows (model::max_row_norm's, found in the
  /// numbering pass and kept).
  double max_row_norm() const { return max_row_norm_; }

  /// What a pass computes per chunk of rows from the chunk's scores zt (outputs x m, columns in
  /// row order): its residuals rt (the gradient of the loss in the scores, per example), with
  /// `diagonal` its curvatures dt (the Hessian diagonal's, per output and example), and the
  /// chunk's loss sum. `first` is the chunk's first row, counted from the layout's first row.
  struct chunk_work {
    std::int64_t first;
    const Eigen::MatrixXd& zt;
    Eigen::MatrixXd& rt;
    Eigen::MatrixXd& dt;
  };
  using residual_function = std::function<double(const chunk_work&)>;

  /// An exact pass over `blocks` (consecutive, starting at the layout's first row): scores from
  /// `coefficients` (theta, or v for a product), residuals (and curvatures) from `residual`, their
  /// terms rounded onto grid `g` (words for the columns' entries and the biases; with
  /// `diagonal`, also the diagonal's, at dimension + entry). `losses` gets each block's sum.
  entry_sums pass(const model_shape& shape, const dataset& data, const std::vector<row_range>& blocks,
                  std::int64_t block_rows, const double* coefficients, const grid& g, bool diagonal,
                  const residual_function& residual, std::vector<double>& losses);

private:
  /// The answer's entries: the columns' weights output by output, the biases, and (with the
  /// diagonal) the same again offset by the dimension; null (a dense answer) with every feature a
  /// column.
  const std::shared_ptr<const std::vector<std::int32_t>>& entries(const model_shape& shape, bool diagonal);

  /// Column j's feature.
  std::int32_t column(std::int64_t j) const {
    return features_ > 0 ? static_cast<std::int32_t>(j) : columns_[static_cast<std::size_t>(j)];
  }

  std::int64_t first_row_;
  std::int64_t first_nonzero_;            // of the layout's first row, in the dataset
  std::int64_t nonzeros_;                 // in the layout's rows
  std::int64_t touched_ = 0;              // features the rows touch
  std::int64_t features_ = 0;             // every feature a column: the dimension's features, else 0
  std::vector<std::int32_t> columns_;     // otherwise the touched features, increasing
  std::vector<std::int32_t> local_;       // each non-zero's feature, as its place in columns_;
                                          // empty when every feature is a column (the place is
                                          // the feature: the dataset's own indices are read)
  std::vector<float> column_max_;         // per column, its largest |value| (-1: untouched), until read
  bool maxima_read_ = false;
  double max_row_norm_ = 0;
  std::vector<std::uint64_t, large_buffer_allocator<std::uint64_t>> records_;  // per column: coefficients, words, diagonal words
  std::shared_ptr<const std::vector<std::int32_t>> entries_[2];
};

} // namespace shardopt::model::detail
