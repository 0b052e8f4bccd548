#pragma once

// Fixtures of the model layer's property tests (test_losses.cpp, test_blocks.cpp,
// test_local_objective.cpp): model cases, random problems with a reproducible seed, reference
// losses and scores computed from the definitions, finite differences.

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

namespace shardopt::test::linear {


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
inline std::uint64_t base_seed() {
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

inline std::string describe(const model_case& c) {
  return std::string{shardopt::model::to_string(c.kind)} + " K=" + std::to_string(c.outputs);
}

/// Every model configuration the layer supports: binary and multiclass variants.
inline const std::vector<model_case>& all_cases() {
  static const std::vector<model_case> cases = {
    {model_kind::linear, 1},  {model_kind::logistic, 1}, {model_kind::softmax, 3},
    {model_kind::softmax, 5}, {model_kind::svm, 1},      {model_kind::svm, 4},
  };
  return cases;
}

inline model_shape shape_of(const model_case& c, std::int64_t features) {
  return model_shape{c.kind, features, c.outputs};
}

/// Standard-normal float32 features, each entry zero with probability 1 - density. Row 3 (if present)
/// is entirely zero, so the sparse form has an empty row.
inline dense_features random_features(std::int64_t rows, std::int64_t features, double density,
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
inline VectorXd random_labels(const model_case& c, std::int64_t rows, std::mt19937_64& rng) {
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

inline sparse_features to_sparse(const dense_features& x) {
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

inline problem make_problem(dense_features x, VectorXd y) {
  problem p;
  p.sparse.x = to_sparse(x);
  p.sparse.y = y;
  p.dense.x = std::move(x);
  p.dense.y = std::move(y);
  return p;
}

inline problem random_problem(const model_case& c, std::int64_t rows, std::int64_t features,
                       std::mt19937_64& rng, double density = 0.6) {
  dense_features x = random_features(rows, features, density, rng);
  VectorXd y = random_labels(c, rows, rng);
  return make_problem(std::move(x), std::move(y));
}

inline VectorXd random_theta(const model_shape& shape, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> normal{0.0, scale};
  VectorXd theta(shape.dimension());
  for (Eigen::Index i = 0; i < theta.size(); ++i)
    theta(i) = normal(rng);
  return theta;
}

// ---------------------------------------------------------------------------------------------------
// Reference computations, straight from the definitions

/// z(i, k) = sum_j x(i, j) W(j, k) + b(k) for the rows of `rows`, by plain loops in double.
inline MatrixXd reference_scores(const model_shape& shape, const dense_features& x, const VectorXd& theta,
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
inline double target(std::int64_t outputs, double label, std::int64_t k) {
  if (outputs == 1)
    return label;
  return static_cast<std::int64_t>(label) == k ? 1.0 : -1.0;
}

/// Gradient of one example's loss given its residuals r = dloss/dz: W column k gets r_k x, bias k r_k.
inline VectorXd gradient_from_residuals(const model_shape& shape, const std::vector<double>& x,
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

inline evaluation sum_over(const model_shape& shape, const dataset& data, const row_selection& rows,
                    const VectorXd& theta) {
  evaluation e;
  e.grad = VectorXd::Constant(shape.dimension(), std::nan(""));  // must be overwritten
  e.loss = loss_grad_sum(shape, data, rows, theta, e.grad);
  return e;
}

inline evaluation whole(const model_shape& shape, const dataset& data, const VectorXd& theta) {
  return sum_over(shape, data, row_range{0, data.rows()}, theta);
}

/// The full objective (1/n) sum loss + (lambda/2) ||W||^2 over all rows, and its gradient.
inline evaluation full_objective(const model_shape& shape, const dataset& data, double lambda,
                          const VectorXd& theta) {
  evaluation e = whole(shape, data, theta);
  e.loss = finish_objective(shape, lambda, data.rows(), e.loss, theta, e.grad);
  return e;
}

/// Central differences (f(theta + h e_i) - f(theta - h e_i)) / 2h, one coordinate at a time.
template <class F>
inline VectorXd central_differences(F&& f, const VectorXd& theta, double h) {
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
inline double gradient_error(const VectorXd& a, const VectorXd& b) {
  return (a - b).norm() / std::max(1.0, a.norm());
}

/// ||a - b|| <= tol * max(||a||, ||b||), with an absolute floor for all-zero vectors.
inline bool close_vectors(const VectorXd& a, const VectorXd& b, double tol) {
  return (a - b).norm() <= tol * std::max({a.norm(), b.norm(), 1e-300});
}

inline bool close_scalars(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({std::abs(a), std::abs(b), 1e-300});
}

/// Smallest |1 - t z| over every example and output: how near the squared hinge's kink theta is.
inline double distance_to_kink(const model_shape& shape, const dataset& dense_data, const VectorXd& theta) {
  const MatrixXd z = reference_scores(shape, dense_data.dense(), theta, row_range{0, dense_data.rows()});
  double nearest = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index k = 0; k < z.cols(); ++k)
      nearest = std::min(nearest, std::abs(1.0 - target(shape.outputs, dense_data.y(i), k) * z(i, k)));
  return nearest;
}

/// Counts (active, total) squared-hinge terms: those with 1 - t z > 0.
inline std::pair<std::int64_t, std::int64_t> active_hinges(const model_shape& shape, const dataset& dense_data,
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
inline VectorXd fd_theta(const model_shape& shape, const dataset& dense_data, std::mt19937_64& rng) {
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
inline void check_gradients(const model_shape& shape, const dataset& data, const VectorXd& theta) {
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
inline std::vector<row_range> random_blocks(std::int64_t n, std::int64_t k, std::mt19937_64& rng) {
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

inline std::vector<std::int64_t> indices_of(row_range r) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(r.size()));
  std::iota(indices.begin(), indices.end(), r.begin);
  return indices;
}

/// One example as a dataset (dense or sparse) with label y.
inline dataset single_example(const std::vector<double>& x, double y, bool is_sparse) {
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
inline VectorXd make_theta(const std::vector<std::vector<double>>& weight_columns,
                    const std::vector<double>& biases) {
  std::vector<double> flat;
  for (const auto& column : weight_columns)
    flat.insert(flat.end(), column.begin(), column.end());
  flat.insert(flat.end(), biases.begin(), biases.end());
  return Eigen::Map<const VectorXd>(flat.data(), static_cast<Eigen::Index>(flat.size()));
}

/// Scores of one example from the definition z_k = w_k . x + b_k.
inline VectorXd single_scores(const model_shape& shape, const std::vector<double>& x, const VectorXd& theta) {
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
inline void check_single(const model_shape& shape, const std::vector<double>& x, double y,
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


// -----------------------------------------------------------------------------------------------------
// 1. Finite-difference gradient checks


/// Finite-difference checks of one model case on `rows` random examples, dense and sparse.
inline void check_case_gradients(const model_case& c, std::int64_t rows, std::uint64_t seed) {
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


} // namespace shardopt::test::linear
