// The seeds' network through the binary on Fashion-MNIST: 784-100-10 with ReLU and a softmax output.
// Parameter-server training as in TensorFlow's example (Adam, lr 1e-3, batches of 100, 2 synchronous
// workers over 2 PSs, 5 epochs), asynchronous with 4 workers, and sharded L-BFGS (on 40,000 images),
// each reaching 0.86 test accuracy (PyTorch on the same network: 0.866 after 5 epochs); the same
// network on node processes; its model file and `eval`; options that do not make a network are refused.

#include "support/datasets.hpp"
#include "support/node_process.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

json run_quietly(std::vector<std::string> args) {
  args.insert(args.end(), {"--json", "--quiet"});
  return run_json(args, 600s);
}

/// The seeds' network and data: 60,000 training and 10,000 test images.
const std::vector<std::string> seeds_network{"train", "--data", "fashion-mnist", "--model", "mlp",
                                             "--hidden", "100", "--activation", "relu", "--lambda", "0",
                                             "--seed", "1"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

} // namespace

TEST_CASE("the seeds' example: 2 synchronous workers over 2 PSs with Adam reach 0.86 in 5 epochs, repeatably") {
  shardopt::test::require_fashion_mnist();
  // 5 epochs of 60,000 examples in steps of 2 x 100.
  const auto args = with(seeds_network, {"--mode", "ps", "--optimizer", "adam", "--lr", "1e-3", "--batch-size",
                                         "100", "--sync", "--workers", "2", "--ps", "2", "--last-step", "1500"});
  const auto first = run_quietly(args);
  CHECK(first["architecture"] == "mlp 784-100-10 (relu, softmax output)");
  CHECK(first["dimension"] == 79510);
  CHECK(first["steps"] == 1500);
  MESSAGE("sync PS test accuracy " << first["test_accuracy"] << ", " << first["examples_per_second"] << " examples/s");
  CHECK(first["test_accuracy"].get<double>() >= 0.86);
  // Seeded: the same command gives the same bits.
  const auto second = run_quietly(args);
  CHECK(second["objective"].get<double>() == first["objective"].get<double>());
  CHECK(second["test_accuracy"] == first["test_accuracy"]);
}

TEST_CASE("asynchronous PS training of the seeds' network with 4 workers reaches 0.86") {
  shardopt::test::require_fashion_mnist();
  // 15 epochs: asynchronous steps use one worker's 100 examples each, and stale gradients cost a
  // little accuracy per epoch (PyTorch in one process: 0.876 after 10 epochs). The order of the
  // workers' pushes, and so the result, changes from run to run: after 10 epochs it ranged from
  // 0.855 (under ctest -j2) to 0.872 (alone), too close to 0.86 to test it.
  const auto summary = run_quietly(with(seeds_network, {"--mode", "ps", "--optimizer", "adam", "--lr", "1e-3",
                                                     "--batch-size", "100", "--workers", "4", "--ps", "2",
                                                     "--last-step", "9000"}));
  MESSAGE("async PS test accuracy " << summary["test_accuracy"] << ", staleness max " << summary["staleness_max"]);
  CHECK(summary["test_accuracy"].get<double>() >= 0.86);
  CHECK(summary["dropped_gradients"] == 0);
}

TEST_CASE("sharded L-BFGS on the seeds' network reaches 0.86, and its model file rebuilds the network in eval") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  const auto model_path = (dir / "mlp.model").string();
  // 40,000 of the 60,000 training images, for two thirds of the time: 0.8728 after 200 iterations
  // (seeds 1 and 2: 0.8728, 0.8688; all 60,000 images: 0.871, docs/benchmarks.md). 30,000 images
  // were too few: 0.8665, 0.8646 and 0.8607 for seeds 1 to 3.
  const auto summary = run_quietly(with(seeds_network, {"--limit", "40000", "--shards", "2", "--max-iter", "200",
                                                     "--lambda", "1e-4", "--save", model_path}));
  MESSAGE("L-BFGS test accuracy " << summary["test_accuracy"] << " after " << summary["iterations"] << " iterations");
  CHECK(summary["test_accuracy"].get<double>() >= 0.86);
  CHECK(summary["iterations"] == 200);
  const auto eval = run({shardopt_binary(), "eval", "--model-file", model_path, "--data", "fashion-mnist", "--json"});
  REQUIRE(eval.exit_code == 0);
  const auto evaluated = json::parse(eval.out);
  CHECK(evaluated["architecture"] == "mlp 784-100-10 (relu, softmax output)");
  CHECK(evaluated["accuracy"] == summary["test_accuracy"]);
}

TEST_CASE("an MLP's shards on 2 node processes give the local objective bit for bit") {
  shardopt::test::require_fashion_mnist();
  node_process a;
  node_process b;
  const auto args = with(seeds_network, {"--hidden", "32,16", "--activation", "tanh", "--limit", "3000",
                                         "--test-limit", "500", "--shards", "3", "--max-iter", "15"});
  const auto local = run_quietly(args);
  const auto remote = run_quietly(with(args, {"--nodes", a.endpoint() + "," + b.endpoint()}));
  CHECK(remote["architecture"] == "mlp 784-32-16-10 (tanh, softmax output)");
  CHECK(remote["nodes"] == 2);
  CHECK(remote["objective"].get<double>() == local["objective"].get<double>());
  CHECK(remote["grad_norm"].get<double>() == local["grad_norm"].get<double>());
  CHECK(remote["iterations"] == local["iterations"]);
}

TEST_CASE("a regression network (--loss squared) trains on real targets") {
  // Wine's first column (alcohol) from the other 13: a real-valued target.
  const auto wine = shardopt::test::require_sklearn_csv("wine_data.csv");
  const auto summary = run_quietly({"train", "--model", "mlp", "--loss", "squared", "--hidden", "16", "--data", wine,
                                 "--label-column", "0", "--standardize", "--lambda", "1e-3", "--shards", "2",
                                 "--max-iter", "300"});
  CHECK(summary["architecture"] == "mlp 13-16-1 (relu, linear output)");
  // A linear least-squares fit (the same options, --model linear) leaves a training RMSE of 0.50;
  // the network's hidden layer fits the training set far closer (0.18).
  CHECK(summary["train_rmse"].get<double>() < 0.3);
}

TEST_CASE("options that do not make a network are refused, naming the option") {
  const auto refused = [](const std::vector<std::string>& extra, const std::string& message) {
    std::vector<std::string> args{shardopt_binary(), "train", "--data", "/nonexistent.csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run(args, 60s);
    CHECK(result.exit_code == 1);
    CHECK_MESSAGE(result.err == "shardopt: error: " + message + "\n", result.err);
  };
  refused({"--model", "softmax", "--hidden", "10"}, "--hidden: only --model mlp has hidden layers");
  refused({"--model", "mlp", "--hidden", "10,,5"}, "--hidden: expected layer widths like 100 or 256,128, got '10,,5'");
  refused({"--model", "mlp", "--hidden", "0"}, "--hidden: a layer width must be in 1..65536, got 0");
  refused({"--model", "mlp", "--hidden", "40000,40000"}, "--hidden: more than the 65536 hidden units allowed");
  refused({"--model", "softmax", "--activation", "tanh"}, "--activation: only --model mlp has hidden layers to activate");
  refused({"--model", "mlp", "--activation", "sigmoid"}, "--activation: expected relu or tanh, got 'sigmoid'");
  refused({"--model", "mlp", "--loss", "hinge"}, "--loss: expected cross-entropy or squared, got 'hinge'");
  refused({"--model", "logistic", "--loss", "squared"},
          "--loss: only --model mlp takes --loss (a linear model's loss is its name)");
  refused({"--model", "perceptron"}, "--model: unknown model 'perceptron' (expected linear, logistic, softmax, svm or mlp)");

  // Allowed widths, but 2^20 sparse features x 4096 units: 4.3 billion weights.
  temp_dir dir;
  const auto wide = (dir / "wide.svm").string();
  std::ofstream{wide} << "1 1048576:1\n0 1:1\n";
  const auto result = run({shardopt_binary(), "train", "--model", "mlp", "--hidden", "4096", "--data", wide,
                           "--shards", "1"}, 60s);
  CHECK(result.exit_code == 1);
  CHECK_MESSAGE(result.err.find("shardopt: error: the model (mlp 1048576-4096-2 (relu, softmax output)) has more "
                                "than 2147483648 parameters; use fewer or narrower --hidden layers") != std::string::npos,
                result.err);
}
