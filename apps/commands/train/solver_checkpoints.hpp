#pragma once

// Checkpoints of full-batch runs (`train --checkpoint-dir`): what identifies a run, the optimizers'
// states as io's solver checkpoint (io/solver_checkpoint.hpp) and back, and the checkpointer that
// resumes a run and saves it when due. When to save is decided here, by the run's driver, as the
// chief decides it for parameter-server jobs (actors/ps/chief.hpp); both time it with
// optimizer::periodic_trigger, and io keeps the directories.

#include "apps/run/data.hpp"
#include "apps/commands/train/train.hpp"
#include "io/solver_checkpoint.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/sgd.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::apps {

/// What identifies a full-batch run of `train` for its checkpoints: the model, the data's source,
/// how it is read and its shape, the number of shards, and the options that change the path of the
/// run (not --max-iter, which may be raised to continue a finished run), with the solver as resolved
/// (`--solver auto` records the solver it chose). Doubles are written
/// exactly (%.17g). The data's content itself is not hashed: a file changed in place under the same
/// name and shape is not detected.
std::vector<std::pair<std::string, std::string>> run_settings(const train_options& options,
                                                            solver_kind solver,
                                                            const prepared_data& data, int shards);

/// An L-BFGS or Newton-CG state as a solver checkpoint, and back (the names and sizes checked:
/// errors name what is missing or misshapen, as invalid).
io::solver_checkpoint to_checkpoint(const optimizer::lbfgs_state& state);
io::solver_checkpoint to_checkpoint(const optimizer::newton_state& state);
result<optimizer::lbfgs_state> lbfgs_state_of(const io::solver_checkpoint& saved);
result<optimizer::newton_state> newton_state_of(const io::solver_checkpoint& saved);

/// The checkpoints of one full-batch run of `train --checkpoint-dir` (L-BFGS or Newton-CG): the
/// state found at start, and the sessions that save the state every --checkpoint-steps iterations
/// or --checkpoint-secs seconds.
class solver_checkpointer {
public:
  /// Finds the newest readable checkpoint of `solver` in `options.dir` (printing a warning for
  /// each one skipped, unless quiet) and checks it was saved by a run with `settings`. Errors: the
  /// directory cannot be listed; the checkpoint belongs to another run (naming the option that
  /// differs) or is not a state of that solver. The vectors a checkpoint saved sparsely may have
  /// at most `sparse_entries` entries in all (io::checkpoint_limits).
  static result<solver_checkpointer> open(const checkpoint_options& options, solver_kind solver,
                                          std::vector<std::pair<std::string, std::string>> settings,
                                          bool quiet, std::int64_t sparse_entries);

  /// The iteration the run resumes after, or 0 when it starts afresh.
  int resumed_iteration() const;

  /// The file the state was read from (empty without one).
  const std::string& resumed_from() const { return resumed_from_; }

  /// The sessions for `optimizer::minimize` and `optimizer::minimize_newton`: resume, and save
  /// when due and at the end of a run that stops at the gradient test or the iteration limit. A
  /// failed save ends the run with the file's error. Keep this object alive while a run uses one.
  optimizer::lbfgs_session lbfgs_session();
  optimizer::newton_session newton_session();

  /// The last checkpoint written by this process (empty when none).
  const std::string& last_written() const { return last_written_; }

private:
  solver_checkpointer(const checkpoint_options& options, solver_kind solver,
                      std::vector<std::pair<std::string, std::string>> settings);

  /// The session resuming from `found` and saving when due.
  template <class State>
  optimizer::solver_session<State> session_of(const std::optional<State>& found);

  /// Saves `saved`, the state after `iterations`, now.
  result<void> offer(io::solver_checkpoint saved, int iterations, double seconds);

  checkpoint_options options_;
  solver_kind solver_;
  std::vector<std::pair<std::string, std::string>> settings_;
  std::optional<optimizer::lbfgs_state> lbfgs_found_;
  std::optional<optimizer::newton_state> newton_found_;
  std::string resumed_from_;
  std::string last_written_;
  optimizer::periodic_trigger due_;
};

} // namespace shardopt::apps
