#pragma once

// Feature scaling: fitted on the training set, applied to every set. The statistics come from
// io/feature_moments.hpp, so a dataset standardised whole and the same dataset standardised from
// parts read on several nodes get the same bits.

#include "io/feature_moments.hpp"
#include "io/readers.hpp"

#include <Eigen/Core>

#include <functional>

namespace shardopt::io {

/// x' = (x * factor - mean) * inv_std, per feature, so test data sees the training statistics.
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

/// The factor `mode` gives data of this kind: 1/255 for pixels under `automatic`, else 1.
double scale_factor(scale_mode mode, bool pixels);

/// The moments of the whole training data on a grid (one call per part, merged by the caller).
using moments_on = std::function<result<feature_moments>(const moment_grid& grid)>;

/// The scaling of data with these merged bounds: the factor, and when standardising, population
/// mean (dense only) and 1/deviation from `moments` of the grid of the bounds. Constant features
/// (nothing stored; one value everywhere; for sparse data, only zeros) get inv_std = 1.
result<feature_scaling> fit_scaling(const feature_bounds& bounds, double factor, bool standardize,
                                    const moments_on& moments);

/// Fits scaling on the training data (as above, with the data as its one part).
result<feature_scaling> fit_scaling(const raw_dataset& train, scale_mode mode, bool standardize);

/// Applies scaling to a dataset in place. Errors when the feature count differs from the fit.
result<void> apply_scaling(const feature_scaling& scaling, raw_dataset& data);

} // namespace shardopt::io
