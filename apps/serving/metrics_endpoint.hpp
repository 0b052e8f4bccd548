#pragma once

// The HTTP side of `--metrics-port`: Prometheus text at /metrics and the probes /healthz and
// /readyz (GET), served by civetweb on a few threads of its own, and nothing else: every other
// path gets 404, other methods a 4xx, and no file is ever served. What it reports comes from the callbacks, which it
// calls on its own threads: they read atomics and never block on the process's actors for long.

#include "base/result.hpp"

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace shardopt::apps {

/// What an endpoint serves.
struct endpoint_sources {
  /// The metric families of one scrape.
  std::function<std::vector<prometheus::MetricFamily>()> metrics;
  /// Why the process is not ready (empty: ready); /readyz answers 503 with it.
  std::function<std::string()> unready;
};

class metrics_endpoint {
public:
  /// Serves `sources` on bind:port (port 0: the OS picks one). Errors say why it could not listen.
  static result<metrics_endpoint> start(const std::string& bind, std::uint16_t port,
                                        endpoint_sources sources);

  metrics_endpoint(metrics_endpoint&&) noexcept;
  metrics_endpoint& operator=(metrics_endpoint&&) noexcept;
  ~metrics_endpoint();  ///< stops serving; waits for requests in progress

  std::uint16_t port() const;

  struct impl;

private:
  explicit metrics_endpoint(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

/// The options every serving command shares: where its endpoint listens.
struct metrics_options {
  int port = -1;                   ///< -1: no endpoint; 0: any free port
  std::string bind = "127.0.0.1";  ///< an IPv4 address; loopback unless told otherwise
  bool enabled() const { return port >= 0; }
};

/// Starts an endpoint when `options` ask for one and prints where it listens on stderr ("<who>:
/// metrics on http://host:port/metrics"); null when not asked for.
result<std::unique_ptr<metrics_endpoint>> start_metrics(const metrics_options& options,
                                                        endpoint_sources sources,
                                                        const std::string& who);

} // namespace shardopt::apps
