#pragma once

#include "io/readers.hpp"

#include <Eigen/Core>

namespace shardopt::io {

/// Feature scaling fitted on the training set and applied to every set, so test data sees the
/// training statistics: x' = (x * factor - mean) * inv_std, per feature.
/// `mean` and `inv_std` are empty when not standardising; sparse data is never centred (that would
/// densify it), only divided by the standard deviation.
struct feature_scaling {
  double factor = 1.0;
  Eigen::VectorXd mean;
  Eigen::VectorXd inv_std;

  bool identity() const { return factor == 1.0 && mean.size() == 0 && inv_std.size() == 0; }
};

/// What the user asked for: `automatic` scales IDX pixels by 1/255 and leaves other data alone.
enum class scale_mode { automatic, none };

/// Fits scaling on the training data. Constant features get inv_std = 1.
feature_scaling fit_scaling(const raw_dataset& train, scale_mode mode, bool standardize);

/// Applies scaling to a dataset in place. Errors when the feature count differs from the fit.
result<void> apply_scaling(const feature_scaling& scaling, raw_dataset& data);

} // namespace shardopt::io
