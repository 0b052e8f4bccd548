#pragma once

// What `--metrics-port` reports, as Prometheus metric families: every process's memory and wire
// traffic, a node's counters (actors/wire/node_counters.hpp), a driver's latest iteration (the row its
// --metrics file gets, so the two cannot disagree), a parameter server's statistics. The names
// and labels are listed in docs/cluster.md.

#include "actors/wire/node_counters.hpp"
#include "apps/serving/metrics_endpoint.hpp"
#include "apps/run/progress.hpp"

#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace shardopt::actors {
struct ps_stats;
}

namespace shardopt::apps {

/// A driver's progress as its endpoint sees it: the latest metrics row and whether it is ready
/// (its shards or parameter servers connected, the run not over). Written by the run, read by the
/// endpoint's threads.
class driver_progress {
public:
  void record(const nlohmann::json& row);
  nlohmann::json latest() const;

  /// Ready from `connected` (its peers are up) until `finished` (the run is over).
  void connected() { connected_ = true; }
  void finished() { finished_ = true; }

  /// Why it is not ready (empty: ready).
  std::string unready() const;

private:
  mutable std::mutex mutex_;
  nlohmann::json row_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> finished_{false};
};

/// The families of this process: resident memory, wire bytes sent and received, and an info
/// gauge naming its role ("node", "driver", "ps", "worker") and versions.
std::vector<prometheus::MetricFamily> process_metrics(const std::string& role);

/// A node's families: what it holds, what it served, its refusals by request and reason.
std::vector<prometheus::MetricFamily> node_metrics(const actors::node_counters& counters);

/// A driver's (or a parameter-server job's chief's) families, from its latest metrics row.
std::vector<prometheus::MetricFamily> driver_metrics(const driver_progress& progress);

/// A parameter server's families; null `stats` (it waits for its chief, or its job is over): only that.
std::vector<prometheus::MetricFamily> ps_metrics(const actors::ps_stats* stats);

/// What a driver's endpoint serves: this process's families as `role`, `progress`'s latest row
/// (unless `rows` is false: a worker that is not the chief), and its readiness.
endpoint_sources driver_sources(const driver_progress& progress, const std::string& role, bool rows = true);

/// A row hook that records each row in `progress`, then returns what `then` does (true without).
row_hook recording(driver_progress& progress, row_hook then = {});

/// `a` followed by `b`.
std::vector<prometheus::MetricFamily> joined(std::vector<prometheus::MetricFamily> a,
                                             std::vector<prometheus::MetricFamily> b);

} // namespace shardopt::apps
