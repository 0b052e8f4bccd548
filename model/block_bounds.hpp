#pragma once

// Bounds on a block's sums that fix the fixed-point grid of an evaluation (see exact_sum.hpp)
// before any shard has computed anything: a function of the data's largest feature and label and
// of theta (or v) alone, so the grid, like the sums, does not depend on the cluster, on the history
// of the run, or on where a resumed run started.

#include "model/dataset.hpp"
#include "model/linear_model.hpp"

#include <Eigen/Core>

#include <cstdint>

namespace shardopt::model {

/// What the bounds need to know of a dataset: its largest |feature| and |label|, and its blocks.
struct data_bounds {
  double max_feature = 0;
  double max_label = 0;
  std::int64_t block_rows = 1;
  std::int64_t blocks = 0;
};

/// The bounds of rows `rows` of `data`, cut into blocks of `block_rows`.
data_bounds bounds_of(const dataset& data, row_range rows, std::int64_t block_rows);

/// Merges the bounds of parts of one dataset (maxima; blocks add up; block_rows must agree).
data_bounds& operator+=(data_bounds& a, const data_bounds& b);

/// A bound on every entry of any block's gradient sum at theta, by interval arithmetic through
/// the layers: |scores| from the columns' absolute sums, the loss's |dloss/dscore| (1 for logistic
/// and softmax, |z| + |y| for least squares, 2 (1 + |z|) for the squared hinge), back through the
/// rows' absolute sums (activations' slopes are at most 1). Infinite when theta is not finite.
double gradient_bound(const model_shape& shape, const data_bounds& bounds,
                      Eigen::Ref<const Eigen::VectorXd> theta);

/// A bound on every entry of any block's Hessian-vector sum along v (linear models): the scores'
/// change along v times the largest curvature (1 for least squares, 1/4 for logistic, 2 for
/// softmax and the squared hinge).
double hessian_vector_bound(const model_shape& shape, const data_bounds& bounds,
                            Eigen::Ref<const Eigen::VectorXd> v);

/// The grid exponent of an evaluation whose block sums are bounded by `bound` (see
/// `grid_exponent`), clamped to exponents where every double on the grid is finite.
int grid_for(double bound, std::int64_t blocks);

} // namespace shardopt::model
