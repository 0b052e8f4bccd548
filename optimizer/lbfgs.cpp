// The file that adapts LBFGS++'s solvers (Yixuan Qiu, https://lbfgspp.statr.me); newton_cg.cpp uses
// only its BFGS matrix, as a preconditioner.
//
// LBFGS++ 0.1.0 has no iteration callback, reports no stop reason and throws from its line searches;
// its strong-Wolfe search silently returns a worse point when it runs out of trials, and LBFGS-B's
// More-Thuente search is known to fail on valid problems. So both solvers run with our own line
// search policy (`wolfe_line_search`, Nocedal & Wright, "Numerical Optimization", 2nd ed., Alg. 3.5
// and 3.6), which also reports each accepted step to the adapter: that is the iteration hook.
//
// LBFGS++'s solvers keep their memory private and always start empty, so a run could not be saved
// and resumed. Unbounded runs therefore use LBFGS++'s BFGS matrix (`BFGSMat`, the two-loop
// recursion) inside `run_unbounded`, the same loop as `LBFGSSolver::minimize` step for step, whose
// state (iterate, gradient, correction pairs) we hold and can hand out. Replaying the saved pairs
// into a fresh matrix gives bit for bit the directions of the original. L-BFGS-B keeps a factorised
// matrix whose rounding depends on its whole history, so bounded runs use `LBFGSBSolver` and cannot
// be resumed.

#include "optimizer/lbfgs.hpp"

#include <LBFGSpp/BFGSMat.h>
#include <LBFGSB.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace shardopt::optimizer {

namespace {

/// Thrown through LBFGS++ to end a run early; caught in `minimize_erased` only.
struct run_ended {
  stop_reason reason;
  std::string message;
};

using clock_type = std::chrono::steady_clock;

/// The function object LBFGS++ calls. Counts evaluations, turns an evaluation error into `run_ended`,
/// and remembers the last accepted iterate so an early stop can hand it back.
class adapter {
public:
  adapter(const evaluate_function& f, const lbfgs_options& options, const iteration_hook& hook)
    : f_(f), options_(options), hook_(hook), start_(clock_type::now()) {}

  /// Continues the counts, the clock and the `past` ring of a saved run.
  void resume(const lbfgs_state& state) {
    evaluations_ = state.evaluations;
    iterations_ = state.iterations;
    history_ = state.f_history;
    earlier_seconds_ = state.seconds;
    record(state.f, state.theta, state.grad, 0);
  }

  /// Fills the counts, the clock and the `past` ring of a state to save.
  void save(lbfgs_state& state) const {
    state.evaluations = evaluations_;
    state.iterations = iterations_;
    state.f_history = history_;
    state.seconds = seconds();
  }

  double operator()(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    ++evaluations_;
    auto value = f_(x, grad);
    if (!value)
      throw run_ended{stop_reason::evaluation_failed, value.error().message()};
    if (evaluations_ == 1) {
      if (!std::isfinite(*value) || !grad.allFinite())
        throw run_ended{stop_reason::evaluation_failed,
                        "objective or gradient is not finite at the initial theta"};
      record(*value, x, grad, 0);
    }
    return *value;
  }

  /// Called by the line search once per iteration with the accepted point.
  void accept(double fx, const Eigen::VectorXd& x, const Eigen::VectorXd& grad, double step) {
    ++iterations_;
    record(fx, x, grad, step);
    if (hook_ && !hook_(info_))
      throw run_ended{stop_reason::stopped_by_hook, "stopped by the iteration hook"};
    if (options_.past > 0 && objective_settled(history_, options_.past, options_.delta, iterations_, fx))
      throw run_ended{stop_reason::objective_converged, ""};
  }

  const iteration_info& info() const { return info_; }
  const Eigen::VectorXd& best_theta() const { return best_theta_; }
  int iterations() const { return iterations_; }
  int evaluations() const { return evaluations_; }
  double seconds() const {
    return earlier_seconds_ + std::chrono::duration<double>(clock_type::now() - start_).count();
  }

private:
  void record(double fx, const Eigen::VectorXd& x, const Eigen::VectorXd& grad, double step) {
    best_theta_ = x;
    info_.iteration = iterations_;
    info_.f = fx;
    info_.grad_norm = grad.norm();
    info_.grad_norm_inf = grad.size() > 0 ? grad.lpNorm<Eigen::Infinity>() : 0.0;
    info_.step = step;
    info_.evaluations = evaluations_;
    info_.seconds = seconds();
  }

  const evaluate_function& f_;
  const lbfgs_options& options_;
  const iteration_hook& hook_;
  clock_type::time_point start_;
  double earlier_seconds_ = 0;  // of the run this one resumes
  int evaluations_ = 0;
  int iterations_ = 0;
  iteration_info info_;
  Eigen::VectorXd best_theta_;
  std::vector<double> history_;
};

/// Strong-Wolfe line search on phi(a) = f(xp + a d), a in (0, step_max]. Accepts a step with
/// sufficient decrease and |phi'(a)| <= wolfe |phi'(0)|. Non-finite trial values count as "too far".
/// When the trial budget runs out it falls back to the best point with sufficient decrease whose
/// curvature keeps the BFGS update positive definite; without one it ends the run with
/// `line_search_failed`. Never returns a point worse than xp.
template <class Scalar>
class wolfe_line_search {
public:
  using vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// LBFGS++'s L-BFGS-B entry point.
  template <class Foo>
  static void LineSearch(Foo& f, Scalar& fx, vector& x, vector& grad, Scalar& step, Scalar step_max,
                         const vector& drt, const vector& xp, const LBFGSpp::LBFGSBParam<Scalar>& param) {
    search(f, fx, x, grad, step, step_max, drt, xp, param.ftol, param.wolfe, param.max_linesearch);
  }

private:
  struct point {
    Scalar a = 0;
    Scalar phi = 0;
    Scalar dphi = 0;
    bool finite = true;
  };

public:
  /// The search itself; also our own loop's entry point (see `run_unbounded`).
  template <class Foo>
  static void search(Foo& f, Scalar& fx, vector& x, vector& grad, Scalar& step, Scalar step_max,
                     const vector& drt, const vector& xp, Scalar ftol, Scalar wolfe, int budget) {
    const point start{0, fx, grad.dot(drt), true};
    if (!(start.dphi < 0))
      throw run_ended{stop_reason::line_search_failed,
                      "the search direction does not decrease the objective"};
    if (!(step_max > 0))
      throw run_ended{stop_reason::line_search_failed, "no room to move inside the bounds"};

    // The best trial with sufficient decrease, kept for the fallback.
    point best = start;
    vector best_x = xp;
    vector best_grad = grad;
    int evaluations = 0;

    auto evaluate = [&](Scalar a) {
      x.noalias() = xp + a * drt;
      fx = f(x, grad);
      ++evaluations;
      point p{a, fx, grad.dot(drt), std::isfinite(fx) && grad.allFinite()};
      if (p.finite && p.phi <= start.phi + ftol * a * start.dphi && p.phi < best.phi) {
        best = p;
        best_x = x;
        best_grad = grad;
      }
      return p;
    };
    auto armijo_fails = [&](const point& p) {
      return !p.finite || p.phi > start.phi + ftol * p.a * start.dphi;
    };
    auto curvature_holds = [&](const point& p) { return std::abs(p.dphi) <= -wolfe * start.dphi; };
    auto finish = [&](const point& p) {
      step = p.a;
      f.accept(fx, x, grad, step);
    };

    // Bracketing (Alg. 3.5): grow the step until it overshoots or satisfies strong Wolfe.
    point previous = start;
    point lo;
    point hi;
    Scalar a = std::min(step, step_max);
    for (;;) {
      const point p = evaluate(a);
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
        return fall_back(f, fx, x, grad, step, best, best_x, best_grad, start);
      previous = p;
      a = std::min(Scalar(2) * a, step_max);
    }

    // Zoom (Alg. 3.6): shrink [lo, hi] around a strong-Wolfe step, by safeguarded cubic interpolation.
    while (evaluations < budget) {
      const Scalar width = std::abs(hi.a - lo.a);
      if (width <= std::numeric_limits<Scalar>::epsilon() * std::max(Scalar(1), std::abs(lo.a)))
        break;
      Scalar trial = interpolate(lo, hi);
      const Scalar left = std::min(lo.a, hi.a);
      const Scalar margin = Scalar(0.1) * width;
      if (!(trial > left + margin && trial < left + width - margin))
        trial = (lo.a + hi.a) / 2;
      const point p = evaluate(trial);
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
    fall_back(f, fx, x, grad, step, best, best_x, best_grad, start);
  }

private:
  /// Minimiser of the cubic through (lo, hi) with their slopes; bisection when that is not defined.
  static Scalar interpolate(const point& lo, const point& hi) {
    if (!hi.finite)
      return (lo.a + hi.a) / 2;
    const Scalar d1 = lo.dphi + hi.dphi - 3 * (lo.phi - hi.phi) / (lo.a - hi.a);
    const Scalar radicand = d1 * d1 - lo.dphi * hi.dphi;
    if (!(radicand >= 0))
      return (lo.a + hi.a) / 2;
    const Scalar d2 = std::copysign(std::sqrt(radicand), hi.a - lo.a);
    const Scalar denominator = hi.dphi - lo.dphi + 2 * d2;
    if (denominator == 0)
      return (lo.a + hi.a) / 2;
    return hi.a - (hi.a - lo.a) * (hi.dphi + d2 - d1) / denominator;
  }

  template <class Foo>
  static void fall_back(Foo& f, Scalar& fx, vector& x, vector& grad, Scalar& step, const point& best,
                        const vector& best_x, const vector& best_grad, const point& start) {
    // Accept the best decreasing point only if s'y > 0, so the BFGS update stays positive definite.
    if (best.a > 0 && best.dphi > start.dphi) {
      x = best_x;
      grad = best_grad;
      fx = best.phi;
      step = best.a;
      f.accept(fx, x, grad, step);
      return;
    }
    throw run_ended{stop_reason::line_search_failed,
                    "no step satisfies the strong Wolfe conditions (the objective may be at machine "
                    "precision; consider a larger epsilon)"};
  }
};

} // namespace

std::string check_options(const lbfgs_options& o, Eigen::Index n) {
  if (o.history < 1)
    return "history must be at least 1";
  if (o.epsilon < 0 || o.epsilon_rel < 0 || o.delta < 0)
    return "epsilon, epsilon_rel and delta must be non-negative";
  if (o.past < 0 || o.max_iterations < 0)
    return "past and max_iterations must be non-negative";
  if (o.past > max_past)
    return "past must be at most " + std::to_string(max_past);
  if (o.max_linesearch < 1)
    return "max_linesearch must be at least 1";
  if (!(o.ftol > 0 && o.ftol < 0.5) || !(o.wolfe > o.ftol && o.wolfe < 1))
    return "line search constants must satisfy 0 < ftol < 0.5 and ftol < wolfe < 1";
  for (const auto* bound : {&o.lower, &o.upper})
    if (*bound && (*bound)->size() != n)
      return "bounds must have the dimension of theta (" + std::to_string(n) + ")";
  if (o.lower && o.upper && ((*o.upper).array() < (*o.lower).array()).any())
    return "a lower bound exceeds its upper bound";
  return {};
}

namespace {

/// LBFGS++'s default bound on a step (LBFGSParam::max_step), kept so runs match its solver's.
constexpr double max_step = 1e20;

bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const lbfgs_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// Unbounded L-BFGS: `LBFGSSolver::minimize`'s loop over LBFGS++'s BFGS matrix, with the state kept
/// for the session (saved after every iteration, or resumed from). Returns when the gradient test
/// passes or the iteration limit is reached; other stops are thrown (`run_ended`) by the adapter and
/// the line search.
void run_unbounded(adapter& fn, Eigen::VectorXd& x, double& fx, const lbfgs_options& o,
                   const lbfgs_session& session) {
  const auto n = x.size();
  LBFGSpp::BFGSMat<double> bfgs;
  bfgs.reset(static_cast<int>(n), o.history);
  Eigen::VectorXd grad(n);
  Eigen::VectorXd drt(n);
  Eigen::VectorXd xp(n);
  Eigen::VectorXd gradp(n);
  lbfgs_state state;  // what `on_state` sees; its pairs are kept only when someone looks
  double step = 1;

  // Start: a fresh run evaluates theta and steps along the steepest descent; a resumed one replays
  // its corrections into the matrix and steps along the quasi-Newton direction, as the run it
  // continues would have.
  if (session.resume) {
    const auto& saved = *session.resume;
    x = saved.theta;
    fx = saved.f;
    grad = saved.grad;
    for (std::size_t i = 0; i < saved.s.size(); ++i)
      bfgs.add_correction(saved.s[i], saved.y[i]);
    if (session.on_state) {
      state.s = saved.s;
      state.y = saved.y;
    }
    fn.resume(saved);
  } else {
    fx = fn(x, grad);
  }
  if (gradient_small(grad, x, o) || (o.max_iterations > 0 && fn.iterations() >= o.max_iterations))
    return;
  if (bfgs.num_corrections() == 0) {
    drt.noalias() = -grad;
    step = 1 / drt.norm();
  } else {
    bfgs.apply_Hv(grad, -1.0, drt);
  }

  // The state after an iteration: the iterate and the memory with this iteration's pair.
  const auto hand_out = [&](bool last) {
    if (!session.on_state)
      return;
    if (static_cast<int>(state.s.size()) == o.history) {
      state.s.erase(state.s.begin());
      state.y.erase(state.y.begin());
    }
    state.s.emplace_back(x - xp);
    state.y.emplace_back(grad - gradp);
    state.theta = x;
    state.grad = grad;
    state.f = fx;
    fn.save(state);
    if (auto saved = session.on_state(state, last); !saved)
      throw run_ended{stop_reason::evaluation_failed, saved.error().message()};
  };
  for (;;) {
    xp.noalias() = x;
    gradp.noalias() = grad;
    wolfe_line_search<double>::search(fn, fx, x, grad, step, max_step, drt, xp, o.ftol, o.wolfe,
                                      o.max_linesearch);
    if (gradient_small(grad, x, o) || (o.max_iterations > 0 && fn.iterations() >= o.max_iterations)) {
      // A run with a higher limit would add this pair and go on: hand out that state.
      hand_out(true);
      return;
    }
    bfgs.add_correction(x - xp, grad - gradp);
    bfgs.apply_Hv(grad, -1.0, drt);
    step = 1;
    hand_out(false);
  }
}

template <class Param>
void fill_common(Param& p, const lbfgs_options& o) {
  p.m = o.history;
  p.epsilon = o.epsilon;
  p.epsilon_rel = o.epsilon_rel;
  p.past = 0;  // the adapter applies the objective-change test itself, so it can name the reason
  p.max_iterations = o.max_iterations;
  p.max_linesearch = o.max_linesearch;
  p.ftol = o.ftol;
  p.wolfe = o.wolfe;
}

} // namespace

std::string check_state(const lbfgs_state& state, Eigen::Index n, const lbfgs_options& options) {
  const auto sized = [n](const Eigen::VectorXd& v) { return v.size() == n; };
  if (state.iterations < 0 || state.evaluations < std::max(state.iterations, 1) || !(state.seconds >= 0) ||
      (state.iterations > 0 && state.s.empty()))
    return "its counts are inconsistent";
  if (!sized(state.theta) || !sized(state.grad))
    return "theta has " + std::to_string(state.theta.size()) + " entries, the problem " + std::to_string(n);
  if (state.s.size() != state.y.size() || state.s.size() > static_cast<std::size_t>(options.history))
    return "it holds " + std::to_string(state.s.size()) + " correction pairs for a history of " +
           std::to_string(options.history);
  if (!std::all_of(state.s.begin(), state.s.end(), sized) || !std::all_of(state.y.begin(), state.y.end(), sized))
    return "a correction pair does not have the dimension of theta";
  const std::size_t ring = options.past > 0 ? static_cast<std::size_t>(options.past) : 0;
  if (!state.f_history.empty() && state.f_history.size() != ring)
    return "its objective history has " + std::to_string(state.f_history.size()) +
           " entries, --past is " + std::to_string(options.past);
  const auto finite = [](const Eigen::VectorXd& v) { return v.allFinite(); };
  if (!std::isfinite(state.f) || !finite(state.theta) || !finite(state.grad) ||
      !std::all_of(state.s.begin(), state.s.end(), finite) || !std::all_of(state.y.begin(), state.y.end(), finite))
    return "it holds values that are not finite";
  return {};
}

run_result minimize_erased(const evaluate_function& f, Eigen::VectorXd& theta,
                             const lbfgs_options& options, const iteration_hook& hook,
                             const lbfgs_session& session) {
  run_result out;
  auto problem = check_options(options, theta.size());
  const bool bounded = options.lower || options.upper;
  if (problem.empty() && bounded && (session.resume || session.on_state))
    problem = "a run with bounds (L-BFGS-B) cannot be saved or resumed";
  if (problem.empty() && session.resume)
    if (auto misfit = check_state(*session.resume, theta.size(), options); !misfit.empty())
      problem = "the state to resume does not fit: " + misfit;
  if (!problem.empty()) {
    out.reason = stop_reason::evaluation_failed;
    out.message = "invalid L-BFGS options: " + problem;
    return out;
  }
  adapter fn{f, options, hook};
  Eigen::VectorXd x = theta;
  double fx = 0;
  try {
    if (bounded) {
      // The params object must outlive the solver, which keeps a reference to it.
      LBFGSpp::LBFGSBParam<double> param;
      fill_common(param, options);
      LBFGSpp::LBFGSBSolver<double, wolfe_line_search> solver{param};
      const auto n = theta.size();
      const Eigen::VectorXd lower =
        options.lower ? *options.lower
                      : Eigen::VectorXd::Constant(n, -std::numeric_limits<double>::infinity());
      const Eigen::VectorXd upper =
        options.upper ? *options.upper
                      : Eigen::VectorXd::Constant(n, std::numeric_limits<double>::infinity());
      solver.minimize(fn, x, fx, lower, upper);
    } else {
      run_unbounded(fn, x, fx, options, session);
    }
    // The solver returned: either the gradient test passed or the iteration limit was hit.
    const auto& info = fn.info();
    const bool limit = options.max_iterations > 0 && fn.iterations() >= options.max_iterations;
    const bool small_grad = info.grad_norm <= options.epsilon
                            || info.grad_norm <= options.epsilon_rel * fn.best_theta().norm();
    out.reason = small_grad || !limit ? stop_reason::converged : stop_reason::max_iterations;
  } catch (const run_ended& ended) {
    out.reason = ended.reason;
    out.message = ended.message;
  } catch (const std::exception& e) {
    // LBFGS++'s own checks (e.g. a non-positive-definite update) end up here.
    out.reason = stop_reason::line_search_failed;
    out.message = e.what();
  }
  const auto& info = fn.info();
  if (fn.best_theta().size() == theta.size())
    theta = fn.best_theta();
  out.f = info.f;
  out.grad_norm = info.grad_norm;
  out.grad_norm_inf = info.grad_norm_inf;
  out.iterations = fn.iterations();
  out.evaluations = fn.evaluations();
  out.seconds = fn.seconds();
  return out;
}

} // namespace shardopt::optimizer
