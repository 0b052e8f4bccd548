// A node's part of a reduction tree, in this process, with a child that lies about its slices'
// length: the child is left out alone, its sibling's sums still come up the tree, and the driver
// gets the bits of asking its shards directly without asking any of them itself.

#include "actors/node/group.hpp"
#include "actors/driver/peers.hpp"

#include "support/lying_tree.hpp"
#include "support/problems.hpp"
#include "support/tree_answers.hpp"
#include "support/shard_set.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::ask;
using shardopt::test::lie;
using shardopt::test::lying_root;
using namespace std::chrono_literals;

TEST_CASE("a child that answers its slices with the wrong length is left out alone: its sibling's sums still come up the tree, no shard is asked directly, and the bits are those of asking the shards directly") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const model::model_shape shape{model::model_kind::softmax, 17000, 4};
  const auto data = shardopt::test::random_problem(20261126, 120, 17000, 4, true);
  const std::vector<model::row_range> blocks{{0, 40}, {40, 90}, {90, 120}};
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.02, 0.03);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, -1.0);
  const auto token = actors::access_token::random();
  auto set = shardopt::test::spawn_shards(rt, shape, data, blocks, token);
  auto star = actors::make_sharded_objective(rt, shape, 0.01, set.shards, set.shares, set.bounds,
                                             token, 30s, {}, {});
  const auto direct = ask(star, theta, v);

  // Root: shard 0 and two children, a liar holding nothing (it answers in no time, so before its
  // sibling) and an honest tree over shards 1 and 2.
  auto asked = std::make_shared<std::atomic<int>>(0);
  auto liar = caf::actor_cast<actors::tree_actor>(rt.system().spawn(lying_root, lie::wrong_length, asked));
  auto sibling = actors::spawn_tree(rt.system(), {set.shards[1], set.shards[2]}, {}, token, shape.dimension());
  auto root = actors::spawn_tree(rt.system(), {set.shards[0]}, {liar, sibling}, token, shape.dimension());
  auto tree = [root](const std::vector<actors::shard_actor>&) -> shardopt::result<actors::peer_tree> {
    return actors::peer_tree{{root}, {{0, 1, 2}}};
  };
  auto through_tree = actors::make_sharded_objective(rt, shape, 0.01, set.shards, set.shares,
                                                     set.bounds, token, 30s, {}, tree);
  // Each request checked on its own: the tree's answer covered every shard.
  shardopt::test::answers got;
  Eigen::VectorXd grad, hv;
  auto f = through_tree.evaluate(theta, grad);
  REQUIRE_MESSAGE(f.ok(), f.error().message());
  CHECK_FALSE(actors::asked_directly(through_tree));
  REQUIRE(through_tree.hessian_vector(v, hv).ok());
  CHECK_FALSE(actors::asked_directly(through_tree));
  auto q = through_tree.quality(theta);
  REQUIRE(q.ok());
  CHECK_FALSE(actors::asked_directly(through_tree));
  got.add(*f);
  got.add(grad);
  got.add(hv);
  got.add(q->correct);
  got.add(q->squared_error);
  if (!got.same_bits(direct)) {
    std::size_t shown = 0;
    for (std::size_t i = 0; i < got.values.size() && i < direct.values.size() && shown < 8; ++i)
      if (got.values[i] != direct.values[i]) {
        MESSAGE("entry " << i << ": " << got.values[i] << " against " << direct.values[i]);
        ++shown;
      }
  }
  CHECK(got.same_bits(direct));
  CHECK(asked->load() >= 3);  // the liar was sent slices of each request
  caf::scoped_actor stopper{rt.system()};
  for (const auto& tree_part : {caf::actor_cast<caf::actor>(root), caf::actor_cast<caf::actor>(sibling),
                                caf::actor_cast<caf::actor>(liar)})
    stopper->send_exit(tree_part, caf::exit_reason::user_shutdown);
}
