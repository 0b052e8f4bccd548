#include "optimizer/cg_preconditioner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardopt::optimizer {

namespace {

/// The pairs `bytes` holds: p in the matrix and up to 2p + 1 candidates, two vectors each.
std::int64_t affordable(Eigen::Index n, std::int64_t bytes) {
  const std::int64_t pair_bytes = 2 * n * std::int64_t{sizeof(double)};
  return std::max<std::int64_t>(0, (bytes / pair_bytes - 1) / 3);
}

/// A pair's s'y and y'y make a positive definite update with a finite scaling: both positive
/// normal numbers, and so are their ratios.
bool usable(double sy, double yy) {
  const auto normal = [](double v) { return std::isfinite(v) && v >= std::numeric_limits<double>::min(); };
  return normal(sy) && normal(yy) && normal(sy / yy) && normal(yy / sy);
}

} // namespace

cg_preconditioner::cg_preconditioner(Eigen::Index dimension, int pairs, std::int64_t bytes)
  : n_(dimension),
    pairs_(dimension > 0 ? static_cast<int>(std::min<std::int64_t>(pairs, affordable(dimension, bytes))) : 0) {}

void cg_preconditioner::apply(const Eigen::VectorXd& r, Eigen::VectorXd& z) {
  if (built_) {
    if (root_.size() > 0) {
      const Eigen::VectorXd scaled = r.cwiseQuotient(root_);
      bfgs_.apply(scaled, 1.0, z);
      z = z.cwiseQuotient(root_);
    } else {
      bfgs_.apply(r, 1.0, z);
    }
    const double rz = r.dot(z);
    if (z.allFinite() && std::isfinite(rz) && rz > 0)
      return;
  }
  if (m_.size() > 0)
    z = r.cwiseQuotient(m_);
  else
    z = r;
}

void cg_preconditioner::offer(int k, const Eigen::VectorXd& d, const Eigen::VectorXd& hd, double curvature) {
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

void cg_preconditioner::build(const std::vector<const Eigen::VectorXd*>& s,
                              const std::vector<const Eigen::VectorXd*>& y) {
  bfgs_.reset(n_, static_cast<int>(s.size()));
  chosen_s_.clear();
  chosen_y_.clear();
  // Oldest first: the last pair added sets the initial scaling (s'y / y'y). In the variables
  // M^(1/2) x a pair (d, H d) is (M^(1/2) d, M^(-1/2) H d): the same s'y.
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (root_.size() > 0)
      bfgs_.add_correction(s[i]->cwiseProduct(root_), y[i]->cwiseQuotient(root_));
    else
      bfgs_.add_correction(*s[i], *y[i]);
    if (keep_) {
      chosen_s_.push_back(*s[i]);
      chosen_y_.push_back(*y[i]);
    }
  }
  built_ = true;
}

void cg_preconditioner::moved(const Eigen::VectorXd& m) {
  m_ = m;  // into the same memory from the second move on
  move_to_diagonal();
}

void cg_preconditioner::moved_swapping(Eigen::VectorXd& m) {
  m_.swap(m);
  move_to_diagonal();
}

void cg_preconditioner::move_to_diagonal() {
  if (pairs_ > 0 && m_.size() > 0)
    root_ = m_.cwiseSqrt();
  else
    root_.resize(0);
  // The new iterate's path starts afresh even when the last one offered no usable pair.
  offered_ = 0;
  stride_ = 1;
  if (pairs_ == 0 || candidates_.empty()) {
    // Without a diagonal the older pairs still hold; with one they were scaled by another.
    if (m_.size() > 0) {
      built_ = false;
      chosen_s_.clear();
      chosen_y_.clear();
    }
    return;
  }
  const std::size_t count = candidates_.size();
  const std::size_t m_pairs = std::min(count, static_cast<std::size_t>(pairs_));
  std::vector<const Eigen::VectorXd*> s, y;
  for (std::size_t i = 0; i < m_pairs; ++i) {
    const std::size_t at = m_pairs == 1 ? count - 1 : i * (count - 1) / (m_pairs - 1);
    s.push_back(&candidates_[at].first);
    y.push_back(&candidates_[at].second);
  }
  build(s, y);
  candidates_.clear();
}

void cg_preconditioner::restore(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y,
                                const Eigen::VectorXd& m) {
  m_ = m;
  if (pairs_ > 0 && m.size() > 0)
    root_ = m.cwiseSqrt();
  else
    root_.resize(0);
  if (s.empty())
    return;
  std::vector<const Eigen::VectorXd*> sp, yp;
  for (std::size_t i = 0; i < s.size(); ++i) {
    sp.push_back(&s[i]);
    yp.push_back(&y[i]);
  }
  build(sp, yp);
}

} // namespace shardopt::optimizer
