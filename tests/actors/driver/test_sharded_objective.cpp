// The sharded objective over shard actors: equal to the single-block objective for any split,
// deterministic to the bit, and failing cleanly (never hanging) when a shard errs, dies or stalls.

#include "actors/driver/peers.hpp"
#include "actors/wire/shard.hpp"
#include "io/partition.hpp"
#include "model/block_bounds.hpp"
#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"

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

TEST_CASE("K shard actors give the single-block objective for random partitions, K = 1..7 (softmax and an MLP)") {
  actors::runtime rt{actors::runtime_options::local(2)};
  for (const auto& shape : {model::model_shape{model::model_kind::softmax, 13, 4},
                            model::model_shape{model::model_kind::softmax, 13, 4, {9, 6}, model::activation::tanh}})
  for (bool sparse : {false, true}) {
    const std::uint32_t seed = 20261122;
    INFO("seed " << seed << (sparse ? " sparse " : " dense ") << model::describe(shape));
    std::mt19937 rng{seed};
    const auto data = shardopt::test::random_problem(seed, 701, 13, 4, sparse);
    const double lambda = 0.01;
    model::local_objective whole{shape, data, lambda};
    std::normal_distribution<double> normal;
    const Eigen::VectorXd theta =
      Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.3 * normal(rng); });
    Eigen::VectorXd expected_grad;
    const double expected = whole.evaluate(theta, expected_grad);
    for (std::int64_t k = 1; k <= 7; ++k) {
      INFO("K = " << k);
      auto sharded = actors::sharded_objective::local(rt, shape, lambda, data,
                                                      random_blocks(rng, 701, k), 30s);
      CHECK(sharded.shard_count() == static_cast<std::size_t>(k));
      Eigen::VectorXd grad;
      auto f = sharded.evaluate(theta, grad);
      REQUIRE(f.ok());
      CHECK(std::abs(*f - expected) <= 1e-12 * std::abs(expected));
      CHECK(relative_error(grad, expected_grad) <= 1e-12);
      // The same evaluation again gives the same bits.
      Eigen::VectorXd grad_again;
      auto again = sharded.evaluate(theta, grad_again);
      REQUIRE(again.ok());
      CHECK(std::memcmp(&*again, &*f, sizeof(double)) == 0);
      CHECK(std::memcmp(grad.data(), grad_again.data(), sizeof(double) * grad.size()) == 0);
      // Quality sums add up to the local ones.
      auto q = sharded.quality(theta);
      REQUIRE(q.ok());
      const auto local_q = model::quality(shape, *data, {0, data->rows()}, theta);
      CHECK(q->correct == local_q.correct);
      CHECK(q->count == 701);
    }
  }
}

TEST_CASE("the same L-BFGS run over shard actors twice gives identical bits") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(5, 400, 9, 3, false);
  const model::model_shape shape{model::model_kind::softmax, 9, 3};
  auto run = [&] {
    auto objective = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                      {{0, 100}, {100, 250}, {250, 400}}, 30s);
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
    shardopt::optimizer::lbfgs_options options;
    options.max_iterations = 40;
    const auto result = *shardopt::optimizer::minimize(objective, theta, options);
    CHECK(result.iterations > 5);
    return theta;
  };
  const Eigen::VectorXd first = run();
  const Eigen::VectorXd second = run();
  CHECK(std::memcmp(first.data(), second.data(), sizeof(double) * first.size()) == 0);
}

TEST_CASE("a theta of the wrong dimension is an error naming both sizes") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(1, 50, 4, 2, false);
  const model::model_shape shape{model::model_kind::softmax, 4, 2};
  auto objective = actors::sharded_objective::local(rt, shape, 0, data, {{0, 25}, {25, 50}}, 10s);
  Eigen::VectorXd grad;
  auto f = objective.evaluate(Eigen::VectorXd::Zero(7), grad);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message() == "theta has 7 entries, the model expects 10");

  // A shard itself rejects a wrong theta with an error reply, not a crash.
  caf::scoped_actor self{rt.system()};
  const auto& shards = actors::shards_of(objective);
  bool got_error = false;
  self->request(shards[0], 10s, actors::eval_atom::value, actors::token_of(objective),
                std::uint64_t{1}, actors::encode_grid(std::vector<int>(3, -60)), actors::dense_vector{Eigen::VectorXd::Zero(3)})
    .receive([&](std::uint64_t, const actors::block_sums&) {},
             [&](caf::error& err) {
               got_error = true;
               CHECK(actors::describe(err, rt.system()).find("theta has 3 entries") != std::string::npos);
             });
  CHECK(got_error);
}

TEST_CASE("a dead shard makes the evaluation fail, naming the shard, without hanging") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(2, 90, 5, 3, false);
  const model::model_shape shape{model::model_kind::softmax, 5, 3};
  auto objective =
    actors::sharded_objective::local(rt, shape, 0, data, {{0, 30}, {30, 60}, {60, 90}}, 10s);
  // Wait until the shard is gone, so the request below meets a dead actor.
  {
    caf::scoped_actor self{rt.system()};
    self->monitor(actors::shards_of(objective)[1]);
    self->send_exit(actors::shards_of(objective)[1], caf::exit_reason::kill);
    self->receive([](const caf::down_msg&) {});
  }
  const auto started = std::chrono::steady_clock::now();
  Eigen::VectorXd grad;
  auto f = objective.evaluate(Eigen::VectorXd::Zero(shape.dimension()), grad);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message().rfind("shard 1 of 3 went down", 0) == 0);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
}

namespace {

/// A shard that answers every request with an error.
actors::shard_actor::behavior_type erring_shard() {
  return {
    [](actors::eval_atom, const actors::access_token&, std::uint64_t, const actors::exact_grid&,
       const actors::dense_vector&) -> caf::result<std::uint64_t, actors::block_sums> {
      return actors::make_error(actors::errc::shard_failed, "disk on fire");
    },
    [](actors::quality_atom, const actors::access_token&, std::uint64_t, const actors::dense_vector&)
      -> caf::result<std::uint64_t, actors::block_sums> {
      return actors::make_error(actors::errc::shard_failed, "disk on fire");
    },
    [](actors::hessvec_atom, const actors::access_token&, std::uint64_t, std::uint64_t, const actors::exact_grid&,
       const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, actors::block_sums> {
      return actors::make_error(actors::errc::shard_failed, "disk on fire");
    },
    [](actors::line_atom, const actors::access_token&, std::uint64_t, std::uint64_t, std::uint64_t,
       const actors::dense_vector&, const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, actors::block_sums> {
      return actors::make_error(actors::errc::shard_failed, "disk on fire");
    },
  };
}

/// A shard that never answers (it keeps the promise and drops it).
actors::shard_actor::behavior_type silent_shard(actors::shard_actor::pointer self) {
  return {
    [self](actors::eval_atom, const actors::access_token&, std::uint64_t, const actors::exact_grid&,
           const actors::dense_vector&) -> caf::result<std::uint64_t, actors::block_sums> {
      return self->make_response_promise<std::uint64_t, actors::block_sums>();
    },
    [self](actors::quality_atom, const actors::access_token&, std::uint64_t,
           const actors::dense_vector&) -> caf::result<std::uint64_t, actors::block_sums> {
      return self->make_response_promise<std::uint64_t, actors::block_sums>();
    },
    [self](actors::hessvec_atom, const actors::access_token&, std::uint64_t, std::uint64_t,
           const actors::exact_grid&, const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, actors::block_sums> {
      return self->make_response_promise<std::uint64_t, actors::block_sums>();
    },
    [self](actors::line_atom, const actors::access_token&, std::uint64_t, std::uint64_t, std::uint64_t,
           const actors::dense_vector&, const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, actors::block_sums> {
      return self->make_response_promise<std::uint64_t, actors::block_sums>();
    },
  };
}

} // namespace

TEST_CASE("a shard that answers with an error fails the evaluation with its message") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(3, 40, 3, 2, false);
  const model::model_shape shape{model::model_kind::softmax, 3, 2};
  const auto token = actors::access_token::random();
  auto set = spawn_shards(rt, shape, data, {{0, 20}, {20, 40}}, token);
  set.shards[1] = rt.system().spawn(erring_shard);
  auto objective = actors::make_sharded_objective(rt, shape, 0, set.shards, set.shares, set.bounds,
                                                  token, 10s);
  Eigen::VectorXd grad;
  auto f = objective.evaluate(Eigen::VectorXd::Zero(shape.dimension()), grad);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message() == "shard 1 of 2: evaluation: disk on fire");
}

TEST_CASE("a shard that never answers fails the evaluation after the timeout") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(4, 40, 3, 2, false);
  const model::model_shape shape{model::model_kind::softmax, 3, 2};
  const auto token = actors::access_token::random();
  auto set = spawn_shards(rt, shape, data, {{0, 20}, {20, 40}}, token);
  set.shards[0] = rt.system().spawn(silent_shard);
  auto objective = actors::make_sharded_objective(rt, shape, 0, set.shards, set.shares, set.bounds,
                                                  token, 300ms);
  const auto started = std::chrono::steady_clock::now();
  Eigen::VectorXd grad;
  auto f = objective.evaluate(Eigen::VectorXd::Zero(shape.dimension()), grad);
  const auto waited = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message() == "shard 0 of 2: no reply to evaluation within 300 ms");
  CHECK(waited >= 250ms);
  CHECK(waited < 5s);
}

TEST_CASE("a shard that goes down is recreated through the factory and the result is unchanged") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(6, 120, 5, 3, false);
  const model::model_shape shape{model::model_kind::softmax, 5, 3};
  const std::vector<model::row_range> blocks{{0, 40}, {40, 80}, {80, 120}};
  const auto token = actors::access_token::random();
  auto set = spawn_shards(rt, shape, data, blocks, token);
  const auto& shards = set.shards;
  std::vector<std::size_t> replaced;
  auto objective = actors::make_sharded_objective(
    rt, shape, 0.01, set.shards, set.shares, set.bounds, token, 10s,
    [&](std::size_t i) -> shardopt::result<actors::shard_actor> {
      replaced.push_back(i);
      return actors::spawn_shard(rt.system(), shape, data, blocks[i], set.layouts[i], token);
    });
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.2, 0.3);
  Eigen::VectorXd before_grad;
  auto before = objective.evaluate(theta, before_grad);
  REQUIRE(before.ok());

  caf::scoped_actor killer{rt.system()};
  killer->send_exit(shards[2], caf::exit_reason::kill);  // from this process: the guard lets it in
  Eigen::VectorXd after_grad;
  auto after = objective.evaluate(theta, after_grad);
  REQUIRE(after.ok());
  CHECK(replaced == std::vector<std::size_t>{2});
  CHECK(objective.recreated_shards() == 1);
  CHECK(std::memcmp(&*before, &*after, sizeof(double)) == 0);
  CHECK(std::memcmp(before_grad.data(), after_grad.data(), sizeof(double) * before_grad.size()) == 0);
  CHECK(actors::shards_of(objective)[2] != shards[2]);
}
