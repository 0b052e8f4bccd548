#pragma once

#include "io/model_file.hpp"
#include "model/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::io {

/// The state of a parameter-server training run at a global step: the model (shape, theta, label
/// encoding, scaling, lambda, as in a model file) plus the optimizer's state, so that a restart
/// continues exactly where the checkpoint was taken.
struct checkpoint {
  std::int64_t step = 0;               ///< global step at which theta was captured
  std::string rule;                    ///< update rule name ("adam", ...): state is rule-specific
  std::vector<Eigen::VectorXd> slots;  ///< the rule's per-coordinate state, each as long as theta
  std::int64_t updates = 0;            ///< updates applied so far (Adam's t)
  saved_model model;
};

/// The file name of the checkpoint at `step` inside a directory: "ckpt-000000001234.txt".
std::string checkpoint_name(std::int64_t step);

/// Writes `state` into `directory` (created if missing) as `checkpoint_name(state.step)` through
/// `stream_file_atomically` (a crash or a full disk never leaves a partial checkpoint). Then deletes
/// all but the newest `keep` checkpoints (keep <= 0 keeps all). Returns the path written. Errors
/// name the file and the cause (errno text).
result<std::string> save_checkpoint(const std::string& directory, const checkpoint& state, int keep);

/// Reads a checkpoint; errors name the file (missing, not a checkpoint, truncated, inconsistent).
result<checkpoint> load_checkpoint(const std::string& path);

/// The newest checkpoint (highest step) in `directory`; nullopt when the directory is missing or has
/// none. Temporary files of an interrupted write are ignored.
std::optional<std::string> latest_checkpoint(const std::string& directory);

} // namespace shardopt::io
