#pragma once

// The extended Rosenbrock function, sum over pairs of 100 (x_{2i+1} - x_{2i}^2)^2 + (1 - x_{2i})^2,
// minimum 0 at (1, ..., 1), with Hessian-vector products at its last evaluated point (as shards
// answer them): a curved valley where trust-region steps are rejected. By default 2-D.

#include <Eigen/Core>

#include <cstdint>

namespace shardopt::test {

/// Extended Rosenbrock in `n` (even) dimensions, with its exact Hessian at the last evaluated
/// point (indefinite away from the minimum: the CG must leave along negative curvature).
struct rosenbrock {
  explicit rosenbrock(std::int64_t dimensions = 2) : n(dimensions) {}
  std::int64_t n;
  Eigen::VectorXd at;
  std::int64_t dimension() const { return n; }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    at = x;
    grad.setZero(n);
    double f = 0;
    for (std::int64_t i = 0; i + 1 < n; i += 2) {
      const double a = x[i + 1] - x[i] * x[i];
      const double b = 1 - x[i];
      f += 100 * a * a + b * b;
      grad[i] += -400 * a * x[i] - 2 * b;
      grad[i + 1] += 200 * a;
    }
    return f;
  }
  void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    hv.setZero(n);
    for (std::int64_t i = 0; i + 1 < n; i += 2) {
      Eigen::MatrixXd h(2, 2);
      h << 1200 * at[i] * at[i] - 400 * at[i + 1] + 2, -400 * at[i], -400 * at[i], 200;
      hv.segment(i, 2) = h * v.segment(i, 2);
    }
  }
};

} // namespace shardopt::test
