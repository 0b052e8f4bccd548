#pragma once

#include "actors/runtime.hpp"
#include "apps/data.hpp"
#include "optimizer/lbfgs.hpp"

#include <optional>
#include <string>

namespace shardopt::apps {

/// Everything `shardopt train` takes.
struct train_options {
  data_options data;
  std::string model = "softmax";
  double lambda = 1e-4;
  std::int64_t classes = 0;        ///< 0 = from the training labels
  int shards = 0;                  ///< 0 = one per hardware thread (or the nodes' threads)
  std::string nodes;               ///< "host:port,...": shards on node processes
  std::string data_placement = "shipped";  ///< with nodes: "shipped" or "node-local"
  actors::tls_options tls;         ///< mutual TLS to the nodes
  std::size_t threads = 0;         ///< actor scheduler threads; 0 = one per hardware thread
  optimizer::lbfgs_options lbfgs;
  std::optional<double> lower;     ///< one bound for every coordinate of theta (L-BFGS-B)
  std::optional<double> upper;
  double eval_timeout = 300;       ///< seconds one evaluation may take before it fails
  std::string metrics;             ///< JSON-lines file, one row per iteration
  std::string save;                ///< model file (Boost.Serialization)
  bool json = false;               ///< final summary as one JSON object on stdout
  bool quiet = false;              ///< no progress lines
  double progress_interval = 1.0;  ///< seconds between progress lines
};

/// Runs a training job: read and prepare data, create shard actors (local, or on nodes), run L-BFGS
/// over the sharded objective, report accuracy, save. When an evaluation fails for good (for example
/// every node is lost), the last accepted theta is still saved. Returns the process exit code;
/// errors go to stderr.
int run_train(const train_options& options);

} // namespace shardopt::apps
