#pragma once

// One shard's evaluations: the loss and gradient sums of its canonical blocks, rounded exactly
// (exact_sum.hpp), the Hessian's diagonal and Hessian-vector products of the linear models, and
// the losses along the line between its last two evaluations (Newton's line search), with the
// buffers its passes reuse. The shard actor and the local objective both evaluate through it, so
// a shard's answer is the same bits in a driver's process, on a node and in a test.

#include "model/block_bounds.hpp"
#include "model/dataset.hpp"
#include "model/exact_sum.hpp"
#include "model/linear_model.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace shardopt::model {

namespace detail {
class sparse_layout;
}

/// Rows `rows` of a dataset (shared, never copied), cut into canonical blocks of `block_rows`
/// rows from rows.begin, evaluated for a model of one shape.
///
/// Sparse rows of a linear model are renumbered once, at construction, by the features they
/// touch (m of them, in increasing order), and every pass works on m-sized buffers kept between
/// passes: a pass costs its non-zeros and m, not the dimension, and allocates only its answer
/// (a shard that keeps every feature, below, has m the dimension, at most half as much again as
/// the features it touches).
/// Its answer holds the entries of those m features (and the biases), so a shard of hashed text
/// that touches a tenth of 2^24 features sends a tenth of the words. Rows that touch most features
/// (all but a third or fewer, where that costs no more bytes) keep every feature instead, read the
/// dataset's own indices (no renumbered copy) and answer densely (see sparse_kernels.hpp's
/// `sparse_layout`).
///
/// For the linear models the evaluator keeps what Newton's method needs of its evaluations: the
/// scores of the last two and the curvature of the last, each under the tag the caller gives
/// (a round number): products are taken at the latest evaluation, lines between the two.
/// Not thread-safe: one caller at a time (a shard actor's thread).
class block_evaluator {
public:
  block_evaluator(model_shape shape, std::shared_ptr<const dataset> data, row_range rows,
                  std::int64_t block_rows);
  ~block_evaluator();
  block_evaluator(block_evaluator&&) noexcept;
  block_evaluator& operator=(block_evaluator&&) noexcept;

  const model_shape& shape() const { return shape_; }
  std::int64_t rows() const { return rows_.size(); }
  const row_range& range() const { return rows_; }
  const std::vector<row_range>& blocks() const { return blocks_; }

  /// Loss sums per block (into `losses`, in order) and the gradient sums of all blocks on grid
  /// `g`: g.size() is the dimension, or twice it for the Hessian's diagonal after the gradient
  /// (linear models: sum_i x_ij^2 times the loss's curvature of example i in output k, at entry
  /// dimension + k * features + j, and the curvatures' sums at the biases' places). Linear models
  /// keep this evaluation's scores and curvature under `tag` (the previous latest becomes the
  /// previous). Preconditions (checked by callers): theta has the shape's dimension, g.size() is
  /// it or (linear models) twice it.
  entry_sums loss_grad(Eigen::Ref<const Eigen::VectorXd> theta, const grid& g,
                       std::vector<double>& losses, std::uint64_t tag);

  /// The tags of the evaluations kept: the latest, and the one before it.
  std::optional<std::uint64_t> latest() const { return latest_tag_; }
  std::optional<std::uint64_t> previous() const { return previous_tag_; }

  /// Keeps an evaluation's scores and curvature at theta under `tag` without computing sums (a
  /// forward pass): what a shard that did not serve that evaluation (recreated after a loss, or
  /// first asked for a product) rebuilds before a product or a line.
  void recall(Eigen::Ref<const Eigen::VectorXd> theta, std::uint64_t tag);

  /// The Hessian-vector sums of all blocks along v, at the latest evaluation's curvature, on grid
  /// `g` (g.size() the dimension). Preconditions: `has_hessian(shape)`, an evaluation kept.
  entry_sums hessian_vector(Eigen::Ref<const Eigen::VectorXd> v, const grid& g);

  /// For each block and each alpha (block by block, alphas in order within a block), the loss sum
  /// of the block's examples at the scores z_prev + alpha (z_latest - z_prev), z being the kept
  /// scores of the previous and latest evaluations: the losses along the line between their
  /// thetas, for the linear models (whose scores are affine in theta), without a pass over the
  /// features. Preconditions: two evaluations kept, linear model.
  void line_losses(const std::vector<double>& alphas, std::vector<double>& out) const;

  /// Quality sums (correct predictions or squared errors) per block at theta.
  std::vector<quality_sums> quality(Eigen::Ref<const Eigen::VectorXd> theta) const;

  /// The features the rows touch (sparse rows of a linear model), for tests; 0 otherwise.
  std::int64_t touched_features() const;

  /// The bytes its buffers take beyond the data's, from their sizes: what it keeps between passes
  /// (a linear model's two scores and curvature, a sparse layout's records and entry lists) and
  /// what a pass allocates for its answer, sums and copies. An estimate from the buffers' sizes
  /// (not their allocator's overheads), for a node's limits (actors/node): a shard of tiny data
  /// can still need gigabytes at a large dimension. Saturates at 2^62.
  std::int64_t working_bytes() const;

  /// Whether the sparse rows' indices are renumbered to the touched features (else every feature
  /// is kept and the answer is dense), for tests.
  bool renumbered() const;

  /// Adds the bounds of its rows to `total`, as `total += bounds_of(rows)` does: for sparse rows
  /// of a linear model, the first time, from what the layout found while numbering the features
  /// (no second pass over the non-zeros, and no dimension-sized vector of its own).
  void add_bounds_to(data_bounds& total);

  /// Adds the bounds of every evaluator's rows to `total`, as `add_bounds_to` does one by one,
  /// with the maxima the layouts found merged on up to `threads` threads, each one writing its own
  /// range of features (no lock; into a new vector of maxima, each entry written once, or into
  /// `total`'s own).
  static void add_bounds_of(const std::vector<block_evaluator*>& evaluators, data_bounds& total, unsigned threads);

private:
  /// Shifts the kept evaluations: a new latest under `tag`, its buffers returned to fill.
  void push_latest(std::uint64_t tag);

  model_shape shape_;
  std::shared_ptr<const dataset> data_;
  row_range rows_;
  std::int64_t block_rows_;
  std::vector<row_range> blocks_;
  bool keeps_;  // a linear model: scores and curvature are kept
  std::unique_ptr<detail::sparse_layout> sparse_;
  exact_sum dense_sum_;             // dense rows: the answer's sums, reused
  Eigen::MatrixXd scores_[2];       // outputs x rows: latest_ then the other
  int latest_ = 0;
  Eigen::MatrixXd curvature_;       // of the latest: (1 or outputs) x rows, empty for least squares
  std::optional<std::uint64_t> latest_tag_, previous_tag_;
};

} // namespace shardopt::model
