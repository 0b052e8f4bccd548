// The option definitions as `--help` shows them: each choice option's default is the value it
// takes, and a bound in an option's check reads as written.

#include "support/process.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

using namespace shardopt::test;

TEST_CASE("--help shows each choice option's default as the value it takes, and a negative --l1 says it must be 0 or more") {
  // The choices' first name was shown before: `star` for --topology, whose default is auto.
  const auto help = run({shardopt_binary(), "train", "--help"});
  REQUIRE(help.exit_code == 0);
  for (const auto& [option, shown] : std::vector<std::pair<std::string, std::string>>{
         {"--topology", "auto"}, {"--mode", "lbfgs"}, {"--solver", "auto"}, {"--newton-step", "auto"},
         {"--data-placement", "shipped"}}) {
    CAPTURE(option);
    const auto at = help.out.find("  " + option + " ");
    REQUIRE(at != std::string::npos);
    const auto line = help.out.substr(at, help.out.find('\n', at) - at);
    CAPTURE(line);
    CHECK(line.find("}=" + shown) != std::string::npos);
  }
  const auto negative = run({shardopt_binary(), "train", "--data", "fashion-mnist", "--l1", "-1"});
  CHECK(negative.exit_code != 0);
  INFO(negative.err);
  CHECK(negative.err.find("--l1: must be 0 or more") != std::string::npos);
  CHECK(negative.err.size() < 300);  // no 309-digit bound
}
