#pragma once

// The strong-Wolfe line search of both L-BFGS loops (ours, and LBFGS++'s L-BFGS-B through
// lbfgspp.cpp): J. Nocedal and S. J. Wright, "Numerical Optimization", 2nd ed., Algorithms 3.5
// (bracketing) and 3.6 (zoom, by safeguarded cubic interpolation).

#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace shardopt::optimizer {

/// The search on phi(a) = f(xp + a d), a in (0, step_max]: accepts a step with sufficient decrease
/// and |phi'(a)| <= wolfe |phi'(0)|, non-finite trial values counting as "too far". When its trial
/// budget runs out it falls back to the best point with sufficient decrease whose curvature keeps
/// the BFGS update positive definite; without one the run ends with `line_search_failed`. Never
/// returns a point worse than xp.
///
/// `Run` has `result<double> evaluate(const vector& x, vector& grad)` and
/// `std::optional<run_stop> accept(double fx, const vector& x, const vector& grad, double step)`,
/// called once with the accepted point. On success x, grad, fx and step hold it and the result is
/// empty; otherwise the result is the stop (an evaluation's failure, the hook's, or the search's).
template <class Run>
std::optional<run_stop> wolfe_search(Run& f, double& fx, Eigen::VectorXd& x, Eigen::VectorXd& grad,
                                     double& step, double step_max, const Eigen::VectorXd& drt,
                                     const Eigen::VectorXd& xp, double ftol, double wolfe, int budget) {
  struct point {
    double a = 0;
    double phi = 0;
    double dphi = 0;
    bool finite = true;
  };
  const point start{0, fx, grad.dot(drt), true};
  if (!(start.dphi < 0))
    return run_stop{stop_reason::line_search_failed, "the search direction does not decrease the objective"};
  if (!(step_max > 0))
    return run_stop{stop_reason::line_search_failed, "no room to move inside the bounds"};

  // The best trial with sufficient decrease, kept for the fallback.
  point best = start;
  Eigen::VectorXd best_x = xp;
  Eigen::VectorXd best_grad = grad;
  int evaluations = 0;
  std::optional<run_stop> failed;

  const auto evaluate = [&](double a) {
    x.noalias() = xp + a * drt;
    ++evaluations;
    auto value = f.evaluate(x, grad);
    if (!value) {
      failed = evaluation_failed(value.error());
      return point{a, 0, 0, false};
    }
    fx = *value;
    point p{a, fx, grad.dot(drt), std::isfinite(fx) && grad.allFinite()};
    if (p.finite && p.phi <= start.phi + ftol * a * start.dphi && p.phi < best.phi) {
      best = p;
      best_x = x;
      best_grad = grad;
    }
    return p;
  };
  const auto armijo_fails = [&](const point& p) {
    return !p.finite || p.phi > start.phi + ftol * p.a * start.dphi;
  };
  const auto curvature_holds = [&](const point& p) { return std::abs(p.dphi) <= -wolfe * start.dphi; };
  const auto finish = [&](const point& p) {
    step = p.a;
    return f.accept(fx, x, grad, step);
  };
  // The fallback: the best decreasing point, only if s'y > 0 (the BFGS update stays positive
  // definite).
  const auto fall_back = [&]() -> std::optional<run_stop> {
    if (best.a > 0 && best.dphi > start.dphi) {
      x = best_x;
      grad = best_grad;
      fx = best.phi;
      step = best.a;
      return f.accept(fx, x, grad, step);
    }
    return run_stop{stop_reason::line_search_failed,
                    "no step satisfies the strong Wolfe conditions (the objective may be at machine "
                    "precision; consider a larger epsilon)"};
  };
  // The minimiser of the cubic through (lo, hi) with their slopes; bisection where it is undefined.
  const auto interpolate = [](const point& lo, const point& hi) {
    if (!hi.finite)
      return (lo.a + hi.a) / 2;
    const double d1 = lo.dphi + hi.dphi - 3 * (lo.phi - hi.phi) / (lo.a - hi.a);
    const double radicand = d1 * d1 - lo.dphi * hi.dphi;
    if (!(radicand >= 0))
      return (lo.a + hi.a) / 2;
    const double d2 = std::copysign(std::sqrt(radicand), hi.a - lo.a);
    const double denominator = hi.dphi - lo.dphi + 2 * d2;
    if (denominator == 0)
      return (lo.a + hi.a) / 2;
    return hi.a - (hi.a - lo.a) * (hi.dphi + d2 - d1) / denominator;
  };

  // Bracketing: grow the step until it overshoots or satisfies strong Wolfe.
  point previous = start;
  point lo;
  point hi;
  double a = std::min(step, step_max);
  for (;;) {
    const point p = evaluate(a);
    if (failed)
      return failed;
    if (armijo_fails(p) || (evaluations > 1 && p.phi >= previous.phi)) {
      lo = previous;
      hi = p;
      break;
    }
    if (curvature_holds(p))
      return finish(p);
    if (p.dphi >= 0) {
      lo = p;
      hi = previous;
      break;
    }
    if (a >= step_max)  // at a bound: sufficient decrease is all we can get
      return finish(p);
    if (evaluations >= budget)
      return fall_back();
    previous = p;
    a = std::min(2 * a, step_max);
  }

  // Zoom: shrink [lo, hi] around a strong-Wolfe step.
  while (evaluations < budget) {
    const double width = std::abs(hi.a - lo.a);
    if (width <= std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(lo.a)))
      break;
    double trial = interpolate(lo, hi);
    const double left = std::min(lo.a, hi.a);
    const double margin = 0.1 * width;
    if (!(trial > left + margin && trial < left + width - margin))
      trial = (lo.a + hi.a) / 2;
    const point p = evaluate(trial);
    if (failed)
      return failed;
    if (armijo_fails(p) || p.phi >= lo.phi) {
      hi = p;
    } else {
      if (curvature_holds(p))
        return finish(p);
      if (p.dphi * (hi.a - lo.a) >= 0)
        hi = lo;
      lo = p;
    }
  }
  return fall_back();
}

} // namespace shardopt::optimizer
