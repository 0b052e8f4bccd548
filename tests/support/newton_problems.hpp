#pragma once

// Problems for the second-order solvers' tests: a random positive-definite quadratic with its exact
// products, and small logistic and softmax problems as local objectives over 3 blocks.

#include "model/local_objective.hpp"

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace shardopt::test {

/// f = 0.5 x'Ax - b'x with A symmetric positive definite: minimum at A^{-1} b.
struct quadratic {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
  std::int64_t dimension() const { return b.size(); }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    grad = a * x - b;
    return 0.5 * x.dot(a * x) - b.dot(x);
  }
  void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) { hv = a * v; }
};

inline quadratic random_quadratic(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<double> normal;
  Eigen::MatrixXd m(n, n);
  for (auto& value : m.reshaped())
    value = normal(rng);
  quadratic q;
  q.a = m * m.transpose() + Eigen::MatrixXd::Identity(n, n);
  q.b.resize(n);
  for (auto& value : q.b)
    value = normal(rng);
  return q;
}

/// A random logistic or softmax problem as a local objective over 3 blocks.
inline model::local_objective linear_problem(model::model_kind kind, std::int64_t outputs, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> normal;
  const std::int64_t n = 500;
  const std::int64_t d = 12;
  auto data = std::make_shared<model::dataset>();
  model::dense_features x(n, d);
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double score = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      x(i, j) = normal(rng);
      score += (j % 3 - 1) * x(i, j);
    }
    const double noisy = score + normal(rng);
    if (outputs == 1)
      data->y(i) = noisy > 0 ? 1.0 : -1.0;
    else
      data->y(i) = noisy < -0.7 ? 0.0 : noisy < 0.7 ? 1.0 : 2.0;
  }
  data->x = std::move(x);
  return model::local_objective{model::model_shape{kind, d, outputs}, data, 1e-3,
                                std::vector<model::row_range>{{0, 170}, {170, 333}, {333, 500}}};
}

} // namespace shardopt::test
