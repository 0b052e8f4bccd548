#pragma once

// L-BFGS, and L-BFGS-B when bounds are given: options, the state a run can be saved as and resumed
// from, and `minimize`. The resumable loop is lbfgs.cpp's; L-BFGS-B is LBFGS++'s (lbfgspp.hpp).

#include "optimizer/objective.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardopt::optimizer {

class vector_pool;

/// The longest window of the objective-change test (`past`).
constexpr int max_past = 1 << 20;

/// Settings of L-BFGS (and of L-BFGS-B when bounds are given). Defaults suit real problems: unlike
/// LBFGS++'s own, the relative tolerance is off, so runs stop on the absolute gradient norm.
struct lbfgs_options {
  int history = 10;             ///< m: correction pairs kept
  double epsilon = 1e-6;        ///< stop when ||grad||_2 <= epsilon (projected gradient with bounds)
  double epsilon_rel = 0;       ///< ...or when ||grad||_2 <= epsilon_rel * ||theta||_2 (0 = off)
  int past = 0;                 ///< stop when f changed by at most delta*max(|f|,|f_old|,1) over
  double delta = 0;             ///<   `past` iterations (past = 0: off; see run.hpp)
  int max_iterations = 1000;    ///< 0 = no limit
  int max_linesearch = 40;      ///< evaluations per line search
  double ftol = 1e-4;           ///< sufficient decrease (Armijo) constant
  double wolfe = 0.9;           ///< curvature constant of the strong Wolfe condition
  std::optional<Eigen::VectorXd> lower;  ///< bounds: with either set, L-BFGS-B runs
  std::optional<Eigen::VectorXd> upper;
  vector_pool* pool = nullptr;  ///< OWL-QN's passes over the dimension on these threads (null: the caller's)
};

/// Everything unbounded L-BFGS needs to continue a run exactly where it was, after iteration
/// `iterations`: the iterate with its objective and gradient, the correction pairs s = theta_k -
/// theta_{k-1}, y = grad_k - grad_{k-1} (oldest first, at most `history`), the counts, and the
/// objective values the `past` test compares against. A run resumed from a state ends bit for bit
/// where the uninterrupted run ends, given the same objective and options.
struct lbfgs_state {
  int iterations = 0;
  int evaluations = 0;
  double seconds = 0;                  ///< wall time of the run so far
  double f = 0;
  Eigen::VectorXd theta;
  Eigen::VectorXd grad;
  std::vector<Eigen::VectorXd> s;      ///< corrections, oldest first; s.size() == y.size()
  std::vector<Eigen::VectorXd> y;
  std::vector<double> f_history;       ///< ring of the `past` test (empty when past = 0)
};

/// Checks options for a problem of dimension `n` before a run; the failure (invalid) names the first
/// problem ("history must be at least 1"). `minimize` refuses what this refuses.
result<void> check_options(const lbfgs_options& options, Eigen::Index n);

/// Checks that a state fits a problem of dimension `n` under `options` (vector sizes, pair count,
/// `past` ring, finite values); the failure (invalid) names the first misfit.
/// `without_pairs`: a state past its first iteration may hold none (OWL-QN's shrinking hands out
/// states at the start of its rounds, which start from one pair at most).
result<void> check_state(const lbfgs_state& state, Eigen::Index n, const lbfgs_options& options,
                         bool without_pairs = false);

/// Resuming and saving a run (unbounded L-BFGS only): see solver_session in run.hpp.
using lbfgs_session = solver_session<lbfgs_state>;

/// Runs L-BFGS with a strong-Wolfe line search, starting from and updating `theta`: unbounded runs
/// use LBFGS++'s BFGS matrix in our own loop (so the state can be saved and resumed); with bounds,
/// LBFGS++'s L-BFGS-B solver. Blocks the calling thread until done. Options (and a session's state)
/// are checked first: bad ones, and a session with bounds, are an invalid failure and no run. A run
/// that does not converge is a result (its stop reason), never a failure.
result<run_result> minimize_erased(const evaluate_function& f, Eigen::VectorXd& theta,
                                   const lbfgs_options& options, const iteration_hook& hook = {},
                                   const lbfgs_session& session = {});

/// Minimises any objective (see objective.hpp) from `theta`.
template <class F>
result<run_result> minimize(F& objective, Eigen::VectorXd& theta, const lbfgs_options& options,
                            const iteration_hook& hook = {}, const lbfgs_session& session = {}) {
  return minimize_erased(erase_objective(objective), theta, options, hook, session);
}

} // namespace shardopt::optimizer
