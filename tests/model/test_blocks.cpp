/// Sums over row selections (model/linear_model.hpp): contiguous blocks and index lists against one
/// call over all rows, the same bits twice, dense against sparse storage, and scores against
/// W^T x + b.

#include "linear_fixtures.hpp"

#include <doctest/doctest.h>

#include <Eigen/Cholesky>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace shardopt::test::linear;

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
