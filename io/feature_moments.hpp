#pragma once

// Per-feature statistics that give the same bits however the data is split: the facts a
// standardisation needs (count, extremes, mean, variance), gathered as exact integers and merged
// by integer addition, so one file read whole on a driver and the same file read in parts on
// several nodes are standardised identically. io/scaling.hpp turns them into a feature_scaling.
//
// Two rounds, because a grid needs the extremes first:
//   1. bounds_of(part) for every part, merged: per feature the smallest and largest stored value.
//   2. grid_for(bounds, factor): per feature a power-of-two step such that the largest scaled value
//      is at most 2^36 steps; moments_of(part, grid) for every part, merged: the sums of q and q^2,
//      q = round(x * factor / step), exact in 128-bit integers for up to 2^52 rows.
// The values are rounded to the grid (a relative error of at most 2^-37 of the feature's largest
// value); the sums of the rounded values are exact, so their order does not matter.

#include "model/dataset.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::io {

/// A signed 128-bit integer: a GCC and Clang extension on 64-bit targets.
__extension__ typedef __int128 wide_int;

/// The largest |q| on a grid, and the most rows whose moments stay exact.
constexpr int moment_grid_bits = 36;
constexpr std::int64_t max_moment_rows = std::int64_t{1} << 52;

/// Per feature: extremes and counts of the stored values; merges exactly in any order.
struct feature_bounds {
  std::int64_t rows = 0;
  bool sparse = false;
  Eigen::VectorXd low;     ///< smallest stored value (+inf: none stored)
  Eigen::VectorXd high;    ///< largest stored value (-inf: none stored)
  Eigen::VectorXd stored;  ///< number of stored values (rows, for dense data)
};

/// The bounds of one dataset.
feature_bounds bounds_of(const model::dataset& data);

/// Adds `part` to `total` (which grows to the wider of the two: sparse parts may see fewer features).
void merge_into(feature_bounds& total, const feature_bounds& part);

/// Where the moments are taken: values are multiplied by `factor`, then counted in steps of
/// 2^-shift[j] for feature j.
struct moment_grid {
  double factor = 1.0;
  std::vector<std::int32_t> shift;
};

/// The grid on which every scaled value of `bounds` is at most 2^moment_grid_bits steps.
moment_grid grid_for(const feature_bounds& bounds, double factor);

/// Per feature: the exact sums of q and q^2 over the stored values (implicit zeros add nothing).
struct feature_moments {
  std::vector<wide_int> sum;
  std::vector<wide_int> squares;
};

/// The moments of `data` on `grid`. Errors name `source`: more features than the grid, or a value
/// beyond it (the data changed since its bounds were taken).
result<feature_moments> moments_of(const model::dataset& data, const moment_grid& grid, const std::string& source);

/// Checks moments received from elsewhere for `rows` rows and at most `features` features: each sum
/// within what that many values on the grid can give. Keeps merging free of overflow.
result<void> check_moments(const feature_moments& moments, std::int64_t rows, std::int64_t features);

/// Adds `part` to `total`, which grows to the wider of the two.
void merge_into(feature_moments& total, const feature_moments& part);

/// Mean and population variance of feature j's scaled values, from the exact sums: each a
/// deterministic function of (rows, sums), whatever the order the sums were taken in.
struct feature_statistics {
  Eigen::VectorXd mean;
  Eigen::VectorXd variance;
};
feature_statistics statistics_of(std::int64_t rows, const moment_grid& grid, const feature_moments& moments);

} // namespace shardopt::io
