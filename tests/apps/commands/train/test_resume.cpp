// `train --checkpoint-dir`: an L-BFGS or Newton-CG driver killed with SIGKILL mid-run and started
// again with the same command resumes from its newest checkpoint and ends bit for bit where a run
// that was never stopped ends (objective, counts, saved model), locally and with its shards on
// node processes.

#include "support/datasets.hpp"
#include "support/node_process.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// A run to kill and resume: its solver, and when the kill comes.
struct resume_case {
  std::string solver;       // "lbfgs", "newton-cg" or "owlqn"
  std::string lambda;
  int max_iterations = 0;
  std::string stop;         // the uninterrupted run's stop reason
  int kill_after = 0;       // iterations in the metrics file before the kill
  int extra_evaluations = 0;  // Newton-CG evaluates its resumed iterate once more
  std::vector<std::string> last_files;  // the checkpoints left (--checkpoint-steps 7, keep 2); one
                                         // name: the last only, and two files left
};

const resume_case lbfgs_case{"lbfgs", "1e-3", 150, "max_iterations", 40, 0,
                             {"lbfgs-000000000147.txt", "lbfgs-000000000150.txt"}};

/// Long enough (epsilon 0: every iteration runs) that the kill lands mid-run.
std::vector<std::string> resume_training(const std::filesystem::path& save, const resume_case& c = lbfgs_case) {
  return {shardopt_binary(), "train", "--data", "fashion-mnist", "--limit", "4000", "--test-limit", "200",
          "--lambda", c.lambda, "--shards", "3", "--max-iter", std::to_string(c.max_iterations),
          "--epsilon", "0", "--json", "--solver", c.solver, "--save", save.string(),
          "--progress-interval", "1000"};
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<int> metric_iterations(const std::filesystem::path& path) {
  std::vector<int> out;
  std::ifstream in{path};
  for (std::string line; std::getline(in, line);)
    out.push_back(json::parse(line)["iteration"].get<int>());
  return out;
}

/// Runs `extra` training uninterrupted, then killed with SIGKILL mid-run and started again, and
/// checks the second ends exactly as the first. Returns the uninterrupted run's summary.
json check_kill_and_resume(const std::vector<std::string>& extra, const resume_case& c = lbfgs_case) {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;

  auto reference_args = resume_training(dir / "reference.model", c);
  reference_args.insert(reference_args.end(), extra.begin(), extra.end());
  const auto reference_run = run(reference_args);
  INFO("reference stderr: " << reference_run.err);
  REQUIRE(reference_run.exit_code == 0);
  const auto reference = json::parse(reference_run.out);
  REQUIRE(reference["stop_reason"] == c.stop);
  const int iterations = reference["iterations"].get<int>();
  REQUIRE(iterations > c.kill_after + 7);

  auto args = resume_training(dir / "resumed.model", c);
  args.insert(args.end(), extra.begin(), extra.end());
  const auto metrics = dir / "metrics.jsonl";
  args.insert(args.end(), {"--checkpoint-dir", (dir / "ckpt").string(), "--checkpoint-steps", "7",
                           "--keep-checkpoints", "2", "--metrics", metrics.string()});
  {
    background_process first{args};
    REQUIRE(shardopt::test::wait_for_lines(first, metrics, c.kill_after));
    first.signal(SIGKILL);
    const auto killed = first.wait(60s);
    REQUIRE(killed.signaled);  // the kill landed mid-run
  }
  REQUIRE(std::filesystem::exists(dir / "ckpt"));

  const auto second = run(args);
  INFO("resumed stderr: " << second.err);
  REQUIRE(second.exit_code == 0);
  const auto resumed = json::parse(second.out);
  REQUIRE(resumed["resumed_from"].is_string());
  const auto from = resumed["resumed_from"].get<std::string>();
  CHECK(second.err.find("resuming from " + from) != std::string::npos);
  // The same bits as the run that was never stopped: objective, gradient, counts, the saved theta.
  CHECK(resumed["objective"].get<double>() == reference["objective"].get<double>());
  CHECK(resumed["grad_norm"].get<double>() == reference["grad_norm"].get<double>());
  CHECK(resumed["iterations"] == reference["iterations"]);
  CHECK(resumed["evaluations"] == reference["evaluations"].get<int>() + c.extra_evaluations);
  CHECK(resumed["hessian_products"] == reference["hessian_products"]);
  CHECK(resumed["solver"] == c.solver);
  CHECK(resumed["test_accuracy"] == reference["test_accuracy"]);
  CHECK(slurp(dir / "resumed.model") == slurp(dir / "reference.model"));
  // The metrics file holds each iteration once, in order: the rows the killed run wrote past its
  // checkpoint were dropped and written again.
  std::vector<int> expected(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i)
    expected[static_cast<std::size_t>(i)] = i + 1;
  CHECK(metric_iterations(metrics) == expected);
  // --keep-checkpoints 2, the last one the state the run ended in, and no temporary file (the kill
  // may or may not land in a write; the cleanup itself is tested in io_tests).
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator{dir / "ckpt"})
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  if (c.last_files.size() == 1) {  // only the last known: where the ones before it fall varies
    REQUIRE(files.size() == 2);
    CHECK(files.back() == c.last_files.back());
  } else {
    CHECK(files == c.last_files);
  }
  return reference;
}

} // namespace

TEST_CASE("L-BFGS killed with SIGKILL and started again ends bit for bit as an uninterrupted run (local)") {
  check_kill_and_resume({});
}

TEST_CASE("L-BFGS killed with SIGKILL and started again ends bit for bit as an uninterrupted run (2 nodes)") {
  shardopt::test::require_fashion_mnist();
  std::vector<std::unique_ptr<node_process>> nodes;
  nodes.push_back(std::make_unique<node_process>());
  nodes.push_back(std::make_unique<node_process>());
  check_kill_and_resume({"--nodes", nodes[0]->endpoint() + "," + nodes[1]->endpoint()});
}

TEST_CASE("Newton-CG killed with SIGKILL and started again ends bit for bit as an uninterrupted run (local), its rejected steps and preconditioner included") {
  // Dense data: the trust region, preconditioned by 20 pairs of the previous solve (--newton-step
  // and --cg-pairs auto). 29 iterations, 35 evaluations: steps are rejected. The run ends where the
  // trust region allows no further reduction, which (as a failed line search for L-BFGS) saves no
  // final state.
  check_kill_and_resume({}, resume_case{"newton-cg", "1e-4", 40, "line_search_failed", 8, 1,
                                        {"newton-cg-000000000021.txt", "newton-cg-000000000028.txt"}});
}

TEST_CASE("Newton-CG's line search killed with SIGKILL and started again ends bit for bit as an uninterrupted run (local)") {
  // The line search (sparse data's step, asked for here on dense data): its states carry no radius.
  check_kill_and_resume({"--newton-step", "line-search"},
                        resume_case{"newton-cg", "1e-4", 30, "max_iterations", 8, 1,
                                    {"newton-cg-000000000028.txt", "newton-cg-000000000030.txt"}});
}

TEST_CASE("OWL-QN (--l1 --no-shrinking) killed with SIGKILL and started again ends bit for bit as an uninterrupted run (local)") {
  // Its states are L-BFGS's; the settings record --l1, the solver and --no-shrinking.
  check_kill_and_resume({"--l1", "1e-3", "--no-shrinking"},
                        resume_case{"owlqn", "1e-4", 60, "max_iterations", 20, 0,
                                    {"lbfgs-000000000056.txt", "lbfgs-000000000060.txt"}});
}

TEST_CASE("OWL-QN with shrinking (--l1) killed with SIGKILL and started again ends bit for bit as an uninterrupted run (local)") {
  // States come at the start of its rounds only (with the one pair a round starts from), and the
  // last where the limit stops it.
  check_kill_and_resume({"--l1", "1e-3"}, resume_case{"owlqn", "1e-4", 60, "max_iterations", 20, 0,
                                                      {"lbfgs-000000000060.txt"}});
}

TEST_CASE("OWL-QN with shrinking (--l1) killed with SIGKILL and started again ends bit for bit as an uninterrupted run (2 nodes)") {
  // Each round's working set is shipped to the nodes anew; a restart ships it again.
  std::vector<std::unique_ptr<node_process>> nodes;
  nodes.push_back(std::make_unique<node_process>());
  nodes.push_back(std::make_unique<node_process>());
  const resume_case shrinking{"owlqn", "1e-4", 60, "max_iterations", 20, 0, {"lbfgs-000000000060.txt"}};
  const auto on_nodes = check_kill_and_resume(
    {"--l1", "1e-3", "--nodes", nodes[0]->endpoint() + "," + nodes[1]->endpoint()}, shrinking);
  // ...and the nodes shrank: a local run with shrinking's bits, not plain OWL-QN's.
  temp_dir dir;
  auto local_args = resume_training(dir / "local.model", shrinking);
  local_args.insert(local_args.end(), {"--l1", "1e-3"});
  auto plain_args = local_args;
  plain_args.push_back("--no-shrinking");
  const auto local = run(local_args);
  const auto plain = run(plain_args);
  REQUIRE(local.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  CHECK(on_nodes["objective"].get<double>() == json::parse(local.out)["objective"].get<double>());
  CHECK(on_nodes["objective"].get<double>() != json::parse(plain.out)["objective"].get<double>());
}

TEST_CASE("plain orthant-wise Newton-CG (--solver newton-cg --l1 --no-shrinking) killed with SIGKILL and started again ends bit for bit (local)") {
  // Its states are Newton states holding F; the settings record --l1, the solver and --no-shrinking.
  check_kill_and_resume({"--l1", "1e-3", "--no-shrinking"},
                        resume_case{"newton-cg", "1e-4", 30, "max_iterations", 8, 1,
                                    {"newton-cg-000000000028.txt", "newton-cg-000000000030.txt"}});
}

TEST_CASE("orthant-wise Newton-CG with shrinking (--solver newton-cg --l1) killed with SIGKILL and started again ends bit for bit (local)") {
  // States come at the start of its rounds only (here iteration 9's), from the full evaluation
  // there: a resume evaluates nothing again. The last comes where the limit stops it.
  check_kill_and_resume({"--l1", "1e-3"}, resume_case{"newton-cg", "1e-4", 30, "max_iterations", 12, 0,
                                                      {"newton-cg-000000000030.txt"}});
}

TEST_CASE("a checkpoint of another run, or one with bounds, is refused by name and nothing is trained") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  auto args = resume_training(dir / "m.model");
  args.insert(args.end(), {"--checkpoint-dir", (dir / "ckpt").string(), "--checkpoint-steps", "1",
                           "--max-iter", "3", "--quiet"});
  REQUIRE(run(args).exit_code == 0);

  auto other = args;
  other.insert(other.end(), {"--lambda", "1e-2"});
  const auto refused = run(other);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("lbfgs-000000000003.txt: saved by another run: --lambda was 0.001 there, is "
                         "0.01 here; delete it or give another --checkpoint-dir") != std::string::npos);
  auto shape = args;
  shape.insert(shape.end(), {"--limit", "3000"});
  const auto other_data = run(shape);
  CHECK(other_data.exit_code == 1);
  CHECK(other_data.err.find("the number of examples was 4000 there, is 3000 here") != std::string::npos);
  // The same command with the default solver (auto: Newton-CG here) finds L-BFGS's checkpoints
  // and refuses rather than starting afresh beside them.
  auto automatic = args;
  *std::find(automatic.begin(), automatic.end(), "lbfgs") = "auto";
  const auto other_solver = run(automatic);
  CHECK(other_solver.exit_code == 1);
  CHECK(other_solver.err.find("is a checkpoint of --solver lbfgs, this run uses --solver newton-cg; give "
                              "--solver lbfgs to resume it") != std::string::npos);
  // Newton-CG's checkpoints record --l1: a smooth run's is not the orthant-wise run's, nor the
  // other way round.
  auto newton = args;
  *std::find(newton.begin(), newton.end(), "lbfgs") = "newton-cg";
  *std::find(newton.begin(), newton.end(), (dir / "ckpt").string()) = (dir / "newton-ckpt").string();
  REQUIRE(run(newton).exit_code == 0);
  auto newton_l1 = newton;
  newton_l1.insert(newton_l1.end(), {"--l1", "1e-3"});
  const auto smooth_to_l1 = run(newton_l1);
  CHECK(smooth_to_l1.exit_code == 1);
  CHECK(smooth_to_l1.err.find("--l1 was 0 there, is 0.001 here") != std::string::npos);
  // --l1 turns the same command into OWL-QN: L-BFGS's checkpoint is not its.
  auto l1 = args;
  l1.insert(l1.end(), {"--l1", "1e-3"});
  const auto other_penalty = run(l1);
  CHECK(other_penalty.exit_code == 1);
  CHECK(other_penalty.err.find("--solver was lbfgs there, is owlqn here") != std::string::npos);
  // OWL-QN's checkpoints record --no-shrinking when given: plain OWL-QN's states are not resumed
  // with shrinking, nor the other way round.
  auto owlqn = l1;
  *std::find(owlqn.begin(), owlqn.end(), "lbfgs") = "owlqn";
  *std::find(owlqn.begin(), owlqn.end(), (dir / "ckpt").string()) = (dir / "owlqn-ckpt").string();
  REQUIRE(run(owlqn).exit_code == 0);
  auto plain = owlqn;
  plain.emplace_back("--no-shrinking");
  const auto to_plain = run(plain);
  CHECK(to_plain.exit_code == 1);
  CHECK(to_plain.err.find("saved by another run: it does not record --no-shrinking") != std::string::npos);
  auto bounded = args;
  bounded.insert(bounded.end(), {"--lower", "-1"});
  const auto with_bounds = run(bounded);
  CHECK(with_bounds.exit_code == 1);
  CHECK(with_bounds.err.find("--checkpoint-dir: a run with --lower/--upper (L-BFGS-B) cannot be checkpointed")
        != std::string::npos);
}
