#pragma once

// What an objective answers at fixed points (objective, gradient, a Hessian-vector product, the
// quality sums), kept to compare bit for bit: for tests of trees and of nodes that come and go.

#include "actors/driver/sharded_objective.hpp"

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <cstring>
#include <vector>

namespace shardopt::test {

/// What one objective answers at fixed points: the objective, its gradient, a Hessian-vector
/// product and the quality sums, to compare bit for bit.
struct answers {
  std::vector<double> values;

  void add(double x) { values.push_back(x); }
  void add(const Eigen::VectorXd& v) { values.insert(values.end(), v.data(), v.data() + v.size()); }

  bool same_bits(const answers& other) const {
    return values.size() == other.values.size()
           && std::memcmp(values.data(), other.values.data(), sizeof(double) * values.size()) == 0;
  }
};

/// Evaluates at `theta`, then a product with `v` and the quality at `theta`.
inline answers ask(actors::sharded_objective& objective, const Eigen::VectorXd& theta, const Eigen::VectorXd& v) {
  answers out;
  Eigen::VectorXd grad;
  auto f = objective.evaluate(theta, grad);
  REQUIRE_MESSAGE(f.ok(), f.error().message());
  out.add(*f);
  out.add(grad);
  Eigen::VectorXd hv;
  auto product = objective.hessian_vector(v, hv);
  REQUIRE_MESSAGE(product.ok(), product.error().message());
  out.add(hv);
  auto quality = objective.quality(theta);
  REQUIRE_MESSAGE(quality.ok(), quality.error().message());
  out.add(quality->correct);
  out.add(quality->squared_error);
  return out;
}

} // namespace shardopt::test
