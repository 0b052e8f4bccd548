// Newton-CG's trust-region step, after Lin & More (1999) and Lin, Weng & Keerthi (2008), the
// method of LIBLINEAR's TRON: Steihaug-Toint conjugate gradients inside the region (steihaug.hpp),
// the region's radius updated from the ratio of actual to predicted reduction with TRON's
// constants and interpolation.

#include "optimizer/trust_region.hpp"

#include "optimizer/steihaug.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace shardopt::optimizer {

namespace {

// Acceptance and radius-update constants of TRON (Lin & More 1999, section 2).
constexpr double eta0 = 1e-4;
constexpr double eta1 = 0.25;
constexpr double eta2 = 0.75;
constexpr double sigma1 = 0.25;
constexpr double sigma2 = 0.5;
constexpr double sigma3 = 4.0;

/// Predicted reductions at most this fraction of |f| are below what f's rounding resolves.
constexpr double flat_reduction = 1e-13;
/// There a step must cut the gradient's norm by 10% (Newton steps do far more near a smooth
/// minimum; at a kink of the squared hinge they may not, and the run ends instead of crawling).
constexpr double flat_gradient_decrease = 0.9;

} // namespace

namespace {

bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const newton_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// The trust-region loop, from and updating the iterate x (or from the session's state); returns
/// where it stops.
run_stop run(trust_region_cg& cg, run_log& log, Eigen::VectorXd& x, const newton_options& o,
             const newton_session& session) {
  const auto n = x.size();
  Eigen::VectorXd grad(n);
  Eigen::VectorXd trial_grad(n);
  Eigen::VectorXd s(n);
  Eigen::VectorXd hs(n);
  // The first solve is unbounded, and its step's length is the first radius. (TRON starts at
  // ||grad||, which suits its sum of losses; for a mean of losses ||grad|| is smaller by the number
  // of examples, and the radius then needs one iteration per factor 4 to reach the solution's scale:
  // 10 iterations on the synthetic set.)
  double radius = std::numeric_limits<double>::infinity();
  bool first_step = true;
  double f = 0;
  if (session.on_state)
    cg.keep_pairs();
  if (session.resume) {
    const auto& saved = *session.resume;
    x = saved.theta;
    grad = saved.grad;
    f = saved.f;
    radius = saved.radius;
    first_step = false;
    cg.resume(saved.s, saved.y);
    log.resume(saved.iterations, saved.evaluations, saved.seconds, saved.f_history, saved.products);
  } else {
    auto start = cg.evaluate(x, grad);
    if (!start)
      return evaluation_failed(start.error());
    f = *start;
    if (!std::isfinite(f) || !grad.allFinite())
      return {stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"};
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
    const newton_state state{info.iteration, info.evaluations, info.products, log.seconds(), f,
                             radius, x, grad, cg.pairs_s(), cg.pairs_y(), log.history()};
    if (auto saved = session.on_state(state, last); !saved)
      return evaluation_failed(saved.error());
    return std::nullopt;
  };
  if (auto stop = finished())
    return *stop;
  for (;;) {
    if (auto stop = cg.solve(grad, radius, s, hs))
      return *stop;
    const double snorm = s.norm();
    if (!std::isfinite(snorm) || !hs.allFinite()) {  // a step past what a double holds
      radius = sigma1 * (std::isfinite(radius) ? radius : grad.norm());
      first_step = false;
      if (!(radius > std::numeric_limits<double>::min()))
        return {stop_reason::line_search_failed,
                "the trust region shrank to nothing around steps past a double's range"};
      continue;
    }
    const double gs = grad.dot(s);
    // The quadratic model's reduction: -(g's + s'Hs/2).
    const double predicted = -(gs + 0.5 * s.dot(hs));
    const Eigen::VectorXd trial = x + s;
    auto trial_value = cg.evaluate(trial, trial_grad, true);
    if (!trial_value)
      return evaluation_failed(trial_value.error());
    const double f_trial = *trial_value;
    if (first_step) {
      radius = std::min(radius, snorm);
      first_step = false;
    }
    if (!std::isfinite(f_trial) || !trial_grad.allFinite()) {
      radius = sigma1 * std::min(radius, snorm);  // too far: the model means nothing there
      if (!(radius > std::numeric_limits<double>::min()))
        return {stop_reason::line_search_failed,
                "the trust region shrank to nothing around non-finite trial objectives"};
      continue;
    }
    const double actual = f - f_trial;
    // Radius: interpolate the step length minimising the quadratic through f, g's and f_trial.
    const double curvature_gap = f_trial - f - gs;
    const double alpha = curvature_gap <= 0 ? sigma3 : std::max(sigma1, -0.5 * (gs / curvature_gap));
    if (actual < eta0 * predicted)
      radius = std::min(std::max(alpha, sigma1) * snorm, sigma2 * radius);
    else if (actual < eta1 * predicted)
      radius = std::max(sigma1 * radius, std::min(alpha * snorm, sigma2 * radius));
    else if (actual < eta2 * predicted)
      radius = std::max(sigma1 * radius, std::min(alpha * snorm, sigma3 * radius));
    else
      radius = std::max(radius, std::min(alpha * snorm, sigma3 * radius));
    // Near the minimum the predicted reduction falls below what f's rounding can show; there the
    // gradient's norm judges the step instead (it still shrinks quadratically under Newton steps).
    const bool flat = predicted <= flat_reduction * std::abs(f);
    const bool accepted = flat ? trial_grad.norm() <= flat_gradient_decrease * grad.norm()
                               : actual > eta0 * predicted;
    if (flat)
      radius = accepted ? std::max(radius, sigma3 * snorm) : sigma1 * std::min(radius, snorm);
    if (accepted) {
      x = trial;
      f = f_trial;
      grad.swap(trial_grad);
      cg.moved();
      if (auto stop = log.accept(f, grad, snorm))
        return *stop;
      const auto stop = finished();
      if (auto failed = hand_out(stop.has_value()))
        return *failed;
      if (stop)
        return *stop;
      continue;
    }
    if (!(predicted > 0) || snorm <= std::numeric_limits<double>::epsilon() * std::max(1.0, x.norm()))
      return {stop_reason::line_search_failed,
              "the trust region allows no further reduction (step " + std::to_string(snorm)
                + ", predicted reduction " + std::to_string(predicted)
                + "): the objective may be at machine precision; consider a larger epsilon"};
  }
}

} // namespace

run_stop minimize_trust_region(const evaluate_function& f, const hessian_function& hessian, Eigen::VectorXd& x,
                               const newton_options& options, run_log& log, cg_preconditioner preconditioner,
                               const newton_session& session) {
  trust_region_cg cg{f, hessian, log, x, options.cg_tolerance > 0 ? options.cg_tolerance : 0.1,
                     options.max_cg_iterations, options.replay_bytes, std::move(preconditioner)};
  return run(cg, log, x, options, session);
}

} // namespace shardopt::optimizer
