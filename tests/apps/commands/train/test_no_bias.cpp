// train --no-bias through the binary: least squares through the origin by every full-batch solver,
// against the normal equations (a bound that keeps 0 in is taken); the same bits on 1 and 3
// shards; refused by name where it cannot apply; and a checkpoint with it is not resumed without
// it, nor the other way round. (Against LIBLINEAR's problem without -B:
// tests/python/test_sklearn.py and l1_vs_liblinear.py.)

#include "support/files.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <Eigen/Dense>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;

namespace {

constexpr int rows = 300;
constexpr int features = 4;

/// Rows whose features are not centred (a missing bias changes the solution), from a fixed
/// arithmetic sequence: x_ij = 1 + frac(0.37 i + 0.61 j + 0.13 i j / 7), y = 2 x_0 - x_1 + 3 +
/// a wobble. Written as CSV (label last) and kept as X, y.
struct sample {
  Eigen::MatrixXd x{rows, features};
  Eigen::VectorXd y{rows};

  explicit sample(const std::string& path) {
    std::ofstream out{path};
    out.precision(17);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < features; ++j) {
        const double t = 0.37 * i + 0.61 * j + 0.13 * i * j / 7;
        x(i, j) = static_cast<float>(1 + (t - std::floor(t)));  // features are read as floats
        out << x(i, j) << ',';
      }
      y[i] = 2 * x(i, 0) - x(i, 1) + 3 + 0.1 * std::sin(i);
      out << y[i] << '\n';
    }
  }

  /// The mean of 1/2 (x w - y)^2 at the least-squares w through the origin.
  double least_squares_objective() const {
    const Eigen::VectorXd w = (x.transpose() * x).ldlt().solve(x.transpose() * y);
    return 0.5 * (x * w - y).squaredNorm() / rows;
  }
};

std::vector<std::string> no_bias_training(const std::string& data, const std::string& solver) {
  return {"train", "--model", "linear", "--data", data, "--label-column", "-1", "--scale", "none",
          "--lambda", "0", "--solver", solver, "--epsilon", "1e-11", "--max-iter", "2000", "--json", "--quiet"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& extra) {
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

} // namespace

TEST_CASE("--no-bias: least squares through the origin by Newton-CG, L-BFGS and OWL-QN, the same bits on 1 and 3 shards") {
  temp_dir dir;
  const auto data = (dir / "through-origin.csv").string();
  const sample s{data};
  const double exact = s.least_squares_objective();
  // Newton-CG by its trust region (dense data's default) and by LIBLINEAR's line search; L-BFGS.
  for (const auto& [solver, step] : {std::pair{"newton-cg", "auto"}, std::pair{"newton-cg", "line-search"},
                                     std::pair{"lbfgs", "auto"}}) {
    const auto args = with(no_bias_training(data, solver), {"--newton-step", step});
    const auto three = run_json(with(args, {"--no-bias", "--shards", "3"}));
    INFO(solver, " ", step, ": ", three.dump());
    CHECK(three["biases"] == false);
    CHECK(three["objective"].get<double>() == doctest::Approx(exact).epsilon(1e-9));
    const auto one = run_json(with(args, {"--no-bias", "--shards", "1"}));
    CHECK(one["objective"].get<double>() == three["objective"].get<double>());  // bit for bit
    CHECK(one["iterations"] == three["iterations"]);
    // With its bias the fit is better: the option changed the problem.
    const auto fitted = run_json(with(args, {"--shards", "3"}));
    CHECK(fitted["biases"] == true);
    CHECK(fitted["objective"].get<double>() < exact * 0.9);
  }
  // L-BFGS-B with a bound that keeps 0 in (and the solution): the same optimum.
  const auto bounded = run_json(with(no_bias_training(data, "lbfgs"), {"--no-bias", "--lower", "-100"}));
  INFO(bounded.dump());
  CHECK(bounded["objective"].get<double>() == doctest::Approx(exact).epsilon(1e-8));
  // OWL-QN with an L1 weight too small to zero anything ends at the same point, to its tolerance.
  const auto owlqn = run_json(with(no_bias_training(data, "owlqn"), {"--no-bias", "--l1", "1e-12", "--shards", "2"}));
  INFO(owlqn.dump());
  CHECK(owlqn["objective"].get<double>() == doctest::Approx(exact).epsilon(1e-8));
  // The saved model has zero biases and predicts x w.
  const auto saved = (dir / "m.model").string();
  REQUIRE(run_json(with(no_bias_training(data, "newton-cg"), {"--no-bias", "--save", saved})).contains("objective"));
  const auto evaluated = run_json({"eval", "--model-file", saved, "--data", data, "--label-column", "-1", "--json"});
  INFO(evaluated.dump());
  CHECK(evaluated["rmse"].get<double>() == doctest::Approx(std::sqrt(2 * exact)).epsilon(1e-8));
}

TEST_CASE("--no-bias is refused by name for networks and --mode ps, and a checkpoint does not change it on resume") {
  temp_dir dir;
  const auto data = (dir / "through-origin.csv").string();
  const sample s{data};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
    {{"--model", "mlp", "--hidden", "3", "--loss", "squared"}, "--no-bias takes the linear models"},
    {{"--mode", "ps"}, "--no-bias is for the full-batch solvers: use --mode lbfgs"},
    {{"--model", "linear", "--lower", "0.5"}, "--no-bias holds the biases at 0, outside --lower/--upper"},
    {{"--model", "linear", "--upper", "-1"}, "--no-bias holds the biases at 0, outside --lower/--upper"},
  };
  for (const auto& [extra, expected] : cases) {
    auto args = with({shardopt_binary(), "train", "--data", data, "--label-column", "-1", "--no-bias",
                      "--quiet"}, extra);
    if (extra[0] == "--mode")
      args = with(args, {"--model", "linear"});
    const auto refused = run(args);
    INFO(refused.err);
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find(expected) != std::string::npos);
  }
  const auto checkpoints = (dir / "ckpt").string();
  auto args = with(no_bias_training(data, "newton-cg"),
                   {"--checkpoint-dir", checkpoints, "--checkpoint-steps", "1", "--max-iter", "2"});
  args.insert(args.begin(), shardopt_binary());
  const auto no_bias = with(args, {"--no-bias"});
  REQUIRE(run(no_bias).exit_code == 0);
  const auto dropped = run(args);
  INFO(dropped.err);
  CHECK(dropped.exit_code == 1);
  CHECK(dropped.err.find("saved by another run: it records --no-bias true, which this run does not have")
        != std::string::npos);
  const auto other = (dir / "ckpt-bias").string();
  auto biased = args;
  *std::find(biased.begin(), biased.end(), checkpoints) = other;
  REQUIRE(run(biased).exit_code == 0);
  auto added = with(biased, {"--no-bias"});
  const auto refused = run(added);
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("saved by another run: it does not record --no-bias") != std::string::npos);
}
