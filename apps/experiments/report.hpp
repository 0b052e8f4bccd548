#pragma once

#include "apps/options/cli.hpp"

namespace shardopt::apps {

/// `shardopt report`: one self-contained HTML file from the results.jsonl files under a folder
/// (searched recursively) and the metrics.jsonl of each run they list. A row that is not a results
/// row fails the report with its file and line; a run's missing metrics leave its plots empty.
int run_report(const report_options& options);

} // namespace shardopt::apps
