#pragma once

// Newton-CG's inner solve: Steihaug-Toint conjugate gradients for H s = -g inside a trust region,
// preconditioned (cg_preconditioner.hpp), with the Hessian-vector products of an iterate kept and
// replayed by the solves that follow a rejected step.

#include "optimizer/cg_preconditioner.hpp"
#include "optimizer/objective.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <vector>

namespace shardopt::optimizer {

/// The objective as Newton-CG sees it: evaluations and products, counted in `log`, with the
/// current iterate's products kept (up to `replay_bytes`) and replayed. Every solve at one iterate
/// starts from the same gradient, so its k-th direction is the first solve's (the radius decides
/// only where a solve stops): a repeated solve asks the objective for no product it kept. Failures
/// come back as the stop they cause.
class trust_region_cg {
public:
  /// `x` is the run's iterate, updated in place by the caller, who calls `moved()` when it changes.
  trust_region_cg(const evaluate_function& f, const hessian_function& hessian, run_log& log,
                  const Eigen::VectorXd& x, double cg_tolerance, int max_cg_iterations,
                  std::int64_t replay_bytes, cg_preconditioner preconditioner);

  /// The objective at the iterate (or at a trial, with `trial`): the objective's products then
  /// refer to that point.
  result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad, bool trial = false);

  /// The iterate is now the last point evaluated; its products are yet to be asked.
  void moved();

  /// A saved run continues at the iterate (not evaluated in this process yet) with the
  /// preconditioner's pairs `s`, `y`.
  void resume(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y);

  /// The preconditioner keeps its pairs for saved states from now on; they are these.
  void keep_pairs() { preconditioner_.keep_pairs(); }
  const std::vector<Eigen::VectorXd>& pairs_s() const { return preconditioner_.pairs_s(); }
  const std::vector<Eigen::VectorXd>& pairs_y() const { return preconditioner_.pairs_y(); }

  /// Steihaug-Toint CG for H s = -grad within ||s|| <= radius (an infinite radius: the first,
  /// unbounded solve), preconditioned; sets s and hs = H s, or returns the stop a failed product
  /// causes. Stops at a residual of cg_tolerance ||grad||, on the boundary, or on non-positive
  /// curvature (going to the boundary along that direction; with no boundary yet, stopping where
  /// it is).
  std::optional<run_stop> solve(const Eigen::VectorXd& grad, double radius, Eigen::VectorXd& s,
                                Eigen::VectorXd& hs);

private:
  /// The k-th product of a solve at the iterate, replayed when kept.
  std::optional<run_stop> product(int k, const Eigen::VectorXd& v, Eigen::VectorXd& hv);

  const evaluate_function& f_;
  const hessian_function& hessian_;
  run_log& log_;
  const Eigen::VectorXd& x_;
  double cg_tolerance_;
  int max_cg_iterations_;
  bool evaluated_here_ = true;  // the objective's last evaluation was at x_ (its products are x_'s)
  std::int64_t keep_limit_;     // products kept per iterate, from replay_bytes
  std::int64_t kept_ = 0;       // the iterate's first kept_ products are in kept_products_
  std::vector<Eigen::VectorXd> kept_products_;
  Eigen::VectorXd scratch_;
  cg_preconditioner preconditioner_;
};

} // namespace shardopt::optimizer
