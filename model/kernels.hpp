#pragma once
// Internal to the model layer: what the linear models' and the networks' kernels share. Walking a
// row selection in chunks, gathering a chunk's labels, and the per-example losses on a chunk's
// scores. Not part of the interface.

#include "model/dataset.hpp"
#include "model/linear_model.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <variant>

namespace shardopt::model::detail {

/// Rows per chunk: a chunk of dense features converted to double (256 x 784 x 8 bytes = 1.6 MB)
/// stays in cache for both matrix products.
constexpr std::int64_t chunk_rows = 256;

/// The rows of one chunk: either a contiguous range or a slice of an index list.
struct chunk {
  const row_selection* rows;
  std::int64_t first;  // position within the selection
  std::int64_t count;

  std::int64_t row(std::int64_t j) const {
    if (const auto* range = std::get_if<row_range>(rows))
      return range->begin + first + j;
    return std::get<1>(*rows)[static_cast<std::size_t>(first + j)];
  }
};

/// The number of rows a selection holds.
std::int64_t selection_size(const row_selection& rows);

/// Calls f(chunk) for consecutive chunks of the selection, of `size` rows (the last may be shorter).
template <class F>
void for_each_chunk(const row_selection& rows, F&& f, std::int64_t size = chunk_rows) {
  const std::int64_t n = selection_size(rows);
  for (std::int64_t first = 0; first < n; first += size)
    f(chunk{&rows, first, std::min(size, n - first)});
}

/// The encoded labels of a chunk's rows.
void gather_labels(const dataset& data, const chunk& c, Eigen::VectorXd& y);

/// Loss sum of one chunk and its residuals dloss/dz. `zt` and `rt` are outputs x examples (one column
/// per example, so that an example's scores are contiguous); `y` holds the chunk's encoded labels.
/// With `ct`, also the loss's curvature in z per example, as `curvature` (linear_model.hpp) keeps it:
/// resized to 1 x m (logistic), outputs x m (softmax, svm) or left empty (least squares).
double chunk_loss(model_kind kind, const Eigen::MatrixXd& zt, const Eigen::VectorXd& y, Eigen::MatrixXd& rt,
                  Eigen::MatrixXd* ct = nullptr);

/// qt = the loss's Hessian in z times ut, per example (column), from the chunk's curvature `ct`.
void chunk_curvature_product(model_kind kind, const Eigen::MatrixXd& ct, const Eigen::MatrixXd& ut,
                             Eigen::MatrixXd& qt);

/// A network's loss sum and gradient sum over the selected rows (see `loss_grad_sum`).
double network_loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                             Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum);

/// A network's output scores (rows x outputs) of a row range, into `z`.
void network_scores(const model_shape& shape, const dataset& data, row_range rows,
                    Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::MatrixXd> z);

} // namespace shardopt::model::detail
