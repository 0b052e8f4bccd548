#include "actors/node/node_tree.hpp"

#include "actors/wire/network.hpp"

namespace shardopt::actors {

caf::expected<std::vector<shard_actor>> child_links::children(const std::vector<std::string>& nodes,
                                                              const std::vector<shard_actor>& trees) {
  std::vector<shard_actor> out;
  for (std::size_t k = 0; k < nodes.size() && k < trees.size(); ++k) {
    auto where = parse_endpoints(nodes[k], "a child node");
    if (!where || where->size() != 1)
      return refused("invalid tree request: child " + std::to_string(k) + " is not one host:port");
    const auto name = where->front().text();
    auto known = known_.find(name);
    const auto home = trees[k] ? caf::actor_cast<caf::actor_addr>(trees[k]).node() : caf::node_id{};
    if (known != known_.end() && known->second.node() != home) {  // restarted there since
      known_.erase(known);
      known = known_.end();
    }
    if (known == known_.end()) {
      auto handle = connect_to<node_actor>(*rt_, where->front(), "a shardopt node");
      if (!handle)
        return make_error(errc::shard_failed, handle.error().message());
      known = known_.emplace(name, *handle).first;
    }
    if (!trees[k] || home != known->second.node())
      return refused("invalid tree request: child tree " + std::to_string(k)
                     + " does not live on the node at " + name);
    out.push_back(trees[k]);
  }
  return out;
}

} // namespace shardopt::actors
