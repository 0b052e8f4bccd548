#pragma once

// The 2-D Rosenbrock function with Hessian-vector products at its last evaluated point (as shards
// answer them): a curved valley where trust-region steps are rejected.

#include <Eigen/Core>

#include <cstdint>

namespace shardopt::test {

/// 2-D Rosenbrock, with its exact Hessian at the last evaluated point (indefinite away from the
/// minimum: the CG must leave along negative curvature).
struct rosenbrock {
  Eigen::Vector2d at;
  std::int64_t dimension() const { return 2; }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    at = x;
    const double a = x[1] - x[0] * x[0];
    grad.resize(2);
    grad << -400 * a * x[0] - 2 * (1 - x[0]), 200 * a;
    return 100 * a * a + (1 - x[0]) * (1 - x[0]);
  }
  void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    Eigen::MatrixXd h(2, 2);
    h << 1200 * at[0] * at[0] - 400 * at[1] + 2, -400 * at[0], -400 * at[0], 200;
    hv = h * v;
  }
};

} // namespace shardopt::test
