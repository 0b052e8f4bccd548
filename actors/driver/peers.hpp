#pragma once

// The driver's view of its peers (shards, groups, trees' roots): what it expects of each, how it
// replaces one that went down or builds a tree over them, and building a sharded objective over
// peers that exist already (remote shards, groups, or shards of this process). Defined in
// sharded_objective.cpp.

#include "actors/wire/messages.hpp"
#include "actors/driver/sharded_objective.hpp"
#include "model/block_bounds.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::actors {

/// Makes a replacement for peer `index` after it went down (for example on a surviving node), or
/// fails saying why. Called on the driver thread, inside an evaluation.
using shard_factory = std::function<result<shard_actor>(std::size_t index)>;

/// What the driver expects of one peer (a shard or a group): the blocks it holds, as (first block,
/// count) runs, its examples, and its name in messages (empty: "shard i of n").
struct peer_share {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  std::int64_t rows = 0;
  std::string name;
};

/// A reduction tree over an objective's peers: its roots, and the peers (indices) under each.
struct peer_tree {
  std::vector<tree_actor> roots;
  std::vector<std::vector<std::size_t>> under;
};

/// Builds a reduction tree over the objective's current peers (again after a peer was lost or
/// recreated). An error or no roots: the peers are asked directly (a star).
using tree_builder = std::function<result<peer_tree>(const std::vector<shard_actor>& peers)>;

/// Called at the start of every evaluation (an evaluation boundary): peers to put in place of
/// others there, as (peer index, fresh peer) pairs, for instance shards moved back to a node that
/// came back. The answers keep their bits: a peer answers for the same blocks wherever it lives.
using boundary_hook = std::function<std::vector<std::pair<std::size_t, shard_actor>>()>;

/// A sharded objective over existing peers (shards or groups), queried in the given order with
/// `token`. Every reply must cover exactly the peer's share and be finite; the peers' blocks must
/// cover blocks 0..bounds.blocks-1 once. The objective monitors every peer; with a factory, a peer
/// that goes down is recreated and its part of the interrupted evaluation asked again, so the
/// result is the same as without the failure. With a tree builder, requests go to the tree's roots,
/// and only the peers whose blocks no root's reply covered are asked directly (the same bits).
sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> peers,
                                         std::vector<peer_share> shares, model::data_bounds bounds,
                                         access_token token, std::chrono::milliseconds timeout,
                                         shard_factory replace = {}, tree_builder tree = {},
                                         boundary_hook boundary = {});

/// The peers (shards or groups) behind an objective, in order.
const std::vector<shard_actor>& shards_of(const sharded_objective& objective);

/// The roots of the reduction tree the objective asks now (none while it asks its peers directly).
std::vector<tree_actor> tree_roots_of(const sharded_objective& objective);

/// Whether the objective's last request asked some peers directly: no tree, or a tree whose
/// answer did not cover them (a member left out, a lost subtree).
bool asked_directly(const sharded_objective& objective);

/// The token the objective's requests carry (for tests that talk to its shards directly).
access_token token_of(const sharded_objective& objective);

} // namespace shardopt::actors
