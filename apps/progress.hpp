#pragma once

#include "optimizer/lbfgs.hpp"

#include <chrono>
#include <fstream>
#include <optional>
#include <string>

namespace shardopt::apps {

/// Reports L-BFGS iterations: a throttled progress line on stderr (the first iteration, then at most
/// one per `interval`) and, with a metrics path, one JSON object per iteration in a JSON-lines file.
class progress_reporter {
public:
  progress_reporter(bool quiet, double interval_seconds);

  /// Opens the metrics file (truncating it). Errors name the path.
  result<void> open_metrics(const std::string& path);

  /// The iteration hook: reports and returns true (never stops the run).
  bool operator()(const optimizer::iteration_info& info);

  /// Prints the last iteration if throttling skipped it.
  void flush();

private:
  void print(const optimizer::iteration_info& info);

  bool quiet_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point last_print_{};
  std::optional<optimizer::iteration_info> pending_;
  std::ofstream metrics_;
};

} // namespace shardopt::apps
