#include "optimizer/steihaug.hpp"

#include <algorithm>
#include <cmath>

namespace shardopt::optimizer {

namespace {

/// tau >= 0 with ||s + tau d|| = radius, for ||s|| <= radius, in the cancellation-free form.
double to_boundary(const Eigen::VectorXd& s, const Eigen::VectorXd& d, double radius) {
  const double sd = s.dot(d);
  const double dd = d.squaredNorm();
  const double room = std::max(0.0, radius * radius - s.squaredNorm());
  if (!(dd > 0))
    return 0;
  const double root = std::sqrt(sd * sd + dd * room);
  return sd >= 0 ? room / (sd + root) : (root - sd) / dd;
}

} // namespace

trust_region_cg::trust_region_cg(const evaluate_function& f, const hessian_function& hessian, run_log& log,
                                 const Eigen::VectorXd& x, double cg_tolerance, int max_cg_iterations,
                                 std::int64_t replay_bytes, cg_preconditioner preconditioner)
  : f_(f), hessian_(hessian), log_(log), x_(x), cg_tolerance_(cg_tolerance),
    max_cg_iterations_(max_cg_iterations),
    keep_limit_(x.size() > 0 ? replay_bytes / (x.size() * std::int64_t{sizeof(double)}) : 0),
    preconditioner_(std::move(preconditioner)) {}

result<double> trust_region_cg::evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad, bool trial) {
  if (trial)
    evaluated_here_ = false;
  log_.count_evaluation();
  return f_(x, grad);
}

void trust_region_cg::moved() {
  evaluated_here_ = true;
  kept_ = 0;
  preconditioner_.moved(Eigen::VectorXd{});
}

void trust_region_cg::resume(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y) {
  evaluated_here_ = false;
  kept_ = 0;
  preconditioner_.restore(s, y, Eigen::VectorXd{});
}

std::optional<run_stop> trust_region_cg::product(int k, const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
  if (k < kept_) {
    hv = kept_products_[static_cast<std::size_t>(k)];
    return std::nullopt;
  }
  // A trial was evaluated since: evaluate the iterate again (same x, same bits: only the
  // objective's cache changes) so that its products are the iterate's.
  if (!evaluated_here_) {
    if (auto again = evaluate(x_, scratch_); !again)
      return evaluation_failed(again.error());
    evaluated_here_ = true;
  }
  log_.count_product();
  if (auto ok = hessian_(v, hv); !ok)
    return evaluation_failed(ok.error());
  if (hv.size() != v.size() || !hv.allFinite())
    return run_stop{stop_reason::evaluation_failed, "a Hessian-vector product is not finite"};
  if (k == kept_ && kept_ < keep_limit_) {
    if (kept_products_.size() <= static_cast<std::size_t>(kept_))
      kept_products_.emplace_back();
    kept_products_[static_cast<std::size_t>(kept_++)] = hv;
  }
  return std::nullopt;
}

std::optional<run_stop> trust_region_cg::solve(const Eigen::VectorXd& grad, double radius, Eigen::VectorXd& s,
                                               Eigen::VectorXd& hs) {
  const auto n = grad.size();
  const int limit = max_cg_iterations_ > 0 ? max_cg_iterations_ : static_cast<int>(n);
  s.setZero(n);
  hs.setZero(n);
  Eigen::VectorXd r = -grad;  // residual -grad - H s
  Eigen::VectorXd z(n);       // preconditioned residual
  preconditioner_.apply(r, z);
  Eigen::VectorXd d = z;
  Eigen::VectorXd hd(n);
  double rr = r.squaredNorm();
  double rz = r.dot(z);
  const double tolerance = cg_tolerance_ * grad.norm();
  for (int k = 0; k < limit && std::sqrt(rr) > tolerance; ++k) {
    if (auto stop = product(k, d, hd))
      return stop;
    const double curvature = d.dot(hd);
    preconditioner_.offer(k, d, hd, curvature);
    const double alpha = rz / curvature;
    // The first solve has no region yet: where the region would stop it (no positive curvature,
    // or a step past what a double holds), it stops where it is; with no step so far it steps
    // ||grad|| along d (TRON's first radius).
    if (!std::isfinite(radius) && (!(curvature > 0) || !std::isfinite(alpha) || !(s + alpha * d).allFinite())) {
      if (k == 0) {
        const double scale = grad.norm() / d.norm();
        s = scale * d;
        hs = scale * hd;
      }
      break;
    }
    if (!(curvature > 0) || (s + alpha * d).norm() >= radius) {
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
  return std::nullopt;
}

} // namespace shardopt::optimizer
