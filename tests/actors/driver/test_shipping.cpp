// What a driver ships to node processes on loopback, on the real wire protocol: bytes per
// evaluation on a node's sockets against what the protocol promises (one group per node, or a
// peer per shard), and shards shipped in pieces against shards shipped whole. Every process a test
// starts is stopped by it.

#include "actors/driver/cluster.hpp"
#include "io/partition.hpp"
#include "model/local_objective.hpp"
#include "optimizer/owlqn.hpp"
#include "support/hostile.hpp"
#include "support/problems.hpp"
#include "support/sockets.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::endpoint_of;
using shardopt::test::network_runtime;
using shardopt::test::node_process;
using namespace std::chrono_literals;

namespace {

using shardopt::test::hostile_shape;

/// The shards `node` holds, by `shardopt status --json`.
/// A count from `node`'s `shardopt status --json` ("shards": held now, "restrictions": made so far).
std::int64_t status_count(const node_process& node, const char* count) {
  const auto status = shardopt::test::run({shardopt::test::shardopt_binary(), "status", "--nodes",
                                           node.endpoint(), "--json"});
  REQUIRE(status.exit_code == 0);
  return nlohmann::json::parse(status.out)[count].get<std::int64_t>();
}

std::int64_t shards_held(const node_process& node) {
  return status_count(node, "shards");
}

/// Waits up to 20 s for `node` to hold at most `count` shards (a driver identity that ends is
/// noticed asynchronously); returns what it holds at the end.
std::int64_t wait_for_shards(const node_process& node, std::int64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  auto held = shards_held(node);
  while (held > count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    held = shards_held(node);
  }
  return held;
}

/// A sparse softmax problem for OWL-QN with shrinking in rounds of 3 iterations (many rounds:
/// many working sets shipped and released), over `shards` blocks, and its run on the local
/// objective: what a run on nodes must equal, bit for bit.
struct shrinking_problem {
  shrinking_problem(std::uint32_t seed, std::int64_t shards)
    : data(shardopt::test::random_problem(seed, 600, 30, 3, true)),
      blocks(shardopt::io::partition_blocks(600, shards)), c(0.03 * model::weight_mask(softmax)),
      local(softmax, data, 1e-4, blocks), x_local(Eigen::VectorXd::Zero(softmax.dimension())) {
    o.epsilon = 1e-7;
    rounds.refresh = 3;
    const auto run = shardopt::optimizer::minimize_owlqn(local, x_local, o, c, {}, {}, rounds);
    REQUIRE(run.ok());
    REQUIRE(run->reason == shardopt::optimizer::stop_reason::converged);
    REQUIRE(run->iterations > 3 * rounds.refresh);
    iterations = run->iterations;
  }

  /// Runs OWL-QN with shrinking on `objective` (shards on nodes) with `hook`, and checks it ends
  /// as the local run did: converged, in as many iterations, with the same bits.
  void check_same_run(actors::sharded_objective& objective, const shardopt::optimizer::iteration_hook& hook) const {
    Eigen::VectorXd x_nodes = Eigen::VectorXd::Zero(softmax.dimension());
    const auto run = shardopt::optimizer::minimize_owlqn(objective, x_nodes, o, c, hook, {}, rounds);
    REQUIRE_MESSAGE(run.ok(), run.error().message());
    CHECK(run->reason == shardopt::optimizer::stop_reason::converged);
    CHECK(run->iterations == iterations);
    CHECK(std::memcmp(x_nodes.data(), x_local.data(), sizeof(double) * x_local.size()) == 0);
  }

  const model::model_shape softmax{model::model_kind::softmax, 30, 3};
  std::shared_ptr<const model::dataset> data;
  std::vector<model::row_range> blocks;
  Eigen::VectorXd c;
  shardopt::optimizer::lbfgs_options o;
  shardopt::optimizer::owlqn_shrinking rounds;
  model::local_objective local;
  Eigen::VectorXd x_local;
  int iterations = 0;
};

} // namespace

TEST_CASE("2 nodes x 4 shards: per evaluation each node's sockets carry 1.0-1.1x of 2 x 8 x dimension bytes, and 4x that with one peer per shard, for the same bits") {
  node_process first;
  node_process second;
  auto rt = network_runtime();
  const model::model_shape wide{model::model_kind::softmax, 1000, 100};  // 100,100 parameters
  const auto data = shardopt::test::random_problem(3, 1024, 1000, 100);
  auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second)});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(wide.dimension(), -0.01, 0.01);
  const std::vector<std::uint16_t> ports{static_cast<std::uint16_t>(first.port),
                                         static_cast<std::uint16_t>(second.port)};
  // Bytes on this process's connection to each node over `evaluations` evaluations, per evaluation.
  auto measure = [&](actors::sharded_objective& objective, Eigen::VectorXd& grad, double& f) {
    const int evaluations = 4;
    std::vector<shardopt::test::tcp_bytes> before;
    for (const auto port : ports)
      before.push_back(shardopt::test::connection_bytes(port));
    for (int e = 0; e < evaluations; ++e) {
      auto value = objective.evaluate(theta, grad);
      REQUIRE_MESSAGE(value.ok(), value.error().message());
      f = *value;
    }
    std::vector<double> per_node;
    for (std::size_t j = 0; j < ports.size(); ++j) {
      const auto after = shardopt::test::connection_bytes(ports[j]);
      per_node.push_back(static_cast<double>(after.total() - before[j].total()) / evaluations);
    }
    return per_node;
  };
  const double ideal = 2.0 * 8 * static_cast<double>(wide.dimension());  // per node

  auto grouped = cluster->ship(wide, 1e-3, data, shardopt::io::partition_blocks(1024, 8),
                               {0, 0, 0, 0, 1, 1, 1, 1}, 60s, {});
  REQUIRE_MESSAGE(grouped.ok(), grouped.error().message());
  CHECK(grouped->shard_count() == 2);  // the driver talks to one group per node
  Eigen::VectorXd grad;
  double f = 0;
  const auto per_node = measure(*grouped, grad, f);
  for (const double bytes : per_node) {
    INFO("bytes per evaluation on a node's connection: " << bytes << ", 2 x 8 x dimension: " << ideal);
    CHECK(bytes >= ideal);
    CHECK(bytes <= 1.1 * ideal);
  }

  cluster->group_per_node(false);
  auto separate = cluster->ship(wide, 1e-3, data, shardopt::io::partition_blocks(1024, 8),
                                {0, 0, 0, 0, 1, 1, 1, 1}, 60s, {});
  REQUIRE_MESSAGE(separate.ok(), separate.error().message());
  CHECK(separate->shard_count() == 8);
  Eigen::VectorXd separate_grad;
  double separate_f = 0;
  const auto per_node_separate = measure(*separate, separate_grad, separate_f);
  for (std::size_t j = 0; j < ports.size(); ++j) {
    INFO("node " << j << ": " << per_node_separate[j] << " bytes per evaluation with a peer per shard, "
                  << per_node[j] << " with one per node");
    CHECK(per_node_separate[j] >= 3.9 * per_node[j]);
    CHECK(per_node_separate[j] <= 4.1 * per_node[j]);
  }
  CHECK(std::memcmp(&separate_f, &f, sizeof f) == 0);
  REQUIRE(separate_grad.size() == grad.size());
  CHECK(std::memcmp(separate_grad.data(), grad.data(), sizeof(double) * grad.size()) == 0);
}

TEST_CASE("shards shipped in pieces of 2 KiB give the bits of shards shipped in one message each, dense and sparse, and the pieces carry each row once") {
  node_process first;
  node_process second;
  auto rt = network_runtime();
  for (const bool sparse : {false, true}) {
    CAPTURE(sparse);
    const auto data = shardopt::test::random_problem(5, 600, 20, 3, sparse);
    // Bytes on this process's connections to both nodes while shipping.
    std::vector<double> shipped;
    auto bits = [&](std::int64_t piece_bytes) {
      auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second)});
      REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
      if (piece_bytes > 0)
        cluster->ship_in_pieces_of(piece_bytes);
      // Counted socket by socket: the previous cluster's connections may close while this one
      // ships (late, on a busy machine), and their counts must not leave the sum.
      shardopt::test::traffic_meter meter{
        {static_cast<std::uint16_t>(first.port), static_cast<std::uint16_t>(second.port)}};
      meter.start();
      auto objective = cluster->ship(hostile_shape, 1e-3, data, shardopt::io::partition_blocks(600, 4),
                                     {0, 0, 1, 1}, 30s, {});
      REQUIRE_MESSAGE(objective.ok(), objective.error().message());
      shipped.push_back(static_cast<double>(meter.moved()));
      const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(hostile_shape.dimension(), -0.3, 0.2);
      Eigen::VectorXd grad;
      auto f = objective->evaluate(theta, grad);
      REQUIRE_MESSAGE(f.ok(), f.error().message());
      std::vector<double> out{*f};
      out.insert(out.end(), grad.data(), grad.data() + grad.size());
      return out;
    };
    const auto whole = bits(0);
    const auto pieces = bits(2048);
    REQUIRE(pieces.size() == whole.size());
    CHECK(std::memcmp(pieces.data(), whole.data(), sizeof(double) * whole.size()) == 0);
    // 150 rows a shard (88 bytes dense, about 70 sparse): 5 or more pieces each, 20 or more
    // requests and replies in all where whole shipping sends none (together at least 100 bytes of
    // headers each), and no row twice.
    INFO("bytes shipped whole: " << shipped[0] << ", in pieces: " << shipped[1]);
    CHECK(shipped[1] >= shipped[0] + 24 * 64);
    CHECK(shipped[1] <= 1.5 * shipped[0]);
  }
}

TEST_CASE("OWL-QN with shrinking over shards shipped to nodes gives the local objective's bits, each working set's shards are released on the nodes, and a node killed mid-round has them made again") {
  node_process first;
  node_process second;
  node_process third;
  auto rt = network_runtime();
  shrinking_problem p{21, 6};
  const auto& softmax = p.softmax;
  const auto& rounds = p.rounds;

  auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second), endpoint_of(third)});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  // A peer per shard, so that the node's shard count is the shards' (groups aside).
  cluster->group_per_node(false);
  std::vector<std::string> events;
  auto objective = cluster->ship(softmax, 1e-4, p.data, p.blocks, {0, 0, 1, 1, 2, 2}, 30s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  REQUIRE(objective->can_restrict());
  const auto before = shards_held(first);
  CHECK(before == 2);

  // A whole run, the third node killed after the first iteration of its second round (the next
  // evaluation is the working set's): the local run's iterations and bits.
  bool killed = false;
  const shardopt::optimizer::iteration_hook kill = [&](const shardopt::optimizer::iteration_info& at) {
    if (!killed && at.iteration == rounds.refresh + 1) {
      third.process->signal(SIGKILL);
      third.process->wait(10s);
      killed = true;
    }
    return true;
  };
  p.check_same_run(*objective, kill);
  CHECK(killed);
  // The third node's 2 shards of the working set, mid-round, then its 2 full ones.
  CHECK(objective->recreated_shards() >= 4);
  INFO("cluster events: " << [&] { std::string all; for (const auto& e : events) all += e + "; "; return all; }());
  CHECK(std::any_of(events.begin(), events.end(),
                    [](const std::string& e) { return e.find("recreated shard") != std::string::npos; }));

  // The first node holds its 2 full shards and the last working set's 2 (the earlier ones were
  // released as each next one came: kept, 4 rounds or more would hold 8 or more), and at most one
  // of each of the third node's; the working set's go once the objective ends.
  const auto during = wait_for_shards(first, 6);
  CHECK(during >= 4);
  CHECK(during <= 6);

  // Every working set so far went to the nodes (none was kept on the driver, which would give the
  // same bits), and the nodes made them from the shards they hold, not from shipped columns: the
  // first node, never lost, restricted its 2 shards each round.
  CHECK(std::none_of(events.begin(), events.end(), [](const std::string& e) {
    return e.find("kept on the driver") != std::string::npos;
  }));
  CHECK(status_count(first, "restrictions") >= 2 * 4);
  // A working set of the biases alone (shipped runs send nodes no model without features) stays on the
  // driver, with the local objective's bits.
  std::vector<Eigen::Index> biases;
  const Eigen::VectorXd mask = model::weight_mask(softmax);
  for (Eigen::Index i = 0; i < mask.size(); ++i)
    if (mask[i] == 0)
      biases.push_back(i);
  REQUIRE(biases.size() == 3);
  const auto mine = objective->restrict(biases);
  REQUIRE_MESSAGE(mine.ok(), mine.error().message());
  const auto theirs = p.local.restrict(biases);
  REQUIRE(theirs.ok());
  const Eigen::VectorXd at = Eigen::VectorXd::LinSpaced(3, -0.5, 0.5);
  Eigen::VectorXd g_mine, g_theirs;
  const auto f_mine = mine->evaluate(at, g_mine);
  REQUIRE(f_mine.ok());
  const double f_theirs = theirs->evaluate(at, g_theirs);
  CHECK(std::memcmp(&*f_mine, &f_theirs, sizeof(double)) == 0);
  CHECK(std::memcmp(g_mine.data(), g_theirs.data(), sizeof(double) * 3) == 0);
  CHECK(std::any_of(events.begin(), events.end(), [](const std::string& e) {
    return e.find("working set of 0 features kept on the driver") != std::string::npos;
  }));

  objective = shardopt::result<actors::sharded_objective>{shardopt::fail_invalid("ended")};
  CHECK(wait_for_shards(first, 3) <= 3);
}

TEST_CASE("a node that starts draining mid-run refuses the next working set's driver identity: that round's set stays on the driver, and the run keeps the local objective's bits") {
  node_process first;
  node_process second{{"--drain-seconds", "60"}};
  auto rt = network_runtime();
  shrinking_problem p{22, 4};
  const auto& softmax = p.softmax;
  const auto& rounds = p.rounds;

  auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second)});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  std::vector<std::string> events;
  auto objective = cluster->ship(softmax, 1e-4, p.data, p.blocks, {0, 0, 1, 1}, 30s,
                                 [&](const std::string& event) { events.push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  // SIGTERM with --drain-seconds: the second node drains (it serves the drivers it holds, this run's
  // full shards among them, and refuses new ones), once the second round has begun.
  bool draining = false;
  const shardopt::optimizer::iteration_hook drain = [&](const shardopt::optimizer::iteration_info& at) {
    if (!draining && at.iteration == rounds.refresh + 1) {
      second.process->signal(SIGTERM);
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (second.process->err().find("draining") == std::string::npos
             && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
      draining = second.process->err().find("draining") != std::string::npos;
    }
    return true;
  };
  p.check_same_run(*objective, drain);
  CHECK(draining);
  std::string all;
  for (const auto& e : events)
    all += e + "; ";
  INFO("cluster events: " << all);
  CHECK(all.find("kept on the driver") != std::string::npos);
  CHECK(all.find("draining") != std::string::npos);
  CHECK(objective->recreated_shards() == 0);  // the full shards stayed where they were
  CHECK(second.process->running());           // it still serves this run's full shards
}
