#include "io/labels.hpp"
#include "io/partition.hpp"
#include "io/scaling.hpp"

#include "support/files.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace shardopt;
using model::model_kind;

namespace {

/// A text-format dataset "t.csv" whose examples sit on lines 2, 3, ... (one header line).
io::raw_dataset text_labels(std::initializer_list<double> labels) {
  io::raw_dataset d;
  d.source = "t.csv";
  d.data.y = test::vector_of(labels);
  d.data.x = model::dense_features::Zero(d.data.y.size(), 1);
  for (Eigen::Index i = 0; i < d.data.y.size(); ++i)
    d.lines.push_back(i + 2);
  return d;
}

/// An IDX-style dataset (no line numbers) with the given labels.
io::raw_dataset record_labels(std::initializer_list<double> labels) {
  io::raw_dataset d;
  d.source = "labels.gz";
  d.data.y = test::vector_of(labels);
  d.data.x = model::dense_features::Zero(d.data.y.size(), 1);
  return d;
}

io::raw_dataset dense_data(const model::dense_features& x, bool pixels = false) {
  io::raw_dataset d;
  d.source = "x.csv";
  d.data.x = x;
  d.data.y = Eigen::VectorXd::Zero(x.rows());
  d.pixels = pixels;
  return d;
}


} // namespace

TEST_CASE("labels: linear keeps raw targets") {
  auto data = text_labels({0.5, -2, 7});
  auto enc = io::fit_labels(model_kind::linear, data);
  REQUIRE_MESSAGE(enc.ok(), enc.error().message());
  CHECK(enc->classes.empty());
  CHECK(enc->outputs() == 1);
  REQUIRE(io::encode_labels(*enc, data).ok());
  CHECK(data.data.y == test::vector_of({0.5, -2, 7}));
}

TEST_CASE("labels: logistic maps the smaller value to -1 and the larger to +1") {
  auto train = text_labels({5, 3, 5, 3});
  auto enc = io::fit_labels(model_kind::logistic, train);
  REQUIRE_MESSAGE(enc.ok(), enc.error().message());
  CHECK(enc->kind == model_kind::logistic);
  CHECK(enc->classes == std::vector<double>{3, 5});
  CHECK(enc->outputs() == 1);
  REQUIRE(io::encode_labels(*enc, train).ok());
  CHECK(train.data.y == test::vector_of({1, -1, 1, -1}));

  auto test = text_labels({3, 4});
  auto bad = io::encode_labels(*enc, test);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "t.csv:3: label 4 is not one of the two training labels (3 and 5)");
  CHECK(test.data.y == test::vector_of({3, 4})); // untouched by the failed encoding
}

TEST_CASE("labels: logistic rejects a third value and a single class, naming the example") {
  auto three = text_labels({0, 1, 1, 2.5});
  auto r = io::fit_labels(model_kind::logistic, three);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "t.csv:5: label 2.5 is a third class; a logistic model needs exactly "
                               "two label values (already seen 0 and 1)");

  auto one = text_labels({1, 1, 1});
  auto single = io::fit_labels(model_kind::logistic, one);
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().message() == "t.csv: every label is 1; a logistic model needs two classes");

  auto many = io::fit_labels(model_kind::logistic, text_labels({0, 1}), 3);
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().message() == "a logistic model has two classes, not 3 (use softmax or svm)");
}

TEST_CASE("labels: softmax takes K from the largest label or from `classes`") {
  auto train = record_labels({0, 2, 1, 2});
  auto enc = io::fit_labels(model_kind::softmax, train);
  REQUIRE_MESSAGE(enc.ok(), enc.error().message());
  CHECK(enc->classes == std::vector<double>{0, 1, 2});
  CHECK(enc->outputs() == 3);
  REQUIRE(io::encode_labels(*enc, train).ok());
  CHECK(train.data.y == test::vector_of({0, 2, 1, 2}));

  auto test = record_labels({1, 7});
  auto bad = io::encode_labels(*enc, test);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "labels.gz: record 1: label 7 out of range (the model knows 0..2)");

  auto ten = io::fit_labels(model_kind::softmax, record_labels({0, 1, 1}), 10);
  REQUIRE_MESSAGE(ten.ok(), ten.error().message());
  CHECK(ten->outputs() == 10);
  auto nine = record_labels({9});
  CHECK(io::encode_labels(*ten, nine).ok());
  auto out = record_labels({10});
  auto out_of_range = io::encode_labels(*ten, out);
  REQUIRE_FALSE(out_of_range.ok());
  CHECK(out_of_range.error().message() ==
        "labels.gz: record 0: label 10 out of range (the model knows 0..9)");
}

TEST_CASE("labels: softmax rejects labels that are not class indices") {
  auto r = io::fit_labels(model_kind::softmax, text_labels({0, 1, 1.5}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "t.csv:4: label 1.5 is not a class index (softmax labels must be the "
                               "integers 0, 1, 2, ...)");
  auto negative = io::fit_labels(model_kind::softmax, text_labels({-1, 0}));
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message().rfind("t.csv:2: label -1 is not a class index", 0) == 0);
  auto fixed = io::fit_labels(model_kind::softmax, text_labels({0, 3}), 3);
  REQUIRE_FALSE(fixed.ok());
  CHECK(fixed.error().message() == "t.csv:3: label 3 out of range (3 classes allow 0..2)");
  auto single = io::fit_labels(model_kind::softmax, text_labels({0, 0}));
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().message() == "t.csv: every label is 0; a softmax model needs at least two classes");
}

TEST_CASE("labels: svm is binary with two values and one-vs-rest with more") {
  auto binary = text_labels({-1, 1, 1});
  auto enc = io::fit_labels(model_kind::svm, binary);
  REQUIRE_MESSAGE(enc.ok(), enc.error().message());
  CHECK(enc->classes == std::vector<double>{-1, 1});
  CHECK(enc->outputs() == 1);
  REQUIRE(io::encode_labels(*enc, binary).ok());
  CHECK(binary.data.y == test::vector_of({-1, 1, 1}));

  auto multi = io::fit_labels(model_kind::svm, text_labels({0, 1, 2, 1}));
  REQUIRE_MESSAGE(multi.ok(), multi.error().message());
  CHECK(multi->classes == std::vector<double>{0, 1, 2});
  CHECK(multi->outputs() == 3);

  auto four = io::fit_labels(model_kind::svm, text_labels({0, 1}), 4);
  REQUIRE_MESSAGE(four.ok(), four.error().message());
  CHECK(four->outputs() == 4);

  auto fractional = io::fit_labels(model_kind::svm, text_labels({0, 1, 2.5}));
  REQUIRE_FALSE(fractional.ok());
  CHECK(fractional.error().message().rfind("t.csv:4: label 2.5 is not a class index", 0) == 0);
}

TEST_CASE("scaling: automatic scales pixels by 1/255 and leaves other data alone") {
  auto pixels = dense_data(test::dense_rows({{0, 51, 255}}), true);
  const auto scaling = *io::fit_scaling(pixels, io::scale_mode::automatic, false);
  CHECK(scaling.factor == 1.0 / 255.0);
  CHECK(scaling.mean.size() == 0);
  CHECK(scaling.inv_std.size() == 0);
  CHECK_FALSE(scaling.identity());
  REQUIRE(io::apply_scaling(scaling, pixels).ok());
  CHECK(pixels.data.dense()(0, 0) == 0.0f);
  CHECK(pixels.data.dense()(0, 1) == 0.2f);
  CHECK(pixels.data.dense()(0, 2) == 1.0f);

  CHECK(io::fit_scaling(dense_data(test::dense_rows({{255}}), true), io::scale_mode::none, false)->identity());
  CHECK(io::fit_scaling(dense_data(test::dense_rows({{255}}), false), io::scale_mode::automatic, false)->identity());
}

TEST_CASE("scaling: dense standardisation uses training statistics, computed by hand") {
  // Columns: 1,3,5 (mean 3, variance 8/3); constant 10; 5,5,7 (mean 17/3, variance 8/9).
  auto train = dense_data(test::dense_rows({{1, 10, 5}, {3, 10, 5}, {5, 10, 7}}));
  const auto s = *io::fit_scaling(train, io::scale_mode::automatic, true);
  CHECK(s.factor == 1.0);
  REQUIRE(s.mean.size() == 3);
  REQUIRE(s.inv_std.size() == 3);
  CHECK(s.mean(0) == doctest::Approx(3.0).epsilon(1e-15));
  CHECK(s.mean(1) == doctest::Approx(10.0).epsilon(1e-15));
  CHECK(s.mean(2) == doctest::Approx(17.0 / 3.0).epsilon(1e-15));
  CHECK(s.inv_std(0) == doctest::Approx(std::sqrt(3.0 / 8.0)).epsilon(1e-14));
  CHECK(s.inv_std(1) == 1.0);
  CHECK(s.inv_std(2) == doctest::Approx(3.0 / std::sqrt(8.0)).epsilon(1e-14));

  REQUIRE(io::apply_scaling(s, train).ok());
  const auto& x = train.data.dense();
  CHECK(x(0, 0) == doctest::Approx(-2 * std::sqrt(3.0 / 8.0)).epsilon(1e-6));
  CHECK(x(1, 0) == doctest::Approx(0.0).epsilon(1e-6));
  CHECK(x(2, 1) == 0.0f);
  CHECK(x(2, 2) == doctest::Approx(4.0 / 3.0 * 3.0 / std::sqrt(8.0)).epsilon(1e-6));

  // The test set is scaled with the training mean and deviation, not its own.
  auto test = dense_data(test::dense_rows({{7, 12, 5}}));
  REQUIRE(io::apply_scaling(s, test).ok());
  CHECK(test.data.dense()(0, 0) == doctest::Approx(4 * std::sqrt(3.0 / 8.0)).epsilon(1e-6));
  CHECK(test.data.dense()(0, 1) == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(test.data.dense()(0, 2) == doctest::Approx(-2.0 / 3.0 * 3.0 / std::sqrt(8.0)).epsilon(1e-6));

  auto narrow = dense_data(test::dense_rows({{1, 2}}));
  auto mismatch = io::apply_scaling(s, narrow);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().message() == "x.csv has 2 features, but the scaling was fitted on 3");
}

TEST_CASE("scaling: standardising pixels takes statistics after the 1/255 factor") {
  auto train = dense_data(test::dense_rows({{0, 255}, {255, 255}}), true);
  const auto s = *io::fit_scaling(train, io::scale_mode::automatic, true);
  CHECK(s.factor == 1.0 / 255.0);
  CHECK(s.mean(0) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(s.inv_std(0) == doctest::Approx(2.0).epsilon(1e-14));
  CHECK(s.mean(1) == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(s.inv_std(1) == 1.0);
  REQUIRE(io::apply_scaling(s, train).ok());
  CHECK(train.data.dense()(0, 0) == doctest::Approx(-1.0).epsilon(1e-6));
  CHECK(train.data.dense()(1, 0) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("scaling: sparse data is divided by a deviation over all rows, never centred") {
  // 4 x 4: column 0 holds 2, 4, 0, 0 (mean 1.5, variance 11/4); column 1 is empty; column 2 holds
  // 0, 1, 1, 0 (mean 0.5, variance 1/4); column 3 is 3 in every row (constant).
  model::sparse_features x(4, 4);
  x.insert(0, 0) = 2;
  x.insert(0, 3) = 3;
  x.insert(1, 0) = 4;
  x.insert(1, 2) = 1;
  x.insert(1, 3) = 3;
  x.insert(2, 2) = 1;
  x.insert(2, 3) = 3;
  x.insert(3, 3) = 3;
  x.makeCompressed();
  io::raw_dataset train;
  train.source = "x.svm";
  train.data.x = x;
  train.data.y = Eigen::VectorXd::Zero(4);
  const auto s = *io::fit_scaling(train, io::scale_mode::automatic, true);
  CHECK(s.mean.size() == 0);
  REQUIRE(s.inv_std.size() == 4);
  CHECK(s.inv_std(0) == doctest::Approx(1.0 / std::sqrt(2.75)).epsilon(1e-14));
  CHECK(s.inv_std(1) == 1.0);
  CHECK(s.inv_std(2) == doctest::Approx(2.0).epsilon(1e-14));
  CHECK(s.inv_std(3) == 1.0);
  REQUIRE(io::apply_scaling(s, train).ok());
  const auto& y = train.data.sparse();
  CHECK(y.nonZeros() == 8);
  CHECK(y.coeff(1, 0) == doctest::Approx(4.0 / std::sqrt(2.75)).epsilon(1e-6));
  CHECK(y.coeff(1, 2) == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(y.coeff(2, 3) == 3.0f);
  CHECK(y.coeff(3, 0) == 0.0f);
}

TEST_CASE("partition_rows: balanced contiguous shards, larger first") {
  CHECK(io::partition_rows(10, 3) ==
        std::vector<model::row_range>{{0, 4}, {4, 7}, {7, 10}});
  CHECK(io::partition_rows(5, 5) ==
        std::vector<model::row_range>{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}});
  CHECK(io::partition_rows(7, 1) == std::vector<model::row_range>{{0, 7}});
  CHECK(io::partition_rows(60000, 7).front().size() == 8572);
  CHECK(io::partition_rows(60000, 7).back().size() == 8571);
  CHECK(io::partition_rows(3, 0).empty());

  for (std::int64_t n = 1; n <= 40; ++n)
    for (std::int64_t k = 1; k <= n; ++k) {
      CAPTURE(n);
      CAPTURE(k);
      const auto shards = io::partition_rows(n, k);
      REQUIRE(static_cast<std::int64_t>(shards.size()) == k);
      std::int64_t next = 0;
      for (std::size_t s = 0; s < shards.size(); ++s) {
        CHECK(shards[s].begin == next);
        CHECK(shards[s].size() >= n / k);
        CHECK(shards[s].size() <= n / k + 1);
        if (s > 0)
          CHECK(shards[s].size() <= shards[s - 1].size());
        next = shards[s].end;
      }
      CHECK(next == n);
    }
}
