#include "optimizer/l1_rounds.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>

namespace shardopt::optimizer::detail {

void l1_rounds::resume(const Eigen::VectorXd& x, double f, const Eigen::VectorXd& grad, int iterations,
                       int evaluations, int products, double seconds, std::vector<double> history) {
  g_ = grad;
  fx_ = f;
  info_.iteration = iterations;
  info_.evaluations = evaluations;
  info_.products = products;
  earlier_ = seconds;
  ring_ = std::move(history);
  figures(x);
}

std::optional<run_stop> l1_rounds::evaluate_full(const Eigen::VectorXd& x) {
  ++info_.evaluations;
  auto value = f_(x, g_);
  if (!value)
    return evaluation_failed(value.error());
  fx_ = *value + l1_term(x, c_);
  if (!std::isfinite(fx_) || !g_.allFinite())
    return run_stop{stop_reason::evaluation_failed, "objective or gradient is not finite"};
  figures(x);
  return std::nullopt;
}

void l1_rounds::figures(const Eigen::VectorXd& x) {
  pg_ = pseudo_gradient(x, g_, c_);
  info_.f = fx_;
  info_.grad_norm = pg_.norm();
  info_.grad_norm_inf = pg_.size() > 0 ? pg_.lpNorm<Eigen::Infinity>() : 0.0;
  info_.nonzeros = nonzero_penalised(x, c_);
  info_.seconds = seconds();
}

std::optional<run_stop> l1_rounds::finished(const Eigen::VectorXd& x) const {
  const double norm = pg_.norm();
  if (norm <= stops_.epsilon || norm <= stops_.epsilon_rel * x.norm())
    return run_stop{stop_reason::converged, ""};
  if (stops_.max_iterations > 0 && info_.iteration >= stops_.max_iterations)
    return run_stop{stop_reason::max_iterations, ""};
  return std::nullopt;
}

double l1_rounds::stop_threshold(const Eigen::VectorXd& x) const {
  return std::max(stops_.epsilon, stops_.epsilon_rel * x.norm());
}

std::optional<run_stop> l1_rounds::restrict_working_set(const Eigen::VectorXd& x, restricted_objective& out,
                                                        std::int64_t entering) {
  const auto n = x.size();
  // Entries at 0 enter when their |pseudo-gradient| reaches `least` (0: all that are not 0).
  double least = 0;
  capped_ = false;
  if (entering > 0) {
    magnitudes_.clear();
    for (Eigen::Index i = 0; i < n; ++i)
      if (c_[i] > 0 && x[i] == 0 && pg_[i] != 0)
        magnitudes_.push_back(std::abs(pg_[i]));
    const auto cap = static_cast<std::size_t>(entering);
    if (magnitudes_.size() > cap) {
      std::nth_element(magnitudes_.begin(), magnitudes_.begin() + static_cast<std::ptrdiff_t>(cap - 1),
                       magnitudes_.end(), std::greater<>());
      least = magnitudes_[cap - 1];
      capped_ = least > 0 && std::any_of(magnitudes_.begin() + static_cast<std::ptrdiff_t>(cap), magnitudes_.end(),
                                         [least](double m) { return m < least; });
    }
  }
  wanted_.clear();
  for (Eigen::Index i = 0; i < n; ++i)
    if (!(c_[i] > 0) || x[i] != 0 || (pg_[i] != 0 && std::abs(pg_[i]) >= least))
      wanted_.push_back(i);
  auto restricted = restrict_(wanted_);
  if (!restricted)
    return evaluation_failed(restricted.error());
  if (!restricted->evaluate)
    return run_stop{stop_reason::evaluation_failed, "the objective cannot be restricted to a working set"};
  const auto& entries = restricted->entries;
  for (std::size_t k = 0; k < entries.size(); ++k)
    if (entries[k] < 0 || entries[k] >= n || (k > 0 && entries[k] <= entries[k - 1]))
      return run_stop{stop_reason::evaluation_failed,
                      "the objective's working set has entry " + std::to_string(entries[k]) + " at position "
                        + std::to_string(k) + ": entries must increase and lie below " + std::to_string(n)};
  out = std::move(*restricted);
  return std::nullopt;
}

void l1_rounds::begin_round(int evaluations) {
  base_iterations_ = info_.iteration;
  base_evaluations_ = evaluations;
  base_products_ = info_.products;
}

iteration_hook l1_rounds::forward(std::optional<run_stop>& outer_stop) {
  return [this, &outer_stop](const iteration_info& at) {
    info_ = at;
    info_.iteration = base_iterations_ + at.iteration;
    info_.evaluations = base_evaluations_ + at.evaluations;
    info_.products = base_products_ + at.products;
    info_.seconds = seconds();
    if (hook_ && !hook_(info_)) {
      outer_stop = run_stop{stop_reason::stopped_by_hook, "stopped by the iteration hook"};
      return false;
    }
    if (stops_.past > 0 && objective_settled(ring_, stops_.past, stops_.delta, info_.iteration, info_.f)) {
      outer_stop = run_stop{stop_reason::objective_converged, ""};
      return false;
    }
    return true;
  };
}

void l1_rounds::count_round(int evaluations, int products) {
  info_.evaluations = base_evaluations_ + evaluations;
  info_.products = base_products_ + products;
}

std::optional<run_stop> l1_rounds::close_round(Eigen::VectorXd& x, const std::vector<Eigen::Index>& entries,
                                               const Eigen::VectorXd& start, double round_start) {
  g_.swap(g_start_);  // the round's start gradient, kept in case the round is undone below
  g_.resize(x.size());
  if (auto stop = evaluate_full(x))
    return stop;
  // The round's steps lowered the compact problem's F, which may differ from the full one's in
  // the last bits (another order of sums): a round that did not lower the full F is at machine
  // precision, and every round after it would repeat it. The run ends at the round's start,
  // the last state handed out, if one was (its iterations count what the round did).
  if (!(fx_ < round_start) && !finished(x)) {
    for (std::size_t k = 0; k < entries.size(); ++k)
      x[entries[k]] = start[static_cast<Eigen::Index>(k)];
    g_.swap(g_start_);
    fx_ = round_start;
    figures(x);
    return run_stop{stop_reason::line_search_failed,
                    "a round on the working set did not lower the objective (it may be at machine "
                    "precision; consider a larger epsilon)"};
  }
  return std::nullopt;
}

} // namespace shardopt::optimizer::detail
