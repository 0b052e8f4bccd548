// Reduction trees among node processes on loopback, as the driver builds and uses them: the same
// bits as a star and as one local shard at 1 to 8 nodes, the driver's bytes per evaluation
// independent of the node count, and an inner node killed mid-run.

#include "actors/driver/cluster.hpp"
#include "actors/wire/network.hpp"
#include "actors/driver/placement.hpp"
#include "io/partition.hpp"
#include "support/node_process.hpp"
#include "support/files.hpp"
#include "support/problems.hpp"
#include "support/tree_answers.hpp"
#include "support/sockets.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::answers;
using shardopt::test::ask;
using shardopt::test::endpoint_of;
using shardopt::test::network_runtime;
using shardopt::test::node_process;
using namespace std::chrono_literals;

namespace {

/// Bytes per evaluation on this process's connections to `nodes`, over `evaluations` evaluations.
double driver_bytes(actors::sharded_objective& objective, const std::vector<node_process>& nodes,
                    std::size_t count, const Eigen::VectorXd& theta, int evaluations = 3) {
  auto total = [&] {
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < count; ++j)
      sum += shardopt::test::connection_bytes(static_cast<std::uint16_t>(nodes[j].port)).total();
    return sum;
  };
  Eigen::VectorXd grad;
  const auto before = total();
  for (int e = 0; e < evaluations; ++e)
    REQUIRE(objective.evaluate(theta, grad).ok());
  return static_cast<double>(total() - before) / evaluations;
}

} // namespace

TEST_CASE("star and trees of fan-in 2 and 3 give the bits of one local shard at 1 to 8 nodes with vectors cut in three slices, and the driver moves 1.0-1.1 x 17 x dimension bytes per evaluation through a tree whatever the node count") {
  std::vector<node_process> nodes;
  for (int j = 0; j < 8; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  // 160,200 parameters: three slices of unequal length go down and up the tree.
  const model::model_shape shape{model::model_kind::softmax, 800, 200};
  REQUIRE(static_cast<std::uint64_t>(shape.dimension()) > 2 * actors::tree_slice_entries);
  const std::int64_t rows = 640;
  const auto data = shardopt::test::random_problem(11, rows, 800, 200);
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.02, 0.03);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), 1.0, -0.5);
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(rows, 1), 60s);
  const auto reference = ask(local, theta, v);
  const double per_evaluation = 17.0 * static_cast<double>(shape.dimension());

  for (std::size_t n = 1; n <= nodes.size(); ++n) {
    std::vector<actors::endpoint> endpoints;
    for (std::size_t j = 0; j < n; ++j)
      endpoints.push_back(endpoint_of(nodes[j]));
    struct route {
      actors::topology kind;
      std::size_t fan_in;
    };
    for (const auto [kind, fan_in] : {route{actors::topology::star, 0}, route{actors::topology::tree, 2},
                                      route{actors::topology::tree, 3}}) {
      CAPTURE(n);
      CAPTURE(fan_in);
      auto cluster = actors::cluster::connect(rt, endpoints);
      REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
      cluster->use_topology(kind, fan_in);
      const auto shards = 2 * n;  // two shards per node, grouped there
      auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(rows, shards),
                                     actors::place_shards(std::vector<std::uint32_t>(n, 1), shards),
                                     60s, {});
      REQUIRE_MESSAGE(objective.ok(), objective.error().message());
      CHECK(ask(*objective, theta, v).same_bits(reference));
      if (kind == actors::topology::tree) {
        const auto bytes = driver_bytes(*objective, nodes, n, theta);
        INFO("driver bytes per evaluation: " << bytes << ", 17 x dimension: " << per_evaluation);
        CHECK(bytes >= 0.95 * per_evaluation);
        CHECK(bytes <= 1.1 * per_evaluation);
      }
    }
  }
}

TEST_CASE("an inner node killed mid-run: its subtree is asked directly, its shards recreated, a new tree built over the live nodes, and every answer keeps the bits of a run without the failure") {
  std::vector<node_process> nodes;
  for (int j = 0; j < 5; ++j)
    nodes.emplace_back(std::vector<std::string>{"--threads", "1"});
  auto rt = network_runtime();
  const model::model_shape shape{model::model_kind::softmax, 600, 3};
  const std::int64_t rows = 500;
  const auto data = shardopt::test::random_problem(12, rows, 600, 3);
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(shape.dimension(), -1.0, 1.0);
  std::vector<Eigen::VectorXd> thetas;
  for (int k = 0; k < 3; ++k)
    thetas.push_back(Eigen::VectorXd::LinSpaced(shape.dimension(), -0.01 * k, 0.02 + 0.01 * k));
  auto local = actors::sharded_objective::local(rt, shape, 1e-3, data,
                                                shardopt::io::partition_blocks(rows, 1), 60s);
  std::vector<answers> reference;
  for (const auto& theta : thetas)
    reference.push_back(ask(local, theta, v));

  std::vector<actors::endpoint> endpoints;
  for (const auto& node : nodes)
    endpoints.push_back(endpoint_of(node));
  auto cluster = actors::cluster::connect(rt, endpoints);
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  cluster->use_topology(actors::topology::tree, 2);  // node 0 the root; node 1 the parent of 3 and 4
  std::vector<std::string> events;
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(rows, 10),
                                 actors::place_shards(std::vector<std::uint32_t>(5, 1), 10), 60s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  CHECK(ask(*objective, thetas[0], v).same_bits(reference[0]));
  nodes[1].process->signal(SIGKILL);
  CHECK(ask(*objective, thetas[1], v).same_bits(reference[1]));
  CHECK(objective->recreated_shards() == 1);
  CHECK(cluster->lost_nodes() == 1);
  CHECK(ask(*objective, thetas[2], v).same_bits(reference[2]));
  // The next evaluations go through a new tree, not to every node.
  const auto bytes = driver_bytes(*objective, nodes, nodes.size(), thetas[2]);
  CHECK(bytes <= 1.1 * 17.0 * static_cast<double>(shape.dimension()));
  std::string log;
  for (const auto& event : events)
    log += event + "\n";
  CHECK_MESSAGE(log.find("node " + endpoints[1].text() + " lost") != std::string::npos, log);
}
