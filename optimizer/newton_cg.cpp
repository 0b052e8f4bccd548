// Newton-CG with a backtracking line search after LIBLINEAR 2.50 (newton.cpp and its
// l2r_erm_fun): preconditioned CG (pcg.hpp) with a diagonal preconditioner, a full step tried
// first, and Armijo backtracking on line values, which cost no pass for the linear models. The
// trust-region step lives in trust_region.cpp; both share the options, the state and their checks.

#include "optimizer/newton_cg.hpp"

#include "optimizer/newton_run.hpp"
#include "optimizer/pcg.hpp"
#include "optimizer/trust_region.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace shardopt::optimizer {

result<void> check_options(const newton_options& o) {
  if (o.epsilon < 0 || o.epsilon_rel < 0 || o.delta < 0 || !(o.lambda >= 0))
    return fail_invalid("epsilon, epsilon_rel, delta and lambda must be non-negative");
  if (o.past < 0 || o.max_iterations < 0 || o.max_cg_iterations < 0 || o.preconditioner_pairs < 0
      || o.preconditioner_bytes < 0)
    return fail_invalid("past, max_iterations, max_cg_iterations, preconditioner_pairs and "
                        "preconditioner_bytes must be non-negative");
  if (!(o.cg_tolerance >= 0 && o.cg_tolerance < 1))
    return fail_invalid("cg_tolerance must lie in (0, 1) (0: the step's default)");
  if (o.replay_bytes < 0)
    return fail_invalid("replay_bytes must be non-negative");
  if (o.l1.size() > 0) {
    if (!(o.l1.array() >= 0).all() || !o.l1.allFinite())
      return fail_invalid("the L1 weights must be finite and non-negative");
    if (o.step == newton_step::trust_region)
      return fail_invalid("an L1 term takes the line search, not the trust region");
    if (o.preconditioner_pairs > 0)
      return fail_invalid("an L1 term takes no preconditioner pairs (its free set changes between steps)");
  }
  return {};
}

result<void> check_state(const newton_state& state, Eigen::Index n, const newton_options& options) {
  const auto sized = [n](const Eigen::VectorXd& v) { return v.size() == n; };
  const auto finite = [](const Eigen::VectorXd& v) { return v.allFinite(); };
  if (state.iterations < 1 || state.evaluations < 0 || state.products < 0 || !(state.seconds >= 0))
    return fail_invalid("its counts are impossible (iteration " + std::to_string(state.iterations) + ")");
  if (!sized(state.theta) || !sized(state.grad))
    return fail_invalid("its iterate has " + std::to_string(state.theta.size()) + " entries, the problem "
                        + std::to_string(n));
  if (state.s.size() != state.y.size()
      || state.s.size() > static_cast<std::size_t>(std::max(options.preconditioner_pairs, 0)))
    return fail_invalid("it holds " + std::to_string(state.s.size()) + " preconditioner pairs for at most "
                        + std::to_string(options.preconditioner_pairs));
  if (!std::all_of(state.s.begin(), state.s.end(), sized) || !std::all_of(state.y.begin(), state.y.end(), sized))
    return fail_invalid("its preconditioner pairs are not of the problem's dimension");
  const std::size_t ring = options.past > 0 ? static_cast<std::size_t>(options.past) : 0;
  if (state.f_history.size() > ring)
    return fail_invalid("its objective history has " + std::to_string(state.f_history.size())
                        + " entries, --past is " + std::to_string(options.past));
  if (!std::isfinite(state.f) || !finite(state.theta) || !finite(state.grad)
      || !std::all_of(state.s.begin(), state.s.end(), finite) || !std::all_of(state.y.begin(), state.y.end(), finite))
    return fail_invalid("it holds non-finite values");
  if (options.step == newton_step::trust_region && !(state.radius > 0 && std::isfinite(state.radius)))
    return fail_invalid("its trust region's radius " + std::to_string(state.radius) + " is not positive");
  for (std::size_t i = 0; i < state.s.size(); ++i) {
    const double sy = state.s[i].dot(state.y[i]);
    const double yy = state.y[i].squaredNorm();
    if (!(std::isfinite(sy) && std::isfinite(yy) && sy > 0 && yy > 0 && std::isfinite(sy / yy)
          && std::isfinite(yy / sy) && sy / yy > 0 && yy / sy > 0))
      return fail_invalid("its preconditioner pair " + std::to_string(i)
                          + " has no positive curvature (s'y " + std::to_string(sy) + ")");
  }
  return {};
}

namespace {

using namespace detail;

/// The Newton loop, from and updating the iterate x (or from the session's state); returns where
/// it stops.
run_stop run(newton_run& newton, const newton_objective& objective, run_log& log, vector_pool& pool,
             Eigen::VectorXd& x, const newton_session& session) {
  const auto n = x.size();
  Eigen::VectorXd grad(n), m;
  Eigen::VectorXd trial(n), trial_grad(n), trial_m;
  Eigen::VectorXd s(n);
  pcg_workspace work;
  double f = 0;
  auto& preconditioner = newton.preconditioner();
  if (auto failed = newton.start(session, x, f, grad, m))
    return *failed;
  log.record(f, grad, 0);
  if (auto stop = newton.finished(grad, x))
    return *stop;
  for (;;) {
    double gs = 0;
    if (auto stop = solve_newton_system(objective.hessian, log, pool, preconditioner, newton.settings(), grad, s,
                                        gs, work))
      return *stop;
    // The full step, evaluated: its objective, gradient and diagonal are the next iterate's when
    // it passes.
    pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      trial.segment(begin, end - begin) = x.segment(begin, end - begin) + s.segment(begin, end - begin);
    });
    auto full = newton.evaluate(trial, trial_grad, trial_m);
    if (!full)
      return evaluation_failed(full.error());
    double f_trial = *full;
    double alpha = 1;
    const bool finite = std::isfinite(f_trial) && trial_grad.allFinite();
    if (-gs <= flat_decrease * std::abs(f)) {
      // Near the minimum f's rounding hides the decrease Armijo's test needs.
      if (!(finite && trial_grad.norm() <= flat_gradient_decrease * grad.norm()))
        return {stop_reason::line_search_failed,
                "the Newton step allows no further reduction (predicted decrease "
                  + std::to_string(-gs) + "): the objective may be at machine precision; consider a larger epsilon"};
    } else if (!(finite && f_trial - f <= armijo * gs)) {
      // Backtrack along s on the line values between x and x + s, then evaluate the step taken.
      bool found = false;
      for (int halving = 0; halving < max_halvings && !found; ++halving) {
        alpha *= 0.5;
        auto value = newton.along(x, s, alpha);
        if (!value)
          return evaluation_failed(value.error());
        found = std::isfinite(*value) && *value - f <= armijo * alpha * gs;
      }
      if (!found)
        return {stop_reason::line_search_failed,
                "no step along the Newton direction lowers the objective enough (20 halvings): the "
                "objective may be at machine precision; consider a larger epsilon"};
      pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
        trial.segment(begin, end - begin) = x.segment(begin, end - begin) + alpha * s.segment(begin, end - begin);
      });
      auto taken = newton.evaluate(trial, trial_grad, trial_m);
      if (!taken)
        return evaluation_failed(taken.error());
      f_trial = *taken;
      if (!std::isfinite(f_trial) || !trial_grad.allFinite())
        return {stop_reason::evaluation_failed, "objective or gradient is not finite at the accepted step"};
    }
    x.swap(trial);
    f = f_trial;
    grad.swap(trial_grad);
    preconditioner.moved_swapping(trial_m);  // the step's diagonal; trial_m gets the last one's memory
    if (auto stop = log.accept(f, grad, alpha * s.norm()))
      return *stop;
    const auto stop = newton.finished(grad, x);
    if (auto failed = newton.hand_out(session, stop.has_value(), f, x, grad))
      return *failed;
    if (stop)
      return *stop;
  }
}

} // namespace

result<run_result> minimize_newton_erased(const newton_objective& objective, Eigen::VectorXd& theta,
                                          const newton_options& options, const iteration_hook& hook,
                                          const newton_session& session) {
  if (auto ok = check_options(options); !ok)
    return ok.error().with_context("invalid Newton-CG options");
  cg_preconditioner preconditioner{theta.size(), options.preconditioner_pairs, options.preconditioner_bytes};
  if (options.l1.size() > 0 && options.l1.size() != theta.size())
    return fail_invalid("invalid Newton-CG options: the L1 weights have " + std::to_string(options.l1.size())
                        + " entries, theta " + std::to_string(theta.size()));
  if (session.resume) {
    if (auto ok = check_state(*session.resume, theta.size(), options); !ok)
      return ok.error().with_context("invalid Newton-CG options: the state to resume does not fit");
    if (session.resume->s.size() > static_cast<std::size_t>(preconditioner.capacity()))
      return fail_invalid("invalid Newton-CG options: the state to resume holds "
                          + std::to_string(session.resume->s.size())
                          + " preconditioner pairs, this run's memory holds "
                          + std::to_string(preconditioner.capacity()));
  }
  // The run works on theta itself (no copy of the dimension): it always ends at the last
  // accepted iterate, and trials live in their own vector.
  Eigen::VectorXd& x = theta;
  run_log log{hook, options.past, options.delta};
  if (options.step == newton_step::trust_region) {
    auto stop = minimize_trust_region(objective.evaluate, objective.hessian, x, options, log,
                                      std::move(preconditioner), session);
    return log.finish(std::move(stop));
  }
  vector_pool alone;
  vector_pool& pool = options.pool ? *options.pool : alone;
  newton_run newton{objective, log, pool, options, std::move(preconditioner)};
  auto stop = options.l1.size() > 0 ? run_orthant(newton, objective, log, pool, x, options, session)
                                     : run(newton, objective, log, pool, x, session);
  return log.finish(std::move(stop));
}

} // namespace shardopt::optimizer
