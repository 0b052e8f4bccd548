/// model/local_objective.hpp and the model's bookkeeping: the closed-form optimum of regularised
/// least squares, several blocks against one, finish_objective, quality counts on a hand-made
/// dataset, kind names and label checks.

#include "linear_fixtures.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <Eigen/Cholesky>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace shardopt::test::linear;

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

TEST_CASE("restrict_columns gives a serial copy's CSR arrays, whatever the rows' split over threads, and no columns or no rows") {
  namespace model = shardopt::model;
  const std::int64_t d = 50;
  // 1,003 rows: pieces of uneven sizes on any thread count.
  const auto data = shardopt::test::random_problem(37, 1003, d, 2, true);
  std::vector<std::int64_t> features;
  for (std::int64_t j = 1; j < d; j += 3)
    features.push_back(j);
  const auto kept = model::restrict_columns(*data, features);
  REQUIRE(kept.is_sparse());
  // The reference: entry by entry, in order.
  std::vector<std::int32_t> starts{0}, indices;
  std::vector<float> values;
  const auto x = data->sparse();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (model::sparse_view::InnerIterator it(x, i); it; ++it) {
      const auto at = std::lower_bound(features.begin(), features.end(), std::int64_t{it.col()});
      if (at != features.end() && *at == it.col()) {
        indices.push_back(static_cast<std::int32_t>(at - features.begin()));
        values.push_back(it.value());
      }
    }
    starts.push_back(static_cast<std::int32_t>(indices.size()));
  }
  const auto got = kept.sparse();
  REQUIRE(got.rows() == 1003);
  REQUIRE(got.cols() == static_cast<Eigen::Index>(features.size()));
  REQUIRE(got.nonZeros() == static_cast<Eigen::Index>(indices.size()));
  CHECK(indices.size() > 1000);
  CHECK(std::equal(starts.begin(), starts.end(), got.outerIndexPtr()));
  CHECK(std::equal(indices.begin(), indices.end(), got.innerIndexPtr()));
  CHECK(std::memcmp(values.data(), got.valuePtr(), sizeof(float) * values.size()) == 0);
  CHECK(kept.y == data->y);
  // No columns: every row, no entries; no rows: nothing.
  const auto none = model::restrict_columns(*data, {});
  CHECK(none.rows() == 1003);
  CHECK(none.cols() == 0);
  CHECK(none.nonzeros() == 0);
  const auto empty = model::restrict_columns(*shardopt::test::random_problem(37, 0, d, 2, true), features);
  CHECK(empty.rows() == 0);
  CHECK(empty.nonzeros() == 0);
  // Rows 401 to 776 alone (a node's shard of data it shares whole): the reference's rows, from 0,
  // on any number of threads (a node's --threads; 0 is taken as 1).
  const model::row_range rows{401, 777};
  for (const unsigned threads : {0u, 1u, 2u, 3u, 7u}) {
    CAPTURE(threads);
    const auto part = model::restrict_columns(*data, features, rows, threads);
    REQUIRE(part.rows() == rows.size());
    const auto first = starts[static_cast<std::size_t>(rows.begin)];
    const auto last = starts[static_cast<std::size_t>(rows.end)];
    REQUIRE(part.nonzeros() == last - first);
    for (std::int64_t r = 0; r <= rows.size(); ++r)
      CHECK(part.sparse().outerIndexPtr()[r] == starts[static_cast<std::size_t>(rows.begin + r)] - first);
    CHECK(std::equal(indices.begin() + first, indices.begin() + last, part.sparse().innerIndexPtr()));
    CHECK(std::memcmp(values.data() + first, part.sparse().valuePtr(),
                      sizeof(float) * static_cast<std::size_t>(last - first)) == 0);
    CHECK(part.y == data->y.segment(rows.begin, rows.size()));
    CHECK(model::restricted_nonzeros(*data, features, rows, threads) == part.nonzeros());
  }
  // The count a node admits before it copies, on rows with more entries than one piece counts.
  const auto wide = shardopt::test::random_problem(39, 60000, d, 2, true);
  const model::row_range most{17, 59999};
  const auto wide_nonzeros = model::restrict_columns(*wide, features, most, 1).nonzeros();
  CHECK(wide_nonzeros > 4 * 65536);
  for (const unsigned threads : {0u, 1u, 2u, 5u})
    CHECK(model::restricted_nonzeros(*wide, features, most, threads) == wide_nonzeros);
  const auto dense = shardopt::test::random_problem(38, 300, 7, 2);
  const auto dense_part = model::restrict_columns(*dense, {0, 3, 6}, {100, 250}, 2);
  CHECK(model::restricted_nonzeros(*dense, {0, 3, 6}, {100, 250}, 2) == 0);
  REQUIRE(dense_part.rows() == 150);
  for (std::int64_t r = 0; r < 150; ++r)
    for (const auto& [from, to] : {std::pair{0, 0}, std::pair{3, 1}, std::pair{6, 2}})
      CHECK(dense_part.dense()(r, to) == dense->dense()(100 + r, from));
  CHECK(dense_part.y == dense->y.segment(100, 150));
}

TEST_CASE("a linear objective restricted to some features is the objective with the other weights at 0") {
  namespace model = shardopt::model;
  for (const bool sparse : {true, false}) {
    CAPTURE(sparse);
    const std::int64_t d = 9, k = 3;
    const auto data = shardopt::test::random_problem(31, 240, d, k, sparse);
    const model_shape shape{model_kind::softmax, d, k};
    local_objective full{shape, data, 1e-3, {{0, 99}, {99, 240}}};
    // Entries of features 1, 4 and 8 (in one output each), and a bias.
    const std::vector<Eigen::Index> wanted{1, d + 4, 2 * d + 8, k * d + 1};
    CHECK(model::features_of_entries(shape, wanted) == std::vector<std::int64_t>{1, 4, 8});
    const auto made = full.restrict(wanted);
    REQUIRE(made.ok());
    const std::vector<Eigen::Index> entries{1, 4, 8, d + 1, d + 4, d + 8, 2 * d + 1, 2 * d + 4, 2 * d + 8,
                                            k * d, k * d + 1, k * d + 2};
    CHECK(made->entries == entries);
    // The compact data: the kept columns, renumbered, every row.
    const auto kept = model::restrict_columns(*data, {1, 4, 8});
    REQUIRE(kept.rows() == data->rows());
    REQUIRE(kept.cols() == 3);
    CHECK(made->nonzeros == kept.nonzeros());
    for (std::int64_t i = 0; i < data->rows(); ++i)
      for (const auto& [from, to] : {std::pair{1, 0}, std::pair{4, 1}, std::pair{8, 2}}) {
        const float was = sparse ? data->sparse().coeff(i, from) : data->dense()(i, from);
        const float is = sparse ? kept.sparse().coeff(i, to) : kept.dense()(i, to);
        CHECK(was == is);
      }
    // Its objective and gradient at a compact theta are the full ones at theta with the others 0.
    std::mt19937 rng{3};
    std::normal_distribution<double> normal;
    VectorXd compact(static_cast<Eigen::Index>(entries.size()));
    for (auto& v : compact)
      v = normal(rng);
    VectorXd theta = VectorXd::Zero(shape.dimension());
    for (std::size_t e = 0; e < entries.size(); ++e)
      theta[entries[e]] = compact[static_cast<Eigen::Index>(e)];
    VectorXd g_full, g_compact;
    const double f_full = full.evaluate(theta, g_full);
    const double f_compact = made->evaluate(compact, g_compact);
    CHECK(f_compact == doctest::Approx(f_full).epsilon(1e-13));
    REQUIRE(g_compact.size() == static_cast<Eigen::Index>(entries.size()));
    for (std::size_t e = 0; e < entries.size(); ++e)
      CHECK(g_compact[static_cast<Eigen::Index>(e)] == doctest::Approx(g_full[entries[e]]).epsilon(1e-12));
  }
  // Networks cannot be restricted, and say so.
  local_objective net{model_shape{model_kind::logistic, 4, 1, {3}}, shardopt::test::random_problem(2, 40, 4, 2), 0.0};
  CHECK_FALSE(net.can_restrict());
  const auto refused = net.restrict({0});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("linear models") != std::string::npos);
}
