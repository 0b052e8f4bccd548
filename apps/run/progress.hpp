#pragma once

#include "apps/run/metrics_file.hpp"
#include "optimizer/lbfgs.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace shardopt::apps {

/// One metrics row: what a `--metrics` line holds for an iteration.
nlohmann::json metrics_row(const optimizer::iteration_info& info);

/// Sees every metrics row as it is made; returns false to stop the run.
using row_hook = std::function<bool(const nlohmann::json& row)>;

/// Reports L-BFGS iterations: a throttled progress line on stderr (the first iteration, then at most
/// one per `interval`) and, with a metrics path, one JSON object per iteration in a JSON-lines file.
class progress_log {
public:
  progress_log(bool quiet, double interval_seconds);

  /// Opens the metrics file: truncated, or for a run resumed after iteration `resumed_at`, with the
  /// rows of iterations up to `resumed_at` kept (rows a killed run wrote beyond its checkpoint
  /// are dropped: the resumed run writes them again). Errors name the path.
  result<void> open_metrics(const std::string& path, int resumed_at = 0);

  /// Whether every metrics row was written; the first failure names the file and the cause.
  result<void> metrics_written() const;

  /// Hands every row to `hook` too; the iteration hook then returns what `hook` does.
  void follow(row_hook hook) { follow_ = std::move(hook); }

  /// The iteration hook: reports, and returns true unless the followed hook asks to stop.
  bool operator()(const optimizer::iteration_info& info);

  /// Prints the last iteration if throttling skipped it.
  void flush();

private:
  void print(const optimizer::iteration_info& info);

  bool quiet_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point last_print_{};
  std::optional<optimizer::iteration_info> pending_;
  metrics_file metrics_;
  row_hook follow_;
};

} // namespace shardopt::apps
