#pragma once

// Trust-region Newton-CG, the method of LIBLINEAR's TRON, over objectives with Hessian-vector
// products: options and `minimize_newton`. The inner solve is steihaug.hpp's.

#include "optimizer/objective.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::optimizer {

/// Settings of the trust-region Newton-CG method. The stopping tests are L-BFGS's (same meaning,
/// same defaults); the rest steer the inner conjugate-gradient solve.
struct newton_options {
  double epsilon = 1e-6;          ///< stop when ||grad||_2 <= epsilon
  double epsilon_rel = 0;         ///< ...or when ||grad||_2 <= epsilon_rel * ||theta||_2 (0 = off)
  int past = 0;                   ///< objective-change test over `past` iterations (0 = off)
  double delta = 0;
  int max_iterations = 1000;      ///< accepted steps; 0 = no limit
  double cg_tolerance = 0.1;      ///< CG stops when its residual is <= cg_tolerance * ||grad||
  int max_cg_iterations = 0;      ///< Hessian-vector products per step; 0 = the dimension
  /// Memory for the current iterate's Hessian-vector products (one vector each), replayed by the
  /// solve that follows a rejected step; 0 = none (every solve asks the objective).
  std::int64_t replay_bytes = std::int64_t{256} << 20;
  /// CG is preconditioned by a limited-memory BFGS inverse made of this many pairs (d, H d) of the
  /// previous iterate's solve, sampled evenly along it; 0 = no preconditioner.
  int preconditioner_pairs = 20;
  /// Memory for those pairs and the candidates they are sampled from (3 x pairs + 1 pairs of
  /// vectors at most): fewer pairs where the dimension would need more; 0 = no preconditioner.
  std::int64_t preconditioner_bytes = std::int64_t{256} << 20;
};

/// Checks options before a run; the failure (invalid) names the first problem. `minimize_newton`
/// refuses what this refuses.
result<void> check_options(const newton_options& options);

/// Everything Newton-CG needs to continue a run exactly where it was, after accepted iteration
/// `iterations`: the iterate with its objective and gradient, the trust region's radius, the pairs
/// of its CG preconditioner (oldest first), the counts, and the objective values the `past` test
/// compares against. A run resumed from a state ends bit for bit where the uninterrupted run ends,
/// given the same objective and options; it evaluates the iterate once more before its first
/// product (the objective's products refer to its last evaluation), so it counts one evaluation
/// more.
struct newton_state {
  int iterations = 0;
  int evaluations = 0;
  int products = 0;
  double seconds = 0;
  double f = 0;
  double radius = 0;
  Eigen::VectorXd theta;
  Eigen::VectorXd grad;
  std::vector<Eigen::VectorXd> s;  ///< the preconditioner's pairs (d, H d); s.size() == y.size()
  std::vector<Eigen::VectorXd> y;
  std::vector<double> f_history;   ///< ring of the `past` test (empty when past = 0)
};

/// Saving and resuming a Newton-CG run (see solver_session in run.hpp). Keeping the
/// preconditioner's pairs for the state doubles their memory (preconditioner_bytes).
using newton_session = solver_session<newton_state>;

/// Checks that a state fits a problem of dimension `n` under `options` (vector sizes, pair count,
/// `past` ring, a positive radius, finite values); the failure (invalid) names the first misfit.
result<void> check_state(const newton_state& state, Eigen::Index n, const newton_options& options);

/// Minimises a convex (or generalized-Hessian) objective by trust-region Newton with Steihaug-Toint
/// truncated conjugate gradients, the method of LIBLINEAR's TRON (C.-J. Lin, R. C. Weng and
/// S. S. Keerthi, "Trust region Newton method for large-scale logistic regression", JMLR 9, 2008;
/// C.-J. Lin and J. J. More, "Newton's method for large bound-constrained optimization problems",
/// SIAM J. Optim. 9, 1999).
///
/// Each iteration solves H s = -g inexactly inside the region ||s|| <= Delta, with one product
/// `hessian(v, hv)` per CG step (at the theta last evaluated: the current iterate), preconditioned
/// from the second iterate on by the L-BFGS inverse of pairs (d, H d) sampled from the previous
/// iterate's solve (J. L. Morales and J. Nocedal, "Automatic preconditioning by limited memory
/// quasi-Newton updating", SIAM J. Optim. 10, 2000: successive Newton systems share their
/// spectrum's ends, which the previous solve has explored), then evaluates
/// theta + s once; the step is accepted when the actual reduction is at least 1e-4 of the one the
/// quadratic model predicts, and Delta grows or shrinks with the agreement. After a rejected step
/// the solve is repeated with the same gradient and a smaller radius: it follows the same CG path
/// (the radius decides only where a solve breaks off) and stops on it earlier, so it replays the products kept from
/// the first solve and asks the objective for none. The run takes the same steps as without the
/// replay, bit for bit; a rejected step costs one pass, its trial's evaluation. Beyond
/// `replay_bytes` a product is asked again, after one more evaluation at the current iterate (the
/// objective's products refer to its last evaluation). Where the predicted reduction is below 1e-13 |f| (f's rounding
/// hides it), a step is accepted when it lowers the gradient's norm by 10% instead. Stops as L-BFGS does
/// (run.hpp); `line_search_failed` means the region shrank to a step of machine precision.
/// `iteration_info::step` is the accepted step's norm; `products` counts Hessian-vector products.
/// Options (and a session's state) are checked first; bad ones are an invalid failure and no run.
/// Blocks the calling thread until done; theta holds the last accepted iterate.
result<run_result> minimize_newton_erased(const evaluate_function& f, const hessian_function& hessian,
                                  Eigen::VectorXd& theta, const newton_options& options,
                                  const iteration_hook& hook = {},
                                  const newton_session& session = {});

/// Minimises any objective with Hessian-vector products (see objective.hpp) from `theta`.
template <class F>
result<run_result> minimize_newton(F& objective, Eigen::VectorXd& theta, const newton_options& options,
                           const iteration_hook& hook = {}, const newton_session& session = {}) {
  return minimize_newton_erased(erase_objective(objective), erase_hessian(objective), theta, options,
                                hook, session);
}

} // namespace shardopt::optimizer
