#pragma once

// Newton-CG over objectives with Hessian-vector products: options and `minimize_newton`. Two
// steps: a line search, the method of LIBLINEAR 2.50's primal solvers (sparse data's default; its
// inner solve is pcg.hpp's), and a trust region, the method of LIBLINEAR's TRON (dense data's
// default; trust_region.hpp, steihaug.hpp).

#include "optimizer/objective.hpp"
#include "optimizer/owlqn.hpp"
#include "optimizer/run.hpp"
#include "optimizer/vector_pool.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::optimizer {

/// How Newton-CG makes a step of its solve: by a backtracking line search along it, or inside a
/// trust region.
enum class newton_step : std::uint8_t { line_search, trust_region };

/// Settings of Newton-CG. The stopping tests are L-BFGS's (same meaning, same defaults); the rest
/// steer the step and the inner conjugate-gradient solve.
struct newton_options {
  double epsilon = 1e-6;          ///< stop when ||grad||_2 <= epsilon
  double epsilon_rel = 0;         ///< ...or when ||grad||_2 <= epsilon_rel * ||theta||_2 (0 = off)
  int past = 0;                   ///< objective-change test over `past` iterations (0 = off)
  double delta = 0;
  int max_iterations = 1000;      ///< accepted steps; 0 = no limit
  newton_step step = newton_step::line_search;
  /// CG's stopping test. Line search: CG stops when the quadratic model's last decrease, times the
  /// steps taken, is below min(cg_tolerance, sqrt(||grad||_{M^-1})) of the model's value (LIBLINEAR
  /// 2.50's eps_cg and rule; ||grad|| in LIBLINEAR's units, the objective divided by `lambda`).
  /// Trust region: at a residual of cg_tolerance ||grad|| (TRON's). 0: the step's own default, 0.5
  /// for the line search, 0.1 for the trust region.
  double cg_tolerance = 0;
  int max_cg_iterations = 0;      ///< Hessian-vector products per step; 0 = the dimension
  /// The objective's L2 weight on the weights: CG's diagonal preconditioner is (1 - 0.01) lambda +
  /// 0.01 diag(H), LIBLINEAR's mix of the identity its regulariser contributes and the Hessian's
  /// diagonal, and the forcing term is measured in LIBLINEAR's units. 0: the diagonal's mean stands
  /// in for lambda, and the units are the objective's.
  double lambda = 0;
  /// Trust region: memory for the current iterate's Hessian-vector products (one vector each),
  /// replayed by the solve that follows a rejected step; 0 = none (every solve asks the objective).
  std::int64_t replay_bytes = std::int64_t{256} << 20;
  /// On top of the diagonal (line search), CG is preconditioned by a limited-memory BFGS inverse
  /// made of this many pairs (d, H d) of the previous iterate's solve, sampled evenly along it
  /// (Morales and Nocedal); 0 = the diagonal alone (line search) or none (trust region).
  int preconditioner_pairs = 0;
  /// Memory for those pairs and the candidates they are sampled from (3 x pairs + 1 pairs of
  /// vectors at most): fewer pairs where the dimension would need more.
  std::int64_t preconditioner_bytes = std::int64_t{256} << 20;
  /// Threads for the work over the dimension (CG's vector updates and dot products); null: the
  /// calling thread alone. The iterates are the same bits either way.
  vector_pool* pool = nullptr;
  /// An L1 term sum_i l1[i] |theta_i| beside the objective (empty: none): the run is then
  /// orthant-wise Newton-CG (see minimize_newton_erased). Its entries are finite and non-negative,
  /// as many as theta's; it takes the line search and no preconditioner pairs.
  Eigen::VectorXd l1;
};

/// Checks options before a run; the failure (invalid) names the first problem. `minimize_newton`
/// refuses what this refuses.
result<void> check_options(const newton_options& options);

/// Everything Newton-CG needs to continue a run exactly where it was, after accepted iteration
/// `iterations`: the iterate with its objective and gradient, the trust region's radius (0 for the
/// line search), the pairs of its CG preconditioner (oldest first), the counts, and the objective
/// values the `past` test compares against. A run
/// resumed from a state ends bit for bit where the uninterrupted run ends, given the same
/// objective and options; it evaluates the iterate once more before its first product (the
/// objective's products and its preconditioner refer to its last evaluation), so it counts one
/// evaluation more (not a state of orthant-wise Newton-CG with shrinking, whose round starts from
/// the state's evaluation and makes its own on the working set).
struct newton_state {
  int iterations = 0;
  int evaluations = 0;
  int products = 0;
  double seconds = 0;
  double f = 0;
  double radius = 0;               ///< trust region only
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
/// `past` ring, finite values, a positive radius for the trust region); the failure (invalid)
/// names the first misfit.
result<void> check_state(const newton_state& state, Eigen::Index n, const newton_options& options);

/// What Newton-CG asks of an objective: evaluations (with the Hessian's diagonal where the
/// objective gives it), Hessian-vector products at the last evaluation, and line values between
/// the last two evaluations where it gives them. See objective.hpp.
struct newton_objective {
  evaluate_function evaluate;
  hessian_function hessian;
  diagonal_function diagonal;  ///< may be empty: CG then has no diagonal preconditioner
  line_function line;          ///< may be empty: each backtracking step is then an evaluation
};

/// Minimises a convex (or generalized-Hessian) objective by Newton's method, with the trust region
/// of trust_region.hpp when `options.step` says so, else with a backtracking line search, as
/// LIBLINEAR 2.50 does (C.-Y. Hsia, W.-L. Chiang and C.-J. Lin, "Preconditioned
/// conjugate gradient methods in truncated Newton frameworks for large-scale linear
/// classification", ACML 2018; L. Galli and C.-J. Lin, "A study on truncated Newton methods for
/// linear classification", IEEE TNNLS 2022).
///
/// Each iteration solves H s = -g inexactly by preconditioned conjugate gradients (one product
/// `hessian(v, hv)` per CG step, at the theta last evaluated: the current iterate), stopping when
/// the quadratic model stops decreasing fast enough (`cg_tolerance`). The preconditioner is
/// LIBLINEAR's mix of lambda and the Hessian's diagonal, which the iterate's evaluation returned,
/// optionally refined by pairs of the previous solve. It then evaluates the full step theta + s
/// (one pass: objective, gradient and diagonal) and accepts it when f drops by at least 0.01 of
/// what g's predicts (Armijo). Otherwise it halves the step, at most 20 times in all, judging each
/// from the line values between theta and theta + s (no pass), and evaluates the step it accepts
/// (one pass): an iteration costs one pass besides its products, two when it backtracks. Where the
/// predicted decrease is below 1e-13 |f| (f's rounding hides it) the full step is taken when it
/// cuts the gradient's norm by 10% instead. Stops as L-BFGS does (run.hpp); `line_search_failed`
/// when no step of the 20 lowers f enough, or a step below f's rounding does not lower the
/// gradient. `iteration_info::step` is the accepted step's norm; `products` counts Hessian-vector
/// products. Options (and a session's state) are checked first; bad ones are an invalid failure
/// and no run. Blocks the calling thread until done; theta holds the last accepted iterate.
///
/// With `options.l1`, it minimises F = f + sum_i l1[i] |theta_i| by orthant-wise Newton-CG (R. H.
/// Byrd, G. M. Chin, J. Nocedal and F. Oztoprak, "A family of second-order methods for convex
/// L1-regularized optimization", Math. Programming 2016). Each iteration takes F's
/// pseudo-gradient v (owlqn.hpp) and the orthant z it points into (sign(theta_i), or -sign(v_i)
/// where theta_i = 0); penalised entries at 0 with v_i = 0 are held at 0 (shrinking: they leave
/// CG's work). On the rest F is smooth, with gradient v and f's Hessian: CG solves that system
/// as above, the step theta + s is projected onto the orthant (entries that would change sign
/// become 0, which is how weights leave the model), and the backtracking runs along the segment
/// from theta to that projection, where the L1 term is linear and f's line values price every
/// trial without a pass. The gradient tests, the hook and the result report F and v, and the
/// number of non-zero penalised entries; states hold F in `f` and f's gradient in `grad`.
result<run_result> minimize_newton_erased(const newton_objective& objective, Eigen::VectorXd& theta,
                                          const newton_options& options, const iteration_hook& hook = {},
                                          const newton_session& session = {});

/// Orthant-wise Newton-CG (`options.l1` set) with shrinking, as OWL-QN's (owlqn.hpp): each round
/// evaluates F in full at x, takes as its working set the entries free there (unpenalised, not 0,
/// or at 0 with a pseudo-gradient that is not 0: of these, the max(1,024, 4 x the non-zeros) of
/// the largest magnitude, ties all taken), restricts f to them (`restrict`, whose answer must carry
/// the compact problem's Hessian-vector products) and runs orthant-wise Newton-CG on that compact
/// problem from x for at most `refresh` iterations, or until its pseudo-gradient falls to
/// `tolerance` times the full one or to the run's threshold at the round's start. Only full
/// evaluations decide a stop at the gradient tests; the iteration limit, the hook and the
/// objective-change test count every inner iteration. Sessions hand out states at full
/// evaluations only (a round starts from x and the full evaluation alone), so a run resumed from
/// one ends bit for bit as the uninterrupted one (none at iteration 0, as plain Newton-CG). A round
/// met at its start (the full pseudo-gradient within 1e-9 relative of the threshold) ends the run
/// converged; one that takes no step otherwise, or whose steps do not lower the full F, ends it
/// (`line_search_failed`, its message weighing the full pseudo-gradient against the run's
/// threshold).
result<run_result> minimize_orthant_shrinking_erased(const newton_objective& objective,
                                                     const restrict_function& restrict, Eigen::VectorXd& theta,
                                                     const newton_options& options, const owlqn_shrinking& shrinking,
                                                     const iteration_hook& hook = {},
                                                     const newton_session& session = {});

/// Minimises any objective with Hessian-vector products (see objective.hpp) from `theta`: with an
/// L1 term, by shrinking rounds when `shrinking.enabled` and the objective can restrict itself.
template <class F>
result<run_result> minimize_newton(F& objective, Eigen::VectorXd& theta, const newton_options& options,
                                   const iteration_hook& hook = {}, const newton_session& session = {},
                                   const owlqn_shrinking& shrinking = {}) {
  newton_objective erased{erase_objective(objective), erase_hessian(objective), erase_diagonal(objective),
                          erase_line(objective)};
  if constexpr (has_restrict<F>::value) {
    if (options.l1.size() > 0 && shrinking.enabled && objective.can_restrict())
      return minimize_orthant_shrinking_erased(erased, restrict_of(objective), theta, options, shrinking, hook,
                                               session);
  }
  return minimize_newton_erased(erased, theta, options, hook, session);
}

} // namespace shardopt::optimizer
