#pragma once

#include "model/block_bounds.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <cmath>
#include <limits>
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
/// models. Sums exactly as the sharded objective does (exact_sum.hpp): each shard is cut into
/// blocks of `block_rows_for(n)` rows from its first row, losses are added per block in order and
/// gradients on a fixed-point grid chosen from the data and theta (block_bounds.hpp). So shards of
/// whole canonical blocks (io::partition_blocks) give the bits of one block holding everything,
/// and the sharded objective over the same shards gives these bits. The data is shared, never
/// copied.
class local_objective {
public:
  local_objective(model_shape shape, std::shared_ptr<const dataset> data, double lambda,
                  std::vector<row_range> shards = {})
    : shape_(shape), data_(std::move(data)), lambda_(lambda) {
    if (shards.empty())
      shards.push_back(row_range{0, data_->rows()});
    for (const auto& shard : shards)
      count_ += shard.size();
    bounds_.block_rows = block_rows_for(count_);
    for (const auto& shard : shards) {
      blocks_.push_back(blocks_of(shard, bounds_.block_rows));
      bounds_ += bounds_of(*data_, shard, bounds_.block_rows);
    }
  }

  std::int64_t dimension() const { return shape_.dimension(); }

  /// Full objective at theta; overwrites grad. Never fails: a non-finite loss or gradient (or sums
  /// that overflow even the coarser grids) gives a NaN objective and gradient.
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    const bool keep = products_asked_;
    curvatures_.resize(keep ? blocks_.size() : 0);
    last_theta_ = theta;
    double loss = 0;
    auto sum = exact([&](std::size_t b, exact_sum& into) {
      block_loss_grad(shape_, *data_, blocks_[b], bounds_.block_rows, theta, losses_, into,
                      keep ? &curvatures_[b] : nullptr);
      for (const double value : losses_)
        loss += value;
    }, gradient_grid(shape_, bounds_, theta), loss);
    grad.resize(shape_.dimension());
    if (!fits_grid(sum.max_units(), bounds_.blocks)) {
      grad.setConstant(std::numeric_limits<double>::quiet_NaN());
      return std::numeric_limits<double>::quiet_NaN();
    }
    sum.to_doubles(grad);
    return finish_objective(shape_, lambda_, count_, loss, theta, grad);
  }

  /// The Hessian of the full objective at the theta of the last `evaluate` (full data, not a
  /// minibatch) times v, into hv, summed as `evaluate` sums. Evaluations keep the per-example
  /// curvature from the first product on (the first one rebuilds it). Fails for networks (no
  /// Hessian here), for a v of another size and before any evaluation.
  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (!has_hessian(shape_))
      return fail_invalid("Hessian-vector products are defined for the linear models, not " + describe(shape_));
    if (last_theta_.size() != shape_.dimension())
      return fail_invalid("a Hessian-vector product needs an evaluation first");
    if (v.size() != shape_.dimension())
      return fail_invalid("v has " + std::to_string(v.size()) + " entries, the model expects "
                  + std::to_string(shape_.dimension()));
    // Evaluations keep the curvature from the first product on; this once, rebuild it.
    if (!products_asked_) {
      products_asked_ = true;
      curvatures_.clear();
      for (const auto& blocks : blocks_)
        curvatures_.push_back(block_curvature(shape_, *data_, blocks, last_theta_));
    }
    double unused = 0;
    auto sum = exact([&](std::size_t b, exact_sum& into) {
      block_hessian_vector(shape_, *data_, blocks_[b], bounds_.block_rows, curvatures_[b], v, into);
    }, hessian_vector_grid(shape_, bounds_, v), unused);
    if (!fits_grid(sum.max_units(), bounds_.blocks))
      return fail_runtime("the Hessian-vector product is not finite (or overflows its grids)");
    hv.resize(shape_.dimension());
    sum.to_doubles(hv);
    finish_hessian_vector(shape_, lambda_, count_, v, hv);
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
  /// Runs `shard(b, sum)` over every shard on the grids `exponents`, and once more on coarser
  /// grids if a bound failed (as the sharded objective does); `reset` is zeroed before each run.
  template <class Shard>
  exact_sum exact(Shard shard, std::vector<int> exponents, double& reset) {
    for (int attempt = 0;; ++attempt) {
      exact_sum sum(exponents);
      reset = 0;
      for (std::size_t b = 0; b < blocks_.size(); ++b)
        shard(b, sum);
      // NaN: a non-finite term, which no grid mends; infinite units: a grid far too fine.
      if (attempt > 0 || std::isnan(sum.max_units()) || fits_grid(sum.max_units(), bounds_.blocks))
        return sum;
      const auto shift = grid_shift(sum.max_units(), bounds_.blocks);
      for (auto& e : exponents)
        e = std::min(e + shift, highest_grid);
    }
  }

  model_shape shape_;
  std::shared_ptr<const dataset> data_;
  double lambda_;
  std::int64_t count_ = 0;
  std::vector<std::vector<row_range>> blocks_;  // each shard's canonical blocks
  data_bounds bounds_;
  std::vector<double> losses_;
  std::vector<std::vector<curvature>> curvatures_;  // of the last full evaluation, per shard
  Eigen::VectorXd last_theta_;                      // of the last full evaluation
  bool products_asked_ = false;  // evaluations keep curvatures from the first product on
};

} // namespace shardopt::model
