#pragma once

// Newton-CG's inner solve: preconditioned conjugate gradients for H s = -g, stopped by LIBLINEAR
// 2.50's test on the quadratic model, with its vector work spread over the driver's threads.

#include "optimizer/cg_preconditioner.hpp"
#include "optimizer/objective.hpp"
#include "optimizer/run.hpp"
#include "optimizer/vector_pool.hpp"

#include <Eigen/Core>

#include <optional>

namespace shardopt::optimizer {

/// The settings of one inner solve.
struct pcg_settings {
  double cg_tolerance = 0.5;  ///< eps_cg: the forcing term is min(eps_cg, sqrt(||g||_{M^-1}))
  int max_iterations = 0;     ///< products; 0 = the dimension (at least 5)
  double units = 1;           ///< ||g||_{M^-1} is measured as sqrt(g' M^-1 g * units)

};

/// The vectors of an inner solve, kept from one solve to the next (no allocation per solve).
struct pcg_workspace {
  Eigen::VectorXd r, z, d, hd;
  Eigen::VectorXd z0;  ///< the first preconditioned residual, the step when CG gives none (kept with pairs only)
};

/// Solves H s = -grad by preconditioned CG from s = 0, one product `hessian(d, hd)` per step
/// (counted in `log`), preconditioned by `preconditioner` (whose pairs it offers its directions
/// to). Stops when the quadratic model Q(s) = g's + s'Hs/2 stops decreasing fast enough:
/// k (Q_k - Q_{k-1}) >= forcing Q_k (C.-Y. Hsia, W.-L. Chiang and C.-J. Lin, ACML 2018, as in
/// LIBLINEAR 2.50), when Q does not decrease, at a direction of no positive curvature, or at
/// the step limit. Sets s and gs = grad's s, or returns the stop a failed product causes. The
/// vector updates and dot products run on `pool`, chunk by chunk: the same bits on any number of
/// threads.
std::optional<run_stop> solve_newton_system(const hessian_function& hessian, run_log& log, vector_pool& pool,
                                            cg_preconditioner& preconditioner, const pcg_settings& settings,
                                            const Eigen::VectorXd& grad, Eigen::VectorXd& s, double& gs,
                                            pcg_workspace& work);

} // namespace shardopt::optimizer
