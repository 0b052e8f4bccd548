#pragma once

// A node's links to the nodes below it in reduction trees (wire/node_protocol.hpp, the tree
// request): connected once each, over TLS with the node's own certificate when it has one.

#include "actors/node/node.hpp"
#include "actors/wire/runtime.hpp"

#include <map>
#include <string>
#include <vector>

namespace shardopt::actors {

class child_links {
public:
  explicit child_links(runtime& rt) : rt_(&rt) {}

  /// The child trees of a tree request, checked: `nodes[k]` is one "host:port" where a node
  /// listens (connected to now, or before), and `trees[k]` lives on that node, so tree traffic
  /// goes node to node, never through a third party. The error says which child is wrong.
  caf::expected<std::vector<shard_actor>> children(const std::vector<std::string>& nodes,
                                                   const std::vector<shard_actor>& trees);

private:
  runtime* rt_;
  std::map<std::string, node_actor> known_;
};

} // namespace shardopt::actors
