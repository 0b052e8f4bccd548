// The pure functions a node decides with, without any actor: what it accepts from a peer
// (check_part, check_layout, check_grid) and what it lets a peer read back (redact).

#include "actors/node/node_checks.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <limits>
#include <utility>
#include <string>
#include <vector>

namespace actors = shardopt::actors;
namespace io = shardopt::io;
using shardopt::test::temp_dir;

TEST_CASE("redact: quoted file contents are replaced and long messages are cut to 300 characters") {
  CHECK(actors::redact("t.csv:3: field 2 is not a number: 'SECRET,1'") == "t.csv:3: field 2 is not a number: '...'");
  CHECK(actors::redact("no quotes here") == "no quotes here");
  const auto cut = actors::redact(std::string(1000, 'x'));
  CHECK(cut.size() == 300);
  CHECK(cut.substr(297) == "...");
}

TEST_CASE("check_part: parts, read options and paths outside the data root are refused") {
  temp_dir root;
  temp_dir outside;
  root.write("inside.csv", "0,1\n");
  const auto secret = outside.write("secret.csv", "1,2\n");
  std::filesystem::create_symlink(secret, root.path() / "link.csv");
  actors::node_limits limits;
  limits.data_root = std::filesystem::canonical(root.path()).string();
  limits.parts = 8;
  auto request = [](const std::string& spec, std::int64_t part = 0, std::int64_t parts = 1) {
    io::part_request r;
    r.spec = spec;
    r.part = part;
    r.parts = parts;
    return r;
  };
  const auto fine = actors::check_part(request("inside.csv", 3, 8), limits);
  REQUIRE(fine.ok());
  CHECK(fine->spec == limits.data_root + "/inside.csv");  // made absolute under the root
  for (const auto& [part, parts] : std::vector<std::pair<std::int64_t, std::int64_t>>{{-1, 4}, {4, 4}, {0, 0}, {0, 9}}) {
    const auto refused = actors::check_part(request("inside.csv", part, parts), limits);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message().find("is not a valid part (at most 8 parts)") != std::string::npos);
  }
  for (const auto& spec : std::vector<std::string>{"../x.csv", "/etc/passwd", "link.csv", secret}) {
    const auto refused = actors::check_part(request(spec), limits);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message() == spec + ": outside this node's data root");
  }
  auto wide = request("inside.csv");
  wide.options.features = limits.dimension + 1;
  CHECK(actors::check_part(wide, limits).error().message() == "invalid read options");
  // A part's edges move by less than a block (io::max_part_shift), never backwards.
  for (const auto& [skip, extra] : std::vector<std::pair<std::int64_t, std::int64_t>>{
         {-1, 0}, {0, -1}, {io::max_part_shift, 0}, {0, io::max_part_shift}}) {
    auto moved = request("inside.csv", 1, 4);
    moved.skip = skip;
    moved.extra = extra;
    CHECK(actors::check_part(moved, limits).error().message() == "invalid read options");
  }
  auto moved = request("inside.csv", 1, 4);
  moved.skip = io::max_part_shift - 1;
  moved.extra = io::max_part_shift - 1;
  CHECK(actors::check_part(moved, limits).ok());
  limits.data_root.clear();
  CHECK(actors::check_part(request("inside.csv"), limits).error().message().find("serves no node-local data")
        != std::string::npos);
}

TEST_CASE("check_layout and check_grid: what a peer's block layout and moments grid may be") {
  CHECK(actors::check_layout(0, 1).ok());
  CHECK(actors::check_layout(std::int64_t{1} << 40, std::int64_t{1} << 20).ok());
  CHECK_FALSE(actors::check_layout(-1, 256).ok());
  CHECK_FALSE(actors::check_layout(0, 0).ok());
  CHECK_FALSE(actors::check_layout(0, (std::int64_t{1} << 20) + 1).ok());
  actors::node_limits limits;
  limits.dimension = 3;
  io::moment_grid grid{1.0, {0, 36, -1100}};
  CHECK(actors::check_grid(grid, limits).ok());
  grid.shift.push_back(1);  // more features than the node's limit
  CHECK_FALSE(actors::check_grid(grid, limits).ok());
  grid.shift = {1101};
  CHECK_FALSE(actors::check_grid(grid, limits).ok());
  grid.shift = {0};
  grid.factor = std::numeric_limits<double>::infinity();
  CHECK_FALSE(actors::check_grid(grid, limits).ok());
}
