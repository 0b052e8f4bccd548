// model/block_evaluator.hpp: a shard's answers. Sparse answers, over the features a shard's rows
// touch, add up to one shard's answer bit for bit whatever the shards (blocks touching disjoint and
// overlapping columns; layouts that renumber the touched features, and layouts that keep every
// feature and answer densely); a shard that rebuilds an evaluation it did not serve answers
// products and lines with the bits of one that served it; the Hessian's diagonal is the diagonal of the
// products' matrix; the bounds an evaluator finds while numbering its features are bounds_of's.

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/exact_sum.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

namespace model = shardopt::model;

namespace {

/// Sets `data`'s features to the n x d sparse rows `entries` (repeated entries added).
void set_rows(model::dataset& data, std::int64_t n, std::int64_t d, const std::vector<Eigen::Triplet<float>>& entries) {
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end(), [](float a, float b) { return a + b; });
  x.makeCompressed();
  data.x = std::move(x);
}

/// Sparse rows whose features depend on the row: rows below `split` use features 0..d/2-1, rows
/// from it on features d/2..d-1 (blocks on either side touch disjoint columns), and every
/// `shared`-th row also a feature of the other half (overlapping columns). Logistic labels.
std::shared_ptr<const model::dataset> halves(std::int64_t n, std::int64_t d, std::int64_t split,
                                            std::int64_t shared, std::uint32_t seed) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t low = i < split ? 0 : d / 2;
    for (int k = 0; k < 5; ++k)
      entries.emplace_back(static_cast<int>(i), static_cast<int>(low + static_cast<std::int64_t>(rng() % (d / 2))),
                           normal(rng));
    if (i % shared == 0)
      entries.emplace_back(static_cast<int>(i), static_cast<int>((low + d / 2) % d), 1.0f);
    data->y[i] = rng() % 2 == 0 ? 1.0 : -1.0;
  }
  set_rows(*data, n, d, entries);
  return data;
}

/// The words of a sum of answers on grid `g`, dense.
std::vector<std::int64_t> added(const std::vector<model::entry_sums>& answers, const model::grid& g) {
  model::exact_sum total(g);
  for (const auto& answer : answers) {
    REQUIRE(model::entries_fit(answer, g.size()));
    total.merge(answer);
  }
  return total.words();
}

/// Shards of whole blocks: `count` of them over rows 0..n.
std::vector<model::row_range> shards_of(std::int64_t n, std::int64_t block_rows, int count) {
  const auto blocks = model::block_count(n, block_rows);
  std::vector<model::row_range> out;
  for (int s = 0; s < count; ++s) {
    const auto first = blocks * s / count * block_rows;
    const auto last = std::min(n, blocks * (s + 1) / count * block_rows);
    if (last > first)
      out.push_back({first, last});
  }
  return out;
}


/// A logistic model's theta and v drawn from `rng`, the grids of an evaluation with the Hessian's
/// diagonal and of a product there, and one evaluator's words for each over all n rows: what
/// parts of the rows must add up to, bit for bit.
struct whole_answers {
  model::model_shape shape;
  Eigen::VectorXd theta, v;
  model::grid g, h;
  std::vector<std::int64_t> evaluation, product;
};

whole_answers answers_over_all_rows(const std::shared_ptr<model::dataset>& data, std::int64_t n, std::int64_t d,
                                    std::int64_t block_rows, std::mt19937& rng) {
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  const model::grid_plan plan{shape, model::bounds_of(*data, {0, n}, block_rows)};
  std::normal_distribution<double> gauss;
  Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.2 * gauss(rng); });
  Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return gauss(rng); });
  auto g = plan.gradient(theta, true);
  auto h = plan.hessian_vector(v);
  std::vector<double> losses;
  model::block_evaluator whole{shape, data, {0, n}, block_rows};
  auto evaluation = added({whole.loss_grad(theta, g, losses, 1)}, g);
  auto product = added({whole.hessian_vector(v, h)}, h);
  return {shape, std::move(theta), std::move(v), std::move(g), std::move(h), std::move(evaluation), std::move(product)};
}

} // namespace

TEST_CASE("sparse answers over the touched features add up to one shard's answer, bit for bit, on 1 to 7 shards") {
  const std::int64_t n = 1400, d = 600;
  for (const auto& [kind, outputs] : std::vector<std::pair<model::model_kind, std::int64_t>>{
         {model::model_kind::logistic, 1}, {model::model_kind::softmax, 3}}) {
    CAPTURE(model::to_string(kind));
    auto data = std::const_pointer_cast<model::dataset>(halves(n, d, 700, 50, 4));
    if (outputs > 1)
      for (Eigen::Index i = 0; i < data->y.size(); ++i)
        data->y[i] = static_cast<double>(i % outputs);
    const model::model_shape shape{kind, d, outputs};
    const auto block_rows = model::block_rows_for(n);
    const auto bounds = model::bounds_of(*data, {0, n}, block_rows);
    const model::grid_plan plan{shape, bounds};
    std::mt19937 rng{8};
    std::normal_distribution<double> normal;
    const Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.1 * normal(rng); });
    const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return normal(rng); });
    const auto g = plan.gradient(theta, true);
    const auto h = plan.hessian_vector(v);
    model::block_evaluator whole{shape, data, {0, n}, block_rows};
    REQUIRE(whole.touched_features() == d);
    REQUIRE_FALSE(whole.renumbered());  // every feature touched: the layout reads the dataset's own indices
    std::vector<double> losses;
    const auto one = whole.loss_grad(theta, g, losses, 1);
    const auto one_product = whole.hessian_vector(v, h);
    const auto reference = added({one}, g);
    const auto reference_product = added({one_product}, h);
    CHECK(one.dense());  // ... and answers for every entry
    for (int count = 1; count <= 7; ++count) {
      CAPTURE(count);
      std::vector<model::entry_sums> parts, products;
      std::size_t smaller = 0;
      for (const auto& rows : shards_of(n, block_rows, count)) {
        model::block_evaluator shard{shape, data, rows, block_rows};
        parts.push_back(shard.loss_grad(theta, g, losses, 1));
        products.push_back(shard.hessian_vector(v, h));
        CHECK(shard.renumbered() == !parts.back().dense());  // renumbered rows answer sparse sums
        smaller += parts.back().words.size() < one.words.size() ? 1 : 0;
      }
      CHECK(added(parts, g) == reference);
      CHECK(added(products, h) == reference_product);
      if (count > 1)
        CHECK(smaller > 0);  // a shard on one side of the split answers for fewer entries
    }
  }
}

TEST_CASE("the bounds evaluators add while numbering their features are those bounds_of finds, over any parts in any order") {
  const std::int64_t n = 900, d = 400;
  auto sparse = std::const_pointer_cast<model::dataset>(halves(n, d, 450, 40, 11));
  {
    // Rows 600..899 touch every feature (a layout that reads the dataset's own indices, from a
    // row past the first), with stored zeros and a negative largest value.
    std::vector<Eigen::Triplet<float>> entries;
    const auto& x = sparse->sparse();
    for (std::int64_t i = 0; i < 600; ++i)
      for (auto it = model::sparse_view::InnerIterator(x, i); it; ++it)
        entries.emplace_back(static_cast<int>(i), static_cast<int>(it.col()), it.value());
    for (std::int64_t j = 0; j < d; ++j)
      entries.emplace_back(static_cast<int>(600 + j % 300), static_cast<int>(j),
                           j % 7 == 0 ? 0.0F : (j % 5 == 0 ? -9.5F : 0.25F));
    model::sparse_features rebuilt(n, d);
    rebuilt.setFromTriplets(entries.begin(), entries.end());
    rebuilt.makeCompressed();
    sparse->x = std::move(rebuilt);
  }
  const auto block_rows = model::block_rows_for(n);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  // Parts of whole blocks (as shards are), the last from row 600 on.
  const auto cut = [&](std::int64_t row) { return row / block_rows * block_rows; };
  const std::vector<model::row_range> parts{{0, cut(450)}, {cut(450), cut(600)}, {cut(600), n}};
  {
    model::block_evaluator tail{shape, sparse, {600, n}, block_rows};
    REQUIRE(tail.touched_features() == d);
  }
  for (const auto& rows : std::vector<model::row_range>{{0, n}, {0, 450}, {300, 800}, {600, n}, {450, 450}}) {
    CAPTURE(rows.begin);
    CAPTURE(rows.end);
    model::block_evaluator evaluator{shape, sparse, rows, block_rows};
    model::data_bounds found{{}, 0, block_rows, 0};
    evaluator.add_bounds_to(found);
    const auto expected = model::bounds_of(*sparse, rows, block_rows);
    CHECK(found.feature_max == expected.feature_max);
    CHECK(found.max_label == expected.max_label);
    CHECK(found.max_row_norm == expected.max_row_norm);
    CHECK(found.blocks == expected.blocks);
    CHECK(found.bits == expected.bits);
    model::data_bounds again{{}, 0, block_rows, 0};  // a second time: bounds_of's pass, the same
    evaluator.add_bounds_to(again);
    CHECK(again.feature_max == expected.feature_max);
    CHECK(again.max_row_norm == expected.max_row_norm);
  }
  // The parts in both orders add up to the bounds of all rows.
  const auto whole = model::bounds_of(*sparse, {0, n}, block_rows);
  for (const bool reversed : {false, true}) {
    model::data_bounds total{{}, 0, block_rows, 0};
    for (std::size_t k = 0; k < parts.size(); ++k) {
      model::block_evaluator evaluator{shape, sparse, parts[reversed ? parts.size() - 1 - k : k], block_rows};
      evaluator.add_bounds_to(total);
    }
    CHECK(total.feature_max == whole.feature_max);
    CHECK(total.max_label == whole.max_label);
    CHECK(total.max_row_norm == whole.max_row_norm);
    CHECK(total.blocks == whole.blocks);
    CHECK(total.bits == whole.bits);
  }
  CHECK(whole.feature_max.maxCoeff() == 9.5);
  {
    // The rows' largest norm, row by row here.
    double most = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double squares = 0;
      for (auto it = model::sparse_view::InnerIterator(sparse->sparse(), i); it; ++it)
        squares += static_cast<double>(it.value()) * static_cast<double>(it.value());
      most = std::max(most, squares);
    }
    CHECK(whole.max_row_norm == std::sqrt(most));
    CHECK(whole.max_row_norm > 0);
  }
  // All parts at once, their maxima merged range by range on 1 and 3 threads: the same bounds. A
  // part whose maxima were read already (and an empty one) adds its own by a pass, as before.
  for (const unsigned threads : {1U, 3U}) {
    for (const bool one_read : {false, true}) {
      CAPTURE(threads);
      CAPTURE(one_read);
      std::vector<model::block_evaluator> evaluators;
      for (const auto& rows : parts)
        evaluators.emplace_back(shape, sparse, rows, block_rows);
      evaluators.emplace_back(shape, sparse, model::row_range{cut(450), cut(450)}, block_rows);
      if (one_read) {
        model::data_bounds elsewhere{{}, 0, block_rows, 0};
        evaluators[1].add_bounds_to(elsewhere);
      }
      std::vector<model::block_evaluator*> all;
      for (auto& e : evaluators)
        all.push_back(&e);
      model::data_bounds total{{}, 0, block_rows, 0};
      model::block_evaluator::add_bounds_of(all, total, threads);
      CHECK(total.feature_max == whole.feature_max);
      CHECK(total.max_label == whole.max_label);
      CHECK(total.max_row_norm == whole.max_row_norm);
      CHECK(total.blocks == whole.blocks);
      CHECK(total.bits == whole.bits);
      model::data_bounds again{{}, 0, block_rows, 0};  // every maximum read: bounds_of's passes
      model::block_evaluator::add_bounds_of(all, again, threads);
      CHECK(again.feature_max == whole.feature_max);
      CHECK(again.max_row_norm == whole.max_row_norm);
    }
    // In batches, as a driver merges them (the later ones raised into the maxima already there).
    std::vector<model::block_evaluator> evaluators;
    for (const auto& rows : parts)
      evaluators.emplace_back(shape, sparse, rows, block_rows);
    model::data_bounds total{{}, 0, block_rows, 0};
    model::block_evaluator::add_bounds_of({&evaluators[2]}, total, threads);
    model::block_evaluator::add_bounds_of({&evaluators[0], &evaluators[1]}, total, threads);
    CHECK(total.feature_max == whole.feature_max);
    CHECK(total.max_label == whole.max_label);
    CHECK(total.max_row_norm == whole.max_row_norm);
    CHECK(total.blocks == whole.blocks);
  }
}

TEST_CASE("a product over wide sparse rows keeps its precision: its grid comes from the rows' largest norm") {
  // 80,000 rows of 8 non-zeros over 2^18 features (each touched about 2.4 times), logistic, and a
  // direction v over every feature, as CG's are. A score's bound summed over the features,
  // sum_j |v_j| max_j, is about 2^16 times a typical |x . v|; ||x|| ||v|| about 2^11. Each term of
  // a product is rounded to 2^-(55 - log2 rows) of its bound; the errors, random, partly cancel
  // in a sum. A plain double product is the reference.
  const std::int64_t n = 80000, d = std::int64_t{1} << 18;
  const std::shared_ptr<const model::dataset> data = shardopt::test::sparse_rows(n, d, d, 23);
  std::mt19937 rng{24};
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  const auto block_rows = model::block_rows_for(n);
  const auto bounds = model::bounds_of(*data, {0, n}, block_rows);
  const model::grid_plan plan{shape, bounds};
  model::block_evaluator evaluator{shape, data, {0, n}, block_rows};
  std::normal_distribution<double> gaussian;
  const Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.1 * gaussian(rng); });
  const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return gaussian(rng); });
  std::vector<double> losses;
  evaluator.loss_grad(theta, plan.gradient(theta), losses, 1);  // the scores the product uses
  const auto g = plan.hessian_vector(v);
  model::exact_sum product(g);
  const auto answer = evaluator.hessian_vector(v, g);
  CHECK(model::fits_grid(answer.max_units, bounds.blocks));
  product.merge(answer);
  Eigen::VectorXd exact(shape.dimension());
  product.to_doubles(exact);
  // The same product in doubles: sum_i x_i D_i (x_i . w_v + b_v), and the bias's sum_i D_i (...).
  const auto x = data->sparse();
  Eigen::VectorXd plain = Eigen::VectorXd::Zero(shape.dimension());
  for (std::int64_t i = 0; i < n; ++i) {
    double z = theta[d], u = v[d];
    for (auto it = model::sparse_view::InnerIterator(x, i); it; ++it) {
      z += it.value() * theta[it.col()];
      u += it.value() * v[it.col()];
    }
    const double s = 1.0 / (1.0 + std::exp(-z));
    const double r = s * (1.0 - s) * u;
    for (auto it = model::sparse_view::InnerIterator(x, i); it; ++it)
      plain[it.col()] += it.value() * r;
    plain[d] += r;
  }
  const double error = (exact - plain).norm() / plain.norm();
  CAPTURE(error);
  CHECK(error < 1e-9);  // measured 1.3e-10; 1.7e-8 from the sum bound alone
  // A row's norm lies between its largest |value| and sqrt(8) times it.
  CHECK(bounds.max_row_norm >= bounds.feature_max.maxCoeff());
  CHECK(bounds.max_row_norm <= std::sqrt(8.0) * bounds.feature_max.maxCoeff());
  // Dense rows: the same norm, row by row.
  const auto dense = shardopt::test::random_problem(4, 50, 7, 2, false);
  double most = 0;
  for (std::int64_t i = 0; i < 50; ++i)
    most = std::max(most, dense->dense().row(i).cast<double>().squaredNorm());
  CHECK(model::bounds_of(*dense, {0, 50}, 1).max_row_norm == doctest::Approx(std::sqrt(most)).epsilon(1e-15));
  CHECK(model::bounds_of(*dense, {0, 50}, 1).max_row_norm > 0);
}

TEST_CASE("a layout that reads the dataset's own indices from a row past the first answers with the bits of renumbered ones") {
  // Rows 200..399 touch every feature; rows 0..199 only the first half.
  const std::int64_t n = 400, d = 120;
  std::mt19937 rng{21};
  std::normal_distribution<float> normal;
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t span = i < 200 ? d / 2 : d;
    for (int k = 0; k < 4; ++k)
      entries.emplace_back(static_cast<int>(i), static_cast<int>(rng() % span), normal(rng));
    if (i >= 200)
      entries.emplace_back(static_cast<int>(i), static_cast<int>((i - 200) % d), 1.0F);
    data->y[i] = rng() % 2 == 0 ? 1.0 : -1.0;
  }
  set_rows(*data, n, d, entries);
  const auto block_rows = model::block_rows_for(n);
  const auto all = answers_over_all_rows(data, n, d, block_rows, rng);
  const auto& [shape, theta, v, g, h, reference, reference_product] = all;
  std::vector<double> losses;
  // Splits on whole blocks (as shards are): the second part starts past the first row and touches
  // every feature (rows from 200 on touch one feature each in turn, d of them before row 400).
  const auto up = (200 + block_rows - 1) / block_rows * block_rows;
  REQUIRE(up <= n - d);
  for (const std::int64_t split : {up, 100 / block_rows * block_rows}) {
    CAPTURE(split);
    model::block_evaluator first{shape, data, {0, split}, block_rows};
    model::block_evaluator second{shape, data, {split, n}, block_rows};
    CHECK(first.touched_features() < d);
    CHECK(second.touched_features() == d);
    const auto a = first.loss_grad(theta, g, losses, 1);
    const auto b = second.loss_grad(theta, g, losses, 1);
    CHECK(added({a, b}, g) == reference);
    CHECK(added({first.hessian_vector(v, h), second.hessian_vector(v, h)}, h) == reference_product);
  }
}

TEST_CASE("a layout that keeps every feature, untouched ones among them, answers with the bits of renumbered ones") {
  // Rows 0..2999 touch features 0..d/2-1 only (half the dimension: renumbered); the rest touch
  // every feature but the last four (nearly all: every feature kept, the answer dense).
  const std::int64_t n = 6000, d = 256;
  std::mt19937 rng{5};
  std::normal_distribution<float> normal;
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t span = i < 3000 ? d / 2 : d - 4;
    for (int k = 0; k < 6; ++k)
      entries.emplace_back(static_cast<int>(i), static_cast<int>(rng() % span), normal(rng));
    data->y[i] = rng() % 3 == 0 ? 1.0 : -1.0;
  }
  set_rows(*data, n, d, entries);
  std::normal_distribution<double> gauss;
  std::vector<double> losses;
  for (const auto& [kind, outputs, diagonal] : std::vector<std::tuple<model::model_kind, std::int64_t, bool>>{
         {model::model_kind::logistic, 1, false}, {model::model_kind::logistic, 1, true},
         {model::model_kind::softmax, 3, false}, {model::model_kind::softmax, 3, true}}) {
    CAPTURE(model::to_string(kind));
    CAPTURE(diagonal);
    if (outputs > 1)
      for (Eigen::Index i = 0; i < data->y.size(); ++i)
        data->y[i] = static_cast<double>(i % outputs);
    const model::model_shape shape{kind, d, outputs};
    const auto block_rows = model::block_rows_for(n);
    const model::grid_plan plan{shape, model::bounds_of(*data, {0, n}, block_rows)};
    const Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.2 * gauss(rng); });
    const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return gauss(rng); });
    const auto g = plan.gradient(theta, diagonal);
    const auto h = plan.hessian_vector(v);
    model::block_evaluator whole{shape, data, {0, n}, block_rows};
    REQUIRE(whole.touched_features() == d - 4);
    REQUIRE_FALSE(whole.renumbered());
    const auto answer = whole.loss_grad(theta, g, losses, 1);
    CHECK(answer.dense());
    CHECK(answer.words.size() == g.size());
    const auto reference = added({answer}, g);
    const auto reference_product = added({whole.hessian_vector(v, h)}, h);
    // The untouched features' words are zero, and the others are not all zero.
    for (std::int64_t k = 0; k < outputs; ++k) {
      const auto first = reference.begin() + k * d;
      CHECK(std::count(first + (d - 4), first + d, 0) == 4);
      CHECK(std::count(first, first + (d - 4), 0) < d / 8);
    }
    for (const int count : {2, 3, 5}) {
      CAPTURE(count);
      std::vector<model::entry_sums> parts, products;
      bool some_renumbered = false, some_whole = false;
      for (const auto& rows : shards_of(n, block_rows, count)) {
        model::block_evaluator part{shape, data, rows, block_rows};
        (part.renumbered() ? some_renumbered : some_whole) = true;
        parts.push_back(part.loss_grad(theta, g, losses, 1));
        products.push_back(part.hessian_vector(v, h));
      }
      CHECK(some_renumbered);
      CHECK(some_whole);
      CHECK(added(parts, g) == reference);
      CHECK(added(products, h) == reference_product);
    }
  }
}

TEST_CASE("a layout keeps every feature when at most a third is untouched and that costs no more bytes, with the bits of one shard") {
  // Three parts of whole blocks over d = 1200 features: the first touches features 0..899 with
  // many non-zeros (a quarter untouched: every feature kept, as numbering would cost more bytes);
  // the second 0..599 (half untouched: numbered, a dense answer being longer on the wire); the
  // third 380..1199, each once (under a third untouched, but numbering 820 non-zeros costs fewer
  // bytes than 380 untouched records and words: numbered).
  const std::int64_t d = 1200;
  // The parts' bounds on whole blocks of the rows' own block size (which depends on the count).
  std::int64_t block_rows = 0, a = 0, b = 0, n = 2520;
  for (int tries = 0; tries < 8 && block_rows != model::block_rows_for(n); ++tries) {
    block_rows = model::block_rows_for(n);
    a = (1000 + block_rows - 1) / block_rows * block_rows;
    b = a + (700 + block_rows - 1) / block_rows * block_rows;
    n = b + 820;
  }
  REQUIRE(block_rows == model::block_rows_for(n));
  std::mt19937 rng{17};
  std::normal_distribution<float> normal;
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i < b) {
      const std::int64_t span = i < a ? 900 : 600;
      entries.emplace_back(static_cast<int>(i), static_cast<int>(i % span), normal(rng));
      for (int k = 0; k < 8; ++k)
        entries.emplace_back(static_cast<int>(i), static_cast<int>(rng() % span), normal(rng));
    } else {
      entries.emplace_back(static_cast<int>(i), static_cast<int>(380 + (i - b)), normal(rng));
    }
    data->y[i] = rng() % 2 == 0 ? 1.0 : -1.0;
  }
  set_rows(*data, n, d, entries);
  REQUIRE(model::block_evaluator({model::model_kind::logistic, d, 1}, data, {0, n}, block_rows).touched_features() == d);
  const auto all = answers_over_all_rows(data, n, d, block_rows, rng);
  const auto& [shape, theta, v, g, h, reference, reference_product] = all;
  std::vector<double> losses;
  model::block_evaluator first{shape, data, {0, a}, block_rows};
  model::block_evaluator second{shape, data, {a, b}, block_rows};
  model::block_evaluator third{shape, data, {b, n}, block_rows};
  CHECK(first.touched_features() == 900);
  CHECK(second.touched_features() == 600);
  CHECK(third.touched_features() == 820);
  CHECK_FALSE(first.renumbered());
  CHECK(second.renumbered());
  CHECK(third.renumbered());
  const auto answer = first.loss_grad(theta, g, losses, 1);
  CHECK(answer.dense());
  CHECK(answer.words.size() == g.size());
  CHECK(added({answer, second.loss_grad(theta, g, losses, 1), third.loss_grad(theta, g, losses, 1)}, g) == reference);
  CHECK(added({first.hessian_vector(v, h), second.hessian_vector(v, h), third.hessian_vector(v, h)}, h)
        == reference_product);
}

TEST_CASE("a shard that rebuilds an evaluation it did not serve answers products and lines with the bits of one that served it") {
  // Dense rows in blocks that are not a multiple of the 256-row chunks (the dense products' sums
  // depend on the chunk), and sparse rows.
  for (const bool sparse : {false, true}) {
    CAPTURE(sparse);
    const std::int64_t n = 3000;  // blocks of 46 rows
    const auto data = shardopt::test::random_problem(12, n, 9, 3, sparse);
    const model::model_shape shape{model::model_kind::softmax, 9, 3};
    const auto block_rows = model::block_rows_for(n);
    REQUIRE(block_rows % 256 != 0);
    const model::grid_plan plan{shape, model::bounds_of(*data, {0, n}, block_rows)};
    std::mt19937 rng{3};
    std::normal_distribution<double> normal;
    const auto random = [&] { return Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.5 * normal(rng); }); };
    const Eigen::VectorXd a = random(), b = random(), v = random();
    model::block_evaluator served{shape, data, {0, n}, block_rows};
    model::block_evaluator rebuilt{shape, data, {0, n}, block_rows};
    std::vector<double> losses;
    served.loss_grad(a, plan.gradient(a), losses, 1);
    served.loss_grad(b, plan.gradient(b, true), losses, 2);
    rebuilt.recall(a, 1);
    rebuilt.recall(b, 2);
    CHECK(rebuilt.previous() == std::optional<std::uint64_t>{1});
    CHECK(rebuilt.latest() == std::optional<std::uint64_t>{2});
    const auto h = plan.hessian_vector(v);
    CHECK(served.hessian_vector(v, h).words == rebuilt.hessian_vector(v, h).words);
    std::vector<double> along_served, along_rebuilt;
    served.line_losses({0.5, 1.0, 0.125}, along_served);
    rebuilt.line_losses({0.5, 1.0, 0.125}, along_rebuilt);
    CHECK(along_served == along_rebuilt);
    CHECK(along_served.size() == 3 * served.blocks().size());
  }
}

TEST_CASE("the Hessian's diagonal is the diagonal of the products' matrix, for every linear model, dense and sparse") {
  for (const auto& [kind, outputs] : std::vector<std::pair<model::model_kind, std::int64_t>>{
         {model::model_kind::logistic, 1}, {model::model_kind::softmax, 3}, {model::model_kind::svm, 3},
         {model::model_kind::linear, 1}}) {
    for (const bool sparse : {false, true}) {
      CAPTURE(model::to_string(kind));
      CAPTURE(sparse);
      auto data = std::const_pointer_cast<model::dataset>(shardopt::test::random_problem(5, 300, 6, 3, sparse));
      if (outputs == 1)
        for (Eigen::Index i = 0; i < data->y.size(); ++i)
          data->y[i] = data->y[i] > 0 ? 1.0 : -1.0;
      const model::model_shape shape{kind, 6, outputs};
      const auto block_rows = model::block_rows_for(300);
      const model::grid_plan plan{shape, model::bounds_of(*data, {0, 300}, block_rows)};
      model::block_evaluator evaluator{shape, data, {0, 300}, block_rows};
      const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.4, 0.3);
      const auto g = plan.gradient(theta, true);
      std::vector<double> losses;
      model::exact_sum sum(g);
      sum.merge(evaluator.loss_grad(theta, g, losses, 1));
      const auto n = shape.dimension();
      Eigen::VectorXd diagonal(n);
      sum.to_doubles(diagonal, n, 2 * n, n);
      // Column i of the Hessian (of the loss sum) is its product with e_i.
      for (Eigen::Index i = 0; i < n; ++i) {
        const Eigen::VectorXd e = Eigen::VectorXd::Unit(n, i);
        model::exact_sum product(plan.hessian_vector(e));
        product.merge(evaluator.hessian_vector(e, plan.hessian_vector(e)));
        Eigen::VectorXd column(n);
        product.to_doubles(column);
        CAPTURE(i);
        CHECK(std::abs(diagonal[i] - column[i]) <= 1e-9 * std::max(1.0, std::abs(column[i])));
      }
    }
  }
}
