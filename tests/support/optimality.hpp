#pragma once

// The optimality conditions of an L1-penalised objective, for the L1 solvers' tests.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>

namespace shardopt::test {

/// The largest violation of F = f + sum c|x|'s optimality conditions at x, f's gradient g there:
/// |g_i + c_i sign(x_i)| where x_i != 0, max(|g_i| - c_i, 0) where x_i = 0.
inline double kkt_violation(const Eigen::VectorXd& x, const Eigen::VectorXd& g, const Eigen::VectorXd& c) {
  double worst = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double v = x[i] != 0 ? std::abs(g[i] + c[i] * (x[i] > 0 ? 1 : -1)) : std::max(0.0, std::abs(g[i]) - c[i]);
    worst = std::max(worst, v);
  }
  return worst;
}

} // namespace shardopt::test
