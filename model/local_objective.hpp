#pragma once

#include "model/linear_model.hpp"
#include "model/result.hpp"

#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace shardopt::model {

/// The full regularised objective of a model over data held in this process, optionally as a sum
/// over several blocks (shards) of the same dataset:
/// f(theta) = (1/n) sum_i loss_i(theta) + (lambda/2) ||W||^2.
/// Satisfies the optimizer's objective concept, with Hessian-vector products for the linear
/// models. Blocks are added in order, so the result is
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
    const bool keep = products_asked_;
    curvatures_.resize(keep ? blocks_.size() : 0);
    last_theta_ = theta;
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      loss += loss_grad_sum(shape_, *data_, blocks_[b], theta, partial_, keep ? &curvatures_[b] : nullptr);
      grad += partial_;
      count += blocks_[b].size();
    }
    return finish_objective(shape_, lambda_, count, loss, theta, grad);
  }

  /// The Hessian of the full objective at the theta of the last `evaluate` (full data, not a
  /// minibatch) times v, into hv; blocks added in order. Evaluations keep the per-example curvature
  /// from the first product on (the first one rebuilds it). Fails for networks (no Hessian here),
  /// for a v of another size and before any evaluation.
  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (!has_hessian(shape_))
      return fail("Hessian-vector products are defined for the linear models, not " + describe(shape_));
    if (last_theta_.size() != shape_.dimension())
      return fail("a Hessian-vector product needs an evaluation first");
    if (v.size() != shape_.dimension())
      return fail("v has " + std::to_string(v.size()) + " entries, the model expects "
                  + std::to_string(shape_.dimension()));
    // Evaluations keep the curvature from the first product on; this once, rebuild it.
    if (!products_asked_) {
      products_asked_ = true;
      curvatures_.clear();
      for (const auto& block : blocks_)
        curvatures_.push_back(curvature_at(shape_, *data_, block, last_theta_));
    }
    hv.setZero(shape_.dimension());
    std::int64_t count = 0;
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      hessian_vector_sum(shape_, *data_, blocks_[b], curvatures_[b], v, partial_);
      hv += partial_;
      count += blocks_[b].size();
    }
    finish_hessian_vector(shape_, lambda_, count, v, hv);
    return {};
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
  std::vector<curvature> curvatures_;  // of the last full evaluation, per block
  Eigen::VectorXd last_theta_;         // of the last full evaluation
  bool products_asked_ = false;        // evaluations keep curvatures from the first product on
};

} // namespace shardopt::model
