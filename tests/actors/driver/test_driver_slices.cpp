// The driver's side of a reduction tree: it sends a root its requests in slices and puts the
// answered slices together. Against a tree in this process: the same bits as asking the shards
// directly, for evaluations, products and accuracy; against roots that lie about their slices: the
// tree's answer is dropped, every shard is asked directly, and the bits are still the same.

#include "actors/node/group.hpp"
#include "actors/driver/peers.hpp"
#include "actors/wire/tree_slices.hpp"

#include "support/bits.hpp"
#include "support/lying_tree.hpp"
#include "support/problems.hpp"
#include "support/tree_answers.hpp"
#include "support/shard_set.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::ask;
using shardopt::test::lie;
using shardopt::test::lying_root;
using namespace std::chrono_literals;

TEST_CASE("through a tree in slices (two of a softmax over 68,004 parameters) the driver gets the bits of asking its shards directly, and a root that repeats a slice or answers with the wrong length is dropped for direct asks with the same bits") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const model::model_shape shape{model::model_kind::softmax, 17000, 4};
  REQUIRE(shape.dimension() > static_cast<std::int64_t>(actors::tree_slice_entries));
  const auto data = shardopt::test::random_problem(20261125, 120, 17000, 4, true);
  const std::vector<model::row_range> blocks{{0, 40}, {40, 90}, {90, 120}};
  std::mt19937 rng{7};
  std::normal_distribution<double> normal;
  const Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.05 * normal(rng); });
  const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return normal(rng); });
  auto objective_over = [&](std::function<actors::tree_actor(const shardopt::test::shard_set&,
                                                              const actors::access_token&)> root) {
    const auto token = actors::access_token::random();
    auto set = shardopt::test::spawn_shards(rt, shape, data, blocks, token);
    actors::tree_builder tree;
    if (root)
      tree = [set, token, root](const std::vector<actors::shard_actor>&) -> shardopt::result<actors::peer_tree> {
        return actors::peer_tree{{root(set, token)}, {{0, 1, 2}}};
      };
    return actors::make_sharded_objective(rt, shape, 0.01, set.shards, set.shares, set.bounds,
                                          token, 30s, {}, tree);
  };
  std::vector<caf::actor> roots;  // stopped at the end: nothing else ends them
  auto star = objective_over({});
  const auto direct = ask(star, theta, v);

  auto real = objective_over([&](const shardopt::test::shard_set& set, const actors::access_token& token) {
    auto root = actors::spawn_tree(rt.system(), set.shards, {}, token, shape.dimension());
    roots.push_back(caf::actor_cast<caf::actor>(root));
    return root;
  });
  CHECK(ask(real, theta, v).same_bits(direct));

  for (const auto how : {lie::repeat_first, lie::wrong_length}) {
    CAPTURE(static_cast<int>(how));
    auto asked = std::make_shared<std::atomic<int>>(0);
    auto lying = objective_over([&](const shardopt::test::shard_set&, const actors::access_token&) {
      auto root = rt.system().spawn(lying_root, how, asked);
      roots.push_back(caf::actor_cast<caf::actor>(root));
      return caf::actor_cast<actors::tree_actor>(root);
    });
    CHECK(ask(lying, theta, v).same_bits(direct));
    CHECK(asked->load() >= 2);  // the root was sent slices, two per request
  }
  caf::scoped_actor stopper{rt.system()};
  for (const auto& root : roots)
    stopper->send_exit(root, caf::exit_reason::user_shutdown);
}
