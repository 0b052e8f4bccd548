// Driver and node processes on loopback: the same objective as a local run bit for bit, surviving a
// node killed mid-run, a clear error when every node is gone, nodes that shrug off garbage, and
// node-local data.
// Every process a test starts is stopped by it (background_process kills on destruction).

#include "io/model_file.hpp"
#include "support/bits.hpp"
#include "support/datasets.hpp"
#include "support/node_process.hpp"
#include "support/process.hpp"
#include "support/sockets.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <random>
#include <regex>

using namespace shardopt::test;
using json = nlohmann::json;
namespace io = shardopt::io;
using namespace std::chrono_literals;

namespace {

std::string endpoints(const std::vector<std::unique_ptr<node_process>>& nodes) {
  std::string out;
  for (const auto& node : nodes)
    out += (out.empty() ? "" : ",") + node->endpoint();
  return out;
}

const std::vector<std::string> training{"train", "--data", "fashion-mnist", "--limit", "6000",
                                        "--test-limit", "500", "--lambda", "1e-3", "--shards", "5",
                                        "--json"};

/// A local run of `training` with 3 shards instead of 5: sums do not depend on the cluster, so it
/// gives the bits of any run of whole blocks, on any nodes.
json local_summary(int iterations) {
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), training.begin(), training.end());
  *(std::find(args.begin(), args.end(), "--shards") + 1) = "3";
  args.insert(args.end(), {"--max-iter", std::to_string(iterations), "--quiet"});
  const auto result = run(args);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.out);
}

/// The first 20,000 rows of Fashion-MNIST as a binary dataset in `dir` (a third of the set, for
/// node-local runs: their nodes read whole files, where --limit does not reach).
std::string fashion_rows(const temp_dir& dir) {
  const auto path = (dir / "fashion-20000.shoptbin").string();
  const auto result = run({shardopt_binary(), "convert", "--limit", "20000", "-o", path, "--quiet"});
  REQUIRE(result.exit_code == 0);
  return path;
}

/// Runs a driver with `args` (plus a metrics file), sends `victim` `signal` (by default SIGKILL)
/// once `iterations` are done, and returns how the driver ended.
shardopt::test::process_result run_and_kill(std::vector<std::string> args, node_process& victim,
                                            int signal = SIGKILL, int iterations = 10) {
  temp_dir dir;
  const auto metrics = dir / "run.jsonl";
  args.insert(args.end(), {"--metrics", metrics.string(), "--progress-interval", "1000"});
  background_process driver{args};
  REQUIRE(shardopt::test::wait_for_lines(driver, metrics, iterations));
  victim.process->signal(signal);
  return driver.wait(300s);
}

} // namespace

TEST_CASE("a driver with 3 node processes on loopback (5 shards) gets the bits of a local run with 3 shards") {
  shardopt::test::require_fashion_mnist();
  std::vector<std::unique_ptr<node_process>> nodes;
  nodes.push_back(std::make_unique<node_process>());
  nodes.push_back(std::make_unique<node_process>(std::vector<std::string>{"--threads", "1"}));
  nodes.push_back(std::make_unique<node_process>());
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), training.begin(), training.end());
  args.insert(args.end(), {"--max-iter", "40", "--nodes", endpoints(nodes)});
  // The nodes serve two drivers one after another.
  for (int round = 0; round < 2; ++round) {
    const auto result = run(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    const auto remote = json::parse(result.out);
    const auto local = local_summary(40);
    CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
    CHECK(remote["grad_norm"].get<double>() == local["grad_norm"].get<double>());
    CHECK(remote["test_accuracy"] == local["test_accuracy"]);
    CHECK(remote["nodes"] == 3);
    CHECK(remote["topology"] == "tree");  // no --topology: auto, a tree from 3 nodes up
    CHECK(remote["recreated_shards"] == 0);
    // 2 + 1 + 2 threads: shards 0-1, 2, 3-4.
    CHECK(result.err.find("placement: node " + nodes[1]->endpoint() + " (") != std::string::npos);
    CHECK(result.err.find("threads): shard 2\n") != std::string::npos);
  }
  for (auto& node : nodes) {
    node->process->signal(SIGTERM);
    const auto stopped = node->process->wait(10s);
    CHECK(stopped.exit_code == 0);
  }
}

TEST_CASE("a node killed with SIGKILL mid-run: its shards are recreated and the objective is a 3-shard local run's, bit for bit") {
  shardopt::test::require_fashion_mnist();
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<node_process>());
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), training.begin(), training.end());
  args.insert(args.end(), {"--max-iter", "120", "--nodes", endpoints(nodes)});
  // Kill the middle node once training is under way.
  const auto result = run_and_kill(args, *nodes[1]);
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto remote = json::parse(result.out);
  CHECK(remote["recreated_shards"].get<int>() >= 1);
  CHECK(result.err.find("cluster: node " + nodes[1]->endpoint() + " lost") != std::string::npos);
  CHECK(result.err.find("cluster: recreated shard") != std::string::npos);  // "shard 2" or "shards 3-4"
  const auto local = local_summary(120);
  CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
  CHECK(remote["iterations"] == local["iterations"]);
}

TEST_CASE("--l1 on 3 node processes: OWL-QN and orthant-wise Newton-CG shrink there too, and give a local run's bits") {
  shardopt::test::require_fashion_mnist();
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<node_process>());
  temp_dir dir;
  auto l1_run = [&](const std::vector<std::string>& where, const std::string& model,
                    const std::string& iterations = "80") {
    std::vector<std::string> args{shardopt_binary()};
    args.insert(args.end(), training.begin(), training.end());
    args.insert(args.end(), {"--l1", "1e-3", "--max-iter", iterations, "--save", (dir / model).string()});
    args.insert(args.end(), where.begin(), where.end());
    const auto result = run(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    return json::parse(result.out);
  };
  const auto remote = l1_run({"--nodes", endpoints(nodes)}, "nodes.model");
  const auto local = l1_run({"--shards", "3"}, "local.model");
  const auto plain = l1_run({"--shards", "3", "--no-shrinking"}, "plain.model");
  CHECK(remote["solver"] == "owlqn");
  CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
  CHECK(remote["iterations"] == local["iterations"]);
  CHECK(remote["nonzero_weights"] == local["nonzero_weights"]);
  CHECK(remote["passes"] == local["passes"]);
  std::ifstream a{dir / "nodes.model", std::ios::binary}, b{dir / "local.model", std::ios::binary};
  std::stringstream a_bytes, b_bytes;
  a_bytes << a.rdbuf();
  b_bytes << b.rdbuf();
  CHECK(a_bytes.str() == b_bytes.str());
  // Shrinking took another path than plain OWL-QN (so this compares shrinking runs).
  CHECK(local["objective"].get<double>() != plain["objective"].get<double>());
  // Orthant-wise Newton-CG's rounds restrict the shards there too: a local run's bits (20
  // iterations: several rounds, each a restriction on the nodes).
  const auto newton_remote = l1_run({"--nodes", endpoints(nodes), "--solver", "newton-cg"}, "newton-nodes.model", "20");
  const auto newton_local = l1_run({"--shards", "3", "--solver", "newton-cg"}, "newton-local.model", "20");
  const auto newton_plain =
    l1_run({"--shards", "3", "--solver", "newton-cg", "--no-shrinking"}, "newton-plain.model", "20");
  CHECK(newton_remote["solver"] == "newton-cg");
  CHECK(newton_remote["objective"].get<double>() == newton_local["objective"].get<double>());
  CHECK(newton_remote["iterations"] == newton_local["iterations"]);
  CHECK(newton_remote["hessian_products"] == newton_local["hessian_products"]);
  CHECK(newton_remote["nonzero_weights"] == newton_local["nonzero_weights"]);
  CHECK(newton_local["hessian_products"] != newton_plain["hessian_products"]);
}

TEST_CASE("when every node is gone the run stops with a clear error and saves the last theta") {
  shardopt::test::require_fashion_mnist();
  node_process node;
  temp_dir dir;
  const auto metrics = dir / "run.jsonl";
  const auto model = dir / "model.bin";
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), training.begin(), training.end());
  args.insert(args.end(), {"--max-iter", "100000", "--epsilon", "0", "--nodes", node.endpoint(),
                           "--metrics", metrics.string(), "--save", model.string()});
  background_process driver{args};
  REQUIRE(shardopt::test::wait_for_lines(driver, metrics, 5));
  node.process->signal(SIGKILL);
  const auto result = driver.wait(60s);
  INFO("stderr: " << result.err);
  CHECK_FALSE(result.timed_out);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("no node left") != std::string::npos);
  CHECK(result.err.find("the last theta") != std::string::npos);
  // The saved model loads and evaluates.
  const auto evaluated = run({shardopt_binary(), "eval", "--model-file", model.string(), "--data",
                              "fashion-mnist", "--limit", "500", "--json"});
  CHECK(evaluated.exit_code == 0);
  CHECK(json::parse(evaluated.out)["accuracy"].get<double>() > 0.5);
}


TEST_CASE("garbage bytes and a truncated header on a node's port neither crash nor hang it") {
  shardopt::test::require_fashion_mnist();
  node_process node;
  const std::uint32_t seed = 4242;
  INFO("seed " << seed);
  std::mt19937 rng{seed};
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string garbage(1 + rng() % 4096, '\0');
    for (auto& c : garbage)
      c = static_cast<char>(rng());
    REQUIRE(send_raw(node.port, garbage));
  }
  // A BASP header (64 bytes: operation, flags, payload length, ...) cut short after 12 bytes:
  // operation "client handshake", payload length 64.
  REQUIRE(send_raw(node.port, std::string("\x01\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00", 12)));
  // (A complete, well-formed "server handshake" header sent to a node crashes CAF 0.17.6's BASP
  // layer itself; see docs/cluster.md: TLS keeps such peers out.)
  REQUIRE(node.process->running());
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), training.begin(), training.end());
  args.insert(args.end(), {"--max-iter", "5", "--nodes", node.endpoint(), "--quiet"});
  const auto result = run(args, 120s);
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == 0);
  CHECK(node.process->running());
}

TEST_CASE("a driver pointed at a port where no node listens fails with the address") {
  const auto result = run({shardopt_binary(), "train", "--data", "fashion-mnist", "--limit", "100",
                           "--nodes", "127.0.0.1:1"}, 60s);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("127.0.0.1:1: cannot connect") != std::string::npos);
}

TEST_CASE("node-local data: nodes read their own parts and agree with shipped data and local runs") {
  shardopt::test::require_fashion_mnist();
  // A CSV every node can see under its data root (here: the same file system), with a header and
  // uneven lines.
  temp_dir dir;
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 2; ++i)
    nodes.push_back(std::make_unique<node_process>(
      std::vector<std::string>{"--data-root", dir.path().string()}));
  std::mt19937 rng{99};
  std::normal_distribution<double> normal;
  std::ostringstream csv;
  csv << "y,f1,f2,f3,f4,f5\n";
  for (int i = 0; i < 900; ++i) {
    csv << i % 3;
    for (int j = 0; j < 5; ++j)
      csv << "," << normal(rng) * (j + 1);
    csv << "\n";
  }
  const auto path = dir.write("train.csv", csv.str());
  auto train = [&](const std::string& placement, const std::string& data) {
    const auto result =
      run({shardopt_binary(), "train", "--data", data, "--standardize", "--lambda", "1e-2",
           "--shards", "5", "--epsilon", "1e-9", "--json", "--nodes", endpoints(nodes),
           "--data-placement", placement, "--save", (dir.path() / (placement + ".model")).string()},
          120s);
    INFO(placement << ": " << result.err);
    REQUIRE(result.exit_code == 0);
    if (placement == "node-local")
      CHECK(result.err.find("(read on the nodes)") != std::string::npos);
    return json::parse(result.out);
  };
  const auto shipped = train("shipped", path);
  const auto local_parts = train("node-local", path);
  CHECK(local_parts["examples"] == 900);
  // The standardisation statistics come from exact per-feature moments: the same bits however the
  // rows are split. Byte-range parts of text are moved by a few examples to start canonical blocks
  // (blocks of 14 rows here; 5 byte ranges of uneven lines cut them), so the block sums, the
  // trajectory and the model are the shipped bits too.
  const auto shipped_model = io::load_model((dir.path() / "shipped.model").string());
  const auto local_model = io::load_model((dir.path() / "node-local.model").string());
  REQUIRE(shipped_model.ok());
  REQUIRE(local_model.ok());
  CHECK(same_bits(local_model->scaling.mean, shipped_model->scaling.mean));
  CHECK(same_bits(local_model->scaling.inv_std, shipped_model->scaling.inv_std));
  CHECK(local_parts["objective"].get<double>() == shipped["objective"].get<double>());
  CHECK(local_parts["iterations"] == shipped["iterations"]);
  CHECK(shardopt::test::slurp(dir.path() / "node-local.model")
        == shardopt::test::slurp(dir.path() / "shipped.model"));
  // Parts of a binary dataset are whole canonical blocks: standardised node-local runs give the
  // shipped bits, model file and all.
  const auto binary = dir.file("train.shoptbin");
  REQUIRE(run({shardopt_binary(), "convert", "--data", path, "-o", binary, "--quiet"}).exit_code == 0);
  const auto binary_shipped = train("shipped", binary);
  const auto binary_local = train("node-local", binary);
  CHECK(binary_local["objective"].get<double>() == binary_shipped["objective"].get<double>());
  CHECK(shardopt::test::slurp(dir.path() / "node-local.model")
        == shardopt::test::slurp(dir.path() / "shipped.model"));

  // A part of fewer examples than a block (the last 3 of 640 lines hold most of the bytes, so part 2
  // of 2 holds 1 or 2 examples, inside the block of 10 that part 1 ends): the parts stay as their
  // bytes say, and the driver says so.
  std::ostringstream svm;
  for (int i = 0; i < 640; ++i)
    svm << (i % 2 ? "+1" : "-1") << " 1:" << normal(rng) << " 2:" << normal(rng)
        << (i >= 637 ? " # " + std::string(10000, 'c') : std::string{}) << "\n";
  const auto skewed = dir.write("skewed.svm", svm.str());
  const auto unaligned = run({shardopt_binary(), "train", "--data", skewed, "--model", "logistic", "--shards", "2",
                              "--json", "--nodes", endpoints(nodes), "--data-placement", "node-local"}, 120s);
  INFO(unaligned.err);
  REQUIRE(unaligned.exit_code == 0);
  CHECK(json::parse(unaligned.out)["examples"] == 640);
  CHECK(unaligned.err.find("parts of fewer examples than a block (10): read as their bytes say") != std::string::npos);

  // --limit has no meaning for parts read on several nodes.
  const auto limited = run({shardopt_binary(), "train", "--data", path, "--limit", "10", "--nodes",
                            endpoints(nodes), "--data-placement", "node-local"}, 60s);
  CHECK(limited.exit_code == 1);
  CHECK(limited.err.find("--limit cannot be combined with node-local data") != std::string::npos);
}

TEST_CASE("node-local data: a node killed mid-run has its parts re-read by a survivor") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  const auto data = fashion_rows(dir);
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<node_process>(std::vector<std::string>{"--data-root", dir.path().string()}));
  const std::vector<std::string> common{"train", "--data", data, "--lambda", "1e-3", "--shards", "6",
                                        "--max-iter", "30", "--json"};
  std::vector<std::string> args{shardopt_binary()};
  args.insert(args.end(), common.begin(), common.end());
  args.insert(args.end(), {"--nodes", endpoints(nodes), "--data-placement", "node-local"});
  const auto result = run_and_kill(args, *nodes[2]);
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto remote = json::parse(result.out);
  CHECK(remote["recreated_shards"].get<int>() >= 1);
  CHECK(remote["iterations"].get<int>() > 10);  // killed at 10: the run went on past the kill
  // A binary dataset's parts are row ranges, the same rows as local shards: equal to the bit.
  std::vector<std::string> local_args{shardopt_binary()};
  local_args.insert(local_args.end(), common.begin(), common.end());
  local_args.push_back("--quiet");
  const auto local = run(local_args, 300s);
  REQUIRE(local.exit_code == 0);
  CHECK(remote["objective"].get<double>() == json::parse(local.out)["objective"].get<double>());
}

TEST_CASE("node-local data with --l1: the nodes restrict their own shards to each working set, for a local run's bits, through a node killed or draining mid-run") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  const auto data = fashion_rows(dir);
  const std::vector<std::string> common{"train", "--data", data, "--lambda", "1e-3", "--l1", "1e-3", "--shards", "3",
                                        "--max-iter", "40", "--json"};
  auto l1_run = [&](const std::vector<std::string>& extra, const std::string& model) {
    std::vector<std::string> args{shardopt_binary()};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"--save", (dir / model).string()});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto summary = [](const shardopt::test::process_result& result) {
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    return json::parse(result.out);
  };
  // (That these runs shrink, not run plain OWL-QN, the nodes' restriction counts show below.)
  const auto local = summary(run(l1_run({"--quiet"}, "local.model"), 300s));
  auto same_as_local = [&](const json& remote, const std::string& model) {
    CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
    CHECK(remote["iterations"] == local["iterations"]);
    CHECK(remote["passes"] == local["passes"]);
    CHECK(remote["nonzero_weights"] == local["nonzero_weights"]);
    CHECK(slurp(dir / model) == slurp(dir / "local.model"));
  };
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<node_process>(std::vector<std::string>{
      "--data-root", dir.path().string(), "--threads", "1", "--drain-seconds", "60"}));
  const std::vector<std::string> on_nodes{"--nodes", endpoints(nodes), "--data-placement", "node-local"};
  const auto undisturbed = run(l1_run(on_nodes, "nodes.model"), 300s);
  same_as_local(summary(undisturbed), "nodes.model");
  CHECK(undisturbed.err.find("working set") == std::string::npos);  // made on the nodes every round...
  for (const auto& node : nodes) {  // ...by restricting the run's shards there
    const auto status = run({shardopt_binary(), "status", "--nodes", node->endpoint(), "--json"});
    REQUIRE(status.exit_code == 0);
    CHECK(json::parse(status.out)["restrictions"].get<int>() >= 1);
  }
  // A node killed mid-run: its part is read again on a survivor, for the run and its working sets.
  const auto killed = run_and_kill(l1_run(on_nodes, "killed.model"), *nodes[2]);
  const auto after_kill = summary(killed);
  CHECK(after_kill["recreated_shards"].get<int>() >= 1);
  same_as_local(after_kill, "killed.model");
  // A node draining mid-run serves the run's shards but takes no working set's: its part is read
  // again on another node for each one. (Early, so that rounds follow: 40 iterations hold several.)
  nodes.pop_back();
  const std::vector<std::string> on_two{"--nodes", endpoints(nodes), "--data-placement", "node-local"};
  const auto drained = run_and_kill(l1_run(on_two, "drained.model"), *nodes[1], SIGTERM, 3);
  same_as_local(summary(drained), "drained.model");
  CHECK(drained.err.find("node " + nodes[1]->endpoint() + " could not take it, its parts read again on other "
                         "nodes") != std::string::npos);
  CHECK(drained.err.find("draining") != std::string::npos);
  CHECK(drained.err.find("through the full objective") == std::string::npos);
}

TEST_CASE("node-local data: a malformed part fails the run with the file, part and line") {
  temp_dir dir;
  node_process node{{"--data-root", dir.path().string()}};
  const auto path = dir.write("broken.csv", "0,1,2\n1,2,3\n0,3\n1,4,5\n");
  const auto result = run({shardopt_binary(), "train", "--data", path, "--shards", "2", "--nodes",
                           node.endpoint(), "--data-placement", "node-local"}, 60s);
  INFO(result.err);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("broken.csv (part 2 of 2") != std::string::npos);
  CHECK(result.err.find("expected 3 fields, got 2") != std::string::npos);
  CHECK(node.process->running());
}

TEST_CASE("hashed data (VW, CSV with strings) on 2 nodes: shipped and node-local give the local model's bits") {
  temp_dir dir;
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 2; ++i)
    nodes.push_back(std::make_unique<node_process>(std::vector<std::string>{"--data-root", dir.path().string()}));
  std::mt19937 rng{7};
  const char* words[] = {"good", "bad", "great", "awful", "fine", "poor", "nice", "ugly", "new", "old"};
  std::ostringstream vw;
  std::ostringstream csv;
  csv << "label,stars,city,review\n";
  for (int i = 0; i < 1500; ++i) {
    const int label = static_cast<int>(rng() % 2);
    std::string review;
    for (int w = 0; w < 6; ++w)
      review += std::string{w ? " " : ""} + words[(rng() % 5) * 2 + (w < 3 ? label : rng() % 2)];
    const std::string city = std::vector<std::string>{"paris", "rome", "oslo"}[rng() % 3];
    vw << (label ? "1" : "-1") << " 'row" << i << " |w " << review << " |c " << city << " |n stars:" << rng() % 5 << "\n";
    csv << label << "," << rng() % 5 << "," << city << ",\"" << review << ", really\"\n";
  }
  const auto vw_path = dir.write("reviews.vw", vw.str());
  const auto csv_path = dir.write("reviews.csv", csv.str());
  const std::vector<std::pair<std::string, std::vector<std::string>>> sets{
    {vw_path, {"--pairs", "wc", "--hash-bits", "16"}},
    {csv_path, {"--categorical", "city", "--text", "review", "--word-pairs", "--hash-bits", "16"}}};
  for (const auto& [path, hashing] : sets) {
    CAPTURE(path);
    auto train = [&, &path = path, &hashing = hashing](const std::string& name, std::vector<std::string> where) {
      std::vector<std::string> args{shardopt_binary(), "train", "--data", path, "--model", "logistic",
                                    "--lambda", "1e-3", "--json", "--save", dir.file(name + ".model")};
      args.insert(args.end(), hashing.begin(), hashing.end());
      args.insert(args.end(), where.begin(), where.end());
      const auto result = run(args, 120s);
      INFO(name << ": " << result.err);
      REQUIRE(result.exit_code == 0);
      return json::parse(result.out);
    };
    const auto local = train("local", {"--shards", "1"});
    CHECK(local["hashing"].get<std::string>().find("2^16 hashed columns") == 0);
    CHECK(local["train_accuracy"].get<double>() > 0.9);
    // Shipped to the nodes: the local bits (sparse sums are exact, whatever the shards).
    const auto shipped = train("shipped", {"--shards", "2", "--nodes", endpoints(nodes)});
    CHECK(shipped["objective"].get<double>() == local["objective"].get<double>());
    CHECK(shardopt::test::slurp(dir.path() / "shipped.model") == shardopt::test::slurp(dir.path() / "local.model"));
    // Read on the nodes: text in 1 or 2 byte-range parts (moved by a few examples to start
    // canonical blocks) gives the same bits, and so does a binary dataset (`convert` keeps the
    // hashing) in 1 or 2 parts of whole blocks. The nodes leave out the hashed columns no part
    // stores, as a local run does (the map from their summaries' counts), so these are the local
    // run's bits and model file too.
    auto node_local = [&](const std::string& name, const std::string& data, const char* shards) {
      std::vector<std::string> args{shardopt_binary(), "train", "--data", data, "--model", "logistic", "--lambda", "1e-3",
                                    "--json", "--save", dir.file(name + ".model"), "--shards", shards, "--nodes",
                                    endpoints(nodes), "--data-placement", "node-local"};
      if (data == path)
        args.insert(args.end(), hashing.begin(), hashing.end());
      const auto result = run(args, 120s);
      INFO(name << ": " << result.err);
      REQUIRE(result.exit_code == 0);
      return json::parse(result.out);
    };
    const auto one_part = node_local("part1", path, "1");
    const auto two_parts = node_local("part2", path, "2");
    CHECK(two_parts["objective"].get<double>() == one_part["objective"].get<double>());
    CHECK(two_parts["iterations"] == one_part["iterations"]);
    CHECK(shardopt::test::slurp(dir.path() / "part2.model") == shardopt::test::slurp(dir.path() / "part1.model"));
    CHECK(one_part["objective"].get<double>() == local["objective"].get<double>());
    CHECK(shardopt::test::slurp(dir.path() / "part1.model") == shardopt::test::slurp(dir.path() / "local.model"));
    const auto binary = path + ".shoptbin";
    {
      std::vector<std::string> convert{shardopt_binary(), "convert", "--data", path, "-o", binary, "--quiet"};
      convert.insert(convert.end(), hashing.begin(), hashing.end());
      REQUIRE(run(convert).exit_code == 0);
    }
    const auto binary_one = node_local("binary1", binary, "1");
    const auto binary_two = node_local("binary2", binary, "2");
    CHECK(binary_two["objective"].get<double>() == binary_one["objective"].get<double>());
    CHECK(shardopt::test::slurp(dir.path() / "binary2.model") == shardopt::test::slurp(dir.path() / "binary1.model"));
    CHECK(shardopt::test::slurp(dir.path() / "binary1.model") == shardopt::test::slurp(dir.path() / "local.model"));
    CHECK(binary_one["hashing"] == local["hashing"]);
    // eval hashes raw rows as the model says: the training objective again.
    const auto eval = run({shardopt_binary(), "eval", "--model-file", dir.file("local.model"), "--data", path, "--json"}, 60s);
    INFO(eval.err);
    REQUIRE(eval.exit_code == 0);
    CHECK(json::parse(eval.out)["accuracy"].get<double>() == local["train_accuracy"].get<double>());
  }
}

TEST_CASE("a node given twice, or under two names, is one node: the driver does not wait for a second hello") {
  shardopt::test::require_fashion_mnist();
  node_process node;
  const auto endpoint = node.endpoint();
  const auto port = endpoint.substr(endpoint.rfind(':') + 1);
  temp_dir dir;
  const auto listed = dir.write("nodes.txt", "# the same node again\nlocalhost:" + port + "\n" + endpoint + "\n");
  const std::vector<std::vector<std::string>> ways{
    {"--nodes", endpoint + "," + endpoint},
    {"--nodes", "localhost:" + port + ",127.0.0.1:" + port},
    {"--nodes", endpoint, "--nodes-file", listed},
    {"--nodes", endpoint, "--nodes-dns", "localhost:" + port}};
  for (const auto& nodes : ways) {
    CAPTURE(nodes.back());
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::string> args{shardopt_binary(), "train", "--data", "fashion-mnist", "--limit", "2000", "--test-limit",
                                  "100", "--max-iter", "3", "--shards", "2", "--json", "--quiet"};
    args.insert(args.end(), nodes.begin(), nodes.end());
    const auto result = run(args, 60s);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(json::parse(result.out)["nodes"] == 1);
    CHECK(json::parse(result.out)["topology"] == "star");
    CHECK(std::chrono::steady_clock::now() - started < 30s);  // the hang waited 60 s for a second hello
  }
}
