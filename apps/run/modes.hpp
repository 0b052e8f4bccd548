#pragma once

// The choices `train` makes by name on the command line and reports by name in its summary.

#include <string_view>

namespace shardopt::apps {

/// How `train` trains: sharded full-batch optimisation, or a parameter-server job.
enum class train_mode { lbfgs, ps };

/// The full-batch solver of `train_mode::lbfgs`; `automatic` is resolved before a run
/// (apps/commands/train/solver.hpp).
enum class solver_kind { automatic, lbfgs, newton_cg, owlqn };

/// How Newton-CG steps (optimizer::newton_step); `automatic` is resolved once the data is known:
/// the line search for sparse data, the trust region for dense data.
enum class step_kind { automatic, line_search, trust_region };

/// Where node processes get their shards' rows: sent by the driver, or read by each node.
enum class data_placement { shipped, node_local };

/// The names the command line and the summaries use: "lbfgs"/"ps", "auto"/"lbfgs"/"newton-cg",
/// "shipped"/"node-local".
std::string_view to_string(train_mode mode);
std::string_view to_string(solver_kind solver);
std::string_view to_string(step_kind step);  ///< "auto", "line-search", "trust-region"
std::string_view to_string(data_placement placement);

} // namespace shardopt::apps
