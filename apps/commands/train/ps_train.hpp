#pragma once

#include "apps/commands/train/train.hpp"

#include <cstdint>
#include <string>

namespace shardopt::apps {

/// One task of a multi-process parameter-server job, TensorFlow style: every task gets the same
/// host lists and job flags, plus its own job name and index.
struct ps_task_options {
  train_options train;       ///< data, model, PS options, metrics, json, save, TLS, threads
  std::string ps_hosts;      ///< "host:port,...", one per PS task
  std::string worker_hosts;  ///< "host:port,...", one per worker task (worker 0 is the chief)
  std::string job_name;      ///< "ps" or "worker"
  int task_index = 0;
  std::string bind;          ///< PS: address to listen on (default: its host in --ps_hosts)
  std::string job_token;     ///< the job's shared secret (default: derived from the host lists)
  bool insecure = false;     ///< PS: allow plain TCP off loopback
};

/// `train --mode ps` (see `train`): PSs and workers as actors in this process.
result<train_outcome> train_ps(const train_options& options, const train_controls& controls);

/// `shardopt ps-task`: one PS or worker task. A PS serves until the chief is done and every worker
/// has gone, then exits (status 1 when training failed). A worker trains until the last step or a
/// failure; the chief also checkpoints, logs, evaluates and prints the summary.
int run_ps_task(const ps_task_options& options);

} // namespace shardopt::apps
