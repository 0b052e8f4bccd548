#pragma once

// Checkpoints of full-batch runs (`train --checkpoint-dir`): what identifies a run, the optimizer's
// state as io's solver checkpoint (io/solver_checkpoint.hpp) and back, and the checkpointer that
// resumes a run and saves it when due. When to save is decided here, by the run's driver, as the
// chief decides it for parameter-server jobs (actors/chief.hpp); both time it with
// optimizer::periodic_trigger, and io keeps the directories.

#include "apps/data.hpp"
#include "apps/train.hpp"
#include "io/solver_checkpoint.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/sgd.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::apps {

/// What identifies a full-batch run of `train` for its checkpoints: the model, the data's source,
/// how it is read and its shape, the number of shards, and the options that change the path of the
/// run (not --max-iter, which may be raised to continue a finished run). Doubles are written
/// exactly (%.17g). The data's content itself is not hashed: a file changed in place under the same
/// name and shape is not detected.
std::vector<std::pair<std::string, std::string>> run_settings(const train_options& options,
                                                            const prepared_data& data, int shards);

/// An L-BFGS state as a solver checkpoint, and back (the names and sizes checked: errors name what
/// is missing or misshapen, as invalid).
io::solver_checkpoint to_checkpoint(const optimizer::lbfgs_state& state);
result<optimizer::lbfgs_state> lbfgs_state_of(const io::solver_checkpoint& saved);

/// The checkpoints of one L-BFGS run of `train --checkpoint-dir`: the state found at start, and the
/// session that saves the state every --checkpoint-steps iterations or --checkpoint-secs seconds.
class lbfgs_checkpointer {
public:
  /// Finds the newest readable L-BFGS checkpoint in `options.dir` (printing a warning for each one
  /// skipped, unless quiet) and checks it was saved by a run with `settings`. Errors: the directory
  /// cannot be listed; the checkpoint belongs to another run (naming the option that differs).
  static result<lbfgs_checkpointer> open(const checkpoint_options& options,
                                         std::vector<std::pair<std::string, std::string>> settings,
                                         bool quiet);

  /// The state to resume from, or null when the run starts afresh.
  const optimizer::lbfgs_state* resume() const { return found_ ? &*found_ : nullptr; }

  /// The file `resume()` was read from (empty without one).
  const std::string& resumed_from() const { return resumed_from_; }

  /// The session for `optimizer::minimize`: resumes, and saves when due and at the end of a run
  /// that stops at the gradient test or the iteration limit. A failed save ends the run with the
  /// file's error. Keep this object alive while the run uses the session.
  optimizer::lbfgs_session session();

  /// The last checkpoint written by this process (empty when none).
  const std::string& last_written() const { return last_written_; }

private:
  lbfgs_checkpointer(const checkpoint_options& options, std::vector<std::pair<std::string, std::string>> settings);

  checkpoint_options options_;
  std::vector<std::pair<std::string, std::string>> settings_;
  std::optional<optimizer::lbfgs_state> found_;
  std::string resumed_from_;
  std::string last_written_;
  optimizer::periodic_trigger due_;
};

} // namespace shardopt::apps
