#include "optimizer/sparse_bfgs.hpp"

#include <cassert>
#include <utility>

namespace shardopt::optimizer {

void sparse_bfgs::reset(Eigen::Index dimension, int pairs) {
  dimension_ = dimension;
  ring_.resize(static_cast<std::size_t>(pairs));
  next_ = 0;
  count_ = 0;
  theta_ = 1;
  staged_ready_ = false;
}

double sparse_bfgs::stage(const Eigen::VectorXd& s, const Eigen::VectorXd& y,
                          const std::vector<std::vector<Eigen::Index>>* candidates) {
  assert(s.size() == dimension_ && y.size() == dimension_ && !ring_.empty());
  auto& p = staged_;
  p.index.clear();
  p.s.clear();
  p.y.clear();
  const auto consider = [&](Eigen::Index i) {
    if (s[i] != 0 || y[i] != 0) {
      p.index.push_back(i);
      p.s.push_back(s[i]);
      p.y.push_back(y[i]);
    }
  };
  if (candidates) {
    for (const auto& list : *candidates)
      for (const auto i : list)
        consider(i);
  } else {
    for (Eigen::Index i = 0; i < dimension_; ++i)
      consider(i);
  }
  double ys = 0;
  for (std::size_t k = 0; k < p.s.size(); ++k)
    ys += p.s[k] * p.y[k];
  p.ys = ys;
  p.dense = 2 * static_cast<Eigen::Index>(p.index.size()) > dimension_;
  if (p.dense) {
    p.index.clear();
    p.s.assign(s.data(), s.data() + dimension_);
    p.y.assign(y.data(), y.data() + dimension_);
  }
  staged_ready_ = true;
  return ys;
}

void sparse_bfgs::commit() {
  assert(staged_ready_);
  staged_ready_ = false;
  auto& p = ring_[static_cast<std::size_t>(next_)];
  std::swap(p, staged_);  // the dropped pair's buffers serve the next stage
  assert(p.ys > 0);
  double yy = 0;  // over the stored entries: the rest are zeros
  for (const double v : p.y)
    yy += v * v;
  theta_ = yy / p.ys;
  next_ = (next_ + 1) % static_cast<int>(ring_.size());
  if (count_ < static_cast<int>(ring_.size()))
    ++count_;
}

double sparse_bfgs::curvature(const Eigen::VectorXd& s, const Eigen::VectorXd& y) {
  double ys = 0;
  for (Eigen::Index i = 0; i < s.size(); ++i)
    if (s[i] != 0 || y[i] != 0)
      ys += s[i] * y[i];
  return ys;
}

double sparse_bfgs::dot(const pair& p, const std::vector<double>& values, const Eigen::VectorXd& out) {
  if (p.dense)
    return Eigen::Map<const Eigen::VectorXd>(values.data(), out.size()).dot(out);
  double sum = 0;
  for (std::size_t k = 0; k < values.size(); ++k)
    sum += values[k] * out[p.index[k]];
  return sum;
}

void sparse_bfgs::axpy(const pair& p, const std::vector<double>& values, double a, Eigen::VectorXd& out) {
  if (p.dense) {
    out.noalias() += a * Eigen::Map<const Eigen::VectorXd>(values.data(), out.size());
    return;
  }
  for (std::size_t k = 0; k < values.size(); ++k)
    out[p.index[k]] += a * values[k];
}

void sparse_bfgs::apply(const Eigen::VectorXd& v, double a, Eigen::VectorXd& out) {
  assert(v.size() == dimension_);
  out.resize(v.size());
  out.noalias() = a * v;
  const int size = static_cast<int>(ring_.size());
  int j = next_;
  for (int i = 0; i < count_; ++i) {  // newest to oldest
    j = (j + size - 1) % size;
    auto& p = ring_[static_cast<std::size_t>(j)];
    p.alpha = dot(p, p.s, out) / p.ys;
    axpy(p, p.y, -p.alpha, out);
  }
  out /= theta_;
  for (int i = 0; i < count_; ++i) {  // oldest to newest
    auto& p = ring_[static_cast<std::size_t>(j)];
    const double beta = dot(p, p.y, out) / p.ys;
    axpy(p, p.s, p.alpha - beta, out);
    j = (j + 1) % size;
  }
}

void sparse_bfgs::newest(std::vector<Eigen::Index>& index, std::vector<double>& s, std::vector<double>& y) const {
  index.clear();
  s.clear();
  y.clear();
  if (count_ == 0)
    return;
  const int size = static_cast<int>(ring_.size());
  const auto& p = ring_[static_cast<std::size_t>((next_ + size - 1) % size)];
  for (std::size_t k = 0; k < p.s.size(); ++k)
    if (p.s[k] != 0 || p.y[k] != 0) {  // a dense pair holds zeros too
      index.push_back(p.dense ? static_cast<Eigen::Index>(k) : p.index[k]);
      s.push_back(p.s[k]);
      y.push_back(p.y[k]);
    }
}

std::int64_t sparse_bfgs::stored() const {
  std::int64_t total = 0;
  int j = next_;
  const int size = static_cast<int>(ring_.size());
  for (int i = 0; i < count_; ++i) {
    j = (j + size - 1) % size;
    const auto& p = ring_[static_cast<std::size_t>(j)];
    total += static_cast<std::int64_t>(p.s.size());
  }
  return total;
}

} // namespace shardopt::optimizer
