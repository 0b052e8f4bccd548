// train --l1 through the binary: OWL-QN is chosen for it (orthant-wise Newton-CG by name), the
// elastic net's sparsity grows with the
// L1 weight, the non-zero count is in the summary and in every metrics row, the saved model is
// stored by its non-zero weights and predicts as the run did, and what cannot take an L1 term
// refuses it by name. (The objective against LIBLINEAR -s 6: tests/apps/commands/train/l1_vs_liblinear.py; the
// algorithm: optimizer_tests; kill and resume: test_resume.cpp.)

#include "support/datasets.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;

namespace {

std::vector<std::string> shirts_like(const std::string& l1, const std::string& lambda) {
  return {"train", "--model", "softmax", "--data", "fashion-mnist", "--limit", "3000", "--test-limit", "1000",
          "--l1", l1, "--lambda", lambda, "--shards", "3", "--epsilon", "1e-6", "--max-iter", "3000",
          "--json", "--quiet"};
}

} // namespace

TEST_CASE("--l1: OWL-QN on Fashion-MNIST, sparser as the L1 weight grows, counted in the summary and every metrics row, saved compactly") {
  require_fashion_mnist();
  temp_dir dir;
  const auto metrics = (dir / "m.jsonl").string();
  const auto saved = (dir / "l1.model").string();
  auto args = shirts_like("1e-3", "1e-4");  // the elastic net: both penalties
  args.insert(args.end(), {"--metrics", metrics, "--save", saved});
  const auto elastic = run_json(args);
  INFO(elastic.dump());
  CHECK(elastic["solver"] == "owlqn");
  CHECK(elastic["l1"] == 1e-3);
  CHECK((elastic["stop_reason"] == "converged" || elastic["stop_reason"] == "line_search_failed"));
  const auto nonzero = elastic["nonzero_weights"].get<std::int64_t>();
  CHECK(nonzero > 0);
  CHECK(nonzero < 784 * 10 / 2);
  CHECK(elastic["test_accuracy"].get<double>() >= 0.7);

  std::ifstream in{metrics};
  int rows = 0;
  json last;
  for (std::string line; std::getline(in, line); ++rows)
    last = json::parse(line);
  CHECK(rows == elastic["iterations"].get<int>());
  CHECK(last["nonzero_weights"] == nonzero);
  // The row has the working set's objective at the last iterate, the summary the full objective's
  // evaluation there that ends the round: equal to rounding (their grids may differ in the last
  // bits, and did in an -O2 build: 0.6413188312631588 against 0.641318831263159).
  CHECK(last["objective"].get<double>() == doctest::Approx(elastic["objective"].get<double>()).epsilon(1e-14));

  // The model predicts as the run did, from a file far smaller than a dense one.
  const auto evaluated = run_json({"eval", "--model-file", saved, "--data", "fashion-mnist", "--limit", "1000", "--json"});
  CHECK(evaluated["accuracy"] == elastic["test_accuracy"]);
  const auto dense = (dir / "l2.model").string();
  auto l2_args = shirts_like("0", "1e-4");
  l2_args.insert(l2_args.end(), {"--max-iter", "5", "--save", dense});
  const auto l2 = run_json(l2_args);
  CHECK(l2["solver"] == "newton-cg");
  CHECK(l2["nonzero_weights"].get<std::int64_t>() > 784 * 10 / 2);
  CHECK(std::filesystem::file_size(saved) * 2 < std::filesystem::file_size(dense));

  // A larger L1 weight keeps fewer weights; --solver lbfgs with --l1 is OWL-QN too.
  auto stronger = shirts_like("1e-2", "1e-4");
  stronger.insert(stronger.end(), {"--solver", "lbfgs"});
  const auto sparse = run_json(stronger);
  CHECK(sparse["solver"] == "owlqn");
  CHECK(sparse["nonzero_weights"].get<std::int64_t>() < nonzero);
}

TEST_CASE("--solver newton-cg --l1: orthant-wise Newton-CG reaches OWL-QN's optimum, counts its non-zeros in every metrics row, saves for eval") {
  require_fashion_mnist();
  temp_dir dir;
  const auto metrics = (dir / "m.jsonl").string();
  const auto saved = (dir / "newton.model").string();
  auto args = shirts_like("1e-2", "1e-4");  // (at 1e-3 it takes 7,200 passes, 2 minutes on 2 cores)
  args.insert(args.end(), {"--solver", "newton-cg", "--metrics", metrics, "--save", saved});
  const auto newton = run_json(args);
  INFO(newton.dump());
  CHECK(newton["solver"] == "newton-cg");
  CHECK(newton["newton_step"] == "line-search");  // dense data: auto would take the trust region
  CHECK(newton["stop_reason"] == "converged");
  CHECK(newton["hessian_products"].get<int>() > 0);
  const auto owlqn = run_json(shirts_like("1e-2", "1e-4"));
  REQUIRE(owlqn["solver"] == "owlqn");
  // The same optimum (OWL-QN's ends near it, at machine precision). (Not in fewer passes on these
  // dense softmax data: docs/benchmarks.md.)
  CHECK(newton["objective"].get<double>() <= owlqn["objective"].get<double>() + 1e-9);
  CHECK(newton["objective"].get<double>() == doctest::Approx(owlqn["objective"].get<double>()).epsilon(1e-7));
  const auto nonzero = newton["nonzero_weights"].get<std::int64_t>();
  CHECK(std::abs(nonzero - owlqn["nonzero_weights"].get<std::int64_t>()) <= 784 * 10 / 100);
  CHECK(nonzero < 784 * 10 / 10);  // a sparse model
  std::ifstream in{metrics};
  json last;
  int rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    last = json::parse(line);
    CHECK(last.contains("nonzero_weights"));
  }
  CHECK(rows == newton["iterations"].get<int>());
  CHECK(last["nonzero_weights"] == nonzero);
  const auto evaluated = run_json({"eval", "--model-file", saved, "--data", "fashion-mnist", "--limit", "1000", "--json"});
  CHECK(evaluated["accuracy"] == newton["test_accuracy"]);
}

TEST_CASE("--l1 is refused by name with the trust region and pairs, with bounds, in --mode ps and by ps-task, and --solver owlqn needs it") {
  const auto data = require_sklearn_csv("breast_cancer.csv");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
    {{"--l1", "1e-2", "--solver", "newton-cg", "--newton-step", "trust-region"},
     "--l1 with --solver newton-cg takes --newton-step line-search"},
    {{"--l1", "1e-2", "--solver", "newton-cg", "--cg-pairs", "5"}, "--l1 with --solver newton-cg takes no --cg-pairs"},
    {{"--l1", "1e-2", "--lower", "-1"}, "--l1 does not take --lower/--upper"},
    {{"--l1", "1e-2", "--solver", "owlqn", "--upper", "1"}, "--l1 does not take --lower/--upper"},
    {{"--l1", "1e-2", "--mode", "ps"}, "--l1 is trained by OWL-QN, a full-batch solver: use --mode lbfgs"},
    {{"--l1", "-1"}, "--l1: must be 0 or more"},
    {{"--solver", "owlqn"}, "--solver owlqn trains an L1 penalty: give --l1"},
  };
  for (const auto& [extra, expected] : cases) {
    std::vector<std::string> args{shardopt_binary(), "train", "--model", "logistic", "--data", data,
                                  "--label-column", "-1", "--standardize", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto refused = run(args);
    INFO(refused.err);
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find(expected) != std::string::npos);
  }
  // ps-task trains with the PS rules only: it has no --l1 to ignore.
  const auto task = run({shardopt_binary(), "ps-task", "--l1", "1e-2", "--ps_hosts", "127.0.0.1:1",
                         "--worker_hosts", "127.0.0.1:2", "--job_name", "ps", "--task_index", "0"});
  INFO(task.err);
  CHECK(task.exit_code != 0);
  CHECK(task.err.find("--l1") != std::string::npos);
}
