// Newton-CG with a backtracking line search after LIBLINEAR 2.50 (newton.cpp and its
// l2r_erm_fun): preconditioned CG (pcg.hpp) with a diagonal preconditioner, a full step tried
// first, and Armijo backtracking on line values, which cost no pass for the linear models. The
// trust-region step lives in trust_region.cpp; both share the options, the state and their checks.

#include "optimizer/newton_cg.hpp"

#include "optimizer/pcg.hpp"
#include "optimizer/trust_region.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace shardopt::optimizer {

namespace {

/// Armijo's sufficient decrease: f(theta + alpha s) - f(theta) <= eta alpha g's (LIBLINEAR's eta).
constexpr double armijo = 0.01;
/// Halvings of the step after the full one, at most (LIBLINEAR tries 20 steps in all).
constexpr int max_halvings = 19;
/// The weight of the Hessian's diagonal in the preconditioner (LIBLINEAR's alpha_pcg).
constexpr double diagonal_weight = 0.01;
/// Decreases at most this fraction of |f| are below what f's rounding resolves: there the gradient's
/// norm judges the full step (it still shrinks quadratically under Newton steps).
constexpr double flat_decrease = 1e-13;
/// ...and there a step must cut the gradient's norm by 10% (at a kink of the squared hinge it may
/// not, and the run ends instead of crawling).
constexpr double flat_gradient_decrease = 0.9;

} // namespace

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

bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const newton_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// One Newton run: the objective, the bookkeeping and the iterate's evaluation.
class newton_run {
public:
  newton_run(const newton_objective& objective, run_log& log, vector_pool& pool, const newton_options& o,
             cg_preconditioner preconditioner)
    : objective_(objective), log_(log), pool_(pool), o_(o), preconditioner_(std::move(preconditioner)) {}

  cg_preconditioner& preconditioner() { return preconditioner_; }

  /// The objective, gradient and (where the objective gives it) preconditioning diagonal at x.
  result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::VectorXd& m) {
    log_.count_evaluation();
    if (!objective_.diagonal) {
      m.resize(0);
      return objective_.evaluate(x, grad);
    }
    auto f = objective_.diagonal(x, grad, m);
    if (f)
      mix(m);
    return f;
  }

  /// The CG settings of this run: LIBLINEAR's units are the objective divided by lambda.
  pcg_settings settings() const {
    return pcg_settings{o_.cg_tolerance > 0 ? o_.cg_tolerance : 0.5, o_.max_cg_iterations,
                        o_.lambda > 0 ? 1.0 / o_.lambda : 1.0};
  }

  /// The objective at theta + alpha s, from the line values between the last two evaluations (at
  /// theta and theta + s), or, for an objective without them, by an evaluation.
  result<double> along(const Eigen::VectorXd& x, const Eigen::VectorXd& s, double alpha) {
    if (objective_.line) {
      std::vector<double> values;
      if (auto ok = objective_.line({alpha}, values); !ok)
        return ok.error();
      if (values.size() != 1)
        return fail_runtime("the objective gave " + std::to_string(values.size()) + " line values for 1 step");
      return values[0];
    }
    Eigen::VectorXd unused_grad, unused_m;
    return evaluate(x + alpha * s, unused_grad, unused_m);
  }

private:
  /// The diagonal as LIBLINEAR mixes it: (1 - w) lambda + w diag(H), lambda standing for the
  /// regulariser's identity (without one, the diagonal's mean); entries that are not positive and
  /// finite (a feature no example has, without a regulariser) become that identity's.
  void mix(Eigen::VectorXd& m) const {
    double identity = o_.lambda;
    if (!(identity > 0)) {
      double sum = 0;
      Eigen::Index count = 0;
      for (Eigen::Index i = 0; i < m.size(); ++i)
        if (m[i] > 0 && std::isfinite(m[i])) {
          sum += m[i];
          ++count;
        }
      identity = count > 0 ? sum / static_cast<double>(count) : 1.0;
    }
    pool_.for_chunks(m.size(), [&](Eigen::Index begin, Eigen::Index end) {
      for (Eigen::Index i = begin; i < end; ++i) {
        const double mixed = (1 - diagonal_weight) * identity + diagonal_weight * m[i];
        m[i] = mixed > 0 && std::isfinite(mixed) ? mixed : identity;
      }
    });
  }

  const newton_objective& objective_;
  run_log& log_;
  vector_pool& pool_;
  const newton_options& o_;
  cg_preconditioner preconditioner_;
};

/// The Newton loop, from and updating the iterate x (or from the session's state); returns where
/// it stops.
run_stop run(newton_run& newton, const newton_objective& objective, run_log& log, vector_pool& pool,
             Eigen::VectorXd& x, const newton_options& o, const newton_session& session) {
  const auto n = x.size();
  Eigen::VectorXd grad(n), m;
  Eigen::VectorXd trial(n), trial_grad(n), trial_m;
  Eigen::VectorXd s(n);
  pcg_workspace work;
  double f = 0;
  auto& preconditioner = newton.preconditioner();
  if (session.on_state)
    preconditioner.keep_pairs();
  if (session.resume) {
    const auto& saved = *session.resume;
    x = saved.theta;
    log.resume(saved.iterations, saved.evaluations, saved.seconds, saved.f_history, saved.products);
  }
  {
    // The start, or a resumed run's iterate again: products and the preconditioner refer to the
    // objective's last evaluation. (A resumed iterate gives the saved f and gradient again.)
    auto start = newton.evaluate(x, grad, m);
    if (!start)
      return evaluation_failed(start.error());
    f = *start;
    if (!std::isfinite(f) || !grad.allFinite())
      return {stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"};
    if (session.resume)
      preconditioner.restore(session.resume->s, session.resume->y, m);
    else
      preconditioner.moved(m);
  }
  log.record(f, grad, 0);
  const auto finished = [&]() -> std::optional<run_stop> {
    if (gradient_small(grad, x, o))
      return run_stop{stop_reason::converged, ""};
    if (o.max_iterations > 0 && log.info().iteration >= o.max_iterations)
      return run_stop{stop_reason::max_iterations, ""};
    return std::nullopt;
  };
  // The state after an accepted iteration, as the next one starts from it.
  const auto hand_out = [&](bool last) -> std::optional<run_stop> {
    const auto& info = log.info();
    if (!session.on_state || (!last && session.due && !session.due(info.iteration, log.seconds())))
      return std::nullopt;
    const newton_state state{info.iteration, info.evaluations, info.products, log.seconds(), f, 0.0,
                             x, grad, preconditioner.pairs_s(), preconditioner.pairs_y(), log.history()};
    if (auto saved = session.on_state(state, last); !saved)
      return evaluation_failed(saved.error());
    return std::nullopt;
  };
  if (auto stop = finished())
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
    m.swap(trial_m);
    preconditioner.moved(m);
    if (auto stop = log.accept(f, grad, alpha * s.norm()))
      return *stop;
    const auto stop = finished();
    if (auto failed = hand_out(stop.has_value()))
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
  if (session.resume) {
    if (auto ok = check_state(*session.resume, theta.size(), options); !ok)
      return ok.error().with_context("invalid Newton-CG options: the state to resume does not fit");
    if (session.resume->s.size() > static_cast<std::size_t>(preconditioner.capacity()))
      return fail_invalid("invalid Newton-CG options: the state to resume holds "
                          + std::to_string(session.resume->s.size())
                          + " preconditioner pairs, this run's memory holds "
                          + std::to_string(preconditioner.capacity()));
  }
  Eigen::VectorXd x = theta;
  run_log log{hook, options.past, options.delta};
  if (options.step == newton_step::trust_region) {
    auto stop = minimize_trust_region(objective.evaluate, objective.hessian, x, options, log,
                                      std::move(preconditioner), session);
    theta = x;
    return log.finish(std::move(stop));
  }
  vector_pool alone;
  vector_pool& pool = options.pool ? *options.pool : alone;
  newton_run newton{objective, log, pool, options, std::move(preconditioner)};
  auto stop = run(newton, objective, log, pool, x, options, session);
  // x is the last accepted iterate: trials live in their own vector.
  theta = x;
  return log.finish(std::move(stop));
}

} // namespace shardopt::optimizer
