// Multilayer perceptrons: the loss against a loop-by-loop reference forward pass, gradients against
// central differences (1 and 2 hidden layers, relu and tanh, softmax and squared-error outputs,
// dense and sparse input), sums over any partition equal the whole, the layout of theta, and the
// seeded initialisation.

#include "model/linear_model.hpp"
#include "model/local_objective.hpp"

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace shardopt::model;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

struct network_case {
  std::vector<std::int64_t> hidden;
  activation act;
  model_kind head;  // softmax (3 classes) or linear (1 output)
};

std::string name_of(const network_case& c) {
  return describe(model_shape{c.head, 7, c.head == model_kind::softmax ? 3 : 1, c.hidden, c.act});
}

std::vector<network_case> network_cases() {
  std::vector<network_case> out;
  for (const auto& hidden : std::vector<std::vector<std::int64_t>>{{5}, {6, 4}})
    for (const auto act : {activation::relu, activation::tanh})
      for (const auto head : {model_kind::softmax, model_kind::linear})
        out.push_back({hidden, act, head});
  return out;
}

model_shape shape_of(const network_case& c, std::int64_t features) {
  return model_shape{c.head, features, c.head == model_kind::softmax ? 3 : 1, c.hidden, c.act};
}

/// The same examples dense and sparse (row 2 all zero), with labels for the head.
struct problem {
  dataset dense;
  dataset sparse;
};

problem random_problem(const model_shape& shape, std::int64_t rows, std::mt19937_64& rng) {
  std::normal_distribution<float> normal{0.0f, 1.0f};
  std::bernoulli_distribution keep{0.6};
  dense_features x(rows, shape.features);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < shape.features; ++j)
      x(i, j) = keep(rng) && i != 2 ? normal(rng) : 0.0f;
  VectorXd y(rows);
  std::uniform_int_distribution<int> label{0, static_cast<int>(shape.outputs) - 1};
  std::normal_distribution<double> target{0.0, 2.0};
  for (std::int64_t i = 0; i < rows; ++i)
    y[i] = shape.kind == model_kind::softmax ? label(rng) : target(rng);
  problem p;
  sparse_features s = x.sparseView();
  s.makeCompressed();
  p.sparse.x = std::move(s);
  p.sparse.y = y;
  p.dense.x = std::move(x);
  p.dense.y = y;
  return p;
}

VectorXd random_theta(const model_shape& shape, std::mt19937_64& rng) {
  std::normal_distribution<double> normal{0.0, 0.6};
  VectorXd theta(shape.dimension());
  for (auto& v : theta)
    v = normal(rng);
  return theta;
}

/// The reference forward pass, one example and one weight at a time from the documented layout:
/// the loss sum over all rows and the smallest |pre-activation| of any hidden unit (how near a ReLU
/// kink theta is).
struct reference {
  double loss = 0;
  double nearest_kink = std::numeric_limits<double>::infinity();
};

reference reference_forward(const model_shape& shape, const dense_features& x, const VectorXd& y,
                            const VectorXd& theta) {
  reference out;
  const auto layers = shape.layers();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    std::vector<double> a(static_cast<std::size_t>(shape.features));
    for (std::int64_t j = 0; j < shape.features; ++j)
      a[static_cast<std::size_t>(j)] = x(i, j);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const auto& s = layers[l];
      std::vector<double> z(static_cast<std::size_t>(s.out));
      for (std::int64_t k = 0; k < s.out; ++k) {
        double sum = theta[s.biases + k];
        for (std::int64_t j = 0; j < s.in; ++j)
          sum += theta[s.weights + k * s.in + j] * a[static_cast<std::size_t>(j)];
        z[static_cast<std::size_t>(k)] = sum;
        if (l + 1 < layers.size()) {
          out.nearest_kink = std::min(out.nearest_kink, std::abs(sum));
          z[static_cast<std::size_t>(k)] = shape.act == activation::relu ? std::max(sum, 0.0) : std::tanh(sum);
        }
      }
      a = std::move(z);
    }
    if (shape.kind == model_kind::linear) {
      out.loss += 0.5 * (a[0] - y[i]) * (a[0] - y[i]);
    } else {
      double total = 0;
      for (const double v : a)
        total += std::exp(v);
      out.loss += std::log(total) - a[static_cast<std::size_t>(y[i])];
    }
  }
  return out;
}

double sum_of(const model_shape& shape, const dataset& data, const row_selection& rows,
              const VectorXd& theta, VectorXd& grad) {
  grad = VectorXd::Constant(shape.dimension(), std::nan(""));
  return loss_grad_sum(shape, data, rows, theta, grad);
}

} // namespace

TEST_CASE("network losses equal a loop-by-loop forward pass, and gradients central differences") {
  std::mt19937_64 rng{11};
  for (const auto& c : network_cases()) {
    CAPTURE(name_of(c));
    const auto shape = shape_of(c, 7);
    const auto p = random_problem(shape, 30, rng);
    for (int trial = 0; trial < 3; ++trial) {
      // Away from ReLU kinks, where the loss is not differentiable.
      VectorXd theta = random_theta(shape, rng);
      while (reference_forward(shape, p.dense.dense(), p.dense.y, theta).nearest_kink < 1e-3)
        theta = random_theta(shape, rng);
      const auto expected = reference_forward(shape, p.dense.dense(), p.dense.y, theta);
      for (const auto* data : {&p.dense, &p.sparse}) {
        CAPTURE(data->is_sparse());
        VectorXd grad;
        const double loss = sum_of(shape, *data, row_range{0, 30}, theta, grad);
        CHECK(std::abs(loss - expected.loss) <= 1e-12 * std::abs(expected.loss));
        // Central differences of the full regularised objective.
        const double lambda = 0.3;
        VectorXd full = grad;
        finish_objective(shape, lambda, 30, loss, theta, full);
        VectorXd probe = theta;
        VectorXd scratch;
        VectorXd numeric(theta.size());
        const double h = 1e-6;
        const auto objective = [&](const VectorXd& at) {
          const double sum = sum_of(shape, *data, row_range{0, 30}, at, scratch);
          return finish_objective(shape, lambda, 30, sum, at, scratch);
        };
        for (Eigen::Index i = 0; i < theta.size(); ++i) {
          probe[i] = theta[i] + h;
          const double up = objective(probe);
          probe[i] = theta[i] - h;
          const double down = objective(probe);
          probe[i] = theta[i];
          numeric[i] = (up - down) / (2 * h);
        }
        const double error = (numeric - full).norm() / std::max(1.0, full.norm());
        CHECK_MESSAGE(error < 1e-7, "relative gradient error " << error);
      }
    }
  }
}

TEST_CASE("network sums over K = 1..7 random blocks (and index lists) equal the whole to 1e-12") {
  std::mt19937_64 rng{5};
  for (const auto& c : network_cases()) {
    CAPTURE(name_of(c));
    const auto shape = shape_of(c, 7);
    const auto p = random_problem(shape, 600, rng);  // more than two chunks of 256 rows
    const VectorXd theta = random_theta(shape, rng);
    for (const auto* data : {&p.dense, &p.sparse}) {
      VectorXd whole_grad;
      const double whole = sum_of(shape, *data, row_range{0, 600}, theta, whole_grad);
      for (int k = 1; k <= 7; ++k) {
        CAPTURE(k);
        std::vector<std::int64_t> cuts{0, 600};
        std::uniform_int_distribution<std::int64_t> cut{1, 599};
        while (static_cast<int>(cuts.size()) < k + 1)
          cuts.push_back(cut(rng));
        std::sort(cuts.begin(), cuts.end());
        double loss = 0;
        VectorXd grad = VectorXd::Zero(shape.dimension());
        VectorXd part;
        for (int b = 0; b < k; ++b) {
          loss += sum_of(shape, *data, row_range{cuts[b], cuts[b + 1]}, theta, part);
          grad += part;
        }
        CHECK(std::abs(loss - whole) <= 1e-12 * std::abs(whole));
        CHECK((grad - whole_grad).norm() <= 1e-12 * whole_grad.norm());
      }
      // An index list in shuffled order visits the same rows.
      std::vector<std::int64_t> all(600);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      VectorXd listed_grad;
      const double listed = sum_of(shape, *data, all, theta, listed_grad);
      CHECK(std::abs(listed - whole) <= 1e-12 * std::abs(whole));
      CHECK((listed_grad - whole_grad).norm() <= 1e-12 * whole_grad.norm());
    }
  }
}

TEST_CASE("dense and sparse input give the same network loss, gradient and scores") {
  std::mt19937_64 rng{9};
  const auto shape = shape_of({{6, 4}, activation::relu, model_kind::softmax}, 7);
  const auto p = random_problem(shape, 300, rng);
  const VectorXd theta = random_theta(shape, rng);
  VectorXd dense_grad;
  VectorXd sparse_grad;
  const double dense = sum_of(shape, p.dense, row_range{0, 300}, theta, dense_grad);
  const double sparse = sum_of(shape, p.sparse, row_range{0, 300}, theta, sparse_grad);
  CHECK(std::abs(dense - sparse) <= 1e-12 * std::abs(dense));
  CHECK((dense_grad - sparse_grad).norm() <= 1e-12 * dense_grad.norm());
  const MatrixXd z_dense = scores(shape, p.dense, {0, 300}, theta);
  const MatrixXd z_sparse = scores(shape, p.sparse, {0, 300}, theta);
  CHECK((z_dense - z_sparse).norm() <= 1e-12 * z_dense.norm());
}

TEST_CASE("theta's layout: layer by layer, weights (column-major) then biases") {
  const model_shape seeds{model_kind::softmax, 784, 10, {100}, activation::relu};
  CHECK(seeds.dimension() == 784 * 100 + 100 + 100 * 10 + 10);
  CHECK(seeds.weight_count() == 784 * 100 + 100 * 10);
  const auto layers = seeds.layers();
  REQUIRE(layers.size() == 2);
  CHECK(layers[0].weights == 0);
  CHECK(layers[0].biases == 78400);
  CHECK(layers[1].in == 100);
  CHECK(layers[1].weights == 78500);
  CHECK(layers[1].biases == 79500);
  CHECK(describe(seeds) == "mlp 784-100-10 (relu, softmax output)");
  const model_shape linear{model_kind::softmax, 784, 10};
  CHECK(linear.dimension() == 7850);
  CHECK(describe(linear) == "softmax, 784 features x 10 outputs");
  CHECK(seeds != linear);
  CHECK(checked_dimension(seeds, 1 << 27) == seeds.dimension());
  CHECK_FALSE(checked_dimension(seeds, 79509));
  const model_shape huge{model_kind::softmax, 784, 10, {std::int64_t{1} << 40, std::int64_t{1} << 40}, activation::relu};  // 2^80 weights
  CHECK_FALSE(checked_dimension(huge, std::numeric_limits<std::int64_t>::max()));
  const model_shape zero{model_kind::softmax, 784, 10, {0}, activation::relu};
  CHECK_FALSE(checked_dimension(zero, 1 << 27));
}

TEST_CASE("the regulariser charges every layer's weights and no bias") {
  const model_shape shape{model_kind::softmax, 3, 2, {4}, activation::tanh};
  const VectorXd theta = VectorXd::LinSpaced(shape.dimension(), -1, 1);
  VectorXd grad = VectorXd::Zero(shape.dimension());
  const double f = finish_objective(shape, 2.0, 1, 0.0, theta, grad);
  double expected = 0;
  for (const auto& layer : shape.layers()) {
    expected += theta.segment(layer.weights, layer.in * layer.out).squaredNorm();
    CHECK(grad.segment(layer.weights, layer.in * layer.out) == 2.0 * theta.segment(layer.weights, layer.in * layer.out));
    CHECK(grad.segment(layer.biases, layer.out).isZero(0));
  }
  CHECK(f == doctest::Approx(expected).epsilon(1e-15));
}

TEST_CASE("initial theta: He for relu, Glorot for tanh, zero biases, the same bits for the same seed") {
  const model_shape relu{model_kind::softmax, 784, 10, {100}, activation::relu};
  const VectorXd a = initial_theta(relu, 42);
  CHECK(a == initial_theta(relu, 42));
  CHECK(a != initial_theta(relu, 43));
  for (const auto& layer : relu.layers()) {
    const auto w = a.segment(layer.weights, layer.in * layer.out);
    const double bound = std::sqrt(6.0 / static_cast<double>(layer.in));
    CHECK(w.cwiseAbs().maxCoeff() <= bound);
    CHECK(w.cwiseAbs().maxCoeff() > 0.99 * bound);
    // Uniform on [-b, b]: mean 0, variance b^2 / 3 (78,400 and 1,000 draws).
    const double n = static_cast<double>(w.size());
    CHECK(std::abs(w.mean()) < 5 * bound / std::sqrt(3 * n));
    CHECK(w.squaredNorm() / n == doctest::Approx(bound * bound / 3).epsilon(0.1));
    CHECK(a.segment(layer.biases, layer.out).isZero(0));
  }
  const model_shape tanh{model_kind::softmax, 784, 10, {100}, activation::tanh};
  const VectorXd t = initial_theta(tanh, 42);
  const auto first = tanh.layers()[0];
  CHECK(t.segment(first.weights, first.in * first.out).cwiseAbs().maxCoeff() <= std::sqrt(6.0 / 884));
  // Linear models start at zero.
  CHECK(initial_theta(model_shape{model_kind::softmax, 784, 10}, 42).isZero(0));
}
