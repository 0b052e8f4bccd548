#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

/// One run as the experiment report shows it.
struct report_run {
  std::string name;
  std::string status;                          ///< "ok" or "failed"
  std::vector<std::pair<std::string, std::string>> columns;  ///< table cells, in column order
  std::string config;                          ///< the resolved configuration, shown on click
  std::vector<double> steps;                   ///< iteration (L-BFGS) or global step (PS)
  std::vector<double> seconds;                 ///< time of each point
  std::vector<double> objective;               ///< objective (L-BFGS) or minibatch loss (PS)
  std::vector<std::pair<double, double>> accuracy;  ///< (seconds, test accuracy) points
  double throughput = 0;                       ///< examples per second
};

/// A self-contained HTML page (inline SVG and a little script, no network): gap to the best
/// objective against iterations and against seconds (log scale), test accuracy against time,
/// throughput per run, and a table sortable by any column whose rows open the run's config.
/// Every run is one `<path class="run-line">` in each line plot.
std::string render_report(const std::vector<report_run>& runs, const std::string& title);

} // namespace shardopt::io
