#pragma once

// What a node may report about the part of a dataset it read itself (cluster_impl.hpp's
// spawn_part_on), checked before the driver plans every later sum's grids from it.

#include "base/result.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace shardopt::actors {

/// Whether a node's bounds of its part are possible: `features` maxima of |value|, each finite and
/// not negative; the labels' largest |value| and the rows' largest Euclidean norm finite and not
/// negative; and that norm at least the largest maximum, since a row's norm is at least its largest
/// |value|. A lie within these (a norm still below the truth) makes grids finer than the data need,
/// by at most the square root of a row's non-zeros: the deposits then overflow them, finitely, and
/// the round is asked again on coarser grids.
inline result<void> check_part_bounds(std::int64_t features, const Eigen::Ref<const Eigen::VectorXd>& feature_max,
                                      double max_label, double max_row_norm) {
  const auto impossible = [](const std::string& what) {
    return fail_runtime("reported impossible data bounds: " + what);
  };
  const auto exact = [](double value) {  // every digit a double has: a lie just below a bound shows
    std::ostringstream out;
    out.precision(std::numeric_limits<double>::max_digits10);
    out << value;
    return out.str();
  };
  if (feature_max.size() != features)
    return impossible(std::to_string(feature_max.size()) + " feature maxima for " + std::to_string(features)
                      + " features");
  for (Eigen::Index j = 0; j < feature_max.size(); ++j)
    if (!std::isfinite(feature_max[j]) || feature_max[j] < 0)
      return impossible("feature " + std::to_string(j) + "'s largest |value| is " + exact(feature_max[j]));
  if (!std::isfinite(max_label) || max_label < 0)
    return impossible("the labels' largest |value| is " + exact(max_label));
  if (!std::isfinite(max_row_norm) || max_row_norm < 0)
    return impossible("the rows' largest norm is " + exact(max_row_norm));
  if (features > 0 && max_row_norm < feature_max.maxCoeff())
    return impossible("the rows' largest norm " + exact(max_row_norm) + " is below a feature's largest |value| "
                      + exact(feature_max.maxCoeff()));
  return {};
}

} // namespace shardopt::actors
