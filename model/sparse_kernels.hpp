#pragma once

// Internal to the model layer: the linear models on CSR features, as plain loops over each row's
// non-zeros. Two kinds of pass:
// - `sparse_products`: scores and backward products summed in double (minibatches, scores, the
//   plain sums), one gather of theta per non-zero forward and one scatter backward;
// - `sparse_block_loss_grad` / `sparse_block_hessian_vector`: the exact block sums of
//   exact_sum.hpp, rounding each term x_ij r_ik to its entry's grid as it is scattered.
// Not part of the interface: linear_model.hpp's functions choose these for sparse data.

#include "model/dataset.hpp"
#include "model/exact_sum.hpp"
#include "model/kernels.hpp"
#include "model/linear_model.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <cstdint>
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

/// `block_loss_grad` (linear_model.hpp) for a linear model over CSR features.
void sparse_block_loss_grad(const model_shape& shape, const dataset& data,
                            const std::vector<row_range>& blocks, std::int64_t block_rows,
                            Eigen::Ref<const Eigen::VectorXd> theta, std::vector<double>& losses,
                            exact_sum& grad, std::vector<curvature>* keep);

/// `block_hessian_vector` (linear_model.hpp) for a linear model over CSR features.
void sparse_block_hessian_vector(const model_shape& shape, const dataset& data,
                                 const std::vector<row_range>& blocks, std::int64_t block_rows,
                                 const std::vector<curvature>& at,
                                 Eigen::Ref<const Eigen::VectorXd> v, exact_sum& hv);

} // namespace shardopt::model::detail
