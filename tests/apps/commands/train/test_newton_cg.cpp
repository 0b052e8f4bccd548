// train --solver newton-cg through the binary: the minima L-BFGS reaches on real data, in fewer
// passes on Fashion-MNIST; on node processes the local bits, also after a node is killed mid-run;
// what it does not take is refused by name. Every process a test starts is stopped by it.

#include "support/datasets.hpp"
#include "support/node_process.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

json train(std::vector<std::string> args) {
  args.insert(args.begin(), "train");
  args.insert(args.end(), {"--json", "--quiet"});
  return run_json(args);
}

double relative_gap(const json& a, const json& b) {
  const double fa = a["objective"].get<double>();
  const double fb = b["objective"].get<double>();
  return std::abs(fa - fb) / std::abs(fb);
}

} // namespace

TEST_CASE("newton-cg reaches L-BFGS's minimum on breast_cancer (logistic), wine (least squares), iris (softmax, squared hinge)") {
  struct problem {
    std::string file;
    std::vector<std::string> options;
  };
  const std::vector<problem> problems{
    {"breast_cancer.csv", {"--model", "logistic", "--label-column", "-1", "--standardize", "--lambda", "1e-2"}},
    {"wine_data.csv", {"--model", "linear", "--label-column", "0", "--lambda", "0.1"}},
    {"iris.csv", {"--model", "softmax", "--label-column", "-1", "--lambda", "1e-3"}},
    {"iris.csv", {"--model", "svm", "--label-column", "-1", "--lambda", "1e-3"}},
  };
  for (const auto& p : problems) {
    INFO(p.file << " " << p.options[1]);
    std::vector<std::string> args{"--data", shardopt::test::require_sklearn_csv(p.file), "--shards", "3",
                                  "--epsilon", "1e-10", "--max-iter", "50000"};
    args.insert(args.end(), p.options.begin(), p.options.end());
    auto newton_args = args;
    newton_args.insert(newton_args.end(), {"--solver", "newton-cg"});
    const auto newton = train(newton_args);
    auto lbfgs_args = args;
  lbfgs_args.insert(lbfgs_args.end(), {"--solver", "lbfgs"});
  const auto lbfgs = train(lbfgs_args);
    INFO("newton-cg: " << newton.dump() << "\nlbfgs: " << lbfgs.dump());
    // The squared hinge is not twice differentiable where a margin is exactly 1; near such an
    // optimum both solvers may end at machine precision before the gradient test.
    if (p.options[1] == "svm")
      CHECK((newton["stop_reason"] == "converged" || newton["stop_reason"] == "line_search_failed"));
    else
      CHECK(newton["stop_reason"] == "converged");
    CHECK(newton["solver"] == "newton-cg");
    CHECK(newton["hessian_products"].get<int>() > 0);
    CHECK(relative_gap(newton, lbfgs) <= 1e-9);
  }
}

TEST_CASE("newton-cg on Fashion-MNIST softmax reaches L-BFGS's minimum in at most 0.45x its passes") {
  shardopt::test::require_fashion_mnist();
  const std::vector<std::string> args{"--data", "fashion-mnist", "--limit", "10000", "--test-limit", "1000",
                                      "--lambda", "1e-3", "--shards", "2", "--epsilon", "1e-7",
                                      "--max-iter", "10000"};
  auto newton_args = args;
  newton_args.insert(newton_args.end(), {"--solver", "newton-cg"});
  const auto newton = train(newton_args);
  auto lbfgs_args = args;
  lbfgs_args.insert(lbfgs_args.end(), {"--solver", "lbfgs"});
  const auto lbfgs = train(lbfgs_args);
  INFO("newton-cg: " << newton.dump() << "\nlbfgs: " << lbfgs.dump());
  CHECK(newton["stop_reason"] == "converged");
  CHECK(lbfgs["stop_reason"] == "converged");
  CHECK(relative_gap(newton, lbfgs) <= 1e-9);
  CHECK(newton["passes"].get<double>() <= 0.45 * lbfgs["passes"].get<double>());
  CHECK(newton["test_accuracy"] == lbfgs["test_accuracy"]);
}

TEST_CASE("newton-cg on 3 node processes gets the local bits, also when a node is killed mid-run") {
  shardopt::test::require_fashion_mnist();
  const std::vector<std::string> args{"--data", "fashion-mnist", "--limit", "6000", "--test-limit", "500",
                                      "--lambda", "1e-3", "--shards", "5", "--solver", "newton-cg",
                                      "--max-iter", "12", "--epsilon", "0"};
  const auto local = train(args);
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back(std::make_unique<node_process>());
  const std::string endpoints = nodes[0]->endpoint() + "," + nodes[1]->endpoint() + "," + nodes[2]->endpoint();
  auto remote_args = args;
  remote_args.insert(remote_args.end(), {"--nodes", endpoints});

  const auto remote = train(remote_args);
  CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
  CHECK(remote["passes"] == local["passes"]);

  // Kill the middle node once 3 iterations are done: most of the time goes to CG's products, so the
  // node dies inside one, and its shards must be recreated and asked again.
  temp_dir dir;
  const auto metrics = dir / "run.jsonl";
  std::vector<std::string> full{shardopt_binary(), "train"};
  full.insert(full.end(), remote_args.begin(), remote_args.end());
  full.insert(full.end(), {"--json", "--metrics", metrics.string(), "--progress-interval", "1000"});
  background_process driver{full};
  REQUIRE(shardopt::test::wait_for_lines(driver, metrics, 3));
  nodes[1]->process->signal(SIGKILL);
  const auto result = driver.wait(300s);
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto survived = json::parse(result.out);
  CHECK(survived["recreated_shards"].get<int>() >= 1);
  CHECK(survived["objective"].get<double>() == local["objective"].get<double>());
  CHECK(survived["iterations"] == local["iterations"]);
  for (auto& node : nodes)
    if (node->process->running())
      node->process->signal(SIGTERM);
}

TEST_CASE("newton-cg refuses networks, bounds and the PS mode by name") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
    {{"--model", "mlp"}, "linear models"},
    {{"--lower", "-1"}, "--lower/--upper"},
    {{"--mode", "ps"}, "--mode ps"},
  };
  for (const auto& [extra, message] : refused) {
    std::vector<std::string> args{shardopt_binary(), "train", "--data", "fashion-mnist", "--limit", "100",
                                  "--solver", "newton-cg"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run(args);
    INFO(result.err);
    CHECK(result.exit_code == 1);
    CHECK(result.err.find(message) != std::string::npos);
  }
}

TEST_CASE("--solver auto (the default) trains the linear models with newton-cg, and networks and bounded problems with lbfgs, and the summary names the solver it chose") {
  shardopt::test::require_fashion_mnist();
  const std::vector<std::string> base{"--data", "fashion-mnist", "--limit", "300", "--test-limit", "50",
                                      "--max-iter", "2"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
    {{}, "newton-cg"},
    {{"--solver", "auto", "--model", "softmax"}, "newton-cg"},
    {{"--model", "mlp", "--hidden", "8"}, "lbfgs"},
    {{"--lower", "-1"}, "lbfgs"},
    {{"--solver", "lbfgs"}, "lbfgs"},
  };
  for (const auto& [extra, solver] : cases) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto summary = train(args);
    CAPTURE(summary.dump());
    CHECK(summary["solver"] == solver);
    CHECK((summary["hessian_products"].get<int>() > 0) == (solver == "newton-cg"));
  }
}
