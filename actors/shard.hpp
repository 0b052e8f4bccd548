#pragma once

// CAF-level wiring of shards: spawning shard actors and building a sharded objective over any set of
// shard handles (local or, later, remote). Include only in translation units that already use CAF.

#include "actors/messages.hpp"
#include "actors/sharded_objective.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace shardopt::actors {

/// Spawns a shard actor that owns rows `rows` of `data` (shared, never copied) and answers the shard
/// protocol (messages.hpp) for a model of shape `shape`, to requests that carry `token` only. Each
/// shard runs detached, on a thread of its own: its work is long and CPU-bound, and on the shared
/// scheduler the idle workers' polling cost about 8% of a single-shard evaluation (bench/), against
/// under 1% detached.
shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        const access_token& token);

/// Makes a replacement for shard `index` after it went down (for example on a surviving node), or
/// fails saying why. Called on the driver thread, inside an evaluation.
using shard_factory = std::function<result<shard_actor>(std::size_t index)>;

/// A sharded objective over existing shard handles, queried in the given order with `token`.
/// `rows[i]` is how many examples shard i holds: every reply must say so, and be finite. The
/// objective monitors every shard; with a factory, a shard that goes down is recreated and its
/// part of the interrupted evaluation asked again, so the result is the same as without the
/// failure.
sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> shards,
                                         std::vector<std::int64_t> rows, access_token token,
                                         std::chrono::milliseconds timeout,
                                         shard_factory replace = {});

/// The shard handles behind an objective, in shard order.
const std::vector<shard_actor>& shards_of(const sharded_objective& objective);

/// The token the objective's requests carry (for tests that talk to its shards directly).
access_token token_of(const sharded_objective& objective);

} // namespace shardopt::actors
