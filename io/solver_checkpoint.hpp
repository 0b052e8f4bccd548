#pragma once

// Checkpoints of full-batch solvers (L-BFGS, Newton-CG), in a form io knows without knowing any
// solver: the run's settings, the solver's name, and its state as named numbers and named lists
// of vectors, every value kept bit for bit (NaN too). apps/commands/train/solver_checkpoints.hpp maps the
// optimizers' states to and from it; io/checkpoint_files.hpp keeps the directory.

#include "io/checkpoint_files.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

/// A solver's run saved after iteration `iteration`.
struct solver_checkpoint {
  /// ("--model", "softmax"), ("--lambda", "0.0001"), ("examples", "60000"), ...: the options and
  /// data facts that define the run, as text, in the order the run gave them.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string solver;                                   ///< "lbfgs", "newton-cg"
  std::int64_t iteration = 0;
  std::vector<std::pair<std::string, double>> numbers;  ///< counts and scalars, by name
  std::vector<std::pair<std::string, std::vector<Eigen::VectorXd>>> vectors;  ///< by name

  /// The number or list of that name; nullopt / null when there is none.
  std::optional<double> number(const std::string& name) const;
  const std::vector<Eigen::VectorXd>* list(const std::string& name) const;
};

/// "<solver>-000000000012.txt" for the state after iteration 12.
std::string solver_checkpoint_name(const std::string& solver, std::int64_t iteration);

/// Writes `saved` into `directory` (created if missing) as its `solver_checkpoint_name` through
/// `stream_file_atomically`, then deletes all but the newest `keep` checkpoints of that solver
/// (keep <= 0 keeps all). Returns the path written; errors name the file and the cause. Blocks.
result<std::string> save_solver_checkpoint(const std::string& directory, const solver_checkpoint& saved, int keep);

/// What a resuming run takes of a checkpoint. Sparse vectors (their non-zeros alone in the file)
/// are made only once the file has read back whole, and may declare at most `sparse_entries`
/// entries in all, so that a few bytes cannot make gigabytes of zeros. With `settings`, a
/// checkpoint saved by a run with other settings is read without its lists: `check_same_run`
/// then names what differs, and nothing of another run's size is made.
struct checkpoint_limits {
  std::vector<std::pair<std::string, std::string>> settings;
  std::int64_t sparse_entries = std::int64_t{1} << 27;
};

/// Reads a solver checkpoint; errors name the file (missing, not a solver checkpoint, truncated,
/// inconsistent). Every declared size is checked against the bytes left before it is allocated,
/// and sparse vectors against `limits`.
result<solver_checkpoint> load_solver_checkpoint(const std::string& path, const checkpoint_limits& limits = {});

/// The newest checkpoint of `solver` in `directory` that reads back, with a warning naming each
/// newer file skipped. A missing directory, or one without a readable checkpoint, gives no state.
result<readable<solver_checkpoint>> newest_readable_solver_checkpoint(const std::string& directory,
                                                                      const std::string& solver,
                                                                      const checkpoint_limits& limits = {});

/// Checks that `saved` was written by a run with these `settings`: every key must be recorded with
/// the same text, and every key recorded must be among them. Errors read "<path>: saved by another
/// run: --lambda was 0.001 there, is 0.0001 here" (or "... it does not record <key>", "... it
/// records --no-bias true, which this run does not have").
result<void> check_same_run(const solver_checkpoint& saved,
                            const std::vector<std::pair<std::string, std::string>>& settings,
                            const std::string& path);

} // namespace shardopt::io
