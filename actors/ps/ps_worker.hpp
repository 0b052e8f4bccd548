#pragma once

#include "actors/wire/network.hpp"
#include "actors/ps/parameter_server.hpp"
#include "actors/wire/runtime.hpp"
#include "io/model_file.hpp"
#include "model/dataset.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"
#include "optimizer/sgd.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::actors {

/// What every task of a parameter-server job agrees on (the same flags everywhere, as in TensorFlow).
struct ps_job {
  model::model_shape shape;
  double lambda = 0;
  optimizer::update_rule rule;
  std::int64_t batch_size = 128;
  bool sync = true;
  std::uint32_t workers = 1;                ///< total_num_replicas
  std::uint32_t replicas_to_aggregate = 1;  ///< synchronous: gradients averaged per step
  std::int32_t staleness = -1;              ///< asynchronous: SSP bound, -1 = unbounded
  std::int64_t last_step = 1000;            ///< stop at this global step (0 = never)
  std::uint64_t seed = 0;
  access_token token;  ///< the job's capability: every request to a PS carries it
  std::chrono::milliseconds step_timeout{std::chrono::minutes{5}};    ///< one step's wait
  std::chrono::milliseconds startup_timeout{std::chrono::minutes{2}}; ///< wait for the chief
};

/// One worker: its index (0 = chief) and its shard, rows [rows.begin, rows.end) of `data`.
struct worker_task {
  std::uint32_t index = 0;
  std::shared_ptr<const model::dataset> data;
  model::row_range rows;
  double slowdown = 1;  ///< testing: each gradient takes this many times as long (a straggler)
};

/// One line of the chief's log (every `log_steps` steps, and at each evaluation).
struct step_log {
  std::int64_t step = 0;
  double seconds = 0;              ///< since the chief started training
  double loss = 0;                 ///< mean minibatch objective of the gradients applied since the last line
  double steps_per_second = 0;
  double examples_per_second = 0;
  std::int64_t dropped = 0;        ///< stale gradients dropped so far (PS 0)
  std::int64_t staleness_max = 0;  ///< since the start (PS 0)
  double staleness_mean = 0;       ///< over the gradients applied since the last line
  std::optional<model::quality_sums> test;  ///< when the test set was evaluated at this step
};

/// The chief's monitored session: restore, hooks, final checkpoint.
struct chief_options {
  std::string checkpoint_dir;          ///< empty: no checkpoints, no restore
  int keep_checkpoints = 5;
  std::int64_t checkpoint_steps = 0;   ///< 0 = off
  double checkpoint_seconds = 600;     ///< 0 = off
  std::int64_t log_steps = 100;        ///< 0 = off
  std::int64_t eval_steps = 0;         ///< 0 = only at the end
  std::shared_ptr<const model::dataset> test;
  io::saved_model model;               ///< labels, scaling, lambda for checkpoint files (theta unused)
  std::function<void(const std::string&)> note;  ///< restored, checkpoint written, ...
  std::function<void(const step_log&)> log;
  /// Asked before every step: true ends the job at that step, as the last step would (final hooks,
  /// checkpoint, every PS and worker told). Null: run to the last step.
  std::function<bool()> stop_requested;
};

/// How a worker's training ended.
struct ps_outcome {
  std::int64_t step = 0;            ///< final global step
  std::int64_t restored_step = -1;  ///< chief: step of the checkpoint it started from, or -1
  Eigen::VectorXd theta;            ///< chief: final theta
  ps_stats stats;                   ///< chief: PS 0's counters at the end
  double seconds = 0;               ///< time in the training loop
  std::string last_checkpoint;      ///< chief: newest checkpoint written
};

/// The parameter servers a worker talks to, with names for messages ("ps 1 (hostB:2222)").
struct ps_group {
  std::vector<ps_actor> servers;
  std::vector<std::string> names;
};

/// Theta's balanced split into `count` contiguous slices: slice j is [bounds[j], bounds[j+1]).
std::vector<std::int64_t> slice_bounds(std::int64_t dimension, std::uint32_t count);

/// Runs one worker to the end on the calling (blocking) actor: says hello to every PS; as chief
/// (index 0) initialises them, fresh or from the newest checkpoint in `chief->checkpoint_dir`,
/// otherwise waits for the chief; then loops pull - minibatch gradient - push until the PSs report
/// the last step or a failure. The chief runs the hooks (log, evaluate, checkpoint) and at the end
/// takes the final checkpoint and tells the PSs to stop. Errors say what failed and where: a PS
/// that went down or does not answer, a NaN loss, a failure another task reported.
result<ps_outcome> run_worker(caf::blocking_actor* self, const ps_group& ps, const ps_job& job,
                              const worker_task& task, const chief_options* chief);

/// A whole job in this process: `ps_count` parameter servers and `job.workers` worker actors, the
/// training data split evenly between them. Worker 0 (the chief) runs on the calling thread. Waits
/// for every actor to end. `slow_worker` >= 0 is slowed down by `slowdown` (testing).
result<ps_outcome> run_local_job(runtime& rt, const ps_job& job, std::uint32_t ps_count,
                                 std::shared_ptr<const model::dataset> train,
                                 const chief_options& chief, int slow_worker = -1,
                                 double slowdown = 1);

/// Connects to the parameter server published at each endpoint (over TLS when the runtime has TLS
/// options). A refused connection is retried until `wait` has passed: PS tasks may start after
/// the workers. Errors name the endpoint. (Versions and formats are checked by each worker's
/// hello.)
result<ps_group> connect_parameter_servers(runtime& rt, const std::vector<endpoint>& endpoints,
                                           std::chrono::milliseconds wait);

/// Spawns a parameter server and publishes it on bind:port (port 0: any free port). Returns the
/// actor and the port it listens on. Only its typed protocol is exposed (wire/guard.hpp).
result<std::pair<ps_actor, std::uint16_t>> publish_parameter_server(runtime& rt, const std::string& bind,
                                                                    std::uint16_t port,
                                                                    const access_token& token);

/// Waits until a published PS ends: Ok after a finished run; an error with the failure otherwise
/// (the process then exits non-zero), or when no chief initialised it within `startup` (a PS never
/// waits forever).
result<void> await_parameter_server(runtime& rt, const ps_actor& server, std::chrono::milliseconds startup);

/// Runs a worker on a fresh blocking actor of `rt` (see run_worker).
result<ps_outcome> run_remote_worker(runtime& rt, const ps_group& ps, const ps_job& job,
                                     const worker_task& task, const chief_options* chief);

/// A parameter server's statistics, asked with the job's token; an error while it waits for its
/// chief (or does not answer within `timeout`).
result<ps_stats> parameter_server_stats(runtime& rt, const ps_actor& server, const access_token& token,
                                        std::chrono::milliseconds timeout);

/// Stops listening on `port` (before a PS process exits).
void unpublish_parameter_server(runtime& rt, const ps_actor& server, std::uint16_t port);

} // namespace shardopt::actors
