#pragma once

// Internal to the model layer: the linear models' products on dense float rows, a chunk at a time
// as two matrix products in double (the chunk is converted once and reused by both while it is in
// cache). Not part of the interface: linear_model.hpp's functions choose these for dense data.

#include "model/dataset.hpp"
#include "model/kernels.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

namespace shardopt::model::detail {

/// Scores and backward products of a linear model (weights W: features x outputs, biases b, as
/// theta lays them out) over the rows of a dense dataset. Reads `theta` (or a direction v in its
/// place), which must outlive it.
class dense_products {
public:
  dense_products(const model_shape& shape, const dataset& data,
                 Eigen::Ref<const Eigen::VectorXd> theta);

  /// zt (outputs x m) = W^T x + b for the chunk's rows, keeping the chunk's rows in double for
  /// `backward`.
  void forward(const chunk& c, Eigen::MatrixXd& zt);

  /// Adds X_c^T R (R = rt^T) to grad_w (features x outputs) and R's column sums to grad_b, for the
  /// chunk of the last `forward`.
  void backward(const Eigen::MatrixXd& rt, Eigen::Ref<Eigen::MatrixXd> grad_w,
                Eigen::Ref<Eigen::VectorXd> grad_b) const;

  /// Adds (X_c o X_c)^T D (D = dt^T, the curvatures) to diag_w and D's column sums to diag_b: a
  /// Hessian diagonal's sums, for the chunk of the last `forward`.
  void backward_squared(const Eigen::MatrixXd& dt, Eigen::Ref<Eigen::MatrixXd> diag_w,
                        Eigen::Ref<Eigen::VectorXd> diag_b) const;

private:
  using row_major_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  dense_view x_;
  Eigen::Map<const Eigen::MatrixXd> w_;
  Eigen::Map<const Eigen::VectorXd> b_;
  row_major_matrix x_chunk_;
};

} // namespace shardopt::model::detail
