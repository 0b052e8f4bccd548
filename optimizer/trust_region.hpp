#pragma once

// Internal to Newton-CG (newton_cg.hpp): its trust-region step, the method of LIBLINEAR's TRON,
// which dense problems take by default (their CG solves, truncated by the region early on, cost
// fewer products than a line search's; measured in docs/benchmarks.md).

#include "optimizer/cg_preconditioner.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

namespace shardopt::optimizer {

/// Runs the trust-region Newton loop from x (or the session's state), counting and recording in
/// `log`; x ends at the last accepted iterate. Options and the state are checked by the caller.
/// Each iteration solves H s = -g by Steihaug-Toint CG inside the region ||s|| <= Delta (the first
/// solve unbounded, its step's length the first radius), preconditioned by the L-BFGS inverse of
/// pairs of the previous iterate's solve, stopping at a residual of `cg_tolerance` (0: 0.1) of
/// ||g||; evaluates theta + s once and accepts the step when f falls by at least 1e-4 of the
/// model's prediction (near the minimum, where f's rounding hides it, when the gradient's norm falls
/// by 10%); Delta grows or shrinks with the agreement. After a rejected step the solve walks the
/// same CG path and replays the iterate's products kept (up to `replay_bytes`): a rejection costs
/// one pass.
run_stop minimize_trust_region(const evaluate_function& f, const hessian_function& hessian, Eigen::VectorXd& x,
                               const newton_options& options, run_log& log, cg_preconditioner preconditioner,
                               const newton_session& session);

} // namespace shardopt::optimizer
