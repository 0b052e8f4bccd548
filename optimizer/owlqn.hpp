#pragma once

// OWL-QN: L-BFGS for an objective with an L1 term, F(x) = f(x) + sum_i c_i |x_i| with f smooth
// (G. Andrew and J. Gao, "Scalable training of L1-regularized log-linear models", ICML 2007).
// The shards compute f and its gradient as for L-BFGS; the L1 term lives here only, so the
// objective, the actors and the exact sums do not change.

#include "optimizer/lbfgs.hpp"
#include "optimizer/objective.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <cstdint>

namespace shardopt::optimizer {

/// The steepest-descent direction's negative at x for F = f + sum c_i |x_i|: where c_i = 0 the
/// gradient g_i; where x_i != 0, g_i + c_i sign(x_i); at x_i = 0 the one-sided derivative that
/// points downhill (g_i + c_i if that is negative, g_i - c_i if that is positive), else 0.
/// F is at a minimum exactly where this is 0.
Eigen::VectorXd pseudo_gradient(const Eigen::VectorXd& x, const Eigen::VectorXd& g, const Eigen::VectorXd& c);

/// One entry of pseudo_gradient: for x_i, g_i and c_i.
inline double pseudo_gradient_entry(double x, double g, double c) {
  if (!(c > 0))
    return g;
  if (x > 0)
    return g + c;
  if (x < 0)
    return g - c;
  const double right = g + c;  // the derivative moving up from 0
  const double left = g - c;   // ...and moving down
  return right < 0 ? right : left > 0 ? left : 0.0;
}

/// sum_i c_i |x_i|.
double l1_term(const Eigen::VectorXd& x, const Eigen::VectorXd& c);

/// Entries with c_i > 0 whose x_i is not zero.
std::int64_t nonzero_penalised(const Eigen::VectorXd& x, const Eigen::VectorXd& c);

/// Runs OWL-QN from `theta` on F = f + sum_i l1[i] |theta_i|, with f the objective `f` evaluates
/// (its gradient is f's alone). The options are L-BFGS's (history, stopping tests, `ftol` as the
/// sufficient-decrease constant, `max_linesearch` as the backtracking budget; no bounds). Each
/// iteration takes the L-BFGS direction of the pseudo-gradient, zeroes its entries that disagree in
/// sign with the steepest descent, and backtracks (halving) along it, projecting every trial onto
/// the orthant of the current point: a penalised entry that would change sign becomes exactly 0,
/// which is how weights leave the model. Correction pairs are f's (s, y), kept only when s'y > 0.
///
/// The gradient tests apply to the pseudo-gradient; the iteration hook and the result report F,
/// the pseudo-gradient's norms and the number of non-zero penalised entries. The session's states
/// are L-BFGS states (`f` holding F, `grad` f's gradient), resumed bit for bit. `l1` must have
/// theta's size, with finite non-negative entries: misfits are an invalid failure and no run.
result<run_result> minimize_owlqn_erased(const evaluate_function& f, Eigen::VectorXd& theta,
                                         const lbfgs_options& options, const Eigen::VectorXd& l1,
                                         const iteration_hook& hook = {}, const lbfgs_session& session = {});

/// Minimises any objective (see objective.hpp) plus the L1 term, from `theta`.
template <class F>
result<run_result> minimize_owlqn(F& objective, Eigen::VectorXd& theta, const lbfgs_options& options,
                                  const Eigen::VectorXd& l1, const iteration_hook& hook = {},
                                  const lbfgs_session& session = {}) {
  return minimize_owlqn_erased(erase_objective(objective), theta, options, l1, hook, session);
}

} // namespace shardopt::optimizer
