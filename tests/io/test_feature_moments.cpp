// Exact per-feature moments: the same bits however the rows are split, statistics against a
// careful reference, and the refusals that keep merging free of overflow.

#include "io/feature_moments.hpp"
#include "support/bits.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <variant>
#include <vector>

namespace io = shardopt::io;
namespace model = shardopt::model;
using shardopt::test::same_bits;

namespace {

/// `rows` x 6 values with awkward spreads: a large offset with small noise, values across 2^-60 to
/// 2^60, negatives, a constant and a column of zeros.
model::dataset awkward(std::mt19937_64& rng, Eigen::Index rows) {
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent{-60, 60};
  model::dense_features x(rows, 6);
  for (Eigen::Index i = 0; i < rows; ++i) {
    x(i, 0) = 1e6f + normal(rng);
    x(i, 1) = std::ldexp(normal(rng), exponent(rng));
    x(i, 2) = -std::fabs(normal(rng)) * 3;
    x(i, 3) = 7;
    x(i, 4) = 0;
    x(i, 5) = normal(rng) * 1e-30f;
  }
  model::dataset data;
  data.x = x;
  data.y = Eigen::VectorXd::Zero(rows);
  return data;
}

model::dataset rows_of(const model::dataset& data, Eigen::Index begin, Eigen::Index end) {
  model::dataset out;
  if (data.is_sparse()) {
    out.x = model::sparse_features(data.sparse().middleRows(begin, end - begin));
  } else {
    out.x = model::dense_features(data.dense().middleRows(begin, end - begin));
  }
  out.y = data.y.segment(begin, end - begin);
  return out;
}

model::dataset sparse_of(const model::dataset& dense) {
  model::dataset out;
  model::sparse_features x = dense.dense().sparseView();
  x.makeCompressed();
  out.x = x;
  out.y = dense.y;
  return out;
}

} // namespace

TEST_CASE("moments merged from any split of the rows equal the whole's, and so do the statistics") {
  std::mt19937_64 rng{5};
  for (const bool sparse : {false, true}) {
    INFO((sparse ? "sparse" : "dense"));
    auto whole = awkward(rng, 997);
    if (sparse)
      whole = sparse_of(whole);
    const auto bounds = io::bounds_of(whole);
    const auto grid = io::grid_for(bounds, 1.0 / 255.0);
    auto reference = io::moments_of(whole, grid, "whole");
    REQUIRE(reference.ok());
    const auto expected = io::statistics_of(whole.rows(), grid, *reference);
    for (int trial = 0; trial < 20; ++trial) {
      // Random cut points, parts merged in a random order.
      std::vector<Eigen::Index> cuts{0, whole.rows()};
      for (int k = 0; k < trial % 7; ++k)
        cuts.push_back(std::uniform_int_distribution<Eigen::Index>{1, whole.rows() - 1}(rng));
      std::sort(cuts.begin(), cuts.end());
      std::vector<model::dataset> parts;
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
        parts.push_back(rows_of(whole, cuts[k], cuts[k + 1]));
      std::shuffle(parts.begin(), parts.end(), rng);
      io::feature_bounds merged_bounds;
      io::feature_moments merged;
      for (const auto& part : parts) {
        io::merge_into(merged_bounds, io::bounds_of(part));
        auto moments = io::moments_of(part, grid, "part");
        REQUIRE(moments.ok());
        REQUIRE(io::check_moments(*moments, part.rows(), part.cols()).ok());
        io::merge_into(merged, *moments);
      }
      CHECK(merged_bounds.rows == bounds.rows);
      CHECK(same_bits(merged_bounds.low, bounds.low));
      CHECK(same_bits(merged_bounds.high, bounds.high));
      CHECK(merged.sum == reference->sum);
      CHECK(merged.squares == reference->squares);
      const auto statistics = io::statistics_of(whole.rows(), io::grid_for(merged_bounds, 1.0 / 255.0), merged);
      CHECK(same_bits(statistics.mean, expected.mean));
      CHECK(same_bits(statistics.variance, expected.variance));
    }
  }
}

TEST_CASE("statistics from the moments agree with a two-pass long-double reference") {
  std::mt19937_64 rng{8};
  const auto data = awkward(rng, 5000);
  const auto grid = io::grid_for(io::bounds_of(data), 1.0);
  auto moments = io::moments_of(data, grid, "data");
  REQUIRE(moments.ok());
  const auto statistics = io::statistics_of(data.rows(), grid, *moments);
  const auto& x = data.dense();
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    INFO("feature " << j);
    long double mean = 0;
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      mean += x(i, j);
    mean /= x.rows();
    long double variance = 0;
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      variance += (x(i, j) - mean) * (x(i, j) - mean);
    variance /= x.rows();
    // The grid holds a value to 2^-37 of the feature's largest: the mean to that of it, the
    // variance (here of a spread not below 2^-25 of the largest) to 1e-8 relative.
    const double largest = x.col(j).cwiseAbs().maxCoeff();
    CHECK(std::fabs(statistics.mean[j] - static_cast<double>(mean)) <= std::ldexp(largest, -36));
    if (variance == 0)
      CHECK(statistics.variance[j] == 0);
    else
      CHECK(std::fabs(statistics.variance[j] - static_cast<double>(variance)) <= 1e-8 * static_cast<double>(variance));
  }
  // Values on the grid are counted exactly: 1, 3, 5 have mean 3 and variance 8/3 to the last bit.
  model::dataset small;
  small.x = model::dense_features{{1.0f}, {3.0f}, {5.0f}};
  small.y = Eigen::VectorXd::Zero(3);
  const auto small_grid = io::grid_for(io::bounds_of(small), 1.0);
  const auto exact = io::statistics_of(3, small_grid, *io::moments_of(small, small_grid, "small"));
  CHECK(exact.mean[0] == 3.0);
  CHECK(exact.variance[0] == 8.0 / 3.0);
}

TEST_CASE("a value beyond the grid is refused naming the feature, and so are hostile moments") {
  model::dataset data;
  data.x = model::dense_features{{1.0f, 2.0f}, {3.0f, 4.0f}};
  data.y = Eigen::VectorXd::Zero(2);
  auto grid = io::grid_for(io::bounds_of(data), 1.0);
  std::get<model::dense_features>(data.x)(1, 1) = 9.0f;  // the data changed after its bounds were taken
  auto beyond = io::moments_of(data, grid, "t.csv (part 2 of 2)");
  REQUIRE_FALSE(beyond.ok());
  CHECK(beyond.error().message().rfind("t.csv (part 2 of 2): feature 2 holds 9", 0) == 0);
  grid.shift.pop_back();
  auto narrow = io::moments_of(data, grid, "t.csv");
  REQUIRE_FALSE(narrow.ok());
  CHECK(narrow.error().message() == "t.csv: 2 features, the statistics grid has 1");

  io::feature_moments hostile;
  hostile.sum = {io::wide_int{3} << io::moment_grid_bits};
  hostile.squares = {1};
  CHECK(io::check_moments(hostile, 3, 1).ok());
  hostile.sum[0] += 1;  // more than 3 values of at most 2^36 steps can add up to
  CHECK_FALSE(io::check_moments(hostile, 3, 1).ok());
  hostile.sum[0] = 0;
  hostile.squares[0] = -1;
  CHECK_FALSE(io::check_moments(hostile, 3, 1).ok());
  hostile.squares[0] = 0;
  CHECK_FALSE(io::check_moments(hostile, 3, 0).ok());  // more features than the part has
  CHECK_FALSE(io::check_moments(hostile, io::max_moment_rows + 1, 1).ok());
}
