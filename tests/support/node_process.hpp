#pragma once

// A `shardopt node` process on 127.0.0.1 with an OS-chosen port, for tests that drive nodes, and
// a runtime to reach it with. Stopped (SIGKILL) when destroyed, if still running.

#include "actors/wire/network.hpp"
#include "actors/wire/runtime.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace shardopt::test {

struct node_process {
  /// A node on `port` (0: the OS picks one), with `extra` options.
  explicit node_process(const std::vector<std::string>& extra = {}, int at = 0) {
    std::vector<std::string> args{shardopt_binary(), "node", "--port", std::to_string(at)};
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<background_process>(args);
    REQUIRE(process->wait_for_output("listening on", std::chrono::seconds{20}));
    std::smatch match;
    const auto out = process->out();
    REQUIRE(std::regex_search(out, match, std::regex{"listening on 127\\.0\\.0\\.1:([0-9]+)"}));
    port = std::stoi(match[1]);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port); }
  std::unique_ptr<background_process> process;
  int port = 0;
};

inline actors::endpoint endpoint_of(const node_process& node) {
  return {"127.0.0.1", static_cast<std::uint16_t>(node.port)};
}

/// A runtime of 2 threads that can reach nodes over the network.
inline actors::runtime network_runtime() {
  return actors::runtime{actors::runtime_options{2, true, {}, false}};
}

} // namespace shardopt::test
