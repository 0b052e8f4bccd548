#pragma once

// Bounds on a block's sums that fix the fixed-point grids of an evaluation (see exact_sum.hpp)
// before any shard has computed anything: a function of the data's largest |feature| per feature,
// largest |label| and largest row norm, and of theta (or v) alone, so the grids, like the sums, do not depend on
// the cluster, on the history of the run, or on where a resumed run started. One grid per entry
// of theta: features of very different scales keep their own precision.

#include "model/dataset.hpp"
#include "model/exact_sum.hpp"
#include "model/linear_model.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::model {

/// What the bounds need to know of a dataset: its largest |feature| per feature and largest
/// |label|, its blocks, and its rows' largest Euclidean norm.
struct data_bounds {
  Eigen::VectorXd feature_max;  ///< per feature; empty before any rows are added
  double max_label = 0;
  std::int64_t block_rows = 1;
  std::int64_t blocks = 0;
  /// The integer bits its sums may use: `packed_bits` once any part is sparse, else `fixed_bits`.
  int bits = fixed_bits;
  /// The largest ||x_i||_2 over the rows (the features alone, not a bias's 1): with it a score's
  /// bound is also ||x_i|| ||w||, far below sum_j max_j |w_j| for wide sparse data. 0 before any
  /// rows are added; merged by the maximum, so the same for any cut of the rows.
  double max_row_norm = 0;
};

/// The largest Euclidean norm of rows `rows` of `data` (NaN values skipped, as feature_max skips
/// them: never below a row's largest |value|).
double max_row_norm(const dataset& data, row_range rows);

/// The bounds of rows `rows` of `data`, cut into blocks of `block_rows`.
data_bounds bounds_of(const dataset& data, row_range rows, std::int64_t block_rows);

/// Merges the bounds of parts of one dataset (maxima; blocks add up; the fewer bits; block_rows
/// must agree).
data_bounds& operator+=(data_bounds& a, const data_bounds& b);

/// The grids of a run's requests, planned once from the data's bounds. For a linear model an
/// entry's grid is the sum of a part fixed by the data (its feature's largest |value|, through
/// the block sizes) and a part each request sets from theta or v (through the loss's slope or
/// curvature), so one table of binades below the coarsest, shared by every request, serves them
/// all and a request sets only its base: planning a gradient costs no pass over the dimension for
/// logistic and softmax regression, and a dot product and a norm (a score's bound) for least
/// squares and the squared hinge and for every product.
/// The table covers theta's entries and, after them, those of the Hessian's diagonal (Newton's
/// preconditioner), whose grids are the gradient's shifted by the curvature's bound. A network's
/// grids are planned per request, entry by entry (`gradient_grid`).
///
/// Every grid is at least as coarse as the bound it comes from needs (a block sum stays below
/// 2^bits units, see `grid_exponent`): the per-entry and per-request parts are each rounded up to
/// a power of two, so a grid may be one binade coarser than the bound needs. A score's bound here
/// is also the rows' largest norm times ||w||, which `gradient_grid` (networks) does not use, so
/// a plan's grid may be many binades finer than `gradient_grid`'s for the same model.
class grid_plan {
public:
  grid_plan() = default;
  /// Keeps the bounds (move them in); the table is written on up to `threads` threads.
  grid_plan(const model_shape& shape, data_bounds bounds, unsigned threads = 1);

  /// The grid of a gradient at theta; with `diagonal`, of the gradient followed by the Hessian's
  /// diagonal (2 x dimension entries).
  grid gradient(Eigen::Ref<const Eigen::VectorXd> theta, bool diagonal = false) const;

  /// The grid of a Hessian-vector product along v (linear models).
  grid hessian_vector(Eigen::Ref<const Eigen::VectorXd> v) const;

  /// `g` on grids `shift` binades coarser (an overflowing round's second try).
  static grid coarser(grid g, int shift);

private:
  model_shape shape_;
  data_bounds bounds_;
  std::shared_ptr<const std::vector<std::uint8_t>> table_;  // linear models: 2 x dimension entries
  int top_ = 0;  // the largest per-entry part; an entry's is top_ - (*table_)[i]
};

/// Per entry of theta, the grid exponent of any block's gradient sum at theta: from a bound by
/// interval arithmetic through the layers (|scores| from the weights' absolute values and the
/// features' maxima, the loss's |dloss/dscore| (1 for logistic and softmax, |z| + |y| for least
/// squares, 2 (1 + |z|) for the squared hinge), back through the weights (activations' slopes are
/// at most 1)), see `grid_exponent`.
std::vector<int> gradient_grid(const model_shape& shape, const data_bounds& bounds,
                               Eigen::Ref<const Eigen::VectorXd> theta);

/// Per entry of theta, the grid exponent of any block's Hessian-vector sum along v (linear
/// models): the scores' change along v times the largest curvature (1 for least squares, 1/4 for
/// logistic, 2 for the squared hinge, and for softmax twice the largest change over outputs).
std::vector<int> hessian_vector_grid(const model_shape& shape, const data_bounds& bounds,
                                     Eigen::Ref<const Eigen::VectorXd> v);

} // namespace shardopt::model
