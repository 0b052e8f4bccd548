#pragma once

// The end-to-end tests' most common step: run the `shardopt` binary, require that it succeeded,
// and read the JSON summary it printed.

#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace shardopt::test {

/// Runs `shardopt args...` within `deadline`, requires exit code 0 (stderr shown otherwise), and
/// returns its standard output parsed as JSON.
inline nlohmann::json run_json(std::vector<std::string> args, std::chrono::seconds deadline = std::chrono::seconds{300}) {
  args.insert(args.begin(), shardopt_binary());
  const auto result = run(args, deadline);
  INFO("stderr: " << result.err);
  REQUIRE_FALSE(result.signaled);
  REQUIRE(result.exit_code == 0);
  return nlohmann::json::parse(result.out);
}

} // namespace shardopt::test
