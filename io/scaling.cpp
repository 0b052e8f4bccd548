#include "io/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace shardopt::io {

double scale_factor(scale_mode mode, bool pixels) {
  return mode == scale_mode::automatic && pixels ? 1.0 / 255.0 : 1.0;
}

result<feature_scaling> fit_scaling(const feature_bounds& bounds, double factor, bool standardize,
                                    const moments_on& moments) {
  feature_scaling scaling;
  scaling.factor = factor;
  if (!standardize || bounds.rows == 0)
    return scaling;
  if (bounds.rows > max_moment_rows)
    return fail_invalid(std::to_string(bounds.rows) + " rows are more than standardisation can count exactly ("
                        + std::to_string(max_moment_rows) + ")");
  const auto grid = grid_for(bounds, factor);
  auto sums = moments(grid);
  if (!sums)
    return sums.error();
  const auto statistics = statistics_of(bounds.rows, grid, *sums);
  const auto d = bounds.low.size();
  const auto n = static_cast<double>(bounds.rows);
  scaling.inv_std.resize(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    // Constant, exactly, from the extremes: unlike a threshold on a variance that rounding leaves
    // slightly above zero. Sparse: only zeros count as constant with implicit zeros around them.
    const auto stored = bounds.stored[j];
    const bool constant = stored == 0
                          || (bounds.low[j] == bounds.high[j] && (stored == n || (bounds.sparse && bounds.low[j] == 0)));
    const double variance = statistics.variance[j];
    scaling.inv_std[j] = constant || variance == 0 ? 1.0 : 1.0 / std::sqrt(variance);
  }
  if (!bounds.sparse)
    scaling.mean = statistics.mean;
  return scaling;
}

result<feature_scaling> fit_scaling(const raw_dataset& train, scale_mode mode, bool standardize) {
  if (!standardize)
    return feature_scaling{scale_factor(mode, train.pixels), {}, {}};
  const auto bounds = bounds_of(train.data);
  return fit_scaling(bounds, scale_factor(mode, train.pixels), standardize,
                     [&](const moment_grid& grid) { return moments_of(train.data, grid, train.source); });
}

result<void> apply_scaling(const feature_scaling& scaling, raw_dataset& data) {
  const std::int64_t d = data.data.cols();
  const auto fitted = std::max(scaling.mean.size(), scaling.inv_std.size());
  // Each vector separately: a mean for d features with an inverse deviation for fewer would read
  // past the shorter one.
  const bool sized = (scaling.mean.size() == 0 || scaling.mean.size() == d)
                     && (scaling.inv_std.size() == 0 || scaling.inv_std.size() == d);
  if (!sized || (fitted > 0 && fitted != d))
    return fail_invalid(data.source + " has " + std::to_string(d) + " features, but the scaling was fitted on " +
                std::to_string(fitted));
  if (scaling.identity())
    return {};

  if (data.data.is_sparse()) {
    if (scaling.mean.size() > 0 && !scaling.mean.isZero(0))
      return fail_invalid(data.source + ": sparse data cannot be centred with the means of a dense training set");
    float* values = data.data.writable_values();
    const auto x = data.data.sparse();
    const auto* index = x.innerIndexPtr();
    for (Eigen::Index p = 0; p < x.nonZeros(); ++p) {
      const double inv_std = scaling.inv_std.size() > 0 ? scaling.inv_std(index[p]) : 1.0;
      values[p] = static_cast<float>(static_cast<double>(values[p]) * scaling.factor * inv_std);
    }
    return {};
  }

  // Dense: each row is converted to double, scaled, centred, divided, and stored back as float.
  Eigen::Map<model::dense_features> x{data.data.writable_values(), data.data.rows(), d};
  Eigen::RowVectorXd row(d);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    row = x.row(i).cast<double>() * scaling.factor;
    if (scaling.mean.size() > 0)
      row -= scaling.mean.transpose();
    if (scaling.inv_std.size() > 0)
      row.array() *= scaling.inv_std.transpose().array();
    x.row(i) = row.cast<float>();
  }
  return {};
}

} // namespace shardopt::io
