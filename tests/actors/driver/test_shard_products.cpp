// Hessian-vector products over shard actors: equal to the local objective's for any split, the
// same bits for K = 1..7 shards of whole blocks for every model, and a shard lost before a product
// recreated with its curvature.

#include "actors/driver/peers.hpp"
#include "actors/wire/shard.hpp"
#include "io/partition.hpp"
#include "model/block_bounds.hpp"
#include "model/local_objective.hpp"
#include "model/restriction.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/owlqn.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "support/problems.hpp"
#include "support/shard_set.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using namespace std::chrono_literals;

namespace {

using shardopt::test::random_blocks;
using shardopt::test::relative_error;
using shardopt::test::shard_set;
using shardopt::test::spawn_shards;

} // namespace

TEST_CASE("Hessian-vector products over K shard actors equal the local objective's, K = 1..7, dense and sparse") {
  actors::runtime rt{actors::runtime_options::local(2)};
  for (const auto kind : {model::model_kind::softmax, model::model_kind::svm})
  for (bool sparse : {false, true}) {
    const model::model_shape shape{kind, 13, 4};
    INFO(model::describe(shape) << (sparse ? " sparse" : " dense"));
    std::mt19937 rng{20261123};
    const auto data = shardopt::test::random_problem(8, 701, 13, 4, sparse);
    std::normal_distribution<double> normal;
    const Eigen::VectorXd theta =
      Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.3 * normal(rng); });
    const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return normal(rng); });
    model::local_objective whole{shape, data, 0.01};
    Eigen::VectorXd grad;
    whole.evaluate(theta, grad);
    Eigen::VectorXd expected;
    REQUIRE(whole.hessian_vector(v, expected).ok());
    for (std::int64_t k = 1; k <= 7; ++k) {
      INFO("K = " << k);
      const auto blocks = random_blocks(rng, 701, k);
      auto sharded = actors::sharded_objective::local(rt, shape, 0.01, data, blocks, 30s);
      Eigen::VectorXd hv;
      CHECK_FALSE(sharded.hessian_vector(v, hv).ok());  // no evaluation yet
      REQUIRE(sharded.evaluate(theta, grad).ok());
      REQUIRE(sharded.hessian_vector(v, hv).ok());
      CHECK(relative_error(hv, expected) <= 1e-12);
      // The local objective over the same blocks adds them in the same order: the same bits.
      model::local_objective same_blocks{shape, data, 0.01, blocks};
      same_blocks.evaluate(theta, grad);
      Eigen::VectorXd local_hv;
      REQUIRE(same_blocks.hessian_vector(v, local_hv).ok());
      CHECK(std::memcmp(hv.data(), local_hv.data(), sizeof(double) * hv.size()) == 0);
    }
  }
}

TEST_CASE("a shard lost before a product is recreated, rebuilds its curvature at the evaluated theta, and the product is unchanged") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(9, 150, 5, 3, true);
  const model::model_shape shape{model::model_kind::softmax, 5, 3};
  const std::vector<model::row_range> blocks{{0, 50}, {50, 100}, {100, 150}};
  const auto token = actors::access_token::random();
  auto set = spawn_shards(rt, shape, data, blocks, token);
  const auto& shards = set.shards;
  auto objective = actors::make_sharded_objective(
    rt, shape, 0.01, set.shards, set.shares, set.bounds, token, 10s,
    [&](std::size_t i) -> shardopt::result<actors::shard_actor> {
      return actors::spawn_shard(rt.system(), shape, data, blocks[i], set.layouts[i], token);
    });
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.2, 0.3);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, -0.5);
  Eigen::VectorXd grad;
  REQUIRE(objective.evaluate(theta, grad).ok());
  Eigen::VectorXd before;
  REQUIRE(objective.hessian_vector(v, before).ok());

  caf::scoped_actor killer{rt.system()};
  killer->monitor(shards[1]);
  killer->send_exit(shards[1], caf::exit_reason::kill);
  killer->receive([](const caf::down_msg&) {});
  Eigen::VectorXd after;
  REQUIRE(objective.hessian_vector(v, after).ok());
  CHECK(objective.recreated_shards() == 1);
  CHECK(std::memcmp(before.data(), after.data(), sizeof(double) * before.size()) == 0);
  // The fresh shard served the product: the next one needs no theta, and still agrees.
  Eigen::VectorXd again;
  REQUIRE(objective.hessian_vector(v, again).ok());
  CHECK(std::memcmp(before.data(), again.data(), sizeof(double) * before.size()) == 0);
}

TEST_CASE("the objective, gradient and products are the same bits for K = 1..7 shards of whole blocks and equal the local objective's, for every model") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const std::vector<model::model_shape> shapes{
    {model::model_kind::linear, 13, 1},
    {model::model_kind::logistic, 13, 1},
    {model::model_kind::softmax, 13, 4},
    {model::model_kind::svm, 13, 4},
    {model::model_kind::softmax, 13, 4, {7, 5}, model::activation::tanh},
  };
  for (const auto& shape : shapes)
  for (bool sparse : {false, true}) {
    INFO(model::describe(shape) << (sparse ? " sparse" : " dense"));
    // 1,500 rows: 300 blocks of 5 rows; labels fit every model (softmax/svm classes, +-1 binary).
    auto data = std::make_shared<model::dataset>(*shardopt::test::random_problem(11, 1500, 13, shape.outputs > 1 ? 4 : 2, sparse));
    if (shape.outputs == 1)
      data->y = (2.0 * data->y.array() - 1.0).matrix();
    std::mt19937 rng{7};
    std::normal_distribution<double> normal;
    const Eigen::VectorXd theta =
      Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.5 * normal(rng); });
    const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return normal(rng); });
    model::local_objective whole{shape, data, 0.01};
    Eigen::VectorXd expected_grad;
    const double expected = whole.evaluate(theta, expected_grad);
    Eigen::VectorXd expected_hv;
    const bool products = model::has_hessian(shape);
    if (products)
      REQUIRE(whole.hessian_vector(v, expected_hv).ok());
    for (std::int64_t k = 1; k <= 7; ++k) {
      INFO("K = " << k);
      auto sharded = actors::sharded_objective::local(
        rt, shape, 0.01, data, shardopt::io::partition_blocks(data->rows(), k), 30s);
      Eigen::VectorXd grad;
      auto f = sharded.evaluate(theta, grad);
      REQUIRE(f.ok());
      CHECK(std::memcmp(&*f, &expected, sizeof(double)) == 0);
      CHECK(std::memcmp(grad.data(), expected_grad.data(), sizeof(double) * grad.size()) == 0);
      if (products) {
        Eigen::VectorXd hv;
        REQUIRE(sharded.hessian_vector(v, hv).ok());
        CHECK(std::memcmp(hv.data(), expected_hv.data(), sizeof(double) * hv.size()) == 0);
      }
    }
    // And the exact sums are accurate: within 1e-13 of a plain double sum over all rows (dense
    // data, rounded once per block on 62-bit grids); sparse data rounds every term on 55-bit grids
    // (exact_sum.hpp), so each entry is within half a unit per row (divided by the rows) of it.
    Eigen::VectorXd plain(shape.dimension());
    const double loss = model::loss_grad_sum(shape, *data, model::row_range{0, data->rows()}, theta, plain);
    const double plain_f = model::finish_objective(shape, 0.01, data->rows(), loss, theta, plain);
    CHECK(std::abs(plain_f - expected) <= 1e-13 * std::abs(expected));
    if (!sparse || shape.is_network()) {
      CHECK(relative_error(expected_grad, plain) <= 1e-13);
    } else {
      const auto block_rows = model::block_rows_for(data->rows());
      const model::exact_sum grid{model::gradient_grid(
        shape, model::bounds_of(*data, {0, data->rows()}, block_rows), theta)};
      for (Eigen::Index i = 0; i < plain.size(); ++i)
        CHECK(std::abs(expected_grad[i] - plain[i])
              <= std::ldexp(0.5, grid.exponent(static_cast<std::size_t>(i))) + 1e-13 * plain.norm());
    }
  }
}

TEST_CASE("OWL-QN and orthant-wise Newton-CG with shrinking over local shard actors give the local objective's bits, K = 1..4") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const model::model_shape shape{model::model_kind::softmax, 30, 3};
  const auto data = shardopt::test::random_problem(21, 600, 30, 3, true);
  const Eigen::VectorXd c = 0.03 * model::weight_mask(shape);
  shardopt::optimizer::lbfgs_options o;
  o.epsilon = 1e-7;
  std::mt19937 rng{20261207};
  for (std::int64_t k = 1; k <= 4; ++k) {
    INFO("K = " << k);
    const auto blocks = random_blocks(rng, 600, k);
    model::local_objective local{shape, data, 1e-4, blocks};
    auto sharded = actors::sharded_objective::local(rt, shape, 1e-4, data, blocks, 30s);
    REQUIRE(sharded.can_restrict());
    // A restriction's evaluation: the local restriction's bits.
    const std::vector<Eigen::Index> wanted{2, 30 + 7, 60 + 29};
    const auto mine = sharded.restrict(wanted);
    const auto theirs = local.restrict(wanted);
    REQUIRE(mine.ok());
    REQUIRE(theirs.ok());
    CHECK(mine->entries == theirs->entries);
    CHECK(mine->nonzeros == theirs->nonzeros);
    const Eigen::VectorXd compact = Eigen::VectorXd::LinSpaced(static_cast<Eigen::Index>(mine->entries.size()), -0.5, 0.5);
    Eigen::VectorXd g_mine, g_theirs;
    const auto f_mine = mine->evaluate(compact, g_mine);
    REQUIRE(f_mine.ok());
    const double f_theirs = theirs->evaluate(compact, g_theirs);
    CHECK(std::memcmp(&*f_mine, &f_theirs, sizeof(double)) == 0);
    CHECK(std::memcmp(g_mine.data(), g_theirs.data(), sizeof(double) * g_mine.size()) == 0);
    // Whole runs: the same iterations and bits.
    Eigen::VectorXd x_sharded = Eigen::VectorXd::Zero(shape.dimension());
    Eigen::VectorXd x_local = x_sharded;
    const auto run_sharded = shardopt::optimizer::minimize_owlqn(sharded, x_sharded, o, c);
    const auto run_local = shardopt::optimizer::minimize_owlqn(local, x_local, o, c);
    REQUIRE(run_sharded.ok());
    REQUIRE(run_local.ok());
    CHECK(run_sharded->reason == shardopt::optimizer::stop_reason::converged);
    CHECK(run_sharded->iterations == run_local->iterations);
    CHECK(std::memcmp(x_sharded.data(), x_local.data(), sizeof(double) * x_local.size()) == 0);
    CHECK(run_sharded->nonzeros < 30 * 3);
    // Orthant-wise Newton-CG's rounds: the compact objectives' products, diagonals and lines.
    shardopt::optimizer::newton_options n;
    n.l1 = c;
    n.lambda = 1e-4;
    n.epsilon = 1e-7;
    Eigen::VectorXd n_sharded = Eigen::VectorXd::Zero(shape.dimension());
    Eigen::VectorXd n_local = n_sharded;
    const auto newton_sharded = shardopt::optimizer::minimize_newton(sharded, n_sharded, n);
    const auto newton_local = shardopt::optimizer::minimize_newton(local, n_local, n);
    REQUIRE(newton_sharded.ok());
    REQUIRE(newton_local.ok());
    CHECK(newton_sharded->reason == shardopt::optimizer::stop_reason::converged);
    CHECK(newton_sharded->iterations == newton_local->iterations);
    CHECK(newton_sharded->products == newton_local->products);
    CHECK(std::memcmp(n_sharded.data(), n_local.data(), sizeof(double) * n_local.size()) == 0);
  }
  // With no data on the driver and no compact objective to be had (node-local data with every
  // node gone), a restriction evaluates through the objective itself, the other weights at 0: the
  // full local objective's bits there (not the compact one's: its grids may differ in the last
  // bits), also once the objective has moved.
  auto through = actors::sharded_objective::local(rt, shape, 1e-4, data, {{0, 250}, {250, 600}}, 30s);
  through.restrict_through(nullptr, [](model::model_shape, const std::vector<std::int64_t>&,
                                       const actors::sharded_objective::columns_fn&) {
    return shardopt::result<actors::sharded_objective>{shardopt::fail_invalid("no node can take it")};
  });
  const std::vector<Eigen::Index> wanted{2, 30 + 7, 60 + 29, 90 + 1};  // and a bias
  const auto fallback = through.restrict(wanted);
  REQUIRE(fallback.ok());
  CHECK(fallback->nonzeros == 0);
  const auto moved = std::make_unique<actors::sharded_objective>(std::move(through));
  // The entries of the features wanted, in every output, and the biases.
  const auto entries = model::entries_of_features(shape, model::features_of_entries(shape, wanted));
  CHECK(fallback->entries == entries);
  const Eigen::VectorXd compact = Eigen::VectorXd::LinSpaced(static_cast<Eigen::Index>(entries.size()), -0.5, 0.5);
  Eigen::VectorXd scattered = Eigen::VectorXd::Zero(shape.dimension());
  for (std::size_t k = 0; k < entries.size(); ++k)
    scattered[entries[k]] = compact[static_cast<Eigen::Index>(k)];
  model::local_objective full{shape, data, 1e-4, {{0, 250}, {250, 600}}};
  Eigen::VectorXd g_mine, g_full;
  const auto f_mine = fallback->evaluate(compact, g_mine);
  REQUIRE(f_mine.ok());
  const double f_full = full.evaluate(scattered, g_full);
  CHECK(std::memcmp(&*f_mine, &f_full, sizeof(double)) == 0);
  REQUIRE(g_mine.size() == static_cast<Eigen::Index>(entries.size()));
  for (std::size_t k = 0; k < entries.size(); ++k)
    CHECK(std::memcmp(&g_mine[static_cast<Eigen::Index>(k)], &g_full[entries[k]], sizeof(double)) == 0);
  // ...and its diagonal, products and lines are the full objective's on the entries (Newton-CG's
  // rounds run through it too).
  REQUIRE(fallback->diagonal);
  REQUIRE(fallback->hessian);
  REQUIRE(fallback->line);
  Eigen::VectorXd d_mine, d_full, g_again;
  const auto f_diagonal = fallback->diagonal(compact, g_again, d_mine);
  REQUIRE(f_diagonal.ok());
  full.evaluate_diagonal(scattered, g_full, d_full);
  REQUIRE(d_mine.size() == static_cast<Eigen::Index>(entries.size()));
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(static_cast<Eigen::Index>(entries.size()), 1.0, -2.0);
  Eigen::VectorXd v_full = Eigen::VectorXd::Zero(shape.dimension());
  for (std::size_t k = 0; k < entries.size(); ++k)
    v_full[entries[k]] = v[static_cast<Eigen::Index>(k)];
  Eigen::VectorXd hv_mine, hv_full;
  REQUIRE(fallback->hessian(v, hv_mine).ok());
  REQUIRE(full.hessian_vector(v_full, hv_full).ok());
  REQUIRE(hv_mine.size() == static_cast<Eigen::Index>(entries.size()));
  for (std::size_t k = 0; k < entries.size(); ++k) {
    CHECK(std::memcmp(&d_mine[static_cast<Eigen::Index>(k)], &d_full[entries[k]], sizeof(double)) == 0);
    CHECK(std::memcmp(&hv_mine[static_cast<Eigen::Index>(k)], &hv_full[entries[k]], sizeof(double)) == 0);
  }
  // A line between the last two evaluations: from `compact` (alpha 0) to `halved` (alpha 1), and
  // halfway, f at three quarters of `compact`.
  const Eigen::VectorXd halved = 0.5 * compact;
  REQUIRE(fallback->evaluate(halved, g_again).ok());
  std::vector<double> values;
  REQUIRE(fallback->line({0.0, 0.5, 1.0}, values).ok());
  REQUIRE(values.size() == 3);
  const auto f_at = [&](double scale) {
    Eigen::VectorXd g;
    return full.evaluate(scale * scattered, g);
  };
  CHECK(values[0] == doctest::Approx(f_at(1.0)).epsilon(1e-12));
  CHECK(values[1] == doctest::Approx(f_at(0.75)).epsilon(1e-12));
  CHECK(values[2] == doctest::Approx(f_at(0.5)).epsilon(1e-12));
  CHECK(values[0] != doctest::Approx(values[2]).epsilon(1e-6));
  // A whole orthant-wise Newton-CG run through it: the local shrinking run's optimum.
  {
    shardopt::optimizer::newton_options n;
    n.l1 = c;
    n.lambda = 1e-4;
    n.epsilon = 1e-9;
    Eigen::VectorXd x_through = Eigen::VectorXd::Zero(shape.dimension());
    Eigen::VectorXd x_local = x_through;
    model::local_objective local{shape, data, 1e-4, {{0, 250}, {250, 600}}};
    const auto run_through = shardopt::optimizer::minimize_newton(*moved, x_through, n);
    const auto run_local = shardopt::optimizer::minimize_newton(local, x_local, n);
    REQUIRE(run_through.ok());
    REQUIRE(run_local.ok());
    CHECK(run_through->reason == shardopt::optimizer::stop_reason::converged);
    CHECK(run_through->f == doctest::Approx(run_local->f).epsilon(1e-10));
    CHECK(run_through->nonzeros == run_local->nonzeros);
  }
  CHECK(moved->dimension() == shape.dimension());

  // A network's objective cannot restrict itself, and says so.
  const model::model_shape net{model::model_kind::softmax, 30, 3, {4}};
  auto network = actors::sharded_objective::local(rt, net, 0.0, data, {{0, 600}}, 30s);
  CHECK_FALSE(network.can_restrict());
  const auto refused = network.restrict({0});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("linear models") != std::string::npos);
}
