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
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

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

/// # Shrinking
///
/// The objective on some of theta's entries, the others held at 0: `entries` (increasing) are the
/// entries the compact problem holds, in its order, and `evaluate` is f over vectors of
/// `entries.size()` (f's value at the full vector those entries make, with 0 elsewhere, and f's
/// gradient on them). An empty `evaluate`: the objective cannot restrict itself.
struct restricted_objective {
  std::vector<Eigen::Index> entries;
  evaluate_function evaluate;
  /// The compact problem's second-order members, for orthant-wise Newton-CG's shrinking
  /// (newton_cg.hpp): empty where the restriction has none.
  hessian_function hessian;
  diagonal_function diagonal;
  line_function line;
};

/// Restricts an objective to (at least) the entries `wanted` (increasing): a linear model keeps
/// whole features, for every output, and its biases. The evaluate function it gives may borrow the
/// objective, and stays valid until the next restriction.
using restrict_function = std::function<result<restricted_objective>(const std::vector<Eigen::Index>& wanted)>;

/// Shrinking, as LIBLINEAR's solvers shrink: OWL-QN (and orthant-wise Newton-CG, newton_cg.hpp)
/// runs on a working set of entries at a time, the rest held at 0, and only the working set's
/// columns cost a pass.
struct owlqn_shrinking {
  bool enabled = true;
  /// Inner iterations on one working set at most, before a full evaluation looks at every entry.
  int refresh = 100;
  /// ...or once the working set's pseudo-gradient falls to this fraction of the last full one.
  double tolerance = 0.1;
};

/// OWL-QN with shrinking. Each round evaluates F in full at x and takes as its working set the
/// entries free there (unpenalised, not 0, or whose pseudo-gradient is not 0: a zero weight whose
/// gradient exceeds its penalty), restricts f to them (`restrict`), and runs OWL-QN on that
/// compact problem from x (with one pair, the last round's newest, on the set's entries when its
/// curvature there is positive; its F and gradient there are the full evaluation's, so a round
/// costs no evaluation at its start) for at most `refresh` iterations, or until its
/// pseudo-gradient falls to `tolerance` times the full one or to the run's threshold at the
/// round's start (max(epsilon, epsilon_rel ||x||)). Only full evaluations decide a stop at the
/// gradient tests; the iteration limit, the hook and the objective-change test count every inner
/// iteration (the hook sees the compact problem's figures: its F is the full one's, its
/// pseudo-gradient the working set's). A run stopped by the hook or a failure inside a round reports
/// the working set's pseudo-gradient norms; every other stop, the full one's. A round whose line
/// search fails from the pair before any step runs again without it. A round met at its start
/// (the full pseudo-gradient within 1e-9 relative of the threshold: the set's norm sums in another
/// order) ends the run converged. A round that takes no step otherwise, or whose steps do not
/// lower the full F (at machine precision, where the compact problem's sums and the full one's
/// differ in the last bits), ends the run (`line_search_failed`), and entries that do not
/// increase or lie outside theta fail it.
/// Sessions hand out states at full evaluations only (with the pair the next round starts from, on
/// theta's entries), so a run resumed from one ends bit for bit as the uninterrupted one. The iteration limit ends a
/// round, with one more full evaluation for its last state: a run continued from that state with
/// a higher limit starts a new round there, and so reaches the same optimum by another path (plain
/// OWL-QN's would follow the same one). A restriction without an evaluate function fails
/// the run (`evaluation_failed`).
result<run_result> minimize_owlqn_shrinking_erased(const evaluate_function& f, const restrict_function& restrict,
                                                   Eigen::VectorXd& theta, const lbfgs_options& options,
                                                   const Eigen::VectorXd& l1, const owlqn_shrinking& shrinking,
                                                   const iteration_hook& hook = {},
                                                   const lbfgs_session& session = {});

/// Wraps an objective's `restrict(wanted)` as a `restrict_function`. Its answer, a result, has `entries` and an `evaluate(theta, grad)` returning double or result<double>,
/// and may have `hessian`, `diagonal` and `line` (has_restricted_hessian), which it carries over.
/// Borrows the objective.
template <class F>
restrict_function restrict_of(F& f) {
  return [&f](const std::vector<Eigen::Index>& wanted) -> result<restricted_objective> {
    auto made = f.restrict(wanted);
    if (!made)
      return made.error();
    restricted_objective out;
    out.entries = std::move(made->entries);
    out.evaluate = [evaluate = std::move(made->evaluate)](const Eigen::VectorXd& theta,
                                                          Eigen::VectorXd& grad) -> result<double> {
      return evaluate(theta, grad);
    };
    if constexpr (has_restricted_hessian<std::decay_t<decltype(*made)>>::value) {
      if (made->hessian)
        out.hessian = [hessian = std::move(made->hessian)](const Eigen::VectorXd& v, Eigen::VectorXd& hv) -> result<void> {
          return hessian(v, hv);
        };
      if (made->diagonal)
        out.diagonal = [diagonal = std::move(made->diagonal)](const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                                              Eigen::VectorXd& d) -> result<double> {
          return diagonal(theta, grad, d);
        };
      if (made->line)
        out.line = [line = std::move(made->line)](const std::vector<double>& alphas,
                                                  std::vector<double>& values) -> result<void> {
          return line(alphas, values);
        };
    }
    return out;
  };
}

/// Minimises any objective (see objective.hpp) plus the L1 term, from `theta`: with shrinking
/// when `shrinking.enabled` and the objective can restrict itself (`bool can_restrict() const`,
/// and `result<restricted_objective> restrict(wanted)`).
template <class F>
result<run_result> minimize_owlqn(F& objective, Eigen::VectorXd& theta, const lbfgs_options& options,
                                  const Eigen::VectorXd& l1, const iteration_hook& hook = {},
                                  const lbfgs_session& session = {}, const owlqn_shrinking& shrinking = {}) {
  if constexpr (has_restrict<F>::value) {
    if (shrinking.enabled && objective.can_restrict())
      return minimize_owlqn_shrinking_erased(erase_objective(objective), restrict_of(objective), theta, options, l1,
                                             shrinking, hook, session);
  }
  return minimize_owlqn_erased(erase_objective(objective), theta, options, l1, hook, session);
}

} // namespace shardopt::optimizer
