#pragma once

// The chief's part of a parameter-server job (TensorFlow's MonitoredTrainingSession on worker 0):
// initialise the PSs fresh or from the newest readable checkpoint, run the hooks (log, evaluate,
// checkpoint) as training goes, and take the final checkpoint.

#include "actors/ps/ps_client.hpp"
#include "actors/ps/ps_worker.hpp"
#include "optimizer/sgd.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace shardopt::actors {

class chief_session {
public:
  chief_session(ps_client& client, const ps_job& job, const chief_options& options);

  /// Initialises every PS: fresh (theta zero), or from the newest checkpoint in the checkpoint
  /// directory, whose model and update rule must match the job. Returns the restored step, or -1.
  result<std::int64_t> initialise();

  /// Marks the start of training at `step` (the triggers count from there).
  void start(std::int64_t step);

  /// The hooks at global step `step`, with `theta` pulled at that step; `final` at the end (logs
  /// and evaluates, no periodic checkpoint).
  result<void> hooks(std::int64_t step, const Eigen::VectorXd& theta, bool final);

  /// Whether the job's owner asked to stop before this step (chief_options::stop_requested).
  bool stop_requested() const { return options_.stop_requested && options_.stop_requested(); }

  /// Writes a checkpoint of the PSs' state unless theta went non-finite (the last good one stays
  /// the newest). No-op without a checkpoint directory.
  result<void> checkpoint();

  /// The newest checkpoint written, or empty.
  const std::string& last_checkpoint() const { return last_checkpoint_; }

private:
  double elapsed() const;

  ps_client& client_;
  const ps_job& job_;
  const chief_options& options_;
  std::chrono::steady_clock::time_point started_;
  ps_stats last_stats_;
  double last_log_seconds_ = 0;
  std::string last_checkpoint_;
  optimizer::periodic_trigger log_;
  optimizer::periodic_trigger eval_;
  optimizer::periodic_trigger checkpoint_;
};

} // namespace shardopt::actors
