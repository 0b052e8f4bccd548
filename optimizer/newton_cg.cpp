// Trust-region Newton-CG after Lin & More (1999) and Lin, Weng & Keerthi (2008), the method of
// LIBLINEAR's TRON: Steihaug-Toint conjugate gradients inside the region, the region's radius
// updated from the ratio of actual to predicted reduction with TRON's constants and interpolation.

#include "optimizer/newton_cg.hpp"

#include <LBFGSpp/BFGSMat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

using clock_type = std::chrono::steady_clock;

/// Thrown inside the run to end it; caught in `minimize_newton_erased` only.
struct run_ended {
  stop_reason reason;
  std::string message;
};

} // namespace

std::string check_options(const newton_options& o) {
  if (o.epsilon < 0 || o.epsilon_rel < 0 || o.delta < 0)
    return "epsilon, epsilon_rel and delta must be non-negative";
  if (o.past < 0 || o.max_iterations < 0 || o.max_cg_iterations < 0 || o.replay_bytes < 0
      || o.preconditioner_pairs < 0 || o.preconditioner_bytes < 0)
    return "past, max_iterations, max_cg_iterations, replay_bytes, preconditioner_pairs and "
           "preconditioner_bytes must be non-negative";
  if (!(o.cg_tolerance > 0 && o.cg_tolerance < 1))
    return "cg_tolerance must lie in (0, 1)";
  return {};
}

namespace {

/// CG's preconditioner at one iterate: the limited-memory BFGS inverse of pairs (d, H d) offered
/// by the previous iterate's solves, sampled evenly along its CG path (Morales & Nocedal 2000).
/// It changes only when the iterate does, so every solve at an iterate walks the same path (the
/// replay of products relies on it). Until the first move it is the identity.
class cg_preconditioner {
public:
  cg_preconditioner(Eigen::Index n, const newton_options& o)
    : n_(n), pairs_(n > 0 ? static_cast<int>(std::min<std::int64_t>(o.preconditioner_pairs,
                                                                      affordable(n, o.preconditioner_bytes)))
                          : 0) {}

  /// z = P r, or z = r where P r is not finite or not a descent direction for the residual (P is
  /// positive definite, so only overflow or rounding can do that). A function of r alone while
  /// the iterate stays, as the replay needs.
  void apply(const Eigen::VectorXd& r, Eigen::VectorXd& z) {
    if (built_) {
      bfgs_.apply_Hv(r, 1.0, z);
      const double rz = r.dot(z);
      if (z.allFinite() && std::isfinite(rz) && rz > 0)
        return;
    }
    z = r;
  }

  /// The k-th CG direction of a solve at the current iterate and its product. Only directions
  /// past those already offered at this iterate count (a repeated solve walks the same path), and
  /// only those of positive curvature (the BFGS inverse then stays positive definite) that
  /// `usable` admits. Candidates are thinned to every other one when they exceed twice the pairs,
  /// so they stay evenly spaced.
  void offer(int k, const Eigen::VectorXd& d, const Eigen::VectorXd& hd, double curvature) {
    if (pairs_ == 0 || k != offered_)
      return;
    ++offered_;
    if (k % stride_ != 0 || !usable(curvature, hd.squaredNorm()))
      return;
    candidates_.emplace_back(d, hd);
    if (candidates_.size() > 2 * static_cast<std::size_t>(pairs_)) {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < candidates_.size(); i += 2)
        candidates_[kept++] = std::move(candidates_[i]);
      candidates_.resize(kept);
      stride_ *= 2;
    }
  }

  /// The iterate moved: the pairs offered at the last one make the preconditioner of the new one.
  void moved() {
    // The new iterate's path starts afresh even when the last one offered no usable pair.
    offered_ = 0;
    stride_ = 1;
    if (pairs_ == 0 || candidates_.empty())
      return;
    const std::size_t count = candidates_.size();
    const std::size_t m = std::min(count, static_cast<std::size_t>(pairs_));
    bfgs_.reset(static_cast<int>(n_), static_cast<int>(m));
    // Oldest first: the last pair added sets the initial scaling (s'y / y'y).
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t at = m == 1 ? count - 1 : i * (count - 1) / (m - 1);
      bfgs_.add_correction(candidates_[at].first, candidates_[at].second);
    }
    built_ = true;
    candidates_.clear();
  }

private:
  /// The pairs `bytes` holds: p in the matrix and up to 2p + 1 candidates, two vectors each.
  static std::int64_t affordable(Eigen::Index n, std::int64_t bytes) {
    const std::int64_t pair_bytes = 2 * n * std::int64_t{sizeof(double)};
    return std::max<std::int64_t>(0, (bytes / pair_bytes - 1) / 3);
  }

  /// A pair's s'y and y'y make a positive definite update with a finite scaling: both positive
  /// normal numbers, and so are their ratios.
  static bool usable(double sy, double yy) {
    const auto normal = [](double v) { return std::isfinite(v) && v >= std::numeric_limits<double>::min(); };
    return normal(sy) && normal(yy) && normal(sy / yy) && normal(yy / sy);
  }

  Eigen::Index n_;
  int pairs_;
  LBFGSpp::BFGSMat<double> bfgs_;  // holds no pairs (nor sizes) until built_
  bool built_ = false;
  std::vector<std::pair<Eigen::VectorXd, Eigen::VectorXd>> candidates_;
  int offered_ = 0;  // directions of this iterate's path seen so far
  int stride_ = 1;   // candidates are the directions k with k % stride_ == 0
};

/// The run: counts, the clock, the current iterate's kept products, and the objective's calls
/// turned into `run_ended` on failure.
class newton_run {
public:
  /// `x` is the run's iterate, updated in place by the caller; call `moved()` when it changes.
  newton_run(const evaluate_function& f, const hessian_function& hessian, const newton_options& o,
             const iteration_hook& hook, const Eigen::VectorXd& x)
    : f_(f), hessian_(hessian), o_(o), hook_(hook), x_(x), start_(clock_type::now()),
      keep_limit_(x.size() > 0 ? o.replay_bytes / (x.size() * std::int64_t{sizeof(double)}) : 0),
      preconditioner_(x.size(), o) {}

  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    ++info_.evaluations;
    auto value = f_(x, grad);
    if (!value)
      throw run_ended{stop_reason::evaluation_failed, value.error().message()};
    return *value;
  }

  /// Evaluates a trial point: the objective's products now refer to it, not to the iterate.
  double evaluate_trial(const Eigen::VectorXd& trial, Eigen::VectorXd& grad) {
    evaluated_here_ = false;
    return evaluate(trial, grad);
  }

  /// The iterate is now the last point evaluated; its products are yet to be asked.
  void moved() {
    evaluated_here_ = true;
    kept_ = 0;
    preconditioner_.moved();
  }

  /// The k-th product of a solve at the iterate. Every solve at one iterate starts from the same
  /// gradient, so its k-th direction is the same as the first solve's (the radius decides only
  /// where a solve stops): kept products are replayed. Others are asked of the objective, after
  /// evaluating the iterate again if a trial was evaluated since.
  void product(int k, const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (k < kept_) {
      hv = kept_products_[static_cast<std::size_t>(k)];
      return;
    }
    if (!evaluated_here_) {
      evaluate(x_, scratch_);  // same x, same bits: only the objective's cache changes
      evaluated_here_ = true;
    }
    ++info_.products;
    if (auto ok = hessian_(v, hv); !ok)
      throw run_ended{stop_reason::evaluation_failed, ok.error().message()};
    if (hv.size() != v.size() || !hv.allFinite())
      throw run_ended{stop_reason::evaluation_failed, "a Hessian-vector product is not finite"};
    if (k == kept_ && kept_ < keep_limit_) {
      if (kept_products_.size() <= static_cast<std::size_t>(kept_))
        kept_products_.emplace_back();
      kept_products_[static_cast<std::size_t>(kept_++)] = hv;
    }
  }

  /// Steihaug-Toint CG for H s = -grad within ||s|| <= radius, preconditioned; returns s and sets
  /// `hs` to H s.
  /// Stops at a residual of cg_tolerance ||grad||, on the boundary, or on non-positive curvature
  /// (going to the boundary along that direction; with no boundary yet, stopping where it is).
  Eigen::VectorXd steihaug(const Eigen::VectorXd& grad, double radius, Eigen::VectorXd& hs) {
    const auto n = grad.size();
    const int limit = o_.max_cg_iterations > 0 ? o_.max_cg_iterations : static_cast<int>(n);
    Eigen::VectorXd s = Eigen::VectorXd::Zero(n);
    hs.setZero(n);
    Eigen::VectorXd r = -grad;  // residual -grad - H s
    Eigen::VectorXd z(n);       // preconditioned residual
    preconditioner_.apply(r, z);
    Eigen::VectorXd d = z;
    Eigen::VectorXd hd(n);
    double rr = r.squaredNorm();
    double rz = r.dot(z);
    const double tolerance = o_.cg_tolerance * grad.norm();
    for (int k = 0; k < limit && std::sqrt(rr) > tolerance; ++k) {
      product(k, d, hd);
      const double curvature = d.dot(hd);
      preconditioner_.offer(k, d, hd, curvature);
      const double alpha = rz / curvature;
      // The first solve has no region yet: where the region would stop it (no positive
      // curvature, or a step past what a double holds), it stops where it is; with no step so
      // far it steps ||grad|| along d (TRON's first radius).
      if (!std::isfinite(radius)
          && (!(curvature > 0) || !std::isfinite(alpha) || !(s + alpha * d).allFinite())) {
        if (k == 0) {
          const double scale = grad.norm() / d.norm();
          s = scale * d;
          hs = scale * hd;
        }
        break;
      }
      if (!(curvature > 0)) {
        const double tau = to_boundary(s, d, radius);
        s += tau * d;
        hs += tau * hd;
        break;
      }
      if ((s + alpha * d).norm() >= radius) {
        const double tau = to_boundary(s, d, radius);
        s += tau * d;
        hs += tau * hd;
        break;
      }
      s += alpha * d;
      hs += alpha * hd;
      r -= alpha * hd;
      rr = r.squaredNorm();
      preconditioner_.apply(r, z);
      const double rz_next = r.dot(z);
      d = z + (rz_next / rz) * d;
      rz = rz_next;
    }
    return s;
  }

  /// Records an accepted iterate and applies the hook and the objective-change test.
  void accept(double f, const Eigen::VectorXd& grad, double step) {
    ++info_.iteration;
    record(f, grad, step);
    if (hook_ && !hook_(info_))
      throw run_ended{stop_reason::stopped_by_hook, "stopped by the iteration hook"};
    if (o_.past > 0 && objective_settled(history_, o_.past, o_.delta, info_.iteration, f))
      throw run_ended{stop_reason::objective_converged, ""};
  }

  void record(double f, const Eigen::VectorXd& grad, double step) {
    info_.f = f;
    info_.grad_norm = grad.norm();
    info_.grad_norm_inf = grad.size() > 0 ? grad.lpNorm<Eigen::Infinity>() : 0.0;
    info_.step = step;
    info_.seconds = seconds();
  }

  const iteration_info& info() const { return info_; }
  double seconds() const { return std::chrono::duration<double>(clock_type::now() - start_).count(); }

private:
  /// tau >= 0 with ||s + tau d|| = radius, for ||s|| <= radius, in the cancellation-free form.
  static double to_boundary(const Eigen::VectorXd& s, const Eigen::VectorXd& d, double radius) {
    const double sd = s.dot(d);
    const double dd = d.squaredNorm();
    const double room = std::max(0.0, radius * radius - s.squaredNorm());
    if (!(dd > 0))
      return 0;
    const double root = std::sqrt(sd * sd + dd * room);
    return sd >= 0 ? room / (sd + root) : (root - sd) / dd;
  }

  const evaluate_function& f_;
  const hessian_function& hessian_;
  const newton_options& o_;
  const iteration_hook& hook_;
  const Eigen::VectorXd& x_;
  clock_type::time_point start_;
  iteration_info info_;
  std::vector<double> history_;
  bool evaluated_here_ = true;  // the objective's last evaluation was at x_ (its products are x_'s)
  std::int64_t keep_limit_;     // products kept per iterate, from replay_bytes
  std::int64_t kept_ = 0;       // the iterate's first kept_ products are in kept_products_
  std::vector<Eigen::VectorXd> kept_products_;
  Eigen::VectorXd scratch_;
  cg_preconditioner preconditioner_;
};

bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const newton_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// The trust-region loop; returns `converged` at the gradient test or `max_iterations` at the
/// limit, throws other stops.
stop_reason run(newton_run& fn, Eigen::VectorXd& x, const newton_options& o) {
  const auto n = x.size();
  Eigen::VectorXd grad(n);
  Eigen::VectorXd trial_grad(n);
  Eigen::VectorXd hs(n);
  double f = fn.evaluate(x, grad);
  if (!std::isfinite(f) || !grad.allFinite())
    throw run_ended{stop_reason::evaluation_failed,
                    "objective or gradient is not finite at the initial theta"};
  fn.record(f, grad, 0);
  // The first solve is unbounded, and its step's length is the first radius. (TRON starts at
  // ||grad||, which suits its sum of losses; for a mean of losses ||grad|| is smaller by the number
  // of examples, and the radius then needs one iteration per factor 4 to reach the solution's scale:
  // 10 iterations on the synthetic set.)
  double radius = std::numeric_limits<double>::infinity();
  bool first_step = true;
  for (;;) {
    if (gradient_small(grad, x, o))
      return stop_reason::converged;
    if (o.max_iterations > 0 && fn.info().iteration >= o.max_iterations)
      return stop_reason::max_iterations;
    const Eigen::VectorXd s = fn.steihaug(grad, radius, hs);
    const double snorm = s.norm();
    if (!std::isfinite(snorm) || !hs.allFinite()) {  // a step past what a double holds
      radius = sigma1 * (std::isfinite(radius) ? radius : grad.norm());
      first_step = false;
      if (!(radius > std::numeric_limits<double>::min()))
        throw run_ended{stop_reason::line_search_failed,
                        "the trust region shrank to nothing around steps past a double's range"};
      continue;
    }
    const double gs = grad.dot(s);
    // The quadratic model's reduction: -(g's + s'Hs/2).
    const double predicted = -(gs + 0.5 * s.dot(hs));
    const Eigen::VectorXd trial = x + s;
    const double f_trial = fn.evaluate_trial(trial, trial_grad);
    if (first_step) {
      radius = std::min(radius, snorm);
      first_step = false;
    }
    if (!std::isfinite(f_trial) || !trial_grad.allFinite()) {
      radius = sigma1 * std::min(radius, snorm);  // too far: the model means nothing there
      if (!(radius > std::numeric_limits<double>::min()))
        throw run_ended{stop_reason::line_search_failed,
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
      fn.moved();
      fn.accept(f, grad, snorm);
      continue;
    }
    if (!(predicted > 0) || snorm <= std::numeric_limits<double>::epsilon() * std::max(1.0, x.norm()))
      throw run_ended{stop_reason::line_search_failed,
                      "the trust region allows no further reduction (step " + std::to_string(snorm)
                        + ", predicted reduction " + std::to_string(predicted)
                        + "): the objective may be at machine precision; consider a larger epsilon"};
  }
}

} // namespace

run_result minimize_newton_erased(const evaluate_function& f, const hessian_function& hessian,
                                  Eigen::VectorXd& theta, const newton_options& options,
                                  const iteration_hook& hook) {
  run_result out;
  if (auto problem = check_options(options); !problem.empty()) {
    out.reason = stop_reason::evaluation_failed;
    out.message = "invalid Newton-CG options: " + problem;
    return out;
  }
  Eigen::VectorXd x = theta;
  newton_run fn{f, hessian, options, hook, x};
  try {
    out.reason = run(fn, x, options);
  } catch (const run_ended& ended) {
    out.reason = ended.reason;
    out.message = ended.message;
  }
  // x is the last accepted iterate: trials live in their own vector.
  theta = x;
  const auto& info = fn.info();
  out.f = info.f;
  out.grad_norm = info.grad_norm;
  out.grad_norm_inf = info.grad_norm_inf;
  out.iterations = info.iteration;
  out.evaluations = info.evaluations;
  out.products = info.products;
  out.seconds = fn.seconds();
  return out;
}

} // namespace shardopt::optimizer
