#include "io/model_file.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"
#include "support/bits.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

using namespace shardopt;
using shardopt::test::temp_dir;

using shardopt::test::same_bits;

namespace {

/// True when both blocks hold the same bits (so -0.0 differs from 0.0 and NaN payloads count).
/// A softmax model over 3 features and 2 classes whose numbers are hard to print and read back.
io::saved_model awkward_model() {
  io::saved_model m;
  m.shape = {model::model_kind::softmax, 3, 2};
  m.theta.resize(8);
  m.theta << 0.1, -1.0 / 3.0, 1e-300, 1e300, -0.0, 3.141592653589793,
      std::numeric_limits<double>::max(), std::numeric_limits<double>::min();
  m.labels.kind = model::model_kind::softmax;
  m.labels.classes = {0, 1};
  m.scaling.factor = 1.0 / 255.0;
  m.scaling.mean.resize(3);
  m.scaling.mean << 0.2857142857142857, 1.0 / 7.0, 2.0 / 3.0;
  m.scaling.inv_std.resize(3);
  m.scaling.inv_std << 1.0, std::sqrt(2.0), 1e-5 / 3.0;
  m.lambda = 1e-4 / 3.0;
  return m;
}

std::string contents(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

bool begins_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

} // namespace

TEST_CASE("model_file: save then load round-trips every field bit for bit") {
  temp_dir dir;
  const auto path = dir.file("model.txt");
  const auto saved = awkward_model();
  auto written = io::save_model(path, saved);
  REQUIRE_MESSAGE(written.ok(), written.error().message());
  CHECK(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  auto loaded = io::load_model(path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->shape == saved.shape);
  CHECK(same_bits(loaded->theta, saved.theta));
  CHECK(loaded->labels.kind == saved.labels.kind);
  CHECK(loaded->labels.classes == saved.labels.classes);
  CHECK(same_bits(&loaded->scaling.factor, &saved.scaling.factor, 1));
  CHECK(same_bits(loaded->scaling.mean, saved.scaling.mean));
  CHECK(same_bits(loaded->scaling.inv_std, saved.scaling.inv_std));
  CHECK(same_bits(&loaded->lambda, &saved.lambda, 1));
}

TEST_CASE("model_file: a binary model without scaling round-trips, and saving replaces a file") {
  temp_dir dir;
  const auto path = dir.write("model.txt", "an older file\n");
  io::saved_model saved;
  saved.shape = {model::model_kind::logistic, 2, 1};
  saved.theta = Eigen::Vector3d{0.5, -0.25, 2.0};
  saved.labels.kind = model::model_kind::logistic;
  saved.labels.classes = {3, 5};
  REQUIRE(io::save_model(path, saved).ok());
  auto loaded = io::load_model(path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->shape == saved.shape);
  CHECK(loaded->theta == saved.theta);
  CHECK(loaded->labels.classes == std::vector<double>{3, 5});
  CHECK(loaded->scaling.identity());
  CHECK(loaded->lambda == 0.0);
}

TEST_CASE("model_file: an inconsistent model is refused before anything is written") {
  temp_dir dir;
  const auto path = dir.file("model.txt");
  auto bad = awkward_model();
  bad.theta.resize(7);
  auto r = io::save_model(path, bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() ==
        path + ": cannot save the model: theta has 7 entries, but the shape needs 8");
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  auto wrong_labels = awkward_model();
  wrong_labels.labels.classes = {0, 1, 2};
  auto labels = io::save_model(path, wrong_labels);
  REQUIRE_FALSE(labels.ok());
  CHECK(labels.error().message() ==
        path + ": cannot save the model: the label encoding (softmax, 3 outputs) does not match the "
               "shape (softmax, 2 outputs)");
}

TEST_CASE("model_file: missing, garbage and truncated files fail with the file's name") {
  temp_dir dir;
  SUBCASE("missing") {
    auto r = io::load_model(dir.file("absent.model"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == dir.file("absent.model") + ": no such file");
  }
  SUBCASE("garbage") {
    const auto path = dir.write("garbage.model", "hello world\nthis is not a model\n");
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": not a shardopt model file"));
  }
  SUBCASE("empty") {
    const auto path = dir.write("empty.model", "");
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": not a shardopt model file"));
  }
  SUBCASE("another Boost archive") {
    const auto path = dir.write("other.model", "22 serialization::archive 19 5 hello 1\n");
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": not a shardopt model file"));
  }
  SUBCASE("truncated in the middle") {
    const auto full = dir.file("full.model");
    REQUIRE(io::save_model(full, awkward_model()).ok());
    const auto text = contents(full);
    const auto path = dir.write("half.model", text.substr(0, text.size() / 2));
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": truncated or corrupt model file"));
  }
  SUBCASE("truncated anywhere") {
    const auto full = dir.file("full.model");
    REQUIRE(io::save_model(full, awkward_model()).ok());
    const auto text = contents(full);
    // Every cut that loses a character of content fails; only the final newline is optional.
    const auto content = text.find_last_not_of(" \n") + 1;
    const auto path = dir.file("cut.model");
    for (std::size_t size = 0; size < content; ++size) {
      CAPTURE(size);
      dir.write("cut.model", text.substr(0, size));
      auto r = io::load_model(path);
      REQUIRE_FALSE(r.ok());
      CHECK(begins_with(r.error().message(), path + ": "));
    }
  }
}

TEST_CASE("model_file: hostile small files declaring huge lengths are refused without allocating them") {
  temp_dir dir;
  const auto before = test::peak_rss_bytes();
  struct hostile {
    const char* name;
    std::string bytes;
    std::string expected;  // the message after "<path>: "
  };
  const std::vector<hostile> files{
      // Boost's own signature length: refused before Boost reads it.
      {"signature.model", "3000000000 x", "not a shardopt model file"},
      // The magic string, declared 3 GB long in a 40-byte file.
      {"magic.model", "22 serialization::archive 18 3000000000 x", "not a shardopt model file"},
      // A valid header, then theta declared with 2^40 entries (the shape allows them).
      {"theta.model", "22 serialization::archive 18 14 shardopt-model 1 0 1099511627775 1 1099511627776 0",
       "truncated or corrupt model file: theta: a size of 1099511627776, more than the 2 bytes left in the file hold"},
      // A sparse theta (format 3) of 2^40 zeros declared in a few bytes: refused before any is made.
      {"sparse.model", "22 serialization::archive 18 14 shardopt-model 3 1 1099511627775 1 0 0 1 1099511627776 0 0",
       "truncated or corrupt model file: theta: a size of 1099511627776, more than the 2147483648 parameters"},
      // A sparse theta of 2^31 zeros (the most a model may have) and nothing after it: its zeros
      // are made only once the file has read back whole, so none here (16 GB otherwise).
      {"sparse_zeros.model", "22 serialization::archive 18 14 shardopt-model 4 1 2147483647 1 0 0 1 2147483648 0 0",
       "truncated or corrupt model file (input stream error)"},
      // The same, whole to its end marker but inconsistent (a linear label encoding for a
      // logistic model): refused before its zeros are made too.
      {"sparse_inconsistent.model",
       "22 serialization::archive 18 14 shardopt-model 4 1 2147483647 1 0 0 1 2147483648 0 0 0 0 1 0 0 0 0 0  12 end-of-model",
       "corrupt model file: the label encoding (linear, 1 outputs) does not match the shape (logistic, 1 outputs)"},
      // Everything fine up to the end marker, declared 3 GB long.
      {"marker.model",
       "22 serialization::archive 18 14 shardopt-model 1 0 1 1 2 0 0 0 0 1 0 0 0 3000000000 end",
       "truncated or corrupt model file: no end marker"},
  };
  for (const auto& file : files) {
    CAPTURE(file.name);
    const auto path = dir.write(file.name, file.bytes);
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": " + file.expected));
  }
  const auto growth = test::peak_rss_bytes() - before;
  MESSAGE("peak RSS growth reading hostile model files: " << growth / 1024 << " KiB");
  CHECK(growth < test::hostile_file_memory_bound);
}

TEST_CASE("model_file: a network's architecture round-trips, and version-1 files still load") {
  temp_dir dir;
  io::saved_model net;
  net.shape = model::model_shape{model::model_kind::softmax, 4, 3, {5, 2}, model::activation::tanh};
  net.theta = Eigen::VectorXd::LinSpaced(net.shape.dimension(), -2, 3);
  net.labels.kind = model::model_kind::softmax;
  net.labels.classes = {0, 1, 2};
  net.lambda = 1e-3;
  const auto path = dir.file("net.model");
  REQUIRE(io::save_model(path, net).ok());
  auto loaded = io::load_model(path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->shape == net.shape);
  CHECK(loaded->shape.hidden == std::vector<std::int64_t>{5, 2});
  CHECK(loaded->shape.act == model::activation::tanh);
  CHECK(same_bits(loaded->theta, net.theta));
  // A file written by the previous format (no architecture): a linear model.
  const auto old = dir.write("v1.model", "22 serialization::archive 18 14 shardopt-model 1 0 2 1 3 1 2 3 0 0 1 0 0 0.5 12 end-of-model");
  auto v1 = io::load_model(old);
  REQUIRE_MESSAGE(v1.ok(), v1.error().message());
  CHECK(v1->shape == model::model_shape{model::model_kind::linear, 2, 1});
  CHECK(v1->lambda == 0.5);
}

TEST_CASE("model_file: hostile architectures are refused without allocating what they declare") {
  temp_dir dir;
  const auto before = test::peak_rss_bytes();
  const std::string head = "22 serialization::archive 18 14 shardopt-model 2 2 784 10 ";
  const std::vector<std::pair<std::string, std::string>> files{
    {"layers.model", head + "0 4000000000000 100"},        // 4e12 hidden layers declared
    {"act.model", head + "9 1 100"},                        // no such activation
    {"overflow.model", head + "0 2 4294967296 4294967296"},  // 2^64 weights between two layers
    {"zero.model", head + "0 1 0"},                         // a layer of no units
    {"future.model", "22 serialization::archive 18 14 shardopt-model 5 2 784 10 0 0"},
  };
  for (const auto& [name, bytes] : files) {
    CAPTURE(name);
    const auto path = dir.write(name, bytes);
    auto r = io::load_model(path);
    REQUIRE_FALSE(r.ok());
    CHECK(begins_with(r.error().message(), path + ": "));
    if (name == "future.model")
      CHECK(r.error().message() == path + ": model file format version 5 is not supported (this build reads "
                                          "versions 1 to 4)");
    else
      CHECK(r.error().message().find("corrupt model file: invalid") != std::string::npos);
  }
  const auto growth = test::peak_rss_bytes() - before;
  CHECK(growth < test::hostile_file_memory_bound);
}

TEST_CASE("model_file: a mostly-zero theta (an L1 model) is stored by its non-zero entries, bit for bit, and bad indices are refused") {
  temp_dir dir;
  io::saved_model m;
  m.shape = model::model_shape{model::model_kind::logistic, 10000, 1};
  m.theta = Eigen::VectorXd::Zero(m.shape.dimension());
  m.theta[3] = 0.25;
  m.theta[4] = -0.0;  // keeps its sign
  m.theta[9999] = -1.0 / 3.0;
  m.theta[10000] = 1e-300;  // the bias
  m.labels.kind = model::model_kind::logistic;
  m.labels.classes = {0, 1};
  const auto sparse_path = dir.file("sparse.model");
  REQUIRE(io::save_model(sparse_path, m).ok());
  auto loaded = io::load_model(sparse_path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(same_bits(loaded->theta, m.theta));
  auto dense_model = m;
  dense_model.theta.setConstant(0.5);
  const auto dense_path = dir.file("dense.model");
  REQUIRE(io::save_model(dense_path, dense_model).ok());
  CHECK(same_bits(io::load_model(dense_path)->theta, dense_model.theta));
  // Four non-zero entries take a few numbers, not 10,001 zeros.
  CHECK(std::filesystem::file_size(sparse_path) < 400);

  const std::string head = "22 serialization::archive 18 14 shardopt-model 3 1 3 1 0 0 1 4 ";
  const std::string tail = " 1 2 0 1 0 0 0 0 0 12 end-of-model";  // labels, scaling, lambda, l1
  const std::vector<std::pair<std::string, std::string>> files{
    {"order.model", head + "2 2 1 2 0.5 0.5" + tail},     // indices not increasing
    {"range.model", head + "1 7 1 0.5" + tail},           // an index past the end
    {"count.model", head + "2 0 1 1 0.5" + tail},         // 2 indices, 1 value
    {"size.model", "22 serialization::archive 18 14 shardopt-model 3 1 3 1 0 0 1 5 1 0 1 0.5" + tail},
    {"tag.model", "22 serialization::archive 18 14 shardopt-model 3 1 3 1 0 0 7 4" + tail},
    {"good.model", head + "1 0 1 0.5" + tail},            // the control: well formed
    {"negative.model", head + "1 0 1 0.5" + " 1 2 0 1 0 0 0 0 -1 12 end-of-model"},  // l1 -1
  };
  for (const auto& [name, bytes] : files) {
    CAPTURE(name);
    const auto path = dir.write(name, bytes);
    auto r = io::load_model(path);
    if (name == "good.model") {
      REQUIRE_MESSAGE(r.ok(), r.error().message());
      CHECK(r->theta == Eigen::Vector4d{0.5, 0, 0, 0});
      continue;
    }
    REQUIRE_FALSE(r.ok());
    if (name == "negative.model")
      CHECK(r.error().message().find("corrupt model file: the L1 weight -1") != std::string::npos);
    else
      CHECK(begins_with(r.error().message(), path + ": truncated or corrupt model file: theta: "));
  }
  // The L1 weight round-trips (eval adds its term to the objective).
  m.l1 = 1e-3;
  REQUIRE(io::save_model(sparse_path, m).ok());
  CHECK(io::load_model(sparse_path)->l1 == 1e-3);
}

TEST_CASE("a model keeps the hashing its features were made with, and a hashing that does not fit is corrupt") {
  temp_dir dir;
  io::saved_model m;
  m.shape = model::model_shape{model::model_kind::logistic, 16, 1};
  m.theta = Eigen::VectorXd::LinSpaced(17, 0, 1);
  m.labels.kind = model::model_kind::logistic;
  m.labels.classes = {0.0, 1.0};
  m.hashing.bits = 4;
  m.hashing.categorical = {"city", "a b"};
  m.hashing.text = {"notes"};
  m.hashing.word_pairs = true;
  const auto path = dir.file("hashed.model");
  REQUIRE(io::save_model(path, m).ok());
  auto back = io::load_model(path);
  REQUIRE_MESSAGE(back.ok(), back.error().message());
  CHECK(back->hashing == m.hashing);
  // The same file with 2^5 hashed columns for 16 features.
  auto text = test::slurp(path);
  const auto at = text.find("\"bits\":4");
  REQUIRE(at != std::string::npos);
  text.replace(at, 8, "\"bits\":5");
  const auto bad = dir.write("bad.model", text);
  auto r = io::load_model(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == bad + ": corrupt model file: 16 features, but its hashing makes 32");
}
