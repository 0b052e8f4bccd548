// L-BFGS: the options' and states' checks, and the resumable loop of unbounded runs.
//
// LBFGS++'s solvers keep their memory private and always start empty, so a run could not be saved
// and resumed. Unbounded runs therefore use LBFGS++'s BFGS matrix (bfgs_matrix, the two-loop
// recursion) inside `run_unbounded`, the same loop as `LBFGSSolver::minimize` step for step, whose
// state (iterate, gradient, correction pairs) we hold and can hand out. Replaying the saved pairs
// into a fresh matrix gives bit for bit the directions of the original. L-BFGS-B keeps a factorised
// matrix whose rounding depends on its whole history, so bounded runs use LBFGS++'s `LBFGSBSolver`
// (lbfgspp.cpp) and cannot be resumed. Both search lines with line_search.hpp: LBFGS++ 0.1.0's own
// strong-Wolfe search silently returns a worse point when it runs out of trials, and LBFGS-B's
// More-Thuente search is known to fail on valid problems.

#include "optimizer/lbfgs.hpp"

#include "optimizer/lbfgs_memory.hpp"
#include "optimizer/lbfgspp.hpp"
#include "optimizer/line_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace shardopt::optimizer {

result<void> check_options(const lbfgs_options& o, Eigen::Index n) {
  if (o.history < 1)
    return fail_invalid("history must be at least 1");
  if (o.epsilon < 0 || o.epsilon_rel < 0 || o.delta < 0)
    return fail_invalid("epsilon, epsilon_rel and delta must be non-negative");
  if (o.past < 0 || o.max_iterations < 0)
    return fail_invalid("past and max_iterations must be non-negative");
  if (o.past > max_past)
    return fail_invalid("past must be at most " + std::to_string(max_past));
  if (o.max_linesearch < 1)
    return fail_invalid("max_linesearch must be at least 1");
  if (!(o.ftol > 0 && o.ftol < 0.5) || !(o.wolfe > o.ftol && o.wolfe < 1))
    return fail_invalid("line search constants must satisfy 0 < ftol < 0.5 and ftol < wolfe < 1");
  for (const auto* bound : {&o.lower, &o.upper})
    if (*bound && (*bound)->size() != n)
      return fail_invalid("bounds must have the dimension of theta (" + std::to_string(n) + ")");
  if (o.lower && o.upper && ((*o.upper).array() < (*o.lower).array()).any())
    return fail_invalid("a lower bound exceeds its upper bound");
  return {};
}

result<void> check_state(const lbfgs_state& state, Eigen::Index n, const lbfgs_options& options,
                         bool without_pairs) {
  const auto sized = [n](const Eigen::VectorXd& v) { return v.size() == n; };
  if (state.iterations < 0 || state.evaluations < std::max(state.iterations, 1) || !(state.seconds >= 0) ||
      (state.iterations > 0 && state.s.empty() && !without_pairs))
    return fail_invalid("its counts are inconsistent");
  if (!sized(state.theta) || !sized(state.grad))
    return fail_invalid("theta has " + std::to_string(state.theta.size()) + " entries, the problem " + std::to_string(n));
  if (state.s.size() != state.y.size() || state.s.size() > static_cast<std::size_t>(options.history))
    return fail_invalid("it holds " + std::to_string(state.s.size()) + " correction pairs for a history of " +
                        std::to_string(options.history));
  if (!std::all_of(state.s.begin(), state.s.end(), sized) || !std::all_of(state.y.begin(), state.y.end(), sized))
    return fail_invalid("a correction pair does not have the dimension of theta");
  const std::size_t ring = options.past > 0 ? static_cast<std::size_t>(options.past) : 0;
  if (!state.f_history.empty() && state.f_history.size() != ring)
    return fail_invalid("its objective history has " + std::to_string(state.f_history.size()) +
                        " entries, --past is " + std::to_string(options.past));
  const auto finite = [](const Eigen::VectorXd& v) { return v.allFinite(); };
  if (!std::isfinite(state.f) || !finite(state.theta) || !finite(state.grad) ||
      !std::all_of(state.s.begin(), state.s.end(), finite) || !std::all_of(state.y.begin(), state.y.end(), finite))
    return fail_invalid("it holds values that are not finite");
  return {};
}

namespace detail {

void resume_memory(const lbfgs_state& saved, Eigen::VectorXd& x, double& f, Eigen::VectorXd& grad,
                   const std::function<void(const Eigen::VectorXd&, const Eigen::VectorXd&)>& add_pair, run_log& log,
                   lbfgs_state& kept, const lbfgs_session& session) {
  x = saved.theta;
  f = saved.f;
  grad = saved.grad;
  for (std::size_t i = 0; i < saved.s.size(); ++i)
    add_pair(saved.s[i], saved.y[i]);
  if (session.on_state) {
    kept.s = saved.s;
    kept.y = saved.y;
  }
  log.resume(saved.iterations, saved.evaluations, saved.seconds, saved.f_history);
}

std::optional<run_stop> hand_out(const lbfgs_session& session, lbfgs_state& state, const Eigen::VectorXd* s,
                                 const Eigen::VectorXd* y, int history, const Eigen::VectorXd& x,
                                 const Eigen::VectorXd& grad, double f, const run_log& log, bool last) {
  if (!session.on_state)
    return std::nullopt;
  if (s) {
    if (static_cast<int>(state.s.size()) == history) {
      state.s.erase(state.s.begin());
      state.y.erase(state.y.begin());
    }
    state.s.push_back(*s);
    state.y.push_back(*y);
  }
  // A state the session does not want now is not assembled (its pairs are kept above for later ones).
  if (!last && session.due && !session.due(log.info().iteration, log.seconds()))
    return std::nullopt;
  state.theta = x;
  state.grad = grad;
  state.f = f;
  state.iterations = log.info().iteration;
  state.evaluations = log.info().evaluations;
  state.f_history = log.history();
  state.seconds = log.seconds();
  if (auto saved = session.on_state(state, last); !saved)
    return evaluation_failed(saved.error());
  return std::nullopt;
}

} // namespace detail

namespace {

/// LBFGS++'s default bound on a step (LBFGSParam::max_step), kept so runs match its solver's.
constexpr double max_step = 1e20;

bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const lbfgs_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// What the line search calls during an unbounded run: the objective, counted, and the accepted
/// point, recorded and remembered (an early stop hands it back).
class unbounded_run {
public:
  unbounded_run(const evaluate_function& f, run_log& log) : f_(f), log_(log) {}

  result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    log_.count_evaluation();
    return f_(x, grad);
  }

  std::optional<run_stop> accept(double fx, const Eigen::VectorXd& x, const Eigen::VectorXd& grad, double step) {
    best_ = x;
    return log_.accept(fx, grad, step);
  }

  void start(double fx, const Eigen::VectorXd& x, const Eigen::VectorXd& grad) {
    best_ = x;
    log_.record(fx, grad, 0);
  }

  const Eigen::VectorXd& best() const { return best_; }

private:
  const evaluate_function& f_;
  run_log& log_;
  Eigen::VectorXd best_;
};

/// Unbounded L-BFGS: `LBFGSSolver::minimize`'s loop over LBFGS++'s BFGS matrix, with the state kept
/// for the session (saved after every iteration, or resumed from). Returns where it stops.
run_stop run_unbounded(unbounded_run& fn, run_log& log, Eigen::VectorXd& x, double& fx,
                       const lbfgs_options& o, const lbfgs_session& session) {
  const auto n = x.size();
  bfgs_matrix bfgs;
  bfgs.reset(n, o.history);
  Eigen::VectorXd grad(n);
  Eigen::VectorXd drt(n);
  Eigen::VectorXd xp(n);
  Eigen::VectorXd gradp(n);
  lbfgs_state state;  // what `on_state` sees; its pairs are kept only when someone looks
  double step = 1;
  const auto finished = [&] {
    const bool limit = o.max_iterations > 0 && log.info().iteration >= o.max_iterations;
    const bool small = gradient_small(grad, x, o);
    return small || limit ? std::optional<run_stop>{run_stop{small ? stop_reason::converged : stop_reason::max_iterations, ""}}
                          : std::nullopt;
  };

  // Start: a fresh run evaluates theta and steps along the steepest descent; a resumed one replays
  // its corrections into the matrix and steps along the quasi-Newton direction, as the run it
  // continues would have.
  if (session.resume) {
    const auto add_pair = [&bfgs](const Eigen::VectorXd& s, const Eigen::VectorXd& y) { bfgs.add_correction(s, y); };
    detail::resume_memory(*session.resume, x, fx, grad, add_pair, log, state, session);
    fn.start(fx, x, grad);
  } else {
    auto value = fn.evaluate(x, grad);
    if (!value)
      return evaluation_failed(value.error());
    fx = *value;
    if (!std::isfinite(fx) || !grad.allFinite())
      return {stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"};
    fn.start(fx, x, grad);
  }
  if (auto stop = finished())
    return *stop;
  if (bfgs.pairs() == 0) {
    drt.noalias() = -grad;
    step = 1 / drt.norm();
  } else {
    bfgs.apply(grad, -1.0, drt);
  }

  // The state after an iteration: the iterate and the memory with this iteration's pair.
  const auto hand_out = [&](bool last) -> std::optional<run_stop> {
    if (!session.on_state)
      return std::nullopt;
    const Eigen::VectorXd s = x - xp;
    const Eigen::VectorXd y = grad - gradp;
    return detail::hand_out(session, state, &s, &y, o.history, x, grad, fx, log, last);
  };
  for (;;) {
    xp.noalias() = x;
    gradp.noalias() = grad;
    if (auto stop = wolfe_search(fn, fx, x, grad, step, max_step, drt, xp, o.ftol, o.wolfe, o.max_linesearch))
      return *stop;
    if (auto stop = finished()) {
      // A run with a higher limit would add this pair and go on: hand out that state.
      if (auto failed = hand_out(true))
        return *failed;
      return *stop;
    }
    bfgs.add_correction(x - xp, grad - gradp);
    bfgs.apply(grad, -1.0, drt);
    step = 1;
    if (auto failed = hand_out(false))
      return *failed;
  }
}

} // namespace

result<run_result> minimize_erased(const evaluate_function& f, Eigen::VectorXd& theta,
                                   const lbfgs_options& options, const iteration_hook& hook,
                                   const lbfgs_session& session) {
  if (auto ok = check_options(options, theta.size()); !ok)
    return ok.error().with_context("invalid L-BFGS options");
  const bool bounded = options.lower || options.upper;
  if (bounded && (session.resume || session.on_state))
    return fail_invalid("invalid L-BFGS options: a run with bounds (L-BFGS-B) cannot be saved or resumed");
  if (session.resume)
    if (auto ok = check_state(*session.resume, theta.size(), options); !ok)
      return ok.error().with_context("invalid L-BFGS options: the state to resume does not fit");
  run_log log{hook, options.past, options.delta};
  if (bounded) {
    const auto n = theta.size();
    const auto infinity = std::numeric_limits<double>::infinity();
    const Eigen::VectorXd lower = options.lower ? *options.lower : Eigen::VectorXd::Constant(n, -infinity);
    const Eigen::VectorXd upper = options.upper ? *options.upper : Eigen::VectorXd::Constant(n, infinity);
    auto stop = minimize_bounded(f, theta, options, lower, upper, log);
    return log.finish(std::move(stop));
  }
  unbounded_run fn{f, log};
  Eigen::VectorXd x = theta;
  double fx = 0;
  auto stop = run_unbounded(fn, log, x, fx, options, session);
  if (fn.best().size() == theta.size())
    theta = fn.best();
  return log.finish(std::move(stop));
}

} // namespace shardopt::optimizer
