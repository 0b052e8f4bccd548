#pragma once

// CAF-level wiring of shards: spawning shard actors and building a sharded objective over any set of
// shard handles (local or, later, remote). Include only in translation units that already use CAF.

#include "actors/messages.hpp"
#include "actors/sharded_objective.hpp"
#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::actors {

/// Spawns a shard actor that owns rows `rows` of `data` (shared, never copied), cut into canonical
/// blocks as `layout` says, and answers the shard protocol (messages.hpp) for a model of shape
/// `shape`, to requests that carry `token` only. Each shard runs detached, on a thread of its own:
/// its work is long and CPU-bound, and on the shared scheduler the idle workers' polling cost about
/// 8% of a single-shard evaluation (bench/), against under 1% detached.
/// A node's shards count what they serve in its `counters` (null: nothing is counted).
shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        block_layout layout, const access_token& token,
                        std::shared_ptr<node_counters> counters = nullptr);

/// The same over an evaluator built beforehand (on another thread, or to take its bounds first):
/// its rows must lie in blocks `layout` names.
shard_actor spawn_shard(caf::actor_system& system, model::block_evaluator evaluator, block_layout layout,
                        const access_token& token, std::shared_ptr<node_counters> counters = nullptr);

/// Spawns a group over shards of this process: it answers the shard protocol with the sum of its
/// members' replies (one request and one reply per node instead of per shard), goes down when a
/// member does, and ends its members when it ends. It asks `window` members at a time (the
/// node's worker threads: more would not compute sooner, and each holds dimension-sized buffers
/// while it computes).
shard_actor spawn_group(caf::actor_system& system, std::vector<shard_actor> members,
                        std::size_t window, const access_token& token);

/// Spawns a node's part of a reduction tree: the tree protocol (messages.hpp) over `own`, this
/// node's peers of the driver, and `children`, the trees of the nodes below (reached directly).
/// Theta goes down to every member and their sums come up added (exact: the bits of one shard
/// holding everything). It takes requests in slices only (from its parent, or at the root from the
/// driver), forwarding each as it arrives, so a level of the tree adds a slice's latency, not the
/// whole vector's. A member that goes down or fails is left out, and the tree answers the sum of
/// the others, whose blocks say what it covers; the driver asks the missing blocks' peers itself
/// and builds a new tree. Slices that disagree on what they cover (a child lost part-way) make the
/// driver drop the tree's answer and ask every peer. Ending a tree ends none of its members.
tree_actor spawn_tree(caf::actor_system& system, std::vector<shard_actor> own,
                       std::vector<tree_actor> children, const access_token& token);

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
