#pragma once

// What the hostile tests share (tests/actors/node/test_hostile_node.cpp and test_node_wire.cpp,
// ps/test_hostile_ps.cpp, driver/test_shipping.cpp): a request sent untyped as a peer on the wire
// would send it and the error it got, and the honest driver whose bits the attacks must not change.

#include "actors/wire/network.hpp"
#include "actors/wire/node_protocol.hpp"
#include "model/model_shape.hpp"
#include "actors/driver/cluster.hpp"
#include "actors/driver/peers.hpp"
#include "io/partition.hpp"
#include "support/node_process.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace shardopt::test {

/// What a request's error says, or "no error" when it was answered with a value. (Sent untyped,
/// as a peer on the wire would; the reply handler takes nothing, so any value arrives as CAF's
/// unexpected_response.)
template <class Handle, class... Ts>
std::string error_of(caf::scoped_actor& self, const Handle& to, Ts&&... xs) {
  std::string text = "no reply";
  self->request(caf::actor_cast<caf::actor>(to), std::chrono::seconds{10}, std::forward<Ts>(xs)...)
    .receive([&]() { text = "no error"; },
             [&](caf::error& err) {
               text = err == caf::sec::unexpected_response ? "no error"
                      : err == caf::sec::request_timeout   ? "no reply"
                                                           : actors::describe(err, self->system());
             });
  return text;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The honest runs' model: softmax over 20 features and 3 classes.
inline const model::model_shape hostile_shape{model::model_kind::softmax, 20, 3};

/// A node's hello answered with a node_info: it is alive and serving.
inline bool node_serves(caf::scoped_actor& self, const actors::node_actor& node) {
  bool ok = false;
  self->request(node, std::chrono::seconds{10}, actors::hello_atom::value, std::uint64_t{1}, actors::protocol_version,
                actors::wire_probe())
    .receive([&](std::uint64_t, const actors::node_info& info) { ok = info.threads > 0; },
             [](caf::error&) {});
  return ok;
}

/// Where the honest driver's four shards live: all on the attacked node, asked directly (a star),
/// or two on it and two on a second node under a reduction tree whose root is the attacked node,
/// which then forwards every request to the second node and adds its sums to its own.
enum class layout { star, forwarding };

/// An honest driver: 4 shards of `data` shipped to `nodes` as `how` says, the objective and
/// gradient at a first theta and then at 9 more; `attack(objective, k)` runs before evaluation k
/// of the 9 (a tree exists by then). Returns every bit it saw, and checks that it never had to
/// recover (no attack ended a shard or a tree) and that a forwarding run kept its one tree.
inline std::vector<double> honest_run(actors::runtime& rt, const std::vector<actors::endpoint>& nodes,
                               layout how, const std::shared_ptr<const model::dataset>& data,
                               const std::function<void(actors::sharded_objective&, int)>& attack) {
  auto cluster = actors::cluster::connect(rt, nodes);
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  if (how == layout::forwarding)
    cluster->use_topology(actors::topology::tree, 2);
  auto events = std::make_shared<std::vector<std::string>>();
  cluster->ship_in_pieces_of(4096);  // 150 rows of 88 bytes a shard: 4 pieces each
  const std::vector<std::size_t> placement = how == layout::star ? std::vector<std::size_t>{0, 0, 0, 0}
                                                                 : std::vector<std::size_t>{0, 0, 1, 1};
  auto objective = cluster->ship(hostile_shape, 1e-3, data, shardopt::io::partition_blocks(data->rows(), 4),
                                 placement, std::chrono::seconds{30},
                                 [events](const std::string& event) { events->push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  std::vector<double> bits;
  for (int k = -1; k < 9; ++k) {
    if (attack && k >= 0)
      attack(*objective, k);
    const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(hostile_shape.dimension(), -0.1 * k, 0.05 * k);
    Eigen::VectorXd grad;
    auto f = objective->evaluate(theta, grad);
    REQUIRE_MESSAGE(f.ok(), f.error().message());
    if (how == layout::forwarding)  // the tree's answer covered every peer
      CHECK_FALSE(actors::asked_directly(*objective));
    bits.push_back(*f);
    bits.insert(bits.end(), grad.data(), grad.data() + grad.size());
  }
  const std::string tree_event = "reduction tree over 2 nodes, fan-in 2, depth 1, root " + nodes[0].text();
  std::size_t trees = 0;
  for (const auto& event : *events) {
    if (how == layout::forwarding && event == tree_event)
      ++trees;
    else
      FAIL_CHECK("the honest driver had to recover: " << event);
  }
  CHECK(trees == (how == layout::forwarding ? 1 : 0));
  CHECK(actors::tree_roots_of(*objective).size() == (how == layout::forwarding ? 1 : 0));
  return bits;
}

} // namespace shardopt::test
