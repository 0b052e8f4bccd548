#include "model/dense_kernels.hpp"

namespace shardopt::model::detail {

dense_products::dense_products(const model_shape& shape, const dataset& data,
                               Eigen::Ref<const Eigen::VectorXd> theta)
  : x_(data.dense()), w_(theta.data(), shape.features, shape.outputs),
    b_(theta.data() + shape.weight_count(), shape.outputs) {}

void dense_products::forward(const chunk& c, Eigen::MatrixXd& zt) {
  if (std::holds_alternative<row_range>(*c.rows)) {
    x_chunk_ = x_.middleRows(c.row(0), c.count).cast<double>();
  } else {
    x_chunk_.resize(c.count, x_.cols());
    for (std::int64_t j = 0; j < c.count; ++j)
      x_chunk_.row(j) = x_.row(c.row(j)).cast<double>();
  }
  zt.resize(w_.cols(), c.count);
  zt.noalias() = w_.transpose() * x_chunk_.transpose();
  zt.colwise() += b_;
}

void dense_products::backward(const Eigen::MatrixXd& rt, Eigen::Ref<Eigen::MatrixXd> grad_w,
                              Eigen::Ref<Eigen::VectorXd> grad_b) const {
  grad_w.noalias() += x_chunk_.transpose() * rt.transpose();
  grad_b += rt.rowwise().sum();
}

void dense_products::backward_squared(const Eigen::MatrixXd& dt, Eigen::Ref<Eigen::MatrixXd> diag_w,
                                      Eigen::Ref<Eigen::VectorXd> diag_b) const {
  diag_w.noalias() += x_chunk_.cwiseAbs2().transpose() * dt.transpose();
  diag_b += dt.rowwise().sum();
}

} // namespace shardopt::model::detail
