#include "optimizer/orthant_cg.hpp"

#include "optimizer/owlqn.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

namespace shardopt::optimizer::detail {

namespace {

double orthant_sign(double v) {
  return static_cast<double>((v > 0) - (v < 0));
}

} // namespace

double orthant::side(const Eigen::VectorXd& x, Eigen::Index i) const {
  return x[i] != 0 ? orthant_sign(x[i]) : -orthant_sign(v_[i]);
}

void orthant::update(const Eigen::VectorXd& x, const Eigen::VectorXd& g) {
  const auto n = x.size();
  v_.resize(n);
  free_.resize(static_cast<std::size_t>(n));
  pool_.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      v_[i] = pseudo_gradient_entry(x[i], g[i], c_[i]);
      free_[static_cast<std::size_t>(i)] = c_[i] == 0 || x[i] != 0 || v_[i] != 0;
    }
  });
  l1_ = l1_of(x);
  nonzeros_ = nonzero_penalised(x, c_);
  // A working set: at most as many weights enter from 0 as are non-zero (at least
  // min_entering), those of the largest |v_i|. The rest wait, counted in v, for a later step.
  entering_.clear();
  for (Eigen::Index i = 0; i < n; ++i)
    if (c_[i] > 0 && x[i] == 0 && v_[i] != 0)
      entering_.push_back(std::abs(v_[i]));
  const auto cap = static_cast<std::size_t>(std::max<std::int64_t>(nonzeros_, min_entering));
  if (entering_.size() > cap) {
    std::nth_element(entering_.begin(), entering_.begin() + static_cast<std::ptrdiff_t>(cap - 1), entering_.end(),
                     std::greater<>());
    const double threshold = entering_[cap - 1];
    pool_.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      for (Eigen::Index i = begin; i < end; ++i)
        if (c_[i] > 0 && x[i] == 0 && std::abs(v_[i]) < threshold)
          free_[static_cast<std::size_t>(i)] = 0;
    });
  }
}

double orthant::l1_of(const Eigen::VectorXd& y) {
  return pool_.sum_chunks(y.size(), [&](Eigen::Index begin, Eigen::Index end) {
    return c_.segment(begin, end - begin).cwiseProduct(y.segment(begin, end - begin).cwiseAbs()).sum();
  });
}

double orthant::pseudo_norm(const Eigen::VectorXd& y, const Eigen::VectorXd& g) {
  return std::sqrt(pool_.sum_chunks(y.size(), [&](Eigen::Index begin, Eigen::Index end) {
    double sum = 0;
    for (Eigen::Index i = begin; i < end; ++i) {
      const double v = pseudo_gradient_entry(y[i], g[i], c_[i]);
      sum += v * v;
    }
    return sum;
  }));
}

double orthant::gain(const Eigen::VectorXd& x, const Eigen::VectorXd& y) {
  return pool_.sum_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
    return v_.segment(begin, end - begin).dot(y.segment(begin, end - begin) - x.segment(begin, end - begin));
  });
}

void orthant::project(const Eigen::VectorXd& x, const Eigen::VectorXd& s, Eigen::VectorXd& y, double scale) {
  pool_.for_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      const double moved = x[i] + scale * s[i];
      y[i] = c_[i] > 0 && moved * side(x, i) <= 0 ? 0.0 : moved;
    }
  });
}

void orthant::align(Eigen::VectorXd& s) {
  pool_.for_chunks(s.size(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i)
      if (s[i] * v_[i] >= 0)
        s[i] = 0;
  });
}

bool orthant::crosses(const Eigen::VectorXd& x, const Eigen::VectorXd& s, double scale) {
  return pool_.sum_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
    double count = 0;
    for (Eigen::Index i = begin; i < end; ++i)  // (an entry at 0 stays there on the path and the segment)
      count += c_[i] > 0 && x[i] != 0 && (x[i] + scale * s[i]) * side(x, i) < 0 ? 1 : 0;
    return count;
  }) > 0;
}

std::optional<run_stop> orthant::solve(const hessian_function& hessian, run_log& log, const Eigen::VectorXd& m,
                                       const pcg_settings& settings, Eigen::VectorXd& d, double& vd) {
  const auto n = v_.size();
  const int limit = settings.max_iterations > 0 ? settings.max_iterations
                                                : static_cast<int>(std::max<Eigen::Index>(n, 5));
  for (auto* vector : {&d, &r_, &z_, &p_, &hp_})
    vector->resize(n);
  // r = -v - H d over every entry (the model's value needs all of it); z = M^-1 r and the
  // directions on the free entries alone.
  const auto precondition = [&](Eigen::Index i) {
    z_[i] = free_[static_cast<std::size_t>(i)] ? r_[i] / (m.size() > 0 ? m[i] : 1.0) : 0.0;
    return z_[i] * r_[i];
  };
  double zr = pool_.sum_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
    double sum = 0;
    for (Eigen::Index i = begin; i < end; ++i) {
      d[i] = 0;
      r_[i] = -v_[i];
      sum += precondition(i);
      p_[i] = z_[i];
    }
    return sum;
  });
  const double forcing = std::min(settings.cg_tolerance, std::sqrt(std::sqrt(std::max(zr, 0.0) * settings.units)));
  double q = 0;  // Q(d) = -(d'r - d'v)/2
  vd = 0;
  for (int k = 1; k <= limit && zr > 0; ++k) {
    log.count_product();
    if (auto ok = hessian(p_, hp_); !ok)
      return evaluation_failed(ok.error());
    if (hp_.size() != n || !hp_.allFinite())
      return run_stop{stop_reason::evaluation_failed, "a Hessian-vector product is not finite"};
    const double curvature = pool_.dot(p_, hp_);
    if (!(curvature > 0) || !std::isfinite(zr / curvature))
      break;  // d so far is the step (0 at the first: the caller follows -v)
    const double alpha = zr / curvature;
    const auto sums = pool_.sums<3>(n, [&](Eigen::Index begin, Eigen::Index end) {
      double dr = 0, dv = 0, next_zr = 0;
      for (Eigen::Index i = begin; i < end; ++i) {
        d[i] += alpha * p_[i];
        r_[i] -= alpha * hp_[i];
        next_zr += precondition(i);
        dr += d[i] * r_[i];
        dv += d[i] * v_[i];
      }
      return std::array<double, 3>{dr, dv, next_zr};
    });
    if (!std::isfinite(sums[0]) || !std::isfinite(sums[1])) {  // a step past a double's range
      d.setZero();  // the caller follows -v instead
      vd = 0;
      break;
    }
    vd = sums[1];
    const double q_next = -0.5 * (sums[0] - sums[1]);
    const double decrease = q_next - q;
    if (!(q_next <= 0 && decrease <= 0))
      break;  // the model no longer decreases (rounding near the minimum)
    if (k * decrease >= forcing * q_next)
      break;
    q = q_next;
    const double beta = sums[2] / zr;
    pool_.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      for (Eigen::Index i = begin; i < end; ++i)
        p_[i] = z_[i] + beta * p_[i];
    });
    zr = sums[2];
  }
  return std::nullopt;
}

} // namespace shardopt::optimizer::detail
