/// Hessian-vector products of the linear models (model/linear_model.hpp): against central
/// differences of the gradient for every model, dense and sparse, across chunk boundaries; symmetric
/// and positive semi-definite; block sums equal the whole; the curvature an evaluation keeps equals
/// the one rebuilt from theta alone; local_objective's product refuses what it cannot do.

#include "model/linear_model.hpp"
#include "model/local_objective.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using shardopt::model::curvature;
using shardopt::model::dataset;
using shardopt::model::dense_features;
using shardopt::model::model_kind;
using shardopt::model::model_shape;
using shardopt::model::row_range;
using Eigen::VectorXd;

struct model_case {
  model_kind kind;
  std::int64_t outputs;
};

const std::vector<model_case> cases = {
  {model_kind::linear, 1},  {model_kind::logistic, 1}, {model_kind::softmax, 3},
  {model_kind::softmax, 5}, {model_kind::svm, 1},      {model_kind::svm, 4},
};

/// n random rows of d features (about half zero), labels valid for the case.
std::shared_ptr<dataset> hessian_problem(const model_case& c, std::int64_t n, std::int64_t d, bool sparse,
                                     std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  std::bernoulli_distribution keep{0.5};
  dense_features x(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      x(i, j) = keep(rng) ? normal(rng) : 0.0f;
  auto data = std::make_shared<dataset>();
  data->y.resize(n);
  std::uniform_int_distribution<std::int64_t> label{0, c.outputs - 1};
  for (std::int64_t i = 0; i < n; ++i) {
    if (c.kind == model_kind::linear)
      data->y(i) = normal(rng);
    else if (c.outputs == 1)
      data->y(i) = rng() % 2 ? 1.0 : -1.0;
    else
      data->y(i) = static_cast<double>(label(rng));
  }
  if (sparse) {
    shardopt::model::sparse_features s = x.sparseView();
    s.makeCompressed();
    data->x = std::move(s);
  } else {
    data->x = std::move(x);
  }
  return data;
}

VectorXd random_vector(std::int64_t n, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> normal{0.0, scale};
  VectorXd v(n);
  for (auto& value : v)
    value = normal(rng);
  return v;
}

/// Full objective and gradient at theta (lambda 0.1), one call over all rows.
double objective(const model_shape& shape, const dataset& data, const VectorXd& theta, VectorXd& grad) {
  grad.resize(shape.dimension());
  const double loss = shardopt::model::loss_grad_sum(shape, data, row_range{0, data.rows()}, theta, grad);
  return shardopt::model::finish_objective(shape, 0.1, data.rows(), loss, theta, grad);
}

/// H v of the full objective from the curvature an evaluation kept.
VectorXd product(const model_shape& shape, const dataset& data, const VectorXd& theta, const VectorXd& v) {
  VectorXd grad(shape.dimension());
  curvature kept;
  shardopt::model::loss_grad_sum(shape, data, row_range{0, data.rows()}, theta, grad, &kept);
  VectorXd hv(shape.dimension());
  shardopt::model::hessian_vector_sum(shape, data, row_range{0, data.rows()}, kept, v, hv);
  shardopt::model::finish_hessian_vector(shape, 0.1, data.rows(), v, hv);
  return hv;
}

/// Smallest |1 - t z| over the squared hinge's terms along theta +- h v: a central difference that
/// does not cross a kink sees the generalized Hessian exactly.
bool away_from_kinks(const model_shape& shape, const dataset& data, const VectorXd& theta,
                     const VectorXd& v, double h) {
  for (const double sign : {-1.0, 0.0, 1.0}) {
    const VectorXd t = theta + sign * h * v;
    const Eigen::MatrixXd z = shardopt::model::scores(shape, data, {0, data.rows()}, t);
    for (Eigen::Index i = 0; i < z.rows(); ++i)
      for (Eigen::Index k = 0; k < z.cols(); ++k) {
        const double target = shape.outputs == 1 ? data.y(i) : (data.y(i) == static_cast<double>(k) ? 1.0 : -1.0);
        if (std::abs(1.0 - target * z(i, k)) < 1e-3)
          return false;
      }
  }
  return true;
}

void check_against_differences(const model_case& c, std::int64_t rows, bool sparse, std::uint64_t seed) {
  INFO(shardopt::model::to_string(c.kind) << " K=" << c.outputs << ", " << rows << " rows, "
                                          << (sparse ? "sparse" : "dense") << ", seed " << seed);
  std::mt19937_64 rng{seed};
  const model_shape shape{c.kind, 7, c.outputs};
  const auto data = hessian_problem(c, rows, 7, sparse, rng);
  constexpr double h = 1e-5;
  VectorXd theta = random_vector(shape.dimension(), 0.5, rng);
  VectorXd v = random_vector(shape.dimension(), 1.0, rng);
  for (int attempt = 0; attempt < 1000 && c.kind == model_kind::svm && !away_from_kinks(shape, *data, theta, v, h);
       ++attempt) {
    theta = random_vector(shape.dimension(), 0.5, rng);
    v = random_vector(shape.dimension(), 1.0, rng);
  }
  if (c.kind == model_kind::svm)
    REQUIRE(away_from_kinks(shape, *data, theta, v, h));
  VectorXd up;
  VectorXd down;
  objective(shape, *data, theta + h * v, up);
  objective(shape, *data, theta - h * v, down);
  const VectorXd differences = (up - down) / (2 * h);
  const VectorXd hv = product(shape, *data, theta, v);
  const double error = (hv - differences).norm() / std::max(1.0, hv.norm());
  INFO("relative error " << error << ", |Hv| " << hv.norm());
  CHECK(error < 1e-7);
  CHECK(hv.norm() > 1e-3);  // a zero product would pass against zero differences
}

} // namespace

TEST_CASE("Hessian-vector products match central differences of the gradient, every model, dense and sparse") {
  for (const auto& c : cases)
    for (const bool sparse : {false, true}) {
      check_against_differences(c, 41, sparse, 7100 + static_cast<std::uint64_t>(c.kind) * 10 + c.outputs);
      check_against_differences(c, 600, sparse, 7200 + static_cast<std::uint64_t>(c.kind) * 10 + c.outputs);
    }
}

TEST_CASE("Hessian-vector products are symmetric and positive semi-definite, with lambda on the weights only") {
  for (const auto& c : cases) {
    INFO(shardopt::model::to_string(c.kind) << " K=" << c.outputs);
    std::mt19937_64 rng{7300 + static_cast<std::uint64_t>(c.kind)};
    const model_shape shape{c.kind, 5, c.outputs};
    const auto data = hessian_problem(c, 300, 5, false, rng);
    const VectorXd theta = random_vector(shape.dimension(), 0.5, rng);
    const VectorXd u = random_vector(shape.dimension(), 1.0, rng);
    const VectorXd v = random_vector(shape.dimension(), 1.0, rng);
    const VectorXd hu = product(shape, *data, theta, u);
    const VectorXd hv = product(shape, *data, theta, v);
    CHECK(std::abs(u.dot(hv) - v.dot(hu)) <= 1e-12 * std::max(1.0, std::abs(u.dot(hv))));
    const double weights = v.head(shape.weight_count()).squaredNorm();
    CHECK(v.dot(hv) >= 0.1 * weights * (1 - 1e-12));
    // A direction that moves only the biases is not regularised: H e_b has no lambda term.
    VectorXd bias_only = VectorXd::Zero(shape.dimension());
    bias_only(shape.weight_count()) = 1.0;
    VectorXd raw(shape.dimension());
    VectorXd grad(shape.dimension());
    curvature kept;
    shardopt::model::loss_grad_sum(shape, *data, row_range{0, 300}, theta, grad, &kept);
    shardopt::model::hessian_vector_sum(shape, *data, row_range{0, 300}, kept, bias_only, raw);
    CHECK((product(shape, *data, theta, bias_only) - raw / 300.0).norm() <= 1e-15 * std::max(1.0, raw.norm()));
  }
}

TEST_CASE("Hessian-vector sums over blocks add up to the whole, and kept curvature equals the rebuilt one") {
  for (const auto& c : cases) {
    INFO(shardopt::model::to_string(c.kind) << " K=" << c.outputs);
    std::mt19937_64 rng{7400 + static_cast<std::uint64_t>(c.kind)};
    const model_shape shape{c.kind, 6, c.outputs};
    const auto data = hessian_problem(c, 700, 6, true, rng);
    const VectorXd theta = random_vector(shape.dimension(), 0.5, rng);
    const VectorXd v = random_vector(shape.dimension(), 1.0, rng);
    const std::vector<row_range> blocks{{0, 255}, {255, 513}, {513, 700}};
    VectorXd total = VectorXd::Zero(shape.dimension());
    VectorXd part(shape.dimension());
    VectorXd grad(shape.dimension());
    for (const auto& block : blocks) {
      curvature kept;
      shardopt::model::loss_grad_sum(shape, *data, block, theta, grad, &kept);
      const curvature rebuilt = shardopt::model::curvature_at(shape, *data, block, theta);
      CHECK(kept.rows == block.size());
      CHECK(rebuilt.rows == block.size());
      CHECK(kept.d == rebuilt.d);
      shardopt::model::hessian_vector_sum(shape, *data, block, kept, v, part);
      total += part;
    }
    curvature all;
    shardopt::model::loss_grad_sum(shape, *data, row_range{0, 700}, theta, grad, &all);
    VectorXd whole(shape.dimension());
    shardopt::model::hessian_vector_sum(shape, *data, row_range{0, 700}, all, v, whole);
    CHECK((total - whole).norm() <= 1e-12 * std::max(1.0, whole.norm()));
  }
}

TEST_CASE("local_objective: products at the last evaluation, refused before one and for networks") {
  std::mt19937_64 rng{7500};
  const model_case c{model_kind::softmax, 3};
  const auto data = hessian_problem(c, 200, 4, false, rng);
  const model_shape shape{c.kind, 4, 3};
  shardopt::model::local_objective f{shape, data, 0.1, std::vector<row_range>{{0, 90}, {90, 200}}};
  const VectorXd v = random_vector(shape.dimension(), 1.0, rng);
  VectorXd hv;
  CHECK_FALSE(f.hessian_vector(v, hv).ok());
  const VectorXd theta = random_vector(shape.dimension(), 0.5, rng);
  VectorXd grad;
  f.evaluate(theta, grad);
  REQUIRE(f.hessian_vector(v, hv).ok());
  CHECK((hv - product(shape, *data, theta, v)).norm() <= 1e-12 * hv.norm());

  const model_shape network{model_kind::softmax, 4, 3, {5}};
  shardopt::model::local_objective g{network, data, 0.1, std::vector<row_range>{}};
  VectorXd net_grad;
  g.evaluate(shardopt::model::initial_theta(network, 1), net_grad);
  const auto refused = g.hessian_vector(VectorXd::Ones(network.dimension()), hv);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("linear models") != std::string::npos);
}
