/// Property tests of the model layer (model/linear_model.hpp, model/local_objective.hpp).
///
/// Every expected value is computed here from the model definitions in linear_model.hpp, never copied
/// from the implementation: finite-difference gradients, per-example losses from their formulas,
/// asymptotic bounds for huge scores, sums over blocks against one call over all rows, dense against
/// sparse storage, the closed-form optimum of regularised least squares, and quality counts on a
/// hand-made dataset. Randomized tests use a fixed default seed, print it on failure (INFO) and accept
/// another one from the environment variable SHARDOPT_TEST_SEED.

#include "model/linear_model.hpp"
#include "model/local_objective.hpp"

#include <doctest/doctest.h>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using shardopt::model::dataset;
using shardopt::model::dense_features;
using shardopt::model::finish_objective;
using shardopt::model::local_objective;
using shardopt::model::loss_grad_sum;
using shardopt::model::model_kind;
using shardopt::model::model_shape;
using shardopt::model::quality;
using shardopt::model::quality_sums;
using shardopt::model::row_range;
using shardopt::model::row_selection;
using shardopt::model::sparse_features;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// ---------------------------------------------------------------------------------------------------
// Seeds and random problems

/// Seed of every randomized test unless SHARDOPT_TEST_SEED overrides it.
constexpr std::uint64_t default_seed = 20240611;

/// The base seed of this run: SHARDOPT_TEST_SEED if set, else `default_seed`.
std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    if (const char* text = std::getenv("SHARDOPT_TEST_SEED"))
      return static_cast<std::uint64_t>(std::strtoull(text, nullptr, 10));
    return default_seed;
  }();
  return seed;
}

/// A model kind with its number of outputs.
struct model_case {
  model_kind kind;
  std::int64_t outputs;
};

std::string describe(const model_case& c) {
  return std::string{shardopt::model::to_string(c.kind)} + " K=" + std::to_string(c.outputs);
}

/// Every model configuration the layer supports: binary and multiclass variants.
const std::vector<model_case>& all_cases() {
  static const std::vector<model_case> cases = {
    {model_kind::linear, 1},  {model_kind::logistic, 1}, {model_kind::softmax, 3},
    {model_kind::softmax, 5}, {model_kind::svm, 1},      {model_kind::svm, 4},
  };
  return cases;
}

model_shape shape_of(const model_case& c, std::int64_t features) {
  return model_shape{c.kind, features, c.outputs};
}

/// Standard-normal float32 features, each entry zero with probability 1 - density. Row 3 (if present)
/// is entirely zero, so the sparse form has an empty row.
dense_features random_features(std::int64_t rows, std::int64_t features, double density,
                               std::mt19937_64& rng) {
  std::normal_distribution<float> normal{0.0f, 1.0f};
  std::bernoulli_distribution keep{density};
  dense_features x(rows, features);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < features; ++j)
      x(i, j) = (keep(rng) && i != 3) ? normal(rng) : 0.0f;
  return x;
}

/// Labels encoded for the model: a real target, +1/-1, or a class index 0..K-1.
VectorXd random_labels(const model_case& c, std::int64_t rows, std::mt19937_64& rng) {
  VectorXd y(rows);
  std::normal_distribution<double> normal{0.0, 2.0};
  std::bernoulli_distribution coin{0.5};
  std::uniform_int_distribution<std::int64_t> label{0, c.outputs - 1};
  for (std::int64_t i = 0; i < rows; ++i) {
    if (c.kind == model_kind::linear)
      y(i) = normal(rng);
    else if (c.outputs == 1)
      y(i) = coin(rng) ? 1.0 : -1.0;
    else
      y(i) = static_cast<double>(label(rng));
  }
  return y;
}

sparse_features to_sparse(const dense_features& x) {
  sparse_features s = x.sparseView();
  s.makeCompressed();
  return s;
}

/// The same examples stored densely and sparsely.
struct problem {
  dataset dense;
  dataset sparse;
  const dataset& get(bool is_sparse) const { return is_sparse ? sparse : dense; }
};

problem make_problem(dense_features x, VectorXd y) {
  problem p;
  p.sparse.x = to_sparse(x);
  p.sparse.y = y;
  p.dense.x = std::move(x);
  p.dense.y = std::move(y);
  return p;
}

problem random_problem(const model_case& c, std::int64_t rows, std::int64_t features,
                       std::mt19937_64& rng, double density = 0.6) {
  dense_features x = random_features(rows, features, density, rng);
  VectorXd y = random_labels(c, rows, rng);
  return make_problem(std::move(x), std::move(y));
}

VectorXd random_theta(const model_shape& shape, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> normal{0.0, scale};
  VectorXd theta(shape.dimension());
  for (Eigen::Index i = 0; i < theta.size(); ++i)
    theta(i) = normal(rng);
  return theta;
}

// ---------------------------------------------------------------------------------------------------
// Reference computations, straight from the definitions

/// z(i, k) = sum_j x(i, j) W(j, k) + b(k) for the rows of `rows`, by plain loops in double.
MatrixXd reference_scores(const model_shape& shape, const dense_features& x, const VectorXd& theta,
                          row_range rows) {
  MatrixXd z(rows.size(), shape.outputs);
  for (std::int64_t i = 0; i < rows.size(); ++i)
    for (std::int64_t k = 0; k < shape.outputs; ++k) {
      double s = theta(shape.weight_count() + k);
      for (std::int64_t j = 0; j < shape.features; ++j)
        s += static_cast<double>(x(rows.begin + i, j)) * theta(k * shape.features + j);
      z(i, k) = s;
    }
  return z;
}

/// The target t of output k for a binary (+1/-1) or one-vs-rest (class index) label.
double target(std::int64_t outputs, double label, std::int64_t k) {
  if (outputs == 1)
    return label;
  return static_cast<std::int64_t>(label) == k ? 1.0 : -1.0;
}

/// Gradient of one example's loss given its residuals r = dloss/dz: W column k gets r_k x, bias k r_k.
VectorXd gradient_from_residuals(const model_shape& shape, const std::vector<double>& x,
                                 const VectorXd& r) {
  VectorXd g(shape.dimension());
  for (std::int64_t k = 0; k < shape.outputs; ++k) {
    for (std::int64_t j = 0; j < shape.features; ++j)
      g(k * shape.features + j) = r(k) * x[static_cast<std::size_t>(j)];
    g(shape.weight_count() + k) = r(k);
  }
  return g;
}

// ---------------------------------------------------------------------------------------------------
// Evaluation helpers

/// Loss and gradient from one call of the code under test.
struct evaluation {
  double loss = 0;
  VectorXd grad;
};

evaluation sum_over(const model_shape& shape, const dataset& data, const row_selection& rows,
                    const VectorXd& theta) {
  evaluation e;
  e.grad = VectorXd::Constant(shape.dimension(), std::nan(""));  // must be overwritten
  e.loss = loss_grad_sum(shape, data, rows, theta, e.grad);
  return e;
}

evaluation whole(const model_shape& shape, const dataset& data, const VectorXd& theta) {
  return sum_over(shape, data, row_range{0, data.rows()}, theta);
}

/// The full objective (1/n) sum loss + (lambda/2) ||W||^2 over all rows, and its gradient.
evaluation full_objective(const model_shape& shape, const dataset& data, double lambda,
                          const VectorXd& theta) {
  evaluation e = whole(shape, data, theta);
  e.loss = finish_objective(shape, lambda, data.rows(), e.loss, theta, e.grad);
  return e;
}

/// Central differences (f(theta + h e_i) - f(theta - h e_i)) / 2h, one coordinate at a time.
template <class F>
VectorXd central_differences(F&& f, const VectorXd& theta, double h) {
  VectorXd g(theta.size());
  VectorXd probe = theta;
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    probe(i) = theta(i) + h;
    const double up = f(probe);
    probe(i) = theta(i) - h;
    const double down = f(probe);
    probe(i) = theta(i);
    g(i) = (up - down) / (2 * h);
  }
  return g;
}

/// ||a - b|| / max(1, ||a||): the error measure of the gradient checks.
double gradient_error(const VectorXd& a, const VectorXd& b) {
  return (a - b).norm() / std::max(1.0, a.norm());
}

/// ||a - b|| <= tol * max(||a||, ||b||), with an absolute floor for all-zero vectors.
bool close_vectors(const VectorXd& a, const VectorXd& b, double tol) {
  return (a - b).norm() <= tol * std::max({a.norm(), b.norm(), 1e-300});
}

bool close_scalars(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({std::abs(a), std::abs(b), 1e-300});
}

/// Smallest |1 - t z| over every example and output: how near the squared hinge's kink theta is.
double distance_to_kink(const model_shape& shape, const dataset& dense_data, const VectorXd& theta) {
  const MatrixXd z = reference_scores(shape, dense_data.dense(), theta, row_range{0, dense_data.rows()});
  double nearest = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index k = 0; k < z.cols(); ++k)
      nearest = std::min(nearest, std::abs(1.0 - target(shape.outputs, dense_data.y(i), k) * z(i, k)));
  return nearest;
}

/// Counts (active, total) squared-hinge terms: those with 1 - t z > 0.
std::pair<std::int64_t, std::int64_t> active_hinges(const model_shape& shape, const dataset& dense_data,
                                                    const VectorXd& theta) {
  const MatrixXd z = reference_scores(shape, dense_data.dense(), theta, row_range{0, dense_data.rows()});
  std::int64_t active = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index k = 0; k < z.cols(); ++k)
      active += 1.0 - target(shape.outputs, dense_data.y(i), k) * z(i, k) > 0 ? 1 : 0;
  return {active, static_cast<std::int64_t>(z.size())};
}

/// A random theta for finite differences. For the squared hinge (C1, not C2) theta is redrawn until
/// every margin is at least 1e-3 from the kink: a central difference with step h moves a margin by at
/// most h max|x| < 1e-4, so no difference straddles the kink and the O(h^2) error bound holds. It is
/// also redrawn until both branches of the hinge (active and inactive terms) occur, or the check would
/// prove little.
VectorXd fd_theta(const model_shape& shape, const dataset& dense_data, std::mt19937_64& rng) {
  if (shape.kind != model_kind::svm)
    return random_theta(shape, 0.5, rng);
  auto usable = [&](const VectorXd& theta) {
    const auto [active, total] = active_hinges(shape, dense_data, theta);
    return active > 0 && active < total && distance_to_kink(shape, dense_data, theta) >= 1e-3;
  };
  VectorXd theta = random_theta(shape, 1.0, rng);
  for (int attempt = 0; attempt < 1000 && !usable(theta); ++attempt)
    theta = random_theta(shape, 1.0, rng);
  REQUIRE(usable(theta));
  return theta;
}

/// Asserts the gradient of the raw loss sum and of the full objective against central differences.
void check_gradients(const model_shape& shape, const dataset& data, const VectorXd& theta) {
  constexpr double h = 1e-6;
  constexpr double lambda = 0.1;
  constexpr double tolerance = 1e-6;
  const row_range all{0, data.rows()};

  const evaluation sums = sum_over(shape, data, all, theta);
  REQUIRE(sums.grad.allFinite());
  const VectorXd fd_sums = central_differences(
    [&](const VectorXd& t) { return sum_over(shape, data, all, t).loss; }, theta, h);
  const double sums_error = gradient_error(sums.grad, fd_sums);
  INFO("raw sums: relative gradient error " << sums_error);
  CHECK(sums_error < tolerance);

  const evaluation full = full_objective(shape, data, lambda, theta);
  const VectorXd fd_full = central_differences(
    [&](const VectorXd& t) { return full_objective(shape, data, lambda, t).loss; }, theta, h);
  const double full_error = gradient_error(full.grad, fd_full);
  INFO("full objective: relative gradient error " << full_error);
  CHECK(full_error < tolerance);
}

/// Splits [0, n) into k contiguous blocks at random cut points (empty blocks allowed).
std::vector<row_range> random_blocks(std::int64_t n, std::int64_t k, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> cut{0, n};
  std::vector<std::int64_t> cuts{0, n};
  for (std::int64_t i = 1; i < k; ++i)
    cuts.push_back(cut(rng));
  std::sort(cuts.begin(), cuts.end());
  std::vector<row_range> blocks;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
    blocks.push_back(row_range{cuts[i], cuts[i + 1]});
  return blocks;
}

std::vector<std::int64_t> indices_of(row_range r) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(r.size()));
  std::iota(indices.begin(), indices.end(), r.begin);
  return indices;
}

/// One example as a dataset (dense or sparse) with label y.
dataset single_example(const std::vector<double>& x, double y, bool is_sparse) {
  dense_features features(1, static_cast<Eigen::Index>(x.size()));
  for (std::size_t j = 0; j < x.size(); ++j)
    features(0, static_cast<Eigen::Index>(j)) = static_cast<float>(x[j]);
  dataset d;
  d.y = VectorXd::Constant(1, y);
  if (is_sparse)
    d.x = to_sparse(features);
  else
    d.x = std::move(features);
  return d;
}

/// theta from weight columns (one per output) and biases.
VectorXd make_theta(const std::vector<std::vector<double>>& weight_columns,
                    const std::vector<double>& biases) {
  std::vector<double> flat;
  for (const auto& column : weight_columns)
    flat.insert(flat.end(), column.begin(), column.end());
  flat.insert(flat.end(), biases.begin(), biases.end());
  return Eigen::Map<const VectorXd>(flat.data(), static_cast<Eigen::Index>(flat.size()));
}

/// Scores of one example from the definition z_k = w_k . x + b_k.
VectorXd single_scores(const model_shape& shape, const std::vector<double>& x, const VectorXd& theta) {
  VectorXd z(shape.outputs);
  for (std::int64_t k = 0; k < shape.outputs; ++k) {
    z(k) = theta(shape.weight_count() + k);
    for (std::int64_t j = 0; j < shape.features; ++j)
      z(k) += x[static_cast<std::size_t>(j)] * theta(k * shape.features + j);
  }
  return z;
}

/// Checks one example's loss and gradient, dense and sparse, against the expected loss and residuals.
/// The loss may differ from `expected_loss` by `tolerance` times the larger of |expected_loss| and
/// `score_scale` (the magnitude of the scores, for losses formed as differences of huge scores); the
/// gradient by `tolerance` relative.
void check_single(const model_shape& shape, const std::vector<double>& x, double y,
                  const VectorXd& theta, double expected_loss, const VectorXd& expected_residuals,
                  double tolerance = 1e-14, double score_scale = 0.0) {
  const VectorXd expected_grad = gradient_from_residuals(shape, x, expected_residuals);
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    const dataset data = single_example(x, y, is_sparse);
    const evaluation e = whole(shape, data, theta);
    INFO("loss " << e.loss << ", expected " << expected_loss);
    CHECK(std::abs(e.loss - expected_loss) <=
          tolerance * std::max({std::abs(expected_loss), score_scale, 1e-300}));
    CHECK(close_vectors(e.grad, expected_grad, tolerance));
  }
}

} // namespace

// -----------------------------------------------------------------------------------------------------
// 1. Finite-difference gradient checks

namespace {

/// Finite-difference checks of one model case on `rows` random examples, dense and sparse.
void check_case_gradients(const model_case& c, std::int64_t rows, std::uint64_t seed) {
  INFO(describe(c) << ", " << rows << " rows, seed " << seed);
  std::mt19937_64 rng{seed};
  const model_shape shape = shape_of(c, 6);
  const problem p = random_problem(c, rows, 6, rng);
  const VectorXd theta = fd_theta(shape, p.dense, rng);
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    check_gradients(shape, p.get(is_sparse), theta);
  }
}

} // namespace

TEST_CASE("gradients match central differences for every model, dense and sparse") {
  for (const auto& c : all_cases())
    for (int trial = 0; trial < 3; ++trial)
      check_case_gradients(c, 37,
                           base_seed() + 1000 * static_cast<std::uint64_t>(c.kind)
                             + 100 * static_cast<std::uint64_t>(c.outputs)
                             + static_cast<std::uint64_t>(trial));
}

// -----------------------------------------------------------------------------------------------------
// 2. Per-example losses from their formulas

TEST_CASE("least squares charges 0.5 (z - y)^2 per example") {
  const model_shape shape{model_kind::linear, 2, 1};
  const std::vector<double> x{1.0, 2.0};
  const VectorXd theta = make_theta({{0.25, -0.5}}, {2.0});
  const double y = -0.5;
  const double z = 0.25 * 1.0 - 0.5 * 2.0 + 2.0;  // 1.25
  CHECK(single_scores(shape, x, theta)(0) == z);
  check_single(shape, x, y, theta, 0.5 * (z - y) * (z - y), VectorXd::Constant(1, z - y));
}

TEST_CASE("logistic loss is log(1 + exp(-t z)) per example") {
  const model_shape shape{model_kind::logistic, 2, 1};
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("z = 0 gives log 2 for either label") {
    const VectorXd theta = make_theta({{0.5, -0.5}}, {0.5});  // z = 0.5 - 1 + 0.5 = 0
    REQUIRE(single_scores(shape, x, theta)(0) == 0.0);
    for (const double t : {1.0, -1.0}) {
      INFO("t = " << t);
      // dloss/dz = -t exp(-t z) / (1 + exp(-t z)) = -t / 2 at z = 0
      check_single(shape, x, t, theta, std::log(2.0), VectorXd::Constant(1, -t / 2));
    }
  }
  SUBCASE("moderate scores") {
    const VectorXd theta = make_theta({{0.25, -0.5}}, {2.0});  // z = 1.25
    const double z = single_scores(shape, x, theta)(0);
    for (const double t : {1.0, -1.0}) {
      INFO("t = " << t);
      const double e = std::exp(-t * z);
      check_single(shape, x, t, theta, std::log(1.0 + e), VectorXd::Constant(1, -t * e / (1.0 + e)));
    }
  }
}

TEST_CASE("softmax loss is log-sum-exp(z) - z_y per example") {
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("equal scores give log K") {
    for (const std::int64_t k : {3, 5}) {
      const model_shape shape{model_kind::softmax, 2, k};
      // W = 0, all biases 0.75: every score equal.
      const VectorXd theta = [&] {
        VectorXd t = VectorXd::Zero(shape.dimension());
        t.tail(k).setConstant(0.75);
        return t;
      }();
      for (std::int64_t label = 0; label < k; ++label) {
        INFO("K = " << k << ", label " << label);
        VectorXd r = VectorXd::Constant(k, 1.0 / static_cast<double>(k));
        r(label) -= 1.0;
        check_single(shape, x, static_cast<double>(label), theta,
                     std::log(static_cast<double>(k)), r);
      }
    }
  }
  SUBCASE("distinct scores") {
    const model_shape shape{model_kind::softmax, 2, 3};
    const VectorXd theta = make_theta({{0.25, -0.5}, {1.0, 0.5}, {-1.0, 0.0}}, {0.0, -1.0, 0.5});
    const VectorXd z = single_scores(shape, x, theta);  // (-0.75, 1, -0.5)
    double sum_exp = 0;
    for (Eigen::Index k = 0; k < 3; ++k)
      sum_exp += std::exp(z(k));
    for (std::int64_t label = 0; label < 3; ++label) {
      INFO("label " << label);
      VectorXd r(3);
      for (Eigen::Index k = 0; k < 3; ++k)
        r(k) = std::exp(z(k)) / sum_exp - (k == label ? 1.0 : 0.0);
      check_single(shape, x, static_cast<double>(label), theta, std::log(sum_exp) - z(label), r);
    }
  }
}

TEST_CASE("squared hinge is max(0, 1 - t z)^2 per example and output") {
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("binary: t z = 0.5 gives 0.25, t z >= 1 gives 0") {
    const model_shape shape{model_kind::svm, 2, 1};
    const VectorXd half = make_theta({{0.5, -0.5}}, {1.0});  // z = 0.5 - 1 + 1 = 0.5
    REQUIRE(single_scores(shape, x, half)(0) == 0.5);
    // t = +1: slack 0.5, loss 0.25, dloss/dz = -2 t slack = -1.
    check_single(shape, x, 1.0, half, 0.25, VectorXd::Constant(1, -1.0));
    // t = -1: slack 1.5, loss 2.25, dloss/dz = +3.
    check_single(shape, x, -1.0, half, 2.25, VectorXd::Constant(1, 3.0));

    const VectorXd negative_half = -half;  // z = -0.5
    check_single(shape, x, -1.0, negative_half, 0.25, VectorXd::Constant(1, 1.0));

    const VectorXd beyond = make_theta({{0.25, -0.5}}, {2.0});  // z = 1.25: margin satisfied
    check_single(shape, x, 1.0, beyond, 0.0, VectorXd::Zero(1));

    const VectorXd at_kink = make_theta({{0.5, -0.5}}, {1.5});  // z = 1 exactly: loss and slope 0
    REQUIRE(single_scores(shape, x, at_kink)(0) == 1.0);
    check_single(shape, x, 1.0, at_kink, 0.0, VectorXd::Zero(1));
  }
  SUBCASE("one-vs-rest sums the hinge over classes") {
    const model_shape shape{model_kind::svm, 2, 3};
    // z = (0.5, 0.25, -2) exactly.
    const VectorXd theta = make_theta({{0.5, 0.0}, {0.0, 0.125}, {-1.0, -0.5}}, {0.0, 0.0, 0.0});
    const VectorXd z = single_scores(shape, x, theta);
    REQUIRE(z(0) == 0.5);
    REQUIRE(z(1) == 0.25);
    REQUIRE(z(2) == -2.0);
    // label 0: t = (+1, -1, -1), slacks (0.5, 1.25, -1) -> 0.25 + 1.5625 + 0.
    check_single(shape, x, 0.0, theta, 0.25 + 1.5625, (VectorXd(3) << -1.0, 2.5, 0.0).finished());
    // label 1: t = (-1, +1, -1), slacks (1.5, 0.75, -1) -> 2.25 + 0.5625 + 0.
    check_single(shape, x, 1.0, theta, 2.25 + 0.5625, (VectorXd(3) << 3.0, -1.5, 0.0).finished());
    // label 2: t = (-1, -1, +1), slacks (1.5, 1.25, 3) -> 2.25 + 1.5625 + 9.
    check_single(shape, x, 2.0, theta, 2.25 + 1.5625 + 9.0,
                 (VectorXd(3) << 3.0, 2.5, -6.0).finished());
  }
}

// -----------------------------------------------------------------------------------------------------
// 3. Numerical stability

TEST_CASE("logistic loss is finite and asymptotically right for huge scores") {
  const model_shape shape{model_kind::logistic, 1, 1};
  const std::vector<double> x{1.0};
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    for (const double z : {1000.0, -1000.0, 40.0, -40.0}) {
      for (const double t : {1.0, -1.0}) {
        const double margin = t * z;
        INFO("z = " << z << ", t = " << t);
        const evaluation e = whole(shape, single_example(x, t, is_sparse), make_theta({{z}}, {0.0}));
        REQUIRE(std::isfinite(e.loss));
        REQUIRE(e.grad.allFinite());
        if (margin < 0) {
          // log(1 + exp(-m)) = -m + log(1 + exp(m)); the second term is below 1e-17 here.
          CHECK(close_scalars(e.loss, -margin, 1e-15));
          // dloss/dz = -t / (1 + exp(m)) -> -t.
          CHECK(close_scalars(e.grad(0), -t, 1e-15));
          CHECK(close_scalars(e.grad(1), -t, 1e-15));
        } else {
          // log(1 + u) = u - u^2/2 + ..., u = exp(-m): relative error below u.
          const double u = std::exp(-margin);
          CHECK(e.loss >= 0.0);
          CHECK(std::abs(e.loss - u) <= 1e-15 * u + 1e-300);
          CHECK(std::abs(e.grad(0) + t * u) <= 1e-15 * u + 1e-300);
        }
      }
    }
  }
}

TEST_CASE("softmax loss is finite and asymptotically right for huge scores") {
  const model_shape shape{model_kind::softmax, 1, 3};
  const std::vector<double> x{1.0};
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    {
      INFO("scores (1000, 999, -1000)");
      const VectorXd theta = make_theta({{1000.0}, {999.0}, {-1000.0}}, {0.0, 0.0, 0.0});
      // p = (1, e^-1, e^-2000) / (1 + e^-1 + e^-2000); e^-2000 is 0 in double.
      const double tail = std::log1p(std::exp(-1.0));
      const double p0 = 1.0 / (1.0 + std::exp(-1.0));
      const double p1 = std::exp(-1.0) / (1.0 + std::exp(-1.0));
      const double expected_loss[] = {tail, 1.0 + tail, 2000.0 + tail};
      for (std::int64_t label = 0; label < 3; ++label) {
        INFO("label " << label);
        VectorXd r(3);
        r << p0, p1, 0.0;
        r(label) -= 1.0;
        // log-sum-exp(z) - z_y cancels scores of size 1e3: allow 1e-14 of that scale.
        check_single(shape, x, static_cast<double>(label), theta,
                     expected_loss[static_cast<std::size_t>(label)], r, 1e-14, 1e3);
      }
    }
    {
      INFO("equal scores of -1000 give log K");
      const VectorXd theta = make_theta({{-1000.0}, {-1000.0}, {-1000.0}}, {0.0, 0.0, 0.0});
      VectorXd r = VectorXd::Constant(3, 1.0 / 3.0);
      r(1) -= 1.0;
      check_single(shape, x, 1.0, theta, std::log(3.0), r, 1e-14, 1e3);
    }
  }
}

TEST_CASE("huge random scores: losses and gradients stay finite and approach their hard limits") {
  // theta scaled so |z| ~ 1e3. Then log(1 + exp(-m)) = max(0, -m) + log1p(exp(-|m|)) with the second
  // term in [0, exp(-|m|)], and log-sum-exp(z) - z_y = (max z - z_y) + [0, (K-1) exp(-gap)], where gap
  // is the distance between the two largest scores. The residuals approach their hard-max values with
  // the same exponentially small bounds; the test asserts those bounds exactly.
  constexpr double scale = 1e3;
  for (const bool is_sparse : {false, true}) {
    const std::uint64_t seed = base_seed() + 7;
    INFO("seed " << seed << (is_sparse ? ", sparse" : ", dense"));
    std::mt19937_64 rng{seed};
    {
      INFO("logistic");
      const model_case c{model_kind::logistic, 1};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      REQUIRE(std::isfinite(e.loss));
      REQUIRE(e.grad.allFinite());
      const MatrixXd z = reference_scores(shape, p.dense.dense(), theta, row_range{0, 37});
      double hard_loss = 0;
      double slack = 0;
      VectorXd hard_grad = VectorXd::Zero(shape.dimension());
      for (std::int64_t i = 0; i < 37; ++i) {
        const double t = p.dense.y(i);
        const double m = t * z(i, 0);
        hard_loss += std::max(0.0, -m);
        const double row_norm = p.dense.dense().row(i).cast<double>().norm() + 1.0;
        slack += std::exp(-std::abs(m)) * row_norm;
        if (m < 0) {
          hard_grad.head(6) += -t * p.dense.dense().row(i).cast<double>().transpose();
          hard_grad(6) += -t;
        }
      }
      INFO("loss " << e.loss << ", hard limit " << hard_loss << ", slack " << slack);
      CHECK(hard_loss > 100.0);
      CHECK(e.loss >= hard_loss * (1 - 1e-12));
      CHECK(e.loss <= hard_loss * (1 + 1e-12) + slack);
      CHECK((e.grad - hard_grad).norm() <= 1e-12 * hard_grad.norm() + slack);
    }
    {
      INFO("softmax K=5");
      const model_case c{model_kind::softmax, 5};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      REQUIRE(std::isfinite(e.loss));
      REQUIRE(e.grad.allFinite());
      const MatrixXd z = reference_scores(shape, p.dense.dense(), theta, row_range{0, 37});
      double hard_loss = 0;
      double loss_slack = 0;
      double grad_slack = 0;
      VectorXd hard_grad = VectorXd::Zero(shape.dimension());
      for (std::int64_t i = 0; i < 37; ++i) {
        Eigen::Index top = 0;
        const double best = z.row(i).maxCoeff(&top);
        double second = -std::numeric_limits<double>::infinity();
        for (Eigen::Index k = 0; k < 5; ++k)
          if (k != top)
            second = std::max(second, z(i, k));
        const auto label = static_cast<Eigen::Index>(p.dense.y(i));
        hard_loss += best - z(i, label);
        const double bound = 4.0 * std::exp(-(best - second));  // (K - 1) exp(-gap)
        loss_slack += bound;
        grad_slack += 2.0 * bound * (p.dense.dense().row(i).cast<double>().norm() + 1.0);
        // Hard residual e_top - e_label.
        for (const auto& [k, sign] : {std::pair{top, 1.0}, std::pair{label, -1.0}}) {
          hard_grad.segment(k * 6, 6) += sign * p.dense.dense().row(i).cast<double>().transpose();
          hard_grad(shape.weight_count() + k) += sign;
        }
      }
      INFO("loss " << e.loss << ", hard limit " << hard_loss << ", slack " << loss_slack);
      CHECK(hard_loss > 100.0);
      CHECK(e.loss >= hard_loss * (1 - 1e-12));
      CHECK(e.loss <= hard_loss * (1 + 1e-12) + loss_slack);
      CHECK((e.grad - hard_grad).norm() <= 1e-12 * hard_grad.norm() + grad_slack);
    }
    {
      INFO("squared hinge K=4 stays finite");
      const model_case c{model_kind::svm, 4};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      CHECK(std::isfinite(e.loss));
      CHECK(e.grad.allFinite());
    }
  }
}

// -----------------------------------------------------------------------------------------------------
// 4. Sums over blocks, selections, determinism

TEST_CASE("the sum over contiguous blocks equals one call over all rows") {
  for (const auto& c : all_cases()) {
    for (const std::int64_t n : {37, 600}) {
      const std::uint64_t seed = base_seed() + 31 * static_cast<std::uint64_t>(n) +
                                 1000 * static_cast<std::uint64_t>(c.kind) +
                                 static_cast<std::uint64_t>(c.outputs);
      INFO(describe(c) << ", rows " << n << ", seed " << seed);
      std::mt19937_64 rng{seed};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, n, 6, rng);
      const VectorXd theta = random_theta(shape, 0.5, rng);
      for (const bool is_sparse : {false, true}) {
        INFO((is_sparse ? "sparse" : "dense"));
        const dataset& data = p.get(is_sparse);
        const evaluation all = whole(shape, data, theta);
        for (std::int64_t k = 1; k <= 7; ++k) {
          for (int draw = 0; draw < 3; ++draw) {
            const std::vector<row_range> blocks = random_blocks(n, k, rng);
            double loss = 0;
            VectorXd grad = VectorXd::Zero(shape.dimension());
            std::string cuts;
            for (const auto& block : blocks) {
              const evaluation part = sum_over(shape, data, block, theta);
              loss += part.loss;
              grad += part.grad;
              cuts += std::to_string(block.begin) + ".." + std::to_string(block.end) + " ";
            }
            INFO("blocks " << cuts);
            CHECK(close_scalars(loss, all.loss, 1e-12));
            CHECK(close_vectors(grad, all.grad, 1e-12));
          }
        }
      }
    }
  }
}

TEST_CASE("index-list selections equal the equivalent row ranges") {
  for (const auto& c : all_cases()) {
    const std::uint64_t seed = base_seed() + 77 + 1000 * static_cast<std::uint64_t>(c.kind) +
                               static_cast<std::uint64_t>(c.outputs);
    INFO(describe(c) << ", seed " << seed);
    std::mt19937_64 rng{seed};
    const model_shape shape = shape_of(c, 6);
    const std::int64_t n = 600;
    const problem p = random_problem(c, n, 6, rng);
    const VectorXd theta = random_theta(shape, 0.5, rng);
    for (const bool is_sparse : {false, true}) {
      INFO((is_sparse ? "sparse" : "dense"));
      const dataset& data = p.get(is_sparse);
      // Ranges that start, end and straddle chunk boundaries (256 rows).
      for (const row_range r : {row_range{0, 600}, row_range{0, 256}, row_range{255, 257},
                                row_range{13, 531}, row_range{256, 512}, row_range{599, 600},
                                row_range{100, 100}}) {
        INFO("rows " << r.begin << ".." << r.end);
        const evaluation by_range = sum_over(shape, data, r, theta);
        const evaluation by_list = sum_over(shape, data, indices_of(r), theta);
        CHECK(close_scalars(by_list.loss, by_range.loss, 1e-12));
        CHECK(close_vectors(by_list.grad, by_range.grad, 1e-12));
      }
      {
      INFO("a shuffled list of every row equals the whole");
        std::vector<std::int64_t> order = indices_of(row_range{0, n});
        std::shuffle(order.begin(), order.end(), rng);
        const evaluation shuffled = sum_over(shape, data, order, theta);
        const evaluation all = whole(shape, data, theta);
        CHECK(close_scalars(shuffled.loss, all.loss, 1e-12));
        CHECK(close_vectors(shuffled.grad, all.grad, 1e-12));
      }
      {
      INFO("a repeated index counts once per occurrence");
        const std::vector<std::int64_t> list{5, 300, 5, 5};
        const evaluation listed = sum_over(shape, data, list, theta);
        const evaluation a = sum_over(shape, data, row_range{5, 6}, theta);
        const evaluation b = sum_over(shape, data, row_range{300, 301}, theta);
        CHECK(close_scalars(listed.loss, 3 * a.loss + b.loss, 1e-12));
        CHECK(close_vectors(listed.grad, 3 * a.grad + b.grad, 1e-12));
      }
    }
  }
}

TEST_CASE("the same call twice gives identical bits, and grad_sum is overwritten") {
  for (const auto& c : all_cases()) {
    const std::uint64_t seed = base_seed() + 5 + 1000 * static_cast<std::uint64_t>(c.kind) +
                               static_cast<std::uint64_t>(c.outputs);
    INFO(describe(c) << ", seed " << seed);
    std::mt19937_64 rng{seed};
    const model_shape shape = shape_of(c, 6);
    const problem p = random_problem(c, 600, 6, rng);
    const VectorXd theta = random_theta(shape, 0.5, rng);
    std::vector<std::int64_t> list = indices_of(row_range{0, 600});
    std::shuffle(list.begin(), list.end(), rng);
    list.resize(300);
    for (const bool is_sparse : {false, true}) {
      INFO((is_sparse ? "sparse" : "dense"));
      const dataset& data = p.get(is_sparse);
      for (const row_selection& rows : {row_selection{row_range{7, 600}}, row_selection{list}}) {
        VectorXd first = VectorXd::Constant(shape.dimension(), std::nan(""));
        VectorXd second = VectorXd::Constant(shape.dimension(), 12345.0);  // different garbage
        const double loss_first = loss_grad_sum(shape, data, rows, theta, first);
        const double loss_second = loss_grad_sum(shape, data, rows, theta, second);
        CHECK(std::memcmp(&loss_first, &loss_second, sizeof(double)) == 0);
        CHECK(std::memcmp(first.data(), second.data(),
                          sizeof(double) * static_cast<std::size_t>(first.size())) == 0);
        CHECK(first.allFinite());
      }
      // An empty selection gives zero loss and a zero gradient, whatever grad_sum held.
      const evaluation empty = sum_over(shape, data, row_range{40, 40}, theta);
      CHECK(empty.loss == 0.0);
      CHECK(empty.grad.isZero(0.0));
    }
  }
}

// -----------------------------------------------------------------------------------------------------
// 5. Dense and sparse storage agree

TEST_CASE("dense and sparse storage of the same data give the same loss and gradient") {
  for (const auto& c : all_cases()) {
    for (const std::int64_t n : {37, 600}) {
      for (const double density : {0.1, 0.6, 1.0}) {
        const std::uint64_t seed = base_seed() + 11 * static_cast<std::uint64_t>(n) +
                                   1000 * static_cast<std::uint64_t>(c.kind) +
                                   static_cast<std::uint64_t>(c.outputs) +
                                   static_cast<std::uint64_t>(100 * density);
        INFO(describe(c) << ", rows " << n << ", density " << density << ", seed " << seed);
        std::mt19937_64 rng{seed};
        const model_shape shape = shape_of(c, 6);
        const problem p = random_problem(c, n, 6, rng, density);
        const VectorXd theta = random_theta(shape, 0.5, rng);
        const evaluation dense = whole(shape, p.dense, theta);
        const evaluation sparse = whole(shape, p.sparse, theta);
        CHECK(close_scalars(dense.loss, sparse.loss, 1e-12));
        CHECK(close_vectors(dense.grad, sparse.grad, 1e-12));

        std::vector<std::int64_t> list = indices_of(row_range{0, n});
        std::shuffle(list.begin(), list.end(), rng);
        list.resize(static_cast<std::size_t>(n / 2));
        const evaluation dense_list = sum_over(shape, p.dense, list, theta);
        const evaluation sparse_list = sum_over(shape, p.sparse, list, theta);
        CHECK(close_scalars(dense_list.loss, sparse_list.loss, 1e-12));
        CHECK(close_vectors(dense_list.grad, sparse_list.grad, 1e-12));
      }
    }
  }
}

TEST_CASE("scores equal W^T x + b from the definition, dense and sparse") {
  for (const auto& c : all_cases()) {
    const std::uint64_t seed = base_seed() + 3 + 1000 * static_cast<std::uint64_t>(c.kind) +
                               static_cast<std::uint64_t>(c.outputs);
    INFO(describe(c) << ", seed " << seed);
    std::mt19937_64 rng{seed};
    const model_shape shape = shape_of(c, 6);
    const problem p = random_problem(c, 600, 6, rng);
    const VectorXd theta = random_theta(shape, 0.5, rng);
    for (const row_range r : {row_range{0, 600}, row_range{13, 531}, row_range{256, 257}}) {
      INFO("rows " << r.begin << ".." << r.end);
      const MatrixXd expected = reference_scores(shape, p.dense.dense(), theta, r);
      for (const bool is_sparse : {false, true}) {
        INFO((is_sparse ? "sparse" : "dense"));
        const MatrixXd z = shardopt::model::scores(shape, p.get(is_sparse), r, theta);
        REQUIRE(z.rows() == r.size());
        REQUIRE(z.cols() == shape.outputs);
        CHECK((z - expected).norm() <= 1e-12 * expected.norm());
      }
    }
  }
}

// -----------------------------------------------------------------------------------------------------
// 6. Least squares at the closed-form optimum

TEST_CASE("local_objective: regularised least squares has zero gradient at its closed-form optimum") {
  constexpr double lambda = 0.1;
  constexpr std::int64_t n = 600;
  constexpr std::int64_t f = 6;
  const std::uint64_t seed = base_seed() + 600;
  INFO("seed " << seed);
  std::mt19937_64 rng{seed};

  // y = X w_true + b_true + noise.
  const dense_features x = random_features(n, f, 0.7, rng);
  const model_shape shape{model_kind::linear, f, 1};
  const VectorXd truth = random_theta(shape, 1.0, rng);
  MatrixXd a(n, f + 1);  // [X, 1] in double
  a.leftCols(f) = x.cast<double>();
  a.col(f).setOnes();
  std::normal_distribution<double> noise{0.0, 0.3};
  VectorXd y = a * truth;
  for (std::int64_t i = 0; i < n; ++i)
    y(i) += noise(rng);

  // f(theta) = (1/2n) ||A theta - y||^2 + (lambda/2) ||w||^2 has Hessian H = A^T A / n + lambda D with
  // D = diag(1, ..., 1, 0) (bias unregularised), and its minimiser solves H theta = A^T y / n.
  VectorXd d = VectorXd::Ones(f + 1);
  d(f) = 0.0;
  const MatrixXd hessian =
    a.transpose() * a / static_cast<double>(n) + lambda * MatrixXd(d.asDiagonal());
  const VectorXd optimum = hessian.ldlt().solve(a.transpose() * y / static_cast<double>(n));

  const problem p = make_problem(x, y);
  for (const bool is_sparse : {false, true}) {
    for (const bool split : {false, true}) {
      INFO((is_sparse ? "sparse" : "dense") << (split ? ", three blocks" : ", one block"));
      auto data = std::make_shared<const dataset>(p.get(is_sparse));
      std::vector<row_range> blocks;
      if (split)
        blocks = {row_range{0, 200}, row_range{200, 457}, row_range{457, n}};
      local_objective objective{shape, data, lambda, blocks};
      REQUIRE(objective.dimension() == shape.dimension());

      VectorXd grad;
      const double best = objective.evaluate(optimum, grad);
      REQUIRE(grad.size() == shape.dimension());
      INFO("gradient norm at the optimum " << grad.norm());
      CHECK(grad.norm() < 1e-10);

      // f is exactly quadratic and stationary at the optimum: f(opt + delta) - f(opt) is
      // 0.5 delta^T H delta > 0 for every perturbation.
      std::normal_distribution<double> step{0.0, 1e-3};
      for (int trial = 0; trial < 20; ++trial) {
        VectorXd delta(shape.dimension());
        for (Eigen::Index i = 0; i < delta.size(); ++i)
          delta(i) = step(rng);
        VectorXd unused;
        const double perturbed = objective.evaluate(optimum + delta, unused);
        const double rise = 0.5 * delta.dot(hessian * delta);
        INFO("trial " << trial << ": f(opt + delta) - f(opt) = " << perturbed - best
                      << ", 0.5 delta^T H delta = " << rise);
        CHECK(perturbed > best);
        CHECK(close_scalars(perturbed - best, rise, 1e-6));
      }
    }
  }
}

TEST_CASE("local_objective over several blocks equals the objective over one block") {
  for (const auto& c : all_cases()) {
    const std::uint64_t seed = base_seed() + 9 + 1000 * static_cast<std::uint64_t>(c.kind) +
                               static_cast<std::uint64_t>(c.outputs);
    INFO(describe(c) << ", seed " << seed);
    std::mt19937_64 rng{seed};
    const model_shape shape = shape_of(c, 6);
    const problem p = random_problem(c, 600, 6, rng);
    const VectorXd theta = random_theta(shape, 0.5, rng);
    for (const bool is_sparse : {false, true}) {
      INFO((is_sparse ? "sparse" : "dense"));
      auto data = std::make_shared<const dataset>(p.get(is_sparse));
      local_objective one{shape, data, 0.1};
      local_objective many{shape, data, 0.1, random_blocks(600, 5, rng)};
      VectorXd grad_one;
      VectorXd grad_many;
      const double f_one = one.evaluate(theta, grad_one);
      const double f_many = many.evaluate(theta, grad_many);
      CHECK(close_scalars(f_one, f_many, 1e-12));
      CHECK(close_vectors(grad_one, grad_many, 1e-12));
      const evaluation expected = full_objective(shape, p.get(is_sparse), 0.1, theta);
      CHECK(close_scalars(f_one, expected.loss, 1e-12));
      CHECK(close_vectors(grad_one, expected.grad, 1e-12));
    }
  }
}

TEST_CASE("finish_objective divides by n and regularises the weights only") {
  const model_shape shape{model_kind::softmax, 2, 2};
  const VectorXd theta = (VectorXd(6) << 1.0, -2.0, 0.5, 3.0, 7.0, -9.0).finished();
  VectorXd grad = (VectorXd(6) << 4.0, 8.0, -4.0, 0.0, 2.0, 6.0).finished();
  const double f = finish_objective(shape, 0.5, 4, 10.0, theta, grad);
  // 10 / 4 + 0.25 * (1 + 4 + 0.25 + 9); the biases (7, -9) are not regularised.
  CHECK(f == doctest::Approx(2.5 + 0.25 * 14.25).epsilon(1e-15));
  const VectorXd expected = (VectorXd(6) << 1.5, 1.0, -0.75, 1.5, 0.5, 1.5).finished();
  CHECK(close_vectors(grad, expected, 1e-15));
}

// -----------------------------------------------------------------------------------------------------
// 7. Quality sums

TEST_CASE("quality counts correct predictions and squared errors on a hand-made dataset") {
  // Four examples, two features.
  dense_features x(4, 2);
  x << 1, 0,  //
    0, 1,     //
    1, 1,     //
    -1, 2;
  auto data_of = [&](const VectorXd& y, bool is_sparse) {
    dataset d;
    d.y = y;
    if (is_sparse)
      d.x = to_sparse(x);
    else
      d.x = x;
    return d;
  };
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    {
      INFO("least squares: sum of squared errors");
      const model_shape shape{model_kind::linear, 2, 1};
      const VectorXd theta = make_theta({{1.0, -1.0}}, {0.5});  // z = (1.5, -0.5, 0.5, -2.5)
      const dataset d = data_of((VectorXd(4) << 1.0, 0.0, 0.5, -2.0).finished(), is_sparse);
      const quality_sums all = quality(shape, d, row_range{0, 4}, theta);
      CHECK(all.count == 4);
      CHECK(all.squared_error == doctest::Approx(0.25 + 0.25 + 0.0 + 0.25).epsilon(1e-15));
      CHECK(all.correct == 0.0);
      const quality_sums tail = quality(shape, d, row_range{1, 4}, theta);
      CHECK(tail.count == 3);
      CHECK(tail.squared_error == doctest::Approx(0.5).epsilon(1e-15));
    }
    {
      INFO("binary classifiers: sign of z, z = 0 predicts +1");
      for (const model_kind kind : {model_kind::logistic, model_kind::svm}) {
        INFO(shardopt::model::to_string(kind));
        const model_shape shape{kind, 2, 1};
        const VectorXd theta = make_theta({{1.0, -1.0}}, {0.0});  // z = (1, -1, 0, -3)
        const dataset d = data_of((VectorXd(4) << 1.0, 1.0, 1.0, -1.0).finished(), is_sparse);
        // predictions (+1, -1, +1, -1): rows 0, 2, 3 correct.
        const quality_sums all = quality(shape, d, row_range{0, 4}, theta);
        CHECK(all.count == 4);
        CHECK(all.correct == 3.0);
        CHECK(all.squared_error == 0.0);
        const quality_sums middle = quality(shape, d, row_range{1, 3}, theta);
        CHECK(middle.count == 2);
        CHECK(middle.correct == 1.0);
        quality_sums summed = quality(shape, d, row_range{0, 1}, theta);
        summed += quality(shape, d, row_range{1, 4}, theta);
        CHECK(summed.count == 4);
        CHECK(summed.correct == 3.0);
      }
    }
    {
      INFO("multiclass classifiers: argmax of z");
      for (const model_kind kind : {model_kind::softmax, model_kind::svm}) {
        INFO(shardopt::model::to_string(kind));
        const model_shape shape{kind, 2, 3};
        // z rows: (1, .25, .5) -> 0; (0, 1.25, .5) -> 1; (1, 1.25, .5) -> 1; (-1, 2.25, .5) -> 1.
        const VectorXd theta = make_theta({{1.0, 0.0}, {0.0, 1.0}, {0.0, 0.0}}, {0.0, 0.25, 0.5});
        const dataset d = data_of((VectorXd(4) << 0.0, 2.0, 1.0, 1.0).finished(), is_sparse);
        const quality_sums all = quality(shape, d, row_range{0, 4}, theta);
        CHECK(all.count == 4);
        CHECK(all.correct == 3.0);  // rows 0, 2, 3
        const quality_sums tail = quality(shape, d, row_range{1, 4}, theta);
        CHECK(tail.count == 3);
        CHECK(tail.correct == 2.0);
        const quality_sums none = quality(shape, d, row_range{2, 2}, theta);
        CHECK(none.count == 0);
        CHECK(none.correct == 0.0);
      }
    }
  }
}

// -----------------------------------------------------------------------------------------------------
// 8. More rows than one chunk (256)

TEST_CASE("gradients match central differences across chunk boundaries (600 rows)") {
  for (const auto& c : all_cases())
    check_case_gradients(c, 600,
                         base_seed() + 6000 + 1000 * static_cast<std::uint64_t>(c.kind)
                           + static_cast<std::uint64_t>(c.outputs));
}

TEST_CASE("blocks cut at and around chunk boundaries add up to the whole") {
  for (const auto& c : all_cases()) {
    const std::uint64_t seed = base_seed() + 8000 + 1000 * static_cast<std::uint64_t>(c.kind) +
                               static_cast<std::uint64_t>(c.outputs);
    INFO(describe(c) << ", seed " << seed);
    std::mt19937_64 rng{seed};
    const model_shape shape = shape_of(c, 6);
    const problem p = random_problem(c, 600, 6, rng);
    const VectorXd theta = random_theta(shape, 0.5, rng);
    const std::vector<std::vector<std::int64_t>> cut_sets = {
      {0, 256, 512, 600}, {0, 255, 257, 511, 513, 600}, {0, 1, 599, 600}, {0, 300, 600}};
    for (const bool is_sparse : {false, true}) {
      INFO((is_sparse ? "sparse" : "dense"));
      const dataset& data = p.get(is_sparse);
      const evaluation all = whole(shape, data, theta);
      for (const auto& cuts : cut_sets) {
        double loss = 0;
        VectorXd grad = VectorXd::Zero(shape.dimension());
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
          const evaluation part = sum_over(shape, data, row_range{cuts[i], cuts[i + 1]}, theta);
          loss += part.loss;
          grad += part.grad;
        }
        INFO("first interior cut " << cuts[1]);
        CHECK(close_scalars(loss, all.loss, 1e-12));
        CHECK(close_vectors(grad, all.grad, 1e-12));
      }
    }
  }
}

TEST_CASE("model kinds round-trip through their names") {
  for (const auto& c : all_cases()) {
    const auto parsed = shardopt::model::parse_model_kind(shardopt::model::to_string(c.kind));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == c.kind);
    CHECK(shardopt::model::is_classifier(c.kind) == (c.kind != model_kind::linear));
  }
  CHECK_FALSE(shardopt::model::parse_model_kind("Softmax").has_value());
  CHECK_FALSE(shardopt::model::parse_model_kind("").has_value());
}

TEST_CASE("softmax keeps tiny losses: a correct class ahead by 40 costs 2 exp(-40), not 0") {
  // One example, one feature equal to 1: the scores are the weights (biases 0).
  dataset data;
  dense_features x(1, 1);
  x(0, 0) = 1.0f;
  data.x = x;
  data.y = Eigen::VectorXd::Zero(1);
  const shardopt::model::model_shape shape{shardopt::model::model_kind::softmax, 1, 3};
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  theta.head(3) << 10.0, -30.0, -30.0;
  Eigen::VectorXd grad(shape.dimension());
  const double loss =
    shardopt::model::loss_grad_sum(shape, data, shardopt::model::row_range{0, 1}, theta, grad);
  const double expected = std::log1p(2 * std::exp(-40.0));
  CHECK(loss > 0);
  CHECK(loss == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("first_invalid_label finds labels a model cannot index by") {
  using shardopt::model::model_kind;
  using shardopt::model::model_shape;
  Eigen::VectorXd labels(4);
  labels << 0, 2, 1, 3;
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::softmax, 2, 4}, labels) == std::nullopt);
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::softmax, 2, 3}, labels) == 3);
  labels << 1, -1, 1, 0.5;
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::logistic, 2, 1}, labels) == 3);
  labels << 0.5, 0.25, -7, 1e300;
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::linear, 2, 1}, labels) == std::nullopt);
  labels[1] = std::nan("");
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::linear, 2, 1}, labels) == 1);
  labels << 0, 1.5, 1, 1;
  CHECK(shardopt::model::first_invalid_label(model_shape{model_kind::svm, 2, 3}, labels) == 1);
}
