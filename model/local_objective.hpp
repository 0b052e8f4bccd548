#pragma once

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/linear_model.hpp"
#include "model/restriction.hpp"
#include "base/result.hpp"

#include <cmath>
#include <functional>
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
/// Satisfies the optimizer's objective concept, with Hessian-vector products, the Hessian's
/// diagonal and line values for the linear models. Sums exactly as the sharded objective does
/// (exact_sum.hpp), through the same block evaluators: each shard is cut into blocks of
/// `block_rows_for(n)` rows from its first row, losses are added per block in order and gradients
/// on fixed-point grids planned from the data (block_bounds.hpp). So shards of whole canonical
/// blocks (io::partition_blocks) give the bits of one block holding everything, and the sharded
/// objective over the same shards gives these bits. The data is shared, never copied.
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
      evaluators_.emplace_back(shape_, data_, shard, bounds_.block_rows);
      bounds_ += bounds_of(*data_, shard, bounds_.block_rows);
    }
    plan_ = grid_plan{shape_, bounds_};
  }

  std::int64_t dimension() const { return shape_.dimension(); }

  /// Full objective at theta; overwrites grad. Never fails: a non-finite loss or gradient (or sums
  /// that overflow even the coarser grids) gives a NaN objective and gradient.
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    return evaluate_at(theta, grad, nullptr);
  }

  /// `evaluate`, and the diagonal of the Hessian at theta into `diagonal` (linear models; the
  /// regulariser's lambda on the weights included): Newton's preconditioner.
  double evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
    return evaluate_at(theta, grad, &diagonal);
  }

  /// The Hessian of the full objective at the theta of the last `evaluate` (full data, not a
  /// minibatch) times v, into hv, summed as `evaluate` sums. Fails for networks (no Hessian here),
  /// for a v of another size and before any evaluation.
  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (!has_hessian(shape_))
      return fail_invalid("Hessian-vector products are defined for the linear models, not " + describe(shape_));
    if (last_theta_.size() != shape_.dimension())
      return fail_invalid("a Hessian-vector product needs an evaluation first");
    if (v.size() != shape_.dimension())
      return fail_invalid("v has " + std::to_string(v.size()) + " entries, the model expects "
                  + std::to_string(shape_.dimension()));
    double unused = 0;
    const auto& sum = exact([&](block_evaluator& shard, const grid& g) { return shard.hessian_vector(v, g); },
                            plan_.hessian_vector(v), unused);
    if (!fits_grid(sum.max_units(), bounds_.blocks))
      return fail_runtime("the Hessian-vector product is not finite (or overflows its grids)");
    hv.resize(shape_.dimension());
    finish_linear(shape_, sum, hv, 0, lambda_, count_, &v);
    return {};
  }

  /// The objective at theta_prev + alpha (theta_last - theta_prev) for each alpha, theta_last and
  /// theta_prev being the last two evaluations' points, from the scores they kept (linear models:
  /// no pass over the features). Fails for networks and before two evaluations.
  result<void> line_values(const std::vector<double>& alphas, std::vector<double>& values) {
    if (!has_hessian(shape_))
      return fail_invalid("line values are defined for the linear models, not " + describe(shape_));
    if (previous_theta_.size() != shape_.dimension())
      return fail_invalid("line values need two evaluations first");
    values.assign(alphas.size(), 0.0);
    std::vector<double> losses;
    for (const auto& shard : evaluators_) {
      shard.line_losses(alphas, losses);
      for (std::size_t b = 0; b < losses.size(); ++b)  // block by block, as the sharded objective adds
        values[b % alphas.size()] += losses[b];
    }
    const auto along = line_terms(shape_, previous_theta_, last_theta_);
    for (std::size_t a = 0; a < alphas.size(); ++a)
      values[a] = values[a] / static_cast<double>(count_) + along.penalty(lambda_, alphas[a]);
    return {};
  }

  /// Whether `restrict` works: for the linear models.
  bool can_restrict() const { return has_hessian(shape_); }

  /// A restriction of the objective to the entries of theta that weigh some of the features,
  /// with the others held at 0 (OWL-QN's and orthant-wise Newton-CG's shrinking, optimizer/owlqn.hpp): the same objective over
  /// the data's columns `features` alone (renumbered, restrict_columns), the same shards and rows.
  struct restriction {
    std::vector<Eigen::Index> entries;  ///< theta's entries, in the compact problem's order
    std::int64_t nonzeros = 0;          ///< the compact data's (what an evaluation reads)
    std::function<double(const Eigen::VectorXd&, Eigen::VectorXd&)> evaluate;
    /// The compact objective's Hessian-vector products, evaluation with the diagonal and line
    /// values (orthant-wise Newton-CG's shrinking).
    std::function<result<void>(const Eigen::VectorXd&, Eigen::VectorXd&)> hessian;
    std::function<double(const Eigen::VectorXd&, Eigen::VectorXd&, Eigen::VectorXd&)> diagonal;
    std::function<result<void>(const std::vector<double>&, std::vector<double>&)> line;
  };

  /// Restricts to the features of the entries `wanted` (increasing), every output's weights on
  /// them and the biases. Its functions borrow a compact objective this one keeps until the next
  /// restriction. Fails for networks.
  result<restriction> restrict(const std::vector<Eigen::Index>& wanted) {
    if (!can_restrict())
      return fail_invalid("only the linear models can be restricted to some features, not " + describe(shape_));
    const auto features = features_of_entries(shape_, wanted);
    std::vector<row_range> shards;
    for (const auto& evaluator : evaluators_)
      shards.push_back(evaluator.range());
    auto data = std::make_shared<const dataset>(restrict_columns(*data_, features));
    restricted_ = std::make_unique<local_objective>(
      model_shape{shape_.kind, static_cast<std::int64_t>(features.size()), shape_.outputs}, std::move(data), lambda_,
      std::move(shards));
    auto* compact = restricted_.get();
    return restriction{entries_of_features(shape_, features), compact->data_->nonzeros(),
                       [compact](const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
                         return compact->evaluate(theta, grad);
                       },
                       [compact](const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
                         return compact->hessian_vector(v, hv);
                       },
                       [compact](const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
                         return compact->evaluate_diagonal(theta, grad, diagonal);
                       },
                       [compact](const std::vector<double>& alphas, std::vector<double>& values) {
                         return compact->line_values(alphas, values);
                       }};
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
  double evaluate_at(const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd* diagonal) {
    const bool with_diagonal = diagonal && has_hessian(shape_);
    previous_theta_.swap(last_theta_);
    last_theta_ = theta;
    ++evaluations_;
    double loss = 0;
    std::vector<double> losses;
    const auto& sum = exact([&](block_evaluator& shard, const grid& g) {
      auto out = shard.loss_grad(theta, g, losses, evaluations_);
      for (const double value : losses)
        loss += value;
      return out;
    }, plan_.gradient(theta, with_diagonal), loss);
    const auto n = shape_.dimension();
    grad.resize(n);
    if (diagonal)
      diagonal->resize(n);
    if (!fits_grid(sum.max_units(), bounds_.blocks)) {
      grad.setConstant(std::numeric_limits<double>::quiet_NaN());
      if (diagonal)
        diagonal->setConstant(std::numeric_limits<double>::quiet_NaN());
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (with_diagonal)
      finish_linear(shape_, sum, *diagonal, n, lambda_, count_, nullptr);
    else if (diagonal)
      diagonal->setConstant(std::numeric_limits<double>::quiet_NaN());
    if (shape_.is_network()) {
      sum.to_doubles(grad);
      return finish_objective(shape_, lambda_, count_, loss, theta, grad);
    }
    const double squared_weights = finish_linear(shape_, sum, grad, 0, lambda_, count_, &theta);
    return loss * (1.0 / static_cast<double>(count_)) + 0.5 * lambda_ * squared_weights;
  }

  /// Runs `shard(evaluator, grid)` over every shard on grid `g`, adding the answers, and once more
  /// on coarser grids if a bound failed (as the sharded objective does); `reset` is zeroed before
  /// each run.
  template <class Shard>
  const exact_sum& exact(Shard shard, grid g, double& reset) {
    for (int attempt = 0;; ++attempt) {
      sum_.reset(g);
      reset = 0;
      for (auto& evaluator : evaluators_)
        sum_.merge(shard(evaluator, g));
      // NaN: a non-finite term, which no grid mends; infinite units: a grid far too fine.
      if (attempt > 0 || std::isnan(sum_.max_units()) || fits_grid(sum_.max_units(), bounds_.blocks))
        return sum_;
      g = grid_plan::coarser(std::move(g), grid_shift(sum_.max_units(), bounds_.blocks));
    }
  }

  model_shape shape_;
  std::shared_ptr<const dataset> data_;
  double lambda_;
  std::int64_t count_ = 0;
  std::vector<block_evaluator> evaluators_;  // one per shard
  data_bounds bounds_;
  grid_plan plan_;
  exact_sum sum_;
  std::uint64_t evaluations_ = 0;
  Eigen::VectorXd last_theta_, previous_theta_;  // of the last two full evaluations
  std::unique_ptr<local_objective> restricted_;  // the last restriction's compact objective
};

} // namespace shardopt::model
