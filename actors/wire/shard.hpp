#pragma once

// The shard actor: spawning one over rows of a dataset, answering the shard protocol
// (messages.hpp). Nodes host shards and so does a driver in local mode, through the same actor.
// Include only in translation units that already use CAF.

#include "actors/wire/messages.hpp"
#include "model/block_evaluator.hpp"

#include <memory>

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

} // namespace shardopt::actors
