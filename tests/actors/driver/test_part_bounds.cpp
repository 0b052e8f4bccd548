// What the driver accepts of a node's report on the part of a dataset it read itself
// (check_part_bounds, before spawn_part_on plans grids from it): an honest node's bounds, as
// model::bounds_of computes them, and no report that no data could give.

#include "actors/driver/part_bounds.hpp"
#include "model/block_bounds.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
namespace test = shardopt::test;

namespace {

std::string refusal(const shardopt::result<void>& checked) {
  return checked ? std::string{} : checked.error().message();
}

} // namespace

TEST_CASE("check_part_bounds: an honest node's bounds pass, sparse and dense, and rows of one value") {
  const auto sparse = test::sparse_rows(500, 64, 40);
  const auto dense = test::random_problem(5, 200, 12, 3);
  for (const auto& data : {std::shared_ptr<const model::dataset>(sparse), dense}) {
    const auto bounds = model::bounds_of(*data, {0, data->rows()}, 64);
    CHECK(actors::check_part_bounds(data->cols(), bounds.feature_max, bounds.max_label, bounds.max_row_norm));
  }
  // A part whose rows hold one value each: its largest norm is exactly its largest maximum.
  Eigen::VectorXd feature_max(3);
  feature_max << 0.5, 2.0, 0.0;
  CHECK(actors::check_part_bounds(3, feature_max, 1.0, 2.0));
  CHECK(actors::check_part_bounds(0, Eigen::VectorXd{}, 0.0, 0.0));  // no features: nothing to compare
}

TEST_CASE("check_part_bounds: every report no data could give is refused, saying what") {
  Eigen::VectorXd feature_max(3);
  feature_max << 0.5, 2.0, 0.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(refusal(actors::check_part_bounds(4, feature_max, 1.0, 3.0)).find("3 feature maxima for 4 features")
        != std::string::npos);
  for (const double bad : {-1.0, nan, inf}) {
    Eigen::VectorXd lied = feature_max;
    lied[2] = bad;
    CHECK(refusal(actors::check_part_bounds(3, lied, 1.0, 3.0)).find("feature 2's largest |value| is")
          != std::string::npos);
    CHECK(refusal(actors::check_part_bounds(3, feature_max, bad, 3.0)).find("labels' largest") != std::string::npos);
    CHECK(refusal(actors::check_part_bounds(3, feature_max, 1.0, bad)).find("rows' largest norm")
          != std::string::npos);
  }
  // Below the largest maximum: a row holding that value has at least that norm.
  const auto below = refusal(actors::check_part_bounds(3, feature_max, 1.0, 1.75));
  CHECK(below.find("the rows' largest norm 1.75 is below a feature's largest |value| 2")
        != std::string::npos);
  CHECK(below.find("impossible data bounds") != std::string::npos);
}
