#pragma once

#include "actors/node/node_checks.hpp"
#include "actors/wire/runtime.hpp"
#include "apps/serving/metrics_endpoint.hpp"

#include <cstdint>
#include <string>

namespace shardopt::apps {

/// Everything `shardopt node` takes.
struct node_options {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 4242;   ///< 0: the OS picks a free port (printed on stdout)
  std::size_t threads = 0;     ///< worker threads announced to drivers; 0 = hardware threads
  actors::tls_options tls;
  bool insecure = false;       ///< allow plain TCP off loopback
  actors::node_limits limits;  ///< data_root given as typed; canonicalised by run_node
  double max_gib = 0;          ///< limits.bytes in GiB (0: half of this machine's memory)
  double max_gib_per_driver = 0;
  double staging_timeout = 60;  ///< limits.staging_idle in seconds
  metrics_options metrics;     ///< --metrics-port: Prometheus metrics and probes
  double drain_seconds = 0;    ///< on SIGTERM, wait this long for the drivers it holds to finish
};

/// Runs a node: publishes a node actor, prints "listening on HOST:PORT" on stdout, and serves
/// drivers until SIGINT or SIGTERM (exit code 0), or until the node actor ends by itself (exit
/// code 1, so that a supervisor restarts it). With drain_seconds, the first SIGTERM drains
/// instead: /readyz fails and new drivers are refused while the ones it holds go on, until none
/// holds anything, the time is up or a second signal comes. Returns the exit code.
int run_node(const node_options& options);

} // namespace shardopt::apps
