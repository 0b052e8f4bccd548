#pragma once

// The node actor: what a node process publishes (its protocol and message types are in
// wire/node_protocol.hpp). Its handlers are in node.cpp; what each driver holds in
// node_holdings.hpp, node-local data in node_parts.hpp, the links to child nodes in node_tree.hpp.

#include "actors/node/node_checks.hpp"
#include "actors/wire/node_counters.hpp"
#include "actors/wire/node_protocol.hpp"
#include "actors/wire/runtime.hpp"

#include <cstdint>
#include <memory>

namespace shardopt::actors {

/// Spawns a node actor whose shards run on `system`, within `limits`, counting what it holds and
/// serves in `counters` (null: counts of its own, seen only through status requests).
node_actor spawn_node(runtime& rt, std::uint32_t threads, node_limits limits,
                      std::shared_ptr<node_counters> counters = nullptr);

} // namespace shardopt::actors
