// The driver's side of a reduction tree: it sends a root its requests in slices and puts the
// answered slices together. Against a tree in this process: the same bits as asking the shards
// directly, for evaluations, products and accuracy; against roots that lie about their slices: the
// tree's answer is dropped, every shard is asked directly, and the bits are still the same; a
// child that lies about its slices' length is left out without spoiling its sibling's sums.

#include "actors/shard.hpp"
#include "actors/tree_slices.hpp"

#include "support/bits.hpp"
#include "support/problems.hpp"
#include "support/tree_answers.hpp"
#include "support/shard_set.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::ask;
using namespace std::chrono_literals;

namespace {

/// What a lying root does with every slice it is sent.
enum class lie { repeat_first, wrong_length };

/// A root that answers each slice, but wrongly: always as slice 0 (with slice 0's length), or with
/// no sums at all. Counts the slices it was sent.
actors::tree_actor::behavior_type lying_root(actors::tree_actor::pointer, lie how,
                                             std::shared_ptr<std::atomic<int>> asked) {
  using sums_result = caf::result<std::uint64_t, actors::block_sums>;
  return {
    [](actors::eval_atom, const actors::access_token&, std::uint64_t, const actors::exact_grid&,
       const actors::dense_vector&) -> sums_result { return actors::refused("whole"); },
    [](actors::quality_atom, const actors::access_token&, std::uint64_t,
       const actors::dense_vector&) -> sums_result { return actors::refused("whole"); },
    [](actors::hessvec_atom, const actors::access_token&, std::uint64_t, std::uint64_t,
       const actors::exact_grid&, const actors::dense_vector&, const actors::dense_vector&)
      -> sums_result { return actors::refused("whole"); },
    [](actors::line_atom, const actors::access_token&, std::uint64_t, std::uint64_t, std::uint64_t,
       const actors::dense_vector&, const actors::dense_vector&, const actors::dense_vector&)
      -> sums_result { return actors::refused("whole"); },
    [how, asked](actors::part_atom, const actors::access_token&, std::uint64_t round,
                 const actors::tree_slice& slice, const actors::exact_grid&,
                 const actors::dense_vector&, const actors::dense_vector&)
      -> caf::result<std::uint64_t, std::uint32_t, actors::block_sums> {
      ++*asked;
      actors::block_sums sums;
      if (how == lie::repeat_first) {
        const auto [first, last] = actors::slice_bounds(slice.grid_size, 0, slice.count);
        sums.words.assign(last - first, 0);
        sums.length = last - first;
        return {round, std::uint32_t{0}, std::move(sums)};
      }
      return {round, slice.index, std::move(sums)};
    },
  };
}

} // namespace

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
    auto root = actors::spawn_tree(rt.system(), set.shards, {}, token);
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
  auto sibling = actors::spawn_tree(rt.system(), {set.shards[1], set.shards[2]}, {}, token);
  auto root = actors::spawn_tree(rt.system(), {set.shards[0]}, {liar, sibling}, token);
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
