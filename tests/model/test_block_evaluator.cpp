// model/block_evaluator.hpp: a shard's answers. Sparse answers, over the features a shard's rows
// touch, add up to one shard's answer bit for bit whatever the shards (blocks touching disjoint and
// overlapping columns); a shard that rebuilds an evaluation it did not serve answers products and
// lines with the bits of one that served it; the Hessian's diagonal is the diagonal of the
// products' matrix; the bounds an evaluator finds while numbering its features are bounds_of's.

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/exact_sum.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <memory>
#include <random>
#include <vector>

namespace model = shardopt::model;

namespace {

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
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end(), [](float a, float b) { return a + b; });
  x.makeCompressed();
  data->x = std::move(x);
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
    REQUIRE(whole.touched_features() == d);  // every feature: the layout reads the dataset's own indices
    std::vector<double> losses;
    const auto one = whole.loss_grad(theta, g, losses, 1);
    const auto one_product = whole.hessian_vector(v, h);
    const auto reference = added({one}, g);
    const auto reference_product = added({one_product}, h);
    CHECK(one.entries);  // sparse rows answer sparse sums
    for (int count = 1; count <= 7; ++count) {
      CAPTURE(count);
      std::vector<model::entry_sums> parts, products;
      std::size_t smaller = 0;
      for (const auto& rows : shards_of(n, block_rows, count)) {
        model::block_evaluator shard{shape, data, rows, block_rows};
        parts.push_back(shard.loss_grad(theta, g, losses, 1));
        products.push_back(shard.hessian_vector(v, h));
        smaller += parts.back().words.size() < one.words.size() ? 1 : 0;
      }
      CHECK(added(parts, g) == reference);
      CHECK(added(products, h) == reference_product);
      if (count > 1)
        CHECK(smaller > 0);  // a shard on one side of the split answers for fewer entries
    }
  }
}

TEST_CASE("an evaluator's bounds are those bounds_of finds over its rows, sparse and dense") {
  const std::int64_t n = 900, d = 400;
  const auto sparse = halves(n, d, 450, 40, 11);
  auto dense = std::make_shared<model::dataset>();
  dense->x = model::dense_features(sparse->sparse());
  dense->y = sparse->y;
  const auto block_rows = model::block_rows_for(n);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  for (const auto& data : {sparse, std::shared_ptr<const model::dataset>(dense)})
    for (const model::row_range rows : {model::row_range{0, n}, model::row_range{0, 450}, model::row_range{300, 800},
                                        model::row_range{450, 450}}) {
      CAPTURE(data->is_sparse());
      CAPTURE(rows.begin);
      CAPTURE(rows.end);
      const model::block_evaluator evaluator{shape, data, rows, block_rows};
      const auto expected = model::bounds_of(*data, rows, block_rows);
      const auto found = evaluator.bounds();
      CHECK(found.feature_max == expected.feature_max);
      CHECK(found.max_label == expected.max_label);
      CHECK(found.blocks == expected.blocks);
      CHECK(found.block_rows == expected.block_rows);
      CHECK(found.bits == expected.bits);
      if (rows.size() > 0)
        CHECK(found.feature_max.maxCoeff() > 0);
    }
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
