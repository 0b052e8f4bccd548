#pragma once

#include "actors/wire/runtime.hpp"

#include <string>

namespace shardopt::apps {

/// Everything `shardopt status` takes.
struct status_options {
  std::string nodes;           ///< host:port,...
  actors::tls_options tls;
  bool json = false;           ///< one JSON object per node
  double timeout = 10;         ///< seconds to wait for each node's answer
};

/// `shardopt status`: asks each node what it holds and serves, and prints a line per node (a table
/// or JSON lines). Exit code 0 when every node answered, 1 otherwise.
int run_status(const status_options& options);

} // namespace shardopt::apps
