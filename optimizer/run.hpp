#pragma once

// What every optimizer of this layer reports: why a run stopped, what its iteration hook sees, and
// its outcome. L-BFGS (lbfgs.hpp) and Newton-CG (newton_cg.hpp) share them, so the apps report both
// alike.

#include "base/result.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardopt::optimizer {

/// Why a run ended. Every run ends with exactly one.
enum class stop_reason {
  converged,            ///< gradient norm below the tolerance
  objective_converged,  ///< objective change below delta over `past` iterations
  max_iterations,       ///< iteration limit reached
  line_search_failed,   ///< no acceptable step (often: converged to machine precision); for
                        ///< Newton-CG, the trust region no longer allows a reduction
  evaluation_failed,    ///< the objective returned an error (a shard died, a timeout) or NaN at
                        ///< start, or the session could not save the state (a full disk)
  stopped_by_hook,      ///< the iteration hook asked to stop
};

/// "converged", "objective_converged", "max_iterations", ...
std::string_view to_string(stop_reason reason);

/// What the iteration hook sees after every accepted step.
struct iteration_info {
  int iteration = 0;           ///< 1-based
  double f = 0;
  double grad_norm = 0;        ///< ||grad||_2
  double grad_norm_inf = 0;    ///< ||grad||_inf
  double step = 0;             ///< L-BFGS: accepted step length along the search direction;
                               ///< Newton-CG: the accepted step's norm
  int evaluations = 0;         ///< objective evaluations so far, including line-search trials
  int products = 0;            ///< Hessian-vector products so far (Newton-CG; 0 for L-BFGS)
  double seconds = 0;          ///< wall time since the run started
  std::int64_t nonzeros = -1;  ///< with an L1 term: penalised entries of theta that are not 0; -1 otherwise
};

/// Called after every iteration; return false to stop the run (reason `stopped_by_hook`).
using iteration_hook = std::function<bool(const iteration_info&)>;

/// The outcome of a run. theta (passed to `minimize`) holds the last accepted iterate, also when the
/// run stopped early or an evaluation failed.
struct run_result {
  stop_reason reason = stop_reason::converged;
  std::string message;  ///< details, e.g. the evaluation's error or the line search's complaint
  double f = 0;
  double grad_norm = 0;
  double grad_norm_inf = 0;
  int iterations = 0;
  int evaluations = 0;
  int products = 0;     ///< Hessian-vector products (Newton-CG)
  double seconds = 0;
  std::int64_t nonzeros = -1;  ///< with an L1 term: penalised entries of theta that are not 0; -1 otherwise
};

/// How a run ends: the reason and its details (the evaluation's error, the line search's
/// complaint). Loops return one where they stop; nothing is thrown.
struct run_stop {
  stop_reason reason = stop_reason::converged;
  std::string message;
};

/// The stop a failed evaluation (or product) causes.
inline run_stop evaluation_failed(const failure& why) {
  return {stop_reason::evaluation_failed, why.message()};
}

/// The result of a run that stops with `stop`, its last figures `info`, after `seconds`.
run_result result_of(const iteration_info& info, run_stop stop, double seconds);

/// The bookkeeping both optimizers share: their counts and clock, the figures of the last accepted
/// iterate, the iteration hook and the objective-change test, and the result they fill.
class run_log {
public:
  /// `past` and `delta` are the objective-change test's (past 0: off); `hook` may be empty.
  run_log(const iteration_hook& hook, int past, double delta);

  /// Continues the counts, clock and objective history of a saved run.
  void resume(int iterations, int evaluations, double seconds, std::vector<double> history,
              int products = 0);

  void count_evaluation() { ++info_.evaluations; }
  void count_product() { ++info_.products; }
  /// The non-zero count the next record or accepted iteration reports (with an L1 term).
  void set_nonzeros(std::int64_t count) { info_.nonzeros = count; }

  /// Records a point's figures (the start, or a resumed run's iterate) without counting an
  /// iteration or asking the hook.
  void record(double f, const Eigen::VectorXd& grad, double step);

  /// An accepted iteration: counts and records it, then asks the hook and the objective-change
  /// test; the stop either calls for, if any.
  std::optional<run_stop> accept(double f, const Eigen::VectorXd& grad, double step);

  const iteration_info& info() const { return info_; }
  const std::vector<double>& history() const { return history_; }
  /// Wall time of the run, including a resumed run's earlier part.
  double seconds() const;

  /// The run's result, ending with `stop`.
  run_result finish(run_stop stop) const;

private:
  const iteration_hook& hook_;
  int past_;
  double delta_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double earlier_seconds_ = 0;
  iteration_info info_;
  std::vector<double> history_;
};

/// Resuming and saving a run of a solver whose state is `State` (lbfgs_state, newton_state).
/// `on_state` is called after every iteration with the state to continue from (it may save it; it
/// must not keep the reference), and `last` true for the state a run that stops at the gradient
/// test or the iteration limit ends in (from which a run with a higher limit continues as if it
/// had never stopped); a failure it returns ends the run (`evaluation_failed`, with its message).
/// With `resume`, the run continues from that state instead of starting at `theta`.
/// `due(iterations, seconds)`, when set, says whether a state that is not `last` is wanted at
/// all: the solvers ask it first and assemble no state it does not want.
template <class State>
struct solver_session {
  const State* resume = nullptr;
  std::function<result<void>(const State& state, bool last)> on_state;
  std::function<bool(int iterations, double seconds)> due;
};

/// The objective-change test both optimizers apply after accepted iteration `iteration` (1-based)
/// with objective f: true when f changed by at most delta * max(|f|, |f_old|, 1) since iteration
/// `iteration - past`. `ring` holds the last `past` values (grown to `past` on first use) and is
/// part of a saved run's state. `past` must be positive.
bool objective_settled(std::vector<double>& ring, int past, double delta, int iteration, double f);

} // namespace shardopt::optimizer
