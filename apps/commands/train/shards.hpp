#pragma once

#include "actors/driver/cluster.hpp"
#include "actors/driver/sharded_objective.hpp"
#include "apps/run/data.hpp"
#include "apps/run/modes.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace shardopt::apps {

/// Where the shards of a training run live.
struct shard_options {
  int shards = 0;           ///< 0: one per local hardware thread, or the nodes' announced threads
  std::string nodes;        ///< "host:port,..."; empty: local shard actors
  data_placement placement = data_placement::shipped;  ///< with nodes
  std::chrono::milliseconds timeout{300'000};
  bool quiet = false;
  actors::topology topology = actors::topology::automatic;  ///< with nodes
  std::size_t fan_in = 0;   ///< tree: children per node; 0 = automatic
  std::string nodes_file;   ///< watched for nodes that join during the run
  std::string nodes_dns;    ///< "NAME:PORT": its addresses watched for nodes that join
};

/// The sharded objective of a run, and the cluster its shards live on (if any).
struct shard_setup {
  std::optional<actors::cluster> cluster;
  std::optional<actors::sharded_objective> objective;
  int shards = 0;
};

/// Splits the training data into balanced contiguous shards and creates them: as local shard
/// actors, or (with `nodes`) on node processes in proportion to their threads, printing the plan
/// on stderr. Shipped: the driver's rows of `data` go to the nodes once. Node-local: each node reads
/// its own part of `source.data`, and `data`'s shape, encoding, scaling and row count are filled in
/// from the nodes' summaries. Errors name the node or the problem.
result<shard_setup> setup_shards(actors::runtime& rt, const shard_options& options,
                                 prepared_data& data, const data_options& source,
                                 const model::model_shape& architecture, std::int64_t classes,
                                 double lambda);

} // namespace shardopt::apps
