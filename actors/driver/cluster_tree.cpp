// Reduction trees among a run's nodes (docs/design.md, "The reduction tree"): which node is whose
// child, and asking each node, leaves first, to make its part of the tree.

#include "actors/driver/cluster_impl.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace shardopt::actors {

std::size_t automatic_fan_in(std::size_t nodes, std::int64_t dimension) {
  constexpr std::int64_t bandwidth_bound = std::int64_t{1} << 20;
  if (17 * dimension >= bandwidth_bound)
    return 2;
  const auto root = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(nodes))));
  return std::clamp<std::size_t>(root, 2, max_tree_children);
}

void cluster::use_topology(topology kind, std::size_t fan_in) {
  impl_->routing = kind;
  impl_->fan_in = std::min(fan_in, max_tree_children);
}

std::size_t cluster::lost_nodes() const {
  return impl_->lost;
}

std::size_t cluster::rejoined_nodes() const {
  return impl_->rejoined;
}

std::size_t cluster::joined_nodes() const {
  return impl_->joined;
}

std::string cluster::topology_in_use() const {
  return impl_->in_tree ? "tree" : "star";
}

tree_builder tree_of(std::shared_ptr<cluster::impl> state, std::int64_t dimension,
                     std::function<void(const std::string&)> log) {
  return [state = std::move(state), dimension, log = std::move(log)](
           const std::vector<shard_actor>& peers) -> result<peer_tree> {
    auto& c = *state;
    // The live nodes holding peers, in node order (the placement's order), and their peers.
    std::map<std::size_t, std::vector<std::size_t>> held;
    for (std::size_t g = 0; g < peers.size() && g < c.home.size(); ++g)
      held[c.home[g]].push_back(g);
    std::vector<std::size_t> order;
    for (const auto& [node, members] : held)
      if (c.alive[node])
        order.push_back(node);
    const auto n = order.size();
    // No tree for a star, nor for one node holding one peer (asking it is the same).
    c.in_tree = false;
    if (n == 0 || c.routing == topology::star
        || (c.routing == topology::automatic && n <= 2) || (n == 1 && held[order[0]].size() == 1))
      return peer_tree{};
    const auto k = c.fan_in > 0 ? c.fan_in : automatic_fan_in(n, dimension);
    // Position p of a k-ary heap over `order`: children k p + 1 .. k p + k. Made deepest level
    // first, each level's nodes asked at once.
    auto depth_of = [k](std::size_t p) {
      std::size_t d = 0;
      while (p > 0) {
        p = (p - 1) / k;
        ++d;
      }
      return d;
    };
    std::vector<shard_actor> made(n);
    for (auto d = depth_of(n - 1) + 1; d-- > 0;) {
      std::vector<std::size_t> level;  // node indices at depth d
      std::map<std::size_t, std::size_t> position;
      for (std::size_t p = 0; p < n; ++p)
        if (depth_of(p) == d) {
          level.push_back(order[p]);
          position[order[p]] = p;
        }
      // Every node of the tree is asked for its part (a leaf too: its parent sends it slices,
      // which only a tree takes).
      const auto& asked = level;
      auto done = c.nodes.round(
        reply<shard_actor>{}, asked, timeouts::control, "making its part of the reduction tree",
        [&](std::size_t j, std::uint64_t round) {
          const auto p = position[j];
          std::vector<shard_actor> own;
          for (const auto g : held[j])
            own.push_back(peers[g]);
          std::vector<std::string> child_nodes;
          std::vector<shard_actor> child_trees;
          for (auto q = k * p + 1; q <= k * p + k && q < n; ++q) {
            child_nodes.push_back(c.info[order[q]].endpoint.text());
            child_trees.push_back(made[q]);
          }
          c.self->send(c.nodes[j], tree_atom::value, round, c.token, own, child_nodes, child_trees);
        },
        [&](std::size_t j, shard_actor tree) -> result<void> {
          made[position[j]] = std::move(tree);
          return {};
        });
      if (!done) {
        if (log)
          log("no reduction tree (" + done.error().message() + "): asking every node");
        return done.error();
      }
    }
    if (log)
      log("reduction tree over " + std::to_string(n) + " nodes, fan-in " + std::to_string(k)
          + ", depth " + std::to_string(depth_of(n - 1)) + ", root " + c.info[order[0]].endpoint.text());
    std::vector<std::size_t> all;
    for (std::size_t g = 0; g < peers.size(); ++g)
      all.push_back(g);
    c.in_tree = true;
    // The node's reply names its tree by the shard protocol it shares with a group.
    return peer_tree{{caf::actor_cast<tree_actor>(made[0])}, {all}};
  };
}

} // namespace shardopt::actors
