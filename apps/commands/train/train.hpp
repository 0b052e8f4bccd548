#pragma once

#include "actors/wire/runtime.hpp"
#include "actors/driver/topology.hpp"
#include "apps/run/data.hpp"
#include "apps/serving/metrics_endpoint.hpp"
#include "apps/run/modes.hpp"
#include "apps/run/progress.hpp"
#include "optimizer/lbfgs.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardopt::apps {

/// Checkpoints, in both modes: a PS job saves theta and the update rule's state every `steps` global
/// steps; an L-BFGS run saves theta and its memory every `steps` iterations; both also every `secs`
/// seconds, whichever comes first. A run restarts from the newest readable checkpoint in `dir`.
struct checkpoint_options {
  std::string dir;          ///< empty: no checkpoints
  std::int64_t steps = 0;   ///< 0 = off
  double secs = 600;        ///< 0 = off
  int keep = 5;             ///< newest checkpoints kept; 0 = all
};

/// The parameter-server mode's options (`train --mode ps` and `ps-task`).
struct ps_options {
  int workers = 0;                   ///< 0 = one per hardware thread (train --mode ps)
  int servers = 1;                   ///< parameter servers (train --mode ps)
  std::string rule = "sgd";          ///< sgd, momentum, nesterov, adagrad, adam
  double learning_rate = 0.01;
  std::string schedule = "constant"; ///< constant, step, inverse-time
  double decay_rate = 0.5;
  std::int64_t decay_steps = 1000;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double adagrad_initial = 0.1;
  std::int64_t batch_size = 128;
  bool sync = false;
  int replicas_to_aggregate = 0;     ///< 0 = workers - backup_workers
  int backup_workers = 0;
  int staleness = -1;                ///< asynchronous SSP bound; -1 = unbounded
  std::int64_t last_step = 1000;
  std::uint64_t seed = 0;
  std::int64_t log_steps = 100;
  std::int64_t eval_steps = 0;
  double step_timeout = 300;
  double startup_timeout = 120;
  std::string slow_worker;           ///< testing: "index:factor"
};

/// Everything `shardopt train` takes.
struct train_options {
  train_mode mode = train_mode::lbfgs;
  ps_options ps;
  checkpoint_options checkpoints;
  data_options data;
  std::string model = "softmax";   ///< linear, logistic, softmax, svm or mlp
  std::string hidden;              ///< mlp: layer widths "100" or "256,128" (empty: 100)
  std::string activation = "relu"; ///< mlp: relu or tanh
  std::string loss = "auto";       ///< mlp: cross-entropy (softmax output) or squared (regression)
  double lambda = 1e-4;
  double l1 = 0;                   ///< L1 penalty on the weights (OWL-QN); with lambda, the elastic net
  bool no_bias = false;            ///< --mode lbfgs, linear models: biases held at 0
  bool no_shrinking = false;       ///< --l1 with OWL-QN or Newton-CG: every pass over every column
  std::int64_t classes = 0;        ///< 0 = from the training labels
  int shards = 0;                  ///< 0 = one per hardware thread (or the nodes' threads)
  std::string nodes;               ///< "host:port,...": shards on node processes
  std::string nodes_file;          ///< more nodes, one host:port per line; watched for new ones
  std::string nodes_dns;           ///< "NAME:PORT": more nodes, at NAME's addresses; watched too
  apps::data_placement placement = apps::data_placement::shipped;  ///< with nodes
  actors::topology topology = actors::topology::automatic;  ///< with nodes
  std::size_t fan_in = 0;          ///< tree: children per node; 0 = automatic
  actors::tls_options tls;         ///< mutual TLS to the nodes
  std::size_t threads = 0;         ///< actor scheduler threads; 0 = one per hardware thread
  solver_kind solver = solver_kind::automatic;  ///< --mode lbfgs
  optimizer::lbfgs_options lbfgs;  ///< also the stopping tests of newton-cg
  step_kind newton_step = step_kind::automatic;  ///< newton-cg: line search or trust region
  double cg_tolerance = 0;         ///< newton-cg: CG's stopping test (optimizer::newton_options); 0 auto
  int preconditioner_pairs = -1;   ///< newton-cg (--cg-pairs): pairs refining CG's diagonal preconditioner; -1 auto
  int max_cg = 0;                  ///< newton-cg: products per step (0 = the dimension)
  std::optional<double> lower;     ///< one bound for every coordinate of theta (L-BFGS-B)
  std::optional<double> upper;
  double eval_timeout = 300;       ///< seconds one evaluation may take before it fails
  std::string metrics;             ///< JSON-lines file, one row per iteration
  std::string save;                ///< model file (Boost.Serialization)
  bool json = false;               ///< final summary as one JSON object on stdout
  bool quiet = false;              ///< no progress lines
  double progress_interval = 1.0;  ///< seconds between progress lines
  metrics_options serve_metrics;   ///< --metrics-port: Prometheus metrics and probes
};

/// What a library caller (the Python module) adds to a run.
struct train_controls {
  /// Training data in memory instead of `options.data` (moved from); null: read `options.data`.
  memory_data* data = nullptr;
  /// Every metrics row (L-BFGS and Newton-CG: each iteration; PS: each log step) as it is made;
  /// returning false stops the run (stop reason `stopped_by_hook`).
  row_hook on_row;
  /// When set, the run stops before its next pass over the data (stop reason `interrupted`; a run
  /// interrupted before its first iteration fails instead).
  const std::atomic<bool>* interrupt = nullptr;
  /// Called once the run's peers (shards, nodes or parameter servers) are up.
  std::function<void()> on_ready;
  /// Keep every metrics row in the report's history (the CLI does not: a long run's rows are
  /// unbounded; they are in --metrics).
  bool keep_history = false;
};

/// What a run hands back.
struct train_outcome {
  nlohmann::json summary;               ///< the object `train --json` prints
  io::saved_model model;                ///< what `--save` writes; theta is the last accepted iterate
  std::vector<nlohmann::json> history;  ///< with keep_history: the metrics rows, in order
  std::optional<failure> metrics_error; ///< the run finished but its --metrics file is incomplete
};

/// Runs a training job in either mode (`options.mode`): read and prepare data, create shard actors
/// (local, or on nodes) and run L-BFGS or Newton-CG over the sharded objective, or run a
/// parameter-server job; report accuracy, save. Progress lines go to stderr unless quiet. Failures
/// name what and where, by kind: bad options or data (`invalid`), a missing file (`not_found`), a
/// run that could not finish (`runtime`: for example every node was lost; the last accepted theta
/// is still saved with --save).
result<train_outcome> train(const train_options& options, const train_controls& controls = {});

/// train(), with its --metrics-port endpoint when `options` ask for one (apps/serving/service_metrics.hpp):
/// ready from the run's peers connecting to the run's end, fed every metrics row.
result<train_outcome> train_watched(const train_options& options, train_controls controls = {});

/// `shardopt train` and `shardopt run`: train_watched(), the accuracies on stderr, the summary on stdout
/// with --json. Returns the process exit code; errors go to stderr.
int run_train(const train_options& options);

/// Prints a finished run's summary (or its error) as `run_train` does; the exit code: 1 for an
/// error or an incomplete --metrics file, else 0.
int exit_with_outcome(const result<train_outcome>& trained, const train_options& options);

} // namespace shardopt::apps
