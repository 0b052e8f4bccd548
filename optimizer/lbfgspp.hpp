#pragma once

// What shardopt takes from LBFGS++ (Yixuan Qiu, https://lbfgspp.statr.me), behind the one file
// that includes it (lbfgspp.cpp): the BFGS matrix of limited-memory pairs (the two-loop recursion),
// used by the resumable L-BFGS loop and by Newton-CG's preconditioner, and the L-BFGS-B solver
// for bounded problems.

#include "optimizer/lbfgs.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <memory>

namespace shardopt::optimizer {

/// LBFGS++'s BFGS matrix (`BFGSMat`): at most `pairs` correction pairs (s, y), oldest dropped
/// first; applies the inverse Hessian approximation they define.
class bfgs_matrix {
public:
  bfgs_matrix();
  ~bfgs_matrix();
  bfgs_matrix(bfgs_matrix&&) noexcept;
  bfgs_matrix& operator=(bfgs_matrix&&) noexcept;

  /// Forgets every pair; the matrix is for vectors of `dimension`, keeping at most `pairs`.
  void reset(Eigen::Index dimension, int pairs);
  /// Adds a pair (s'y must be positive for the approximation to stay positive definite).
  void add_correction(const Eigen::VectorXd& s, const Eigen::VectorXd& y);
  /// out = a H v, H the inverse Hessian approximation.
  void apply(const Eigen::VectorXd& v, double a, Eigen::VectorXd& out);
  int pairs() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// L-BFGS-B (LBFGS++'s `LBFGSBSolver`) from `theta` within [lower, upper], with the strong-Wolfe
/// search of line_search.hpp; `log` counts, records and applies the hook. theta ends at the last
/// accepted iterate. Options are checked by the caller.
run_stop minimize_bounded(const evaluate_function& f, Eigen::VectorXd& theta, const lbfgs_options& options,
                          const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, run_log& log);

} // namespace shardopt::optimizer
