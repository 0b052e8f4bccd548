// The synthetic data generator (io/synthetic.hpp): a seed writes the same file, the LIBSVM reader
// reads it back with the asked shape, and the labels follow the planted model.

#include "io/readers.hpp"
#include "io/synthetic.hpp"

#include "support/files.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace io = shardopt::io;
namespace model = shardopt::model;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

} // namespace

TEST_CASE("generate: a seed writes the same file, another seed another one") {
  shardopt::test::temp_dir dir;
  io::synthetic_spec spec;
  spec.rows = 500;
  spec.features = 1000;
  spec.nonzeros = 12;
  REQUIRE(io::write_synthetic(spec, dir.file("a.svm")).ok());
  REQUIRE(io::write_synthetic(spec, dir.file("b.svm")).ok());
  spec.seed = 2;
  REQUIRE(io::write_synthetic(spec, dir.file("c.svm")).ok());
  CHECK(slurp(dir.file("a.svm")) == slurp(dir.file("b.svm")));
  CHECK(slurp(dir.file("a.svm")) != slurp(dir.file("c.svm")));
}

TEST_CASE("generate: the reader gets the asked rows and non-zeros, and labels follow the planted model") {
  shardopt::test::temp_dir dir;
  for (const auto kind : {model::model_kind::logistic, model::model_kind::softmax, model::model_kind::linear}) {
    INFO(model::to_string(kind));
    io::synthetic_spec spec;
    spec.kind = kind;
    spec.rows = 4000;
    spec.features = 50;
    spec.nonzeros = 20;
    spec.classes = 4;
    const auto path = dir.file(std::string{model::to_string(kind)} + ".svm");
    REQUIRE(io::write_synthetic(spec, path).ok());
    io::read_options options;
    options.features = spec.features;
    auto raw = io::read_libsvm(path, options);
    REQUIRE(raw.ok());
    const auto& x = raw->data.sparse();
    CHECK(x.rows() == spec.rows);
    CHECK(x.cols() == spec.features);
    CHECK(x.nonZeros() == spec.rows * spec.nonzeros);  // distinct indices, none dropped
    std::set<double> labels(raw->data.y.data(), raw->data.y.data() + raw->data.y.size());
    if (kind == model::model_kind::logistic)
      CHECK(labels == std::set<double>{-1.0, 1.0});
    else if (kind == model::model_kind::softmax)
      CHECK(labels == std::set<double>{0.0, 1.0, 2.0, 3.0});
    else
      CHECK(labels.size() > 3000);
  }
  // The planted model shows: a logistic regression fitted to the labels beats chance by far, which
  // random labels would not. Checked through the label/feature correlation of the strongest feature.
  io::synthetic_spec spec;
  spec.rows = 20000;
  spec.features = 5;
  spec.nonzeros = 5;
  const auto path = dir.file("dense-ish.svm");
  REQUIRE(io::write_synthetic(spec, path).ok());
  auto raw = io::read_libsvm(path, io::read_options{});
  REQUIRE(raw.ok());
  const Eigen::MatrixXd x = Eigen::MatrixXd(raw->data.sparse().cast<double>());
  const Eigen::VectorXd correlation = x.transpose() * raw->data.y / static_cast<double>(spec.rows);
  CHECK(correlation.cwiseAbs().maxCoeff() > 0.1);  // |E[y x_j]| for random labels: about 0.003
}

TEST_CASE("generate: bad specifications are refused by option name, nothing written") {
  shardopt::test::temp_dir dir;
  io::synthetic_spec spec;
  spec.nonzeros = 0;
  auto bad = io::write_synthetic(spec, dir.file("x.svm"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("--nonzeros") != std::string::npos);
  spec = io::synthetic_spec{};
  spec.kind = model::model_kind::svm;
  CHECK(io::check_synthetic(spec).find("--model") != std::string::npos);
  spec = io::synthetic_spec{};
  spec.kind = model::model_kind::softmax;
  spec.classes = 1;
  CHECK(io::check_synthetic(spec).find("--classes") != std::string::npos);
  spec = io::synthetic_spec{};
  spec.features = 10;
  spec.nonzeros = 11;
  CHECK(io::check_synthetic(spec).find("--nonzeros") != std::string::npos);
  CHECK_FALSE(std::ifstream{dir.file("x.svm")}.good());
}
