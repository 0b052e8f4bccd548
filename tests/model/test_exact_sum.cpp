// Exact block sums (model/exact_sum.hpp) and the bounds that choose their grids
// (model/block_bounds.hpp): the same bits in any order and grouping, and bounds that hold.

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/exact_sum.hpp"
#include "model/linear_model.hpp"
#include "base/spare_words.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace model = shardopt::model;

TEST_CASE("exact sums give the same bits in any order and grouping, unlike plain double sums") {
  std::mt19937 rng{3};
  std::normal_distribution<double> normal;
  std::vector<double> values(1000);
  for (auto& value : values)
    value = std::ldexp(normal(rng), static_cast<int>(rng() % 40) - 20);  // 40 binades
  double largest = 0;
  for (const double value : values)
    largest = std::max(largest, std::fabs(value));
  const std::vector<int> grid{model::grid_exponent(largest, 1000)};
  auto sum_of = [&](const std::vector<double>& order, std::size_t groups) {
    model::exact_sum total(grid);
    for (std::size_t g = 0; g < groups; ++g) {
      model::exact_sum part(grid);
      for (std::size_t i = g; i < order.size(); i += groups)
        part.deposit(0, order[i]);
      total.merge(part.words().data(), part.max_units());
    }
    Eigen::VectorXd out(1);
    total.to_doubles(out);
    return out[0];
  };
  const double reference = sum_of(values, 1);
  bool plain_differs = false;
  double plain_reference = 0;
  for (const double value : values)
    plain_reference += value;
  for (int trial = 0; trial < 20; ++trial) {
    auto order = values;
    std::shuffle(order.begin(), order.end(), rng);
    CHECK(sum_of(order, 1 + static_cast<std::size_t>(trial % 7)) == reference);
    double plain = 0;
    for (const double value : order)
      plain += value;
    plain_differs = plain_differs || plain != plain_reference;
  }
  CHECK(plain_differs);  // the property is not free
  // Accurate to the grid: 1000 roundings of at most half a unit each.
  long double exact = 0;
  for (const double value : values)
    exact += value;
  CHECK(std::fabs(static_cast<double>(exact) - reference) <= 500 * std::ldexp(1.0, grid[0]));
}

TEST_CASE("a block past 2^62 units is reported, and a non-finite value poisons the sum") {
  model::exact_sum sum(std::vector<int>{0, 0});
  sum.deposit(0, 1e18);
  CHECK(model::fits_grid(sum.max_units(), 4));
  CHECK_FALSE(model::fits_grid(sum.max_units(), 8));  // 8e18 > 2^62
  CHECK(model::grid_shift(sum.max_units(), 8) == 1);
  sum.deposit(1, std::nan(""));
  CHECK(std::isnan(sum.max_units()));
  CHECK_FALSE(model::fits_grid(sum.max_units(), 1));
}

TEST_CASE("every model's gradient and product grids bound its block sums, for thetas small and large") {
  const std::vector<model::model_shape> shapes{
    {model::model_kind::linear, 9, 1},
    {model::model_kind::logistic, 9, 1},
    {model::model_kind::softmax, 9, 3},
    {model::model_kind::svm, 9, 3},
    {model::model_kind::softmax, 9, 3, {6, 4}, model::activation::relu},
    {model::model_kind::linear, 9, 1, {5}, model::activation::tanh},
  };
  std::mt19937 rng{5};
  std::normal_distribution<double> normal;
  for (const auto& shape : shapes)
  for (bool sparse : {false, true}) {
    INFO(model::describe(shape) << (sparse ? " sparse" : " dense"));
    auto data = std::make_shared<model::dataset>(
      *shardopt::test::random_problem(2, 700, 9, shape.outputs > 1 ? 3 : 2, sparse));
    if (shape.outputs == 1)
      data->y = (2.0 * data->y.array() - 1.0).matrix();
    const model::row_range rows{0, 700};
    const auto block_rows = model::block_rows_for(700);
    const auto bounds = model::bounds_of(*data, rows, block_rows);
    model::block_evaluator evaluator{shape, data, rows, block_rows};
    CHECK(bounds.blocks == static_cast<std::int64_t>(evaluator.blocks().size()));
    const model::grid_plan plan{shape, bounds};
    std::uint64_t tag = 0;
    for (const double scale : {1e-6, 1.0, 30.0}) {
      const Eigen::VectorXd theta =
        Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return scale * normal(rng); });
      // The gradient's grids, and with the Hessian's diagonal (linear models).
      for (const bool diagonal : {false, true}) {
        if (diagonal && !model::has_hessian(shape))
          continue;
        std::vector<double> losses;
        const auto grad = evaluator.loss_grad(theta, plan.gradient(theta, diagonal), losses, ++tag);
        CHECK(model::fits_grid(grad.max_units, bounds.blocks));
        CHECK(grad.max_units > 0);
      }
      if (!model::has_hessian(shape))
        continue;
      const Eigen::VectorXd v =
        Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return scale * normal(rng); });
      const auto hv = evaluator.hessian_vector(v, plan.hessian_vector(v));
      CHECK(model::fits_grid(hv.max_units, bounds.blocks));
    }
  }
}

TEST_CASE("spare word buffers: a buffer given back serves a later request of about its size, and only such") {
  shardopt::release_spare_words();
  REQUIRE(shardopt::kept_word_buffers() == 0);
  const std::size_t size = std::size_t{1} << 20;
  auto words = shardopt::spare_words(size);
  REQUIRE(words.size() == size);
  CHECK(std::all_of(words.begin(), words.end(), [](std::int64_t w) { return w == 0; }));  // new: zeros
  const auto* memory = words.data();
  shardopt::give_back_words(std::move(words));
  CHECK(words.empty());
  CHECK(shardopt::kept_word_buffers() == 1);
  // A request over four times smaller, or larger than the buffer, gets a new one.
  CHECK(shardopt::spare_words(size / 4 - 1).data() != memory);
  CHECK(shardopt::spare_words(size + 1).data() != memory);
  CHECK(shardopt::kept_word_buffers() == 1);
  // A request of a quarter of it or more takes it, its length set to the request's.
  auto again = shardopt::spare_words(size / 4);
  CHECK(again.data() == memory);
  CHECK(again.size() == size / 4);
  CHECK(shardopt::kept_word_buffers() == 0);
  // Small buffers are not kept, and at most `kept_buffers` are: the ones given back last.
  shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words - 1));
  CHECK(shardopt::kept_word_buffers() == 0);
  for (std::size_t i = 0; i < shardopt::kept_buffers + 3; ++i)
    shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words + 100 - i));
  CHECK(shardopt::kept_word_buffers() == shardopt::kept_buffers);
  // The three given back first (the largest) were dropped: none holds their sizes now, and the
  // fourth is the largest.
  shardopt::spare_words(shardopt::smallest_kept_words + 98);
  CHECK(shardopt::kept_word_buffers() == shardopt::kept_buffers);
  CHECK(shardopt::spare_words(shardopt::smallest_kept_words + 97).capacity() == shardopt::smallest_kept_words + 97);
  CHECK(shardopt::kept_word_buffers() == shardopt::kept_buffers - 1);
  shardopt::release_spare_words();
  CHECK(shardopt::kept_word_buffers() == 0);
}

TEST_CASE("spare zeros: a kept buffer full of old words comes back as zeros, in the same memory") {
  shardopt::release_spare_words();
  const std::size_t size = std::size_t{1} << 16;
  auto words = shardopt::spare_zeros(size);
  REQUIRE(words.size() == size);
  CHECK(std::all_of(words.begin(), words.end(), [](std::int64_t w) { return w == 0; }));
  std::fill(words.begin(), words.end(), -7);
  const auto* memory = words.data();
  shardopt::give_back_words(std::move(words));
  auto again = shardopt::spare_zeros(size - 3);
  CHECK(again.data() == memory);
  CHECK(again.size() == size - 3);
  CHECK(std::all_of(again.begin(), again.end(), [](std::int64_t w) { return w == 0; }));
  shardopt::release_spare_words();
}

TEST_CASE("spare words: with keeping off (a node whose last driver left), a buffer given back is freed") {
  shardopt::release_spare_words();
  shardopt::keep_spare_words(false);
  shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words));
  CHECK(shardopt::kept_word_buffers() == 0);
  shardopt::keep_spare_words(true);
  shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words));
  CHECK(shardopt::kept_word_buffers() == 1);
  shardopt::release_spare_words();
}

TEST_CASE("a grid plan's table written on several threads is the one written on one") {
  // Features of scales 2^-30 to 2^30 and some zero, three outputs; cut into ranges of 25,000,
  // 8,334 and 4,096 features by 1, 3 and 8 threads (so a range's ends differ between them).
  const model::model_shape shape{model::model_kind::softmax, 200000, 3};
  std::mt19937 rng{8};
  std::uniform_int_distribution<int> binade{-30, 30};
  model::data_bounds bounds{Eigen::VectorXd(shape.features), 4, 64, 10};
  for (std::int64_t j = 0; j < shape.features; ++j)
    bounds.feature_max[j] = j % 11 == 0 ? 0.0 : std::ldexp(1.0 + (j % 7) / 8.0, binade(rng));
  const model::grid_plan one{shape, bounds, 1};
  const Eigen::VectorXd theta = Eigen::VectorXd::Constant(shape.dimension(), 0.5);
  const auto expected = one.gradient(theta, true);
  REQUIRE(expected.size() == static_cast<std::size_t>(2 * shape.dimension()));
  std::set<int> exponents;
  for (std::size_t i = 0; i < expected.size(); ++i)
    exponents.insert(expected.exponent(i));
  CHECK(exponents.size() > 20);  // the scales give entries many grids
  for (const unsigned threads : {2U, 3U, 8U}) {
    CAPTURE(threads);
    const model::grid_plan several{shape, bounds, threads};
    const auto found = several.gradient(theta, true);
    CHECK(found.base == expected.base);
    CHECK(*found.below == *expected.below);
  }
}
