// How driver and node processes connect, on loopback: mutual TLS with role certificates (the right
// role connects; another CA's, the wrong role's and plain TCP are refused), bad TLS files refused
// at startup, a peer that accepts and never speaks, and the open-files limit a process raises to
// hold a connection per node. Every process a test starts is stopped by it.

#include "support/datasets.hpp"
#include "support/node_process.hpp"
#include "support/process.hpp"
#include "support/sockets.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace shardopt::test;
using namespace std::chrono_literals;

namespace {

/// Runs scripts/make-certs DIR.
void make_certs(const std::filesystem::path& dir) {
  const auto result =
    run({"/bin/bash", std::string{SHARDOPT_SOURCE_DIR} + "/scripts/make-certs", dir.string()}, 60s);
  INFO("make-certs: " << result.err);
  REQUIRE(result.exit_code == 0);
}

/// TLS options of a process holding the `who` certificate and accepting peers of role `peer`.
std::vector<std::string> tls_args(const std::filesystem::path& dir, const std::string& who,
                                  const std::string& peer) {
  return {"--tls-cert", (dir / (who + ".pem")).string(), "--tls-key", (dir / (who + ".key")).string(),
          "--tls-ca", (dir / ("ca-" + peer + ".pem")).string()};
}

} // namespace

TEST_CASE("mutual TLS: the right role certificate connects, another CA's, the wrong role's and plain TCP are refused") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  make_certs(dir / "good");
  make_certs(dir / "rogue");
  node_process node{tls_args(dir / "good", "node", "driver")};
  CHECK(node.process->out().find("mutual TLS") != std::string::npos);
  auto driver = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args{shardopt_binary(), "train", "--data", "fashion-mnist", "--limit",
                                  "600", "--test-limit", "50", "--max-iter", "3", "--quiet",
                                  "--json", "--nodes", node.endpoint()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args, 60s);
  };
  const auto good = driver(tls_args(dir / "good", "driver", "node"));
  INFO("good: " << good.err);
  CHECK(good.exit_code == 0);

  // A certificate of the right CA family but the wrong role (a node's, a worker's) cannot drive a
  // node: the node trusts only the driver CA.
  for (const auto* role : {"node", "worker"}) {
    const auto wrong_role = driver(tls_args(dir / "good", role, "node"));
    INFO(role << ": " << wrong_role.err);
    CHECK(wrong_role.exit_code == 1);
    CHECK(wrong_role.err.find(node.endpoint() + ": cannot connect") != std::string::npos);
  }

  const auto rogue = driver(tls_args(dir / "rogue", "driver", "node"));
  CHECK(rogue.exit_code == 1);
  CHECK(rogue.err.find(node.endpoint() + ": cannot connect") != std::string::npos);

  const auto plain = driver({});
  CHECK(plain.exit_code == 1);
  CHECK(plain.err.find(node.endpoint() + ": cannot connect") != std::string::npos);
  // A driver without TLS is told that the node probably wants TLS, not only CAF's error code.
  CHECK_MESSAGE(plain.err.find("it probably requires TLS (give --tls-cert, --tls-key and --tls-ca)") != std::string::npos,
                plain.err);

  // A node with TLS never lets raw bytes reach CAF's protocol layer, not even a crafted header.
  REQUIRE(send_raw(node.port, std::string(64, '\x00')));
  CHECK(node.process->running());
  const auto again = driver(tls_args(dir / "good", "driver", "node"));
  CHECK(again.exit_code == 0);

  // A node without TLS refuses a TLS driver too (the handshake fails), and keeps serving.
  node_process plain_node;
  std::vector<std::string> args{shardopt_binary(), "train", "--data", "fashion-mnist", "--limit",
                                "600", "--max-iter", "3", "--quiet", "--nodes",
                                plain_node.endpoint()};
  const auto tls_args_good = tls_args(dir / "good", "driver", "node");
  args.insert(args.end(), tls_args_good.begin(), tls_args_good.end());
  const auto refused = run(args, 60s);
  // A signal here would be a crash in the failed-handshake path (seen once in ~100 CI-like runs,
  // not reproduced since): the message says which signal and what the driver printed.
  CHECK_MESSAGE(refused.exit_code == 1, "signaled=" << refused.signaled << " timed_out=" << refused.timed_out
                                                     << " stderr: " << refused.err);
  CHECK(plain_node.process->running());
}

TEST_CASE("bad TLS files are refused at startup, naming the file") {
  temp_dir dir;
  shardopt::test::write_file(dir / "junk.pem", "not a certificate");
  const auto result = run({shardopt_binary(), "node", "--port", "0", "--tls-cert",
                           (dir / "junk.pem").string(), "--tls-key", (dir / "junk.pem").string(),
                           "--tls-ca", (dir / "junk.pem").string()}, 30s);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("junk.pem: not a usable PEM certificate") != std::string::npos);
  const auto partial = run({shardopt_binary(), "node", "--port", "0", "--tls-cert",
                            (dir / "junk.pem").string()}, 30s);
  CHECK(partial.exit_code == 1);
  CHECK(partial.err.find("needs all of --tls-cert, --tls-key and --tls-ca") != std::string::npos);
}

TEST_CASE("a peer that accepts connections but never speaks fails the driver, it does not hang it") {
  // A listening socket that nobody serves: the kernel completes TCP handshakes, then silence.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const auto endpoint = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const auto result = run({shardopt_binary(), "train", "--data", "fashion-mnist", "--limit", "100",
                           "--nodes", endpoint}, 120s);
  ::close(listener);
  CHECK_FALSE(result.timed_out);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find(endpoint + ": cannot connect") != std::string::npos);
}

TEST_CASE("a node raises its soft open-files limit to the hard limit, at most 65,536, so that it can hold a connection per peer") {
  rlimit own{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &own) == 0);
  REQUIRE(own.rlim_max > 256);  // hard limits this process may give its children (no privilege)
  const auto hard = static_cast<std::uint64_t>(own.rlim_max);
  const auto low = std::min<std::uint64_t>(hard, 4096);
  for (const auto& [given_hard, expected] : {std::pair<std::uint64_t, std::uint64_t>{low, low},
                                             {hard, std::min<std::uint64_t>(hard, 65536)}}) {
    const auto given = "256:" + std::to_string(given_hard);
    CAPTURE(given);
    background_process node{{"/usr/bin/prlimit", "--nofile=" + given, shardopt_binary(), "node", "--port", "0"}};
    REQUIRE(node.wait_for_output("listening on", 20s));
    std::ifstream limits("/proc/" + std::to_string(node.pid()) + "/limits");
    std::string line;
    std::string soft;
    while (std::getline(limits, line))
      if (line.rfind("Max open files", 0) == 0)
        std::istringstream(line.substr(14)) >> soft;
    CHECK(soft == std::to_string(expected));
    node.signal(SIGTERM);
    CHECK(node.wait(10s).exit_code == 0);
  }
}
