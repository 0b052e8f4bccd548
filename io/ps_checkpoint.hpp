#pragma once

// Checkpoints of parameter-server jobs: theta, the update rule's state and the model, at a global
// step. (Full-batch solvers' checkpoints are solver_checkpoint.hpp's.)

#include "io/checkpoint_files.hpp"
#include "io/model_file.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::io {

/// The state of a parameter-server training run at a global step: the model (shape, theta, label
/// encoding, scaling, lambda, as in a model file) plus the optimizer's state, so that a restart
/// continues exactly where the checkpoint was taken.
struct ps_checkpoint {
  std::int64_t step = 0;               ///< global step at which theta was captured
  std::string rule;                    ///< update rule name ("adam", ...): state is rule-specific
  std::vector<Eigen::VectorXd> slots;  ///< the rule's per-coordinate state, each as long as theta
  std::int64_t updates = 0;            ///< updates applied so far (Adam's t)
  saved_model model;
};

/// The file name of the checkpoint at `step` inside a directory: "ckpt-000000001234.txt".
std::string ps_checkpoint_name(std::int64_t step);

/// Writes `state` into `directory` (created if missing) as `ps_checkpoint_name(state.step)` through
/// `stream_file_atomically` (a crash or a full disk never leaves a partial checkpoint). Then deletes
/// all but the newest `keep` checkpoints (keep <= 0 keeps all). Returns the path written. Errors
/// name the file and the cause (errno text).
result<std::string> save_ps_checkpoint(const std::string& directory, const ps_checkpoint& state, int keep);

/// Reads a checkpoint; errors name the file (missing, not a checkpoint, truncated, inconsistent).
result<ps_checkpoint> load_ps_checkpoint(const std::string& path);

/// What `newest_readable_ps_checkpoint` found.
using readable_ps_checkpoint = readable<ps_checkpoint>;

/// Loads checkpoints in `directory` newest first and returns the first that reads back whole,
/// with a warning for each newer file skipped ("skipped: <file>: truncated or corrupt checkpoint
/// (...)") and for each checkpoint-like name ignored ("<file>: ignored: the step in its name does not
/// fit in 64 bits"). A missing directory, or one with no readable checkpoint, gives no state (and
/// no failure); the failure is a directory that exists but cannot be listed. Reads files; blocks.
result<readable_ps_checkpoint> newest_readable_ps_checkpoint(const std::string& directory);

} // namespace shardopt::io
