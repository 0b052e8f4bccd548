#pragma once

#include "io/checkpoint_files.hpp"
#include "base/result.hpp"
#include "optimizer/lbfgs.hpp"

#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

/// A sharded L-BFGS run saved after an iteration: what the run is (its settings, compared before a
/// resume) and the optimizer's state (theta, gradient, correction pairs, counts).
struct lbfgs_checkpoint {
  /// ("--model", "softmax"), ("--lambda", "0.0001"), ("examples", "60000"), ...: the options and
  /// data facts that define the run, as text, in the order the run gave them.
  std::vector<std::pair<std::string, std::string>> settings;
  optimizer::lbfgs_state state;
};

/// "lbfgs-000000000012.txt" for the state after iteration 12.
std::string lbfgs_checkpoint_name(int iteration);

/// Writes `saved` into `directory` (created if missing) as `lbfgs_checkpoint_name(iterations)`
/// through `stream_file_atomically`, then deletes all but the newest `keep` L-BFGS checkpoints
/// (keep <= 0 keeps all). Numbers are written so that they read back bit for bit. Returns the path
/// written; errors name the file and the cause. Blocks.
result<std::string> save_lbfgs_checkpoint(const std::string& directory, const lbfgs_checkpoint& saved, int keep);

/// Reads an L-BFGS checkpoint; errors name the file (missing, not an L-BFGS checkpoint, truncated,
/// inconsistent). Every declared size is checked against the bytes left before it is allocated.
result<lbfgs_checkpoint> load_lbfgs_checkpoint(const std::string& path);

/// The newest L-BFGS checkpoint in `directory` that reads back, with a warning naming each newer
/// file skipped. A missing directory, or one without a readable checkpoint, gives no state.
result<readable<lbfgs_checkpoint>> newest_readable_lbfgs_checkpoint(const std::string& directory);

/// Checks that `saved` was written by a run with these `settings`: every key must be recorded with
/// the same text. Errors read "<path>: saved by another run: --lambda was 0.001 there, is 0.0001
/// here" (or "... it does not record <key>").
result<void> check_same_run(const lbfgs_checkpoint& saved,
                            const std::vector<std::pair<std::string, std::string>>& settings,
                            const std::string& path);

} // namespace shardopt::io
