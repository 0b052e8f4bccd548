#pragma once

#include "model/linear_model.hpp"
#include "model/result.hpp"

#include <memory>
#include <type_traits>
#include <variant>
#include <vector>

namespace shardopt::model {

/// The full regularised objective of a model over data held in this process, optionally as a sum
/// over several blocks (shards) of the same dataset:
/// f(theta) = (1/n) sum_i loss_i(theta) + (lambda/2) ||W||^2.
/// Satisfies the optimizer's objective concept. Blocks are added in order, so the result is
/// deterministic; the data is shared, never copied.
class local_objective {
public:
  local_objective(model_shape shape, std::shared_ptr<const dataset> data, double lambda,
                  std::vector<row_range> blocks = {})
    : shape_(shape), data_(std::move(data)), lambda_(lambda), blocks_(std::move(blocks)) {
    if (blocks_.empty())
      blocks_.push_back(row_range{0, data_->rows()});
    partial_.resize(shape_.dimension());
  }

  std::int64_t dimension() const { return shape_.dimension(); }

  /// Full objective at theta; overwrites grad. Never fails.
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    grad.setZero(shape_.dimension());
    double loss = 0;
    std::int64_t count = 0;
    for (const auto& block : blocks_) {
      loss += loss_grad_sum(shape_, *data_, block, theta, partial_);
      grad += partial_;
      count += block.size();
    }
    return finish_objective(shape_, lambda_, count, loss, theta, grad);
  }

  /// The objective of a minibatch: the mean loss over `rows` (indices into the whole dataset) plus
  /// the regulariser, as stochastic-gradient methods use it; overwrites grad. `rows` must not be
  /// empty.
  double evaluate(const Eigen::VectorXd& theta, const row_selection& rows, Eigen::VectorXd& grad) {
    grad.resize(shape_.dimension());
    const double loss = loss_grad_sum(shape_, *data_, rows, theta, grad);
    const auto count = std::visit(
      [](const auto& r) -> std::int64_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(r)>, row_range>)
          return r.size();
        else
          return static_cast<std::int64_t>(r.size());
      },
      rows);
    return finish_objective(shape_, lambda_, count, loss, theta, grad);
  }

private:
  model_shape shape_;
  std::shared_ptr<const dataset> data_;
  double lambda_;
  std::vector<row_range> blocks_;
  Eigen::VectorXd partial_;
};

} // namespace shardopt::model
