#pragma once

#include "actors/runtime.hpp"

#include <cstdint>
#include <string>

namespace shardopt::apps {

/// Everything `shardopt node` takes.
struct node_options {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 4242;   ///< 0: the OS picks a free port (printed on stdout)
  std::size_t threads = 0;     ///< worker threads announced to drivers; 0 = hardware threads
  actors::tls_options tls;
};

/// Runs a node: publishes a node actor, prints "listening on HOST:PORT" on stdout, and serves
/// drivers until SIGINT or SIGTERM, then ends every shard and exits 0. Returns the exit code.
int run_node(const node_options& options);

} // namespace shardopt::apps
