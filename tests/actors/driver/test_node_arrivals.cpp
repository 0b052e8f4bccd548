// Nodes that come and go, on loopback: a node killed, restarted at its address and re-admitted; a
// node added to the watched nodes file; and addresses that drop packets, which the driver probes
// off its thread while its evaluations go on. Every answer keeps the bits of an undisturbed run.

#include "actors/driver/cluster.hpp"
#include "actors/driver/placement.hpp"
#include "io/partition.hpp"
#include "support/files.hpp"
#include "support/node_process.hpp"
#include "support/problems.hpp"
#include "support/sockets.hpp"
#include "support/tree_answers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <memory>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::ask;
using shardopt::test::endpoint_of;
using shardopt::test::network_runtime;
using shardopt::test::node_process;
using namespace std::chrono_literals;

TEST_CASE("a node killed, restarted on its port and re-admitted at an evaluation boundary gets its shards back, and every answer keeps the bits of an undisturbed run") {
  std::vector<node_process> nodes;
  for (int j = 0; j < 3; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  const model::model_shape shape{model::model_kind::softmax, 300, 3};
  const std::int64_t rows = 300;
  const auto data = shardopt::test::random_problem(14, rows, 300, 3);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 0.5, -1.0);
  std::vector<Eigen::VectorXd> thetas;
  for (int k = 0; k < 3; ++k)
    thetas.push_back(Eigen::VectorXd::LinSpaced(shape.dimension(), 0.01 * k, -0.02));
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(rows, 1), 60s);
  std::vector<actors::endpoint> endpoints;
  for (const auto& node : nodes)
    endpoints.push_back(endpoint_of(node));
  auto cluster = actors::cluster::connect(rt, endpoints);
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  cluster->use_topology(actors::topology::tree, 2);
  std::vector<std::string> events;
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(rows, 6),
                                 actors::place_shards(std::vector<std::uint32_t>(3, 1), 6), 60s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  CHECK(ask(*objective, thetas[0], v).same_bits(ask(local, thetas[0], v)));
  const auto port = nodes[2].port;
  nodes[2].process->signal(SIGKILL);
  CHECK(ask(*objective, thetas[1], v).same_bits(ask(local, thetas[1], v)));
  CHECK(cluster->lost_nodes() == 1);
  nodes[2] = node_process{{"--threads", "1"}, port};  // the same address, a new process
  // The driver probes lost nodes' addresses off its thread and re-admits one that answers at an
  // evaluation boundary: evaluate, each answer keeping the bits, until it re-admitted the node.
  const auto rejoin_by = std::chrono::steady_clock::now() + 30s;
  do {
    CHECK(ask(*objective, thetas[2], v).same_bits(ask(local, thetas[2], v)));
  } while (cluster->rejoined_nodes() == 0 && std::chrono::steady_clock::now() < rejoin_by);
  CHECK(cluster->rejoined_nodes() == 1);
  std::string log;
  for (const auto& event : events)
    log += event + "\n";
  INFO(log);
  CHECK(log.find("node " + endpoints[2].text() + " rejoined") != std::string::npos);
  CHECK(log.find("moved shards 4-5 back to node " + endpoints[2].text()) != std::string::npos);
  CHECK(log.find("released shards 4-5 on node ") != std::string::npos);
  // The restarted node serves its shards again: it is in the tree, and evaluations keep the bits.
  CHECK(ask(*objective, thetas[0], v).same_bits(ask(local, thetas[0], v)));
}

TEST_CASE("a node added to the watched nodes file joins at an evaluation boundary once it answers, takes over a lost node's shards, and the answers keep their bits") {
  std::vector<node_process> nodes;
  for (int j = 0; j < 3; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  const model::model_shape shape{model::model_kind::softmax, 200, 3};
  const std::int64_t rows = 240;
  const auto data = shardopt::test::random_problem(15, rows, 200, 3);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, 0.0);
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.03, 0.01);
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(rows, 1), 60s);
  const auto reference = ask(local, theta, v);
  shardopt::test::temp_dir dir;
  const auto file = (dir.path() / "nodes").string();
  auto write_nodes = [&](std::size_t count) {
    std::ofstream out(file);
    out << "# the run's nodes\n";
    for (std::size_t j = 0; j < count; ++j)
      out << endpoint_of(nodes[j]).text() << "\n";
  };
  write_nodes(2);
  auto cluster = actors::cluster::connect(rt, {endpoint_of(nodes[0]), endpoint_of(nodes[1])});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  cluster->watch_nodes_file(file);
  std::vector<std::string> events;
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(rows, 4),
                                 actors::place_shards(std::vector<std::uint32_t>(2, 1), 4), 60s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  CHECK(ask(*objective, theta, v).same_bits(reference));
  write_nodes(3);
  // The file is looked at once a second, at evaluation boundaries: evaluate, each answer keeping
  // the bits, until the new node joined.
  const auto join_by = std::chrono::steady_clock::now() + 30s;
  do {
    CHECK(ask(*objective, theta, v).same_bits(reference));
  } while (cluster->joined_nodes() == 0 && std::chrono::steady_clock::now() < join_by);
  CHECK(cluster->joined_nodes() == 1);
  CHECK(cluster->nodes().size() == 3);
  nodes[1].process->signal(SIGKILL);
  CHECK(ask(*objective, theta, v).same_bits(reference));
  std::string log;
  for (const auto& event : events)
    log += event + "\n";
  INFO(log);
  CHECK(log.find("node " + endpoint_of(nodes[2]).text() + " joined") != std::string::npos);
  CHECK(log.find("recreated shards 2-3 on node " + endpoint_of(nodes[2]).text()) != std::string::npos);
}

TEST_CASE("addresses that drop packets, a listed node's and a lost node's, hold no evaluation up: they are probed off the driver's thread, and the nodes join and rejoin once they answer there, every answer keeping the bits") {
  using clock = std::chrono::steady_clock;
  std::vector<node_process> nodes;
  for (int j = 0; j < 2; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  const model::model_shape shape{model::model_kind::softmax, 200, 3};
  const std::int64_t rows = 240;
  const auto data = shardopt::test::random_problem(16, rows, 200, 3);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, 0.0);
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.03, 0.01);
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(rows, 1), 60s);
  const auto reference = ask(local, theta, v);
  auto listed = std::make_unique<shardopt::test::dropping_address>();
  REQUIRE(listed->ok());
  const auto listed_port = listed->port();
  shardopt::test::temp_dir dir;
  const auto file = (dir.path() / "nodes").string();
  std::ofstream(file) << endpoint_of(nodes[0]).text() << "\n" << endpoint_of(nodes[1]).text() << "\n"
                      << listed->endpoint() << "\n";
  auto cluster = actors::cluster::connect(rt, {endpoint_of(nodes[0]), endpoint_of(nodes[1])});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  cluster->watch_nodes_file(file);
  std::vector<std::string> events;
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(rows, 4),
                                 actors::place_shards(std::vector<std::uint32_t>(2, 1), 4), 60s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  CHECK(ask(*objective, theta, v).same_bits(reference));
  const auto lost_port = static_cast<std::uint16_t>(nodes[1].port);
  nodes[1].process->signal(SIGKILL);
  nodes[1].process->wait(10s);
  auto lost = std::make_unique<shardopt::test::dropping_address>(lost_port);
  REQUIRE(lost->ok());
  // 4 s of evaluations: the file is looked at every second and the lost node's address is tried
  // 1 s after the loss; each probe waits up to 30 s for an answer that never comes. Had the driver
  // waited for one, an evaluation would have taken that long.
  const auto until = clock::now() + 4s;
  clock::duration longest{};
  do {
    const auto started = clock::now();
    CHECK(ask(*objective, theta, v).same_bits(reference));
    longest = std::max(longest, clock::now() - started);
  } while (clock::now() < until);
  CHECK(cluster->lost_nodes() == 1);
  CHECK(cluster->joined_nodes() == 0);
  CHECK(cluster->rejoined_nodes() == 0);
  CHECK(longest < 10s);
  // Nodes answer at both addresses now: the waiting probes end (refused, or answered by the new
  // node), are tried again if need be, and the nodes are admitted at an evaluation boundary.
  listed.reset();
  lost.reset();
  node_process arrived{{"--threads", "1"}, listed_port};
  nodes[1] = node_process{{"--threads", "1"}, lost_port};
  const auto by = clock::now() + 60s;
  do {
    CHECK(ask(*objective, theta, v).same_bits(reference));
  } while ((cluster->joined_nodes() == 0 || cluster->rejoined_nodes() == 0) && clock::now() < by);
  CHECK(cluster->joined_nodes() == 1);
  CHECK(cluster->rejoined_nodes() == 1);
  std::string log;
  for (const auto& event : events)
    log += event + "\n";
  INFO(log);
  CHECK(log.find("node " + endpoint_of(arrived).text() + " joined") != std::string::npos);
  CHECK(log.find("node " + endpoint_of(nodes[1]).text() + " rejoined") != std::string::npos);
  CHECK(ask(*objective, theta, v).same_bits(reference));
}

TEST_CASE("two watched sources: each one's new nodes join, an address listed twice or by both joins once, and another name of a node the run has is not added") {
  std::vector<node_process> nodes;
  for (int j = 0; j < 3; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  const model::model_shape shape{model::model_kind::softmax, 20, 3};
  const auto data = shardopt::test::random_problem(17, 60, 20, 3);
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(60, 1), 60s);
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.1, 0.2);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, 0.0);
  const auto reference = ask(local, theta, v);
  shardopt::test::temp_dir dir;
  const auto file = (dir.path() / "nodes").string();
  const auto second = endpoint_of(nodes[1]).text();
  const auto third = endpoint_of(nodes[2]).text();
  std::ofstream(file) << second << "\n" << second << "\n";  // listed twice
  auto cluster = actors::cluster::connect(rt, {endpoint_of(nodes[0])});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  cluster->watch_nodes_file(file);  // looked at every second
  const auto first_by_name = "localhost:" + std::to_string(nodes[0].port);  // the run's first node
  cluster->watch_nodes("a second source", [second, third, first_by_name] {
    return shardopt::result<std::string>{third + "," + second + "," + first_by_name};
  }, 3s);
  std::vector<std::string> events;
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(60, 2), {0, 0}, 60s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  const auto by = std::chrono::steady_clock::now() + 30s;
  do {
    CHECK(ask(*objective, theta, v).same_bits(reference));
  } while (cluster->joined_nodes() < 2 && std::chrono::steady_clock::now() < by);
  CHECK(cluster->joined_nodes() == 2);
  for (int k = 0; k < 3; ++k)  // a few more looks at both sources: nothing joins again
    CHECK(ask(*objective, theta, v).same_bits(reference));
  REQUIRE(cluster->nodes().size() == 3);
  CHECK(cluster->nodes()[1].endpoint.text() != cluster->nodes()[2].endpoint.text());
  const auto named = [&] {
    return std::count(events.begin(), events.end(),
                      "node " + first_by_name + " is a node this run has under another name");
  };
  const auto by_name = std::chrono::steady_clock::now() + 10s;
  while (named() == 0 && std::chrono::steady_clock::now() < by_name)  // probed off the driver's thread
    CHECK(ask(*objective, theta, v).same_bits(reference));
  // The second source lists it again every 3 s: it is not connected to, nor reported, again.
  const auto more_looks = std::chrono::steady_clock::now() + 4s;
  while (std::chrono::steady_clock::now() < more_looks)
    CHECK(ask(*objective, theta, v).same_bits(reference));
  CHECK(named() == 1);
  CHECK(cluster->nodes().size() == 3);
}
