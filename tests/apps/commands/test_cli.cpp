// End-to-end tests of the `shardopt` executable: real data, references computed here independently,
// and every malformed input ending in a clear error and exit code 1 — never a crash.

#include "io/model_file.hpp"
#include "support/datasets.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <Eigen/Dense>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {


/// Reads a numeric CSV whose first line is a header, the label in the last column (the layout of
/// scikit-learn's bundled datasets), with features rounded to float as shardopt stores them.
void read_sklearn_csv(const std::string& path, Eigen::MatrixXd& x, Eigen::VectorXd& y,
                      int label_column) {
  std::ifstream in{path};
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::vector<double> fields;
    std::stringstream s{line};
    std::string field;
    while (std::getline(s, field, ','))
      fields.push_back(std::stod(field));
    rows.push_back(fields);
  }
  const auto n = static_cast<Eigen::Index>(rows.size());
  const auto columns = static_cast<int>(rows.front().size());
  const int label = label_column < 0 ? columns + label_column : label_column;
  x.resize(n, columns - 1);
  y.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    int j = 0;
    for (int c = 0; c < columns; ++c) {
      if (c == label)
        y[i] = rows[i][c];
      else
        x(i, j++) = static_cast<double>(static_cast<float>(rows[i][c]));
    }
  }
}

} // namespace

TEST_CASE("train on a 2,000-image subset of Fashion-MNIST reaches 75% test accuracy and eval agrees") {
  require_fashion_mnist();
  temp_dir dir;
  const auto model_path = (dir / "model.bin").string();
  const auto metrics_path = (dir / "run.jsonl").string();
  const auto summary = run_json({"train", "--model", "softmax", "--data", "fashion-mnist", "--limit",
                                 "2000", "--test-limit", "2000", "--lambda", "1e-3", "--shards",
                                 "3", "--max-iter", "3000", "--epsilon", "1e-6", "--json", "--quiet",
                                 "--save", model_path, "--metrics", metrics_path});
  INFO(summary.dump());
  CHECK(summary["test_accuracy"].get<double>() >= 0.75);
  CHECK(summary["train_accuracy"].get<double>() >= summary["test_accuracy"].get<double>());
  CHECK(summary["stop_reason"] == "converged");
  CHECK(summary["grad_norm"].get<double>() <= 1e-6);
  CHECK(summary["shards"] == 3);
  CHECK(summary["examples"] == 2000);
  CHECK(summary["dimension"] == 784 * 10 + 10);
  for (const char* key : {"objective", "grad_norm_inf", "iterations", "evaluations", "seconds"})
    CHECK(summary.contains(key));

  // One metrics line per iteration, the last one at the final objective.
  std::ifstream metrics{metrics_path};
  std::string line;
  json last;
  int lines = 0;
  while (std::getline(metrics, line)) {
    last = json::parse(line);
    ++lines;
    CHECK(last["iteration"] == lines);
  }
  CHECK(lines == summary["iterations"].get<int>());
  CHECK(last["objective"].get<double>() == summary["objective"].get<double>());

  // eval on the same test images reproduces the accuracy from the saved model.
  const auto evaluated = run_json({"eval", "--model-file", model_path, "--data", "fashion-mnist",
                                   "--limit", "2000", "--json"});
  CHECK(evaluated["accuracy"].get<double>() == summary["test_accuracy"].get<double>());
  CHECK(evaluated["examples"] == 2000);
}

TEST_CASE("the optimum does not depend on the number of shards") {
  require_fashion_mnist();
  auto objective = [](const std::string& shards) {
    return run_json({"train", "--data", "fashion-mnist", "--limit", "1000", "--test-limit", "10",
                     "--lambda", "1e-2", "--shards", shards, "--epsilon", "1e-8", "--json",
                     "--quiet"})["objective"]
      .get<double>();
  };
  const double one = objective("1");
  const double five = objective("5");
  CHECK(std::abs(one - five) <= 1e-10 * std::abs(one));
}

TEST_CASE("logistic regression on breast_cancer.csv matches an independent Newton solution") {
  const auto path = require_sklearn_csv("breast_cancer.csv");
  const double lambda = 1e-2;
  const auto summary = run_json({"train", "--model", "logistic", "--data", path, "--label-column",
                                 "-1", "--standardize", "--lambda", "1e-2", "--shards", "4",
                                 "--epsilon", "1e-10", "--json", "--quiet"});
  // Reference: standardise (population statistics, then float storage as shardopt does), then
  // Newton's method on f(w, b) = mean log(1 + exp(-t z)) + lambda/2 ||w||^2.
  Eigen::MatrixXd x;
  Eigen::VectorXd labels;
  read_sklearn_csv(path, x, labels, -1);
  const auto n = x.rows();
  const auto d = x.cols();
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::RowVectorXd sd =
    ((x.rowwise() - mean).array().square().colwise().sum() / static_cast<double>(n)).sqrt();
  Eigen::MatrixXd a(n, d + 1);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j)
      a(i, j) = static_cast<float>((x(i, j) - mean[j]) * (1.0 / sd[j]));
  a.col(d).setOnes();
  const Eigen::VectorXd t = (labels.array() > 0.5).select(Eigen::VectorXd::Ones(n), -1.0);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(d + 1);
  Eigen::VectorXd reg = Eigen::VectorXd::Constant(d + 1, lambda);
  reg[d] = 0;
  double f = 0;
  for (int iteration = 0; iteration < 50; ++iteration) {
    const Eigen::ArrayXd margin = t.array() * (a * theta).array();
    const Eigen::ArrayXd p = 1.0 / (1.0 + margin.exp());  // sigma(-margin)
    f = (-margin).exp().log1p().mean() + 0.5 * lambda * theta.head(d).squaredNorm();
    const Eigen::VectorXd grad = a.transpose() * (-(t.array() * p)).matrix() / n
                                 + reg.cwiseProduct(theta);
    Eigen::MatrixXd hessian =
      a.transpose() * (p * (1 - p)).matrix().asDiagonal() * a / static_cast<double>(n);
    hessian.diagonal() += reg;
    theta -= hessian.ldlt().solve(grad);
  }
  INFO(summary.dump());
  CHECK(summary["objective"].get<double>() == doctest::Approx(f).epsilon(1e-7));
  CHECK(summary["train_accuracy"].get<double>() > 0.95);
}

TEST_CASE("least squares on wine_data.csv (alcohol from the rest) matches the normal equations") {
  const auto path = require_sklearn_csv("wine_data.csv");
  const double lambda = 0.1;
  const auto summary =
    run_json({"train", "--model", "linear", "--data", path, "--label-column", "0", "--lambda",
              "0.1", "--shards", "3", "--epsilon", "1e-9", "--max-iter", "20000", "--json",
              "--quiet"});
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
  read_sklearn_csv(path, x, y, 0);
  const auto n = x.rows();
  const auto d = x.cols();
  Eigen::MatrixXd a(n, d + 1);
  a.leftCols(d) = x;
  a.col(d).setOnes();
  Eigen::MatrixXd h = a.transpose() * a / static_cast<double>(n);
  h.diagonal().head(d).array() += lambda;
  const Eigen::VectorXd theta = h.ldlt().solve(a.transpose() * y / static_cast<double>(n));
  const double f = 0.5 * (a * theta - y).squaredNorm() / static_cast<double>(n)
                   + 0.5 * lambda * theta.head(d).squaredNorm();
  INFO(summary.dump());
  CHECK(summary["objective"].get<double>() == doctest::Approx(f).epsilon(1e-8));
  CHECK(summary.contains("train_rmse"));
}

TEST_CASE("bounds: L-BFGS-B keeps every saved weight inside [--lower, --upper], and the box binds") {
  const auto path = require_sklearn_csv("iris.csv");
  temp_dir dir;
  const auto bounded = run_json({"train", "--model", "softmax", "--data", path, "--label-column",
                                 "-1", "--lambda", "1e-4", "--lower", "-0.5", "--upper", "0.5",
                                 "--json", "--quiet", "--save", (dir / "m.bin").string()});
  const auto free = run_json({"train", "--model", "softmax", "--data", path, "--label-column", "-1",
                              "--lambda", "1e-4", "--json", "--quiet", "--save", (dir / "free.bin").string()});
  CHECK(bounded["stop_reason"] != "evaluation_failed");
  // The saved weights lie inside the box, and the box binds: some weight sits on a bound, while the
  // free optimum leaves it (so the bounds changed the answer, and for the worse).
  auto saved = shardopt::io::load_model((dir / "m.bin").string());
  REQUIRE_MESSAGE(saved.ok(), saved.error().message());
  const auto& theta = saved->theta;
  REQUIRE(theta.size() == 3 * (4 + 1));
  CHECK(theta.minCoeff() >= -0.5);
  CHECK(theta.maxCoeff() <= 0.5);
  CHECK(theta.cwiseAbs().maxCoeff() == 0.5);
  auto unbounded = shardopt::io::load_model((dir / "free.bin").string());
  REQUIRE(unbounded.ok());
  CHECK(unbounded->theta.cwiseAbs().maxCoeff() > 0.5);
  CHECK(bounded["objective"].get<double>() > free["objective"].get<double>());
}

namespace {

/// Runs shardopt expecting failure: exit code 1, no signal, and a message with every `needles`.
void expect_error(std::vector<std::string> args, const std::vector<std::string>& needles) {
  args.insert(args.begin(), shardopt_binary());
  const auto result = run(args, std::chrono::seconds{60});
  INFO("stderr: " << result.err);
  CHECK_FALSE(result.signaled);
  CHECK_FALSE(result.timed_out);
  CHECK(result.exit_code == 1);
  CHECK(result.err.rfind("shardopt: error: ", 0) == 0);
  for (const auto& needle : needles)
    CHECK_MESSAGE(result.err.find(needle) != std::string::npos, "missing '" << needle << "'");
}

void write_idx_images(const std::filesystem::path& path, std::uint32_t magic, std::uint32_t count,
                      std::size_t payload) {
  std::ofstream out{path, std::ios::binary};
  auto be32 = [&](std::uint32_t v) {
    const unsigned char bytes[4] = {static_cast<unsigned char>(v >> 24),
                                    static_cast<unsigned char>(v >> 16),
                                    static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
    out.write(reinterpret_cast<const char*>(bytes), 4);
  };
  be32(magic);
  be32(count);
  be32(2);
  be32(2);
  out << std::string(payload, '\x07');
}

void write_idx_labels(const std::filesystem::path& path, std::uint32_t count) {
  std::ofstream out{path, std::ios::binary};
  const unsigned char header[8] = {0, 0, 8, 1, 0, 0, 0, static_cast<unsigned char>(count)};
  out.write(reinterpret_cast<const char*>(header), 8);
  out << std::string(count, '\x01');
}

} // namespace

TEST_CASE("malformed input gives a clear error and exit code 1, never a crash") {
  temp_dir dir;
  const auto p = [&](const std::string& name) { return (dir / name).string(); };
  write_file(dir / "good.csv", "0,1.5,2\n1,0.5,1\n2,3,4\n");

  SUBCASE("ragged CSV row") {
    write_file(dir / "ragged.csv", "0,1,2\n1,2\n");
    expect_error({"train", "--data", p("ragged.csv")}, {"ragged.csv:2", "expected 3 fields, got 2"});
  }
  SUBCASE("non-numeric CSV field") {
    write_file(dir / "text.csv", "0,1,2\n1,abc,2\n");
    expect_error({"train", "--data", p("text.csv")}, {"text.csv:2", "abc"});
  }
  SUBCASE("LIBSVM index 0") {
    write_file(dir / "zero.svm", "1 1:0.5 2:1\n0 0:1 3:2\n");
    expect_error({"train", "--model", "logistic", "--data", p("zero.svm")}, {"zero.svm:2", "index 0"});
  }
  SUBCASE("LIBSVM indices out of order") {
    write_file(dir / "order.svm", "1 1:0.5 2:1\n0 7:1 5:2\n");
    expect_error({"train", "--model", "logistic", "--data", p("order.svm")}, {"order.svm:2"});
  }
  SUBCASE("softmax label out of range in the test set") {
    write_file(dir / "test.csv", "0,1,1\n7,2,2\n");
    expect_error({"train", "--data", p("good.csv"), "--test", p("test.csv")},
                 {"test.csv:2", "out of range"});
  }
  SUBCASE("dimension mismatch between train and test") {
    write_file(dir / "narrow.csv", "0,1\n1,2\n");
    expect_error({"train", "--data", p("good.csv"), "--test", p("narrow.csv")},
                 {"dimension mismatch", "good.csv", "narrow.csv"});
  }
  SUBCASE("IDX with a bad magic number") {
    std::filesystem::create_directory(dir / "mnist");
    write_idx_images(dir / "mnist" / "train-images-idx3-ubyte", 0x0803 + 1, 3, 12);
    write_idx_labels(dir / "mnist" / "train-labels-idx1-ubyte", 3);
    expect_error({"train", "--data", p("mnist")}, {"train-images-idx3-ubyte", "magic"});
  }
  SUBCASE("truncated IDX images") {
    std::filesystem::create_directory(dir / "short");
    write_idx_images(dir / "short" / "train-images-idx3-ubyte", 0x0803, 3, 7);
    write_idx_labels(dir / "short" / "train-labels-idx1-ubyte", 3);
    expect_error({"train", "--data", p("short")}, {"train-images-idx3-ubyte", "truncated"});
  }
  SUBCASE("missing file") {
    expect_error({"train", "--data", p("nothing.csv")}, {"nothing.csv"});
  }
  SUBCASE("unknown model") {
    expect_error({"train", "--model", "forest", "--data", p("good.csv")}, {"forest"});
  }
  SUBCASE("logistic regression with three classes") {
    expect_error({"train", "--model", "logistic", "--data", p("good.csv")}, {"good.csv:3"});
  }
  SUBCASE("node limits that are not positive") {
    expect_error({"node", "--port", "0", "--max-shards", "0"}, {"node limits must be positive"});
    expect_error({"node", "--port", "0", "--staging-timeout", "0"}, {"--staging-timeout", "(0, 86400]"});
  }
  SUBCASE("a model file that is not one") {
    write_file(dir / "junk.bin", "definitely not a model");
    expect_error({"eval", "--model-file", p("junk.bin"), "--data", p("good.csv")}, {"junk.bin"});
  }
}

TEST_CASE("output paths (--save, --metrics, --checkpoint-dir) are checked before any work, in both modes") {
  shardopt::test::require_fashion_mnist();
  temp_dir dir;
  const auto file = dir.file("a-file");
  { std::ofstream{file} << "x"; }
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
    {{"--save", dir.file("no-such-folder/m.model")}, "--save: " + dir.file("no-such-folder/m.model") + ": the folder "},
    {{"--save", dir.path().string()}, "is a folder, not a file"},
    {{"--metrics", dir.file("no-such-folder/m.jsonl")}, "--metrics: "},
    {{"--checkpoint-dir", file + "/checkpoints"}, "--checkpoint-dir: " + file + "/checkpoints: " + file + " is not a folder"},
  };
  for (const auto* mode : {"lbfgs", "ps"})
    for (const auto& [extra, message] : cases) {
      CAPTURE(mode);
      CAPTURE(message);
      std::vector<std::string> args{shardopt_binary(), "train", "--mode", mode, "--data", "fashion-mnist", "--limit",
                                    "3000", "--max-iter", "50", "--last-step", "200"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto result = run(args, 60s);
      INFO(result.err);
      CHECK(result.exit_code == 1);
      CHECK(result.err.find(message) != std::string::npos);
      CHECK(result.err.find("iter ") == std::string::npos);  // refused before training
      CHECK(result.err.find("step ") == std::string::npos);
    }
}

TEST_CASE("eval --predictions, convert -o and generate -o are checked before any work") {
  temp_dir dir;
  // Bad data and a missing model: without the check first, their errors would come first.
  const auto bad = dir.write("bad.csv", "0,1\n1,x\n");
  const auto missing = dir.file("missing.model");
  const auto nowhere = [&](const std::string& name) { return dir.file("no-such-folder/" + name); };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
    {{"convert", "--data", bad, "-o", nowhere("x.shoptbin")}, "-o: " + nowhere("x.shoptbin") + ": the folder "},
    {{"convert", "--data", bad, "-o", dir.path().string()}, "-o: " + dir.path().string() + " is a folder, not a file"},
    {{"eval", "--model-file", missing, "--data", bad, "--predictions", nowhere("p.csv")},
     "--predictions: " + nowhere("p.csv") + ": the folder "},
    {{"generate", "-o", nowhere("g.svm"), "--rows", "100", "--features", "10"}, "-o: " + nowhere("g.svm") + ": the folder "},
  };
  for (const auto& [args, message] : cases) {
    CAPTURE(message);
    std::vector<std::string> command{shardopt_binary()};
    command.insert(command.end(), args.begin(), args.end());
    const auto result = run(command, 60s);
    INFO(result.err);
    CHECK(result.exit_code == 1);
    CHECK(result.err.find(message) != std::string::npos);
    CHECK(result.err.find("bad.csv:2") == std::string::npos);
    CHECK(result.err.find("missing.model") == std::string::npos);
  }
  // generate's --nonzeros default (40) gives way to fewer --features; given, it is checked.
  const auto few = run({shardopt_binary(), "generate", "-o", dir.file("few.svm"), "--rows", "50", "--features", "10"});
  INFO(few.err);
  CHECK(few.exit_code == 0);
  CHECK(few.err.find("10 non-zeros a row") != std::string::npos);
  const auto many = run({shardopt_binary(), "generate", "-o", dir.file("many.svm"), "--rows", "50", "--features", "10",
                         "--nonzeros", "11"});
  CHECK(many.exit_code == 1);
  CHECK(many.err.find("--nonzeros must be between 1 and min(--features, 10^6)") != std::string::npos);
}

TEST_CASE("svm: two label values (any two) train one binary model, more are classes 0..K-1, as docs/data.md says") {
  temp_dir dir;
  const auto csv = [&](const std::string& name, const std::vector<int>& labels) {
    std::ostringstream text;
    for (std::size_t i = 0; i < 60; ++i)
      text << labels[i % labels.size()] << "," << (i % labels.size()) * 1.0 + 0.1 * static_cast<double>(i % 7) << ","
           << static_cast<double>(i % 5) << "\n";
    const auto path = dir.file(name);
    std::ofstream{path} << text.str();
    return path;
  };
  const auto outputs = [&](const std::string& path) {
    const auto result = run({shardopt_binary(), "train", "--model", "svm", "--data", path, "--max-iter", "20", "--json",
                             "--quiet"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return json::parse(result.out)["outputs"].get<int>();
  };
  CHECK(outputs(csv("zero-five.csv", {0, 5})) == 1);
  CHECK(outputs(csv("signs.csv", {-1, 1})) == 1);
  CHECK(outputs(csv("three.csv", {0, 1, 2})) == 3);
  // What docs/data.md says (it said svm had the largest label + 1 classes, as softmax has).
  std::ifstream doc{std::string{SHARDOPT_SOURCE_DIR} + "/docs/data.md"};
  std::ostringstream text;
  text << doc.rdbuf();
  std::string said = text.str();
  for (auto& c : said)
    c = c == '\n' ? ' ' : c;
  CHECK(said.find("svm with exactly two label values (any two: {0, 5}, {-1, 1}) trains one binary model")
        != std::string::npos);
  CHECK(said.find("with more than two it is multiclass like softmax (labels 0..K-1)") != std::string::npos);
}
