// Node lists from outside the command line: a nodes file (comments, blank lines, one host:port per
// line; a bad line named by file and number) and a DNS name's addresses (here `localhost`, which
// /etc/hosts answers without a network; malformed NAME:PORT refused before any lookup).

#include "io/nodes_file.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <string>

using shardopt::test::temp_dir;
using shardopt::test::write_file;

TEST_CASE("a nodes file lists one host:port per line, ignores comments and blank lines, and names the file and line of a bad one") {
  temp_dir dir;
  const auto path = (dir.path() / "nodes").string();
  write_file(path, "# the cluster\nhostA:4242\n\n  hostB:4243   # rack 2\r\n");
  auto listed = shardopt::io::read_nodes_file(path);
  REQUIRE_MESSAGE(listed.ok(), listed.error().message());
  CHECK(*listed == "hostA:4242,hostB:4243");
  write_file(path, "hostA:4242\nhostB:4243 hostC:4244\n");
  auto bad = shardopt::io::read_nodes_file(path);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == path + ":2: expected one host:port per line");
  auto missing = shardopt::io::read_nodes_file(path + ".missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find(path + ".missing: cannot open") == 0);
}

TEST_CASE("a DNS name becomes every IPv4 address it resolves to at the given port, and NAME:PORT is checked first") {
  auto local = shardopt::io::resolve_nodes("localhost:4242");
  REQUIRE_MESSAGE(local.ok(), local.error().message());
  CHECK(*local == "127.0.0.1:4242");
  for (const std::string bad : {"localhost", "localhost:", ":4242", "localhost:0", "localhost:65536",
                                "localhost:42x"}) {
    CAPTURE(bad);
    auto refused = shardopt::io::resolve_nodes(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message() == "--nodes-dns: expected NAME:PORT, got '" + bad + "'");
  }
}
