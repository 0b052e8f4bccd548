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
    bfgs_.apply(r, 1.0, z);
    const double rz = r.dot(z);
    if (z.allFinite() && std::isfinite(rz) && rz > 0)
      return;
  }
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

void cg_preconditioner::moved() {
  // The new iterate's path starts afresh even when the last one offered no usable pair.
  offered_ = 0;
  stride_ = 1;
  if (pairs_ == 0 || candidates_.empty())
    return;
  const std::size_t count = candidates_.size();
  const std::size_t m = std::min(count, static_cast<std::size_t>(pairs_));
  bfgs_.reset(n_, static_cast<int>(m));
  chosen_s_.clear();
  chosen_y_.clear();
  // Oldest first: the last pair added sets the initial scaling (s'y / y'y).
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t at = m == 1 ? count - 1 : i * (count - 1) / (m - 1);
    bfgs_.add_correction(candidates_[at].first, candidates_[at].second);
    if (keep_) {
      chosen_s_.push_back(candidates_[at].first);
      chosen_y_.push_back(candidates_[at].second);
    }
  }
  built_ = true;
  candidates_.clear();
}

void cg_preconditioner::restore(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y) {
  if (s.empty())
    return;
  bfgs_.reset(n_, static_cast<int>(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i)
    bfgs_.add_correction(s[i], y[i]);
  built_ = true;
  if (keep_) {
    chosen_s_ = s;
    chosen_y_ = y;
  }
}

} // namespace shardopt::optimizer
