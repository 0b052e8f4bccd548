#pragma once

// The losses of a model over a dataset's rows: loss and gradient sums (plain, or per canonical block
// into exact sums), the per-example curvature and Hessian-vector sums of the linear models, the
// regulariser added once by the owner of the full objective, scores, and quality counts.

#include "model/dataset.hpp"
#include "model/exact_sum.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardopt::model {

/// What an evaluation keeps of its rows for Hessian-vector products (linear models only): the
/// curvature of each example's loss in its scores z at that evaluation's theta, so that a product
/// costs one pass over the data and no exp or log. Columns follow the selection's order.
/// - `linear`: nothing (the curvature is 1);
/// - `logistic`: s (1 - s), s the sigmoid of the margin, one row;
/// - `softmax`: the probabilities p, one row per output (the curvature is diag(p) - p p^T);
/// - `svm`: 2 where the example's slack for that output is positive, else 0 (the generalized
///   Hessian of the squared hinge, as LIBLINEAR uses it).
struct curvature {
  Eigen::MatrixXd d;      ///< (1 or outputs) x examples; empty for least squares
  std::int64_t rows = 0;  ///< examples it covers
};

/// Sum over the selected rows of the per-example loss, and its gradient with respect to theta.
///
/// Returns the loss *sum* (not the mean) and overwrites `grad_sum` (size `shape.dimension()`) with the
/// gradient sum: regularisation and division by the example count are the job of the owner of the full
/// objective (`finish_objective`), so that the objective does not depend on how data is split.
/// One fused pass: each chunk of rows is converted to double once and used for both matrix products.
/// Deterministic: the same inputs give the same bits. Preconditions (checked by callers): theta and
/// grad_sum have `shape.dimension()` entries, the dataset has `shape.features` columns, rows are in range.
/// With `keep` (linear models only), also stores the rows' curvature at theta there.
double loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                     Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum,
                     curvature* keep = nullptr);

/// The curvature of the selected rows at theta alone (a forward pass, no gradient): what a shard
/// rebuilds when it must answer a product without having served the evaluation.
curvature curvature_at(const model_shape& shape, const dataset& data, const row_selection& rows,
                       Eigen::Ref<const Eigen::VectorXd> theta);

/// Sum over the selected rows of the loss's Hessian (at the theta `at` was kept for) times v,
/// into `hv_sum` (size `shape.dimension()`, overwritten): sum_i J_i^T H_i J_i v, with J_i the
/// Jacobian of example i's scores in theta and H_i its loss's curvature. One pass over the rows.
/// Preconditions (checked by callers): `has_hessian(shape)`, `at` kept for the same rows.
void hessian_vector_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                        const curvature& at, Eigen::Ref<const Eigen::VectorXd> v,
                        Eigen::Ref<Eigen::VectorXd> hv_sum);

/// Turns a Hessian-vector sum over `count` examples into the full objective's product, in place:
/// hv = hv_sum / count + lambda v_W, with v_W the weights' entries of v (see `finish_objective`).
void finish_hessian_vector(const model_shape& shape, double lambda, std::int64_t count,
                           Eigen::Ref<const Eigen::VectorXd> v, Eigen::Ref<Eigen::VectorXd> hv);

/// Turns a Hessian diagonal's sums over `count` examples into the full objective's diagonal, in
/// place: d = d_sum / count + lambda at the weights (see `finish_objective`).
void finish_diagonal(const model_shape& shape, double lambda, std::int64_t count, Eigen::Ref<Eigen::VectorXd> d);

/// The regulariser along the line from theta_a to theta_b, (lambda/2) ||W_a + alpha (W_b - W_a)||^2,
/// from three dot products over the weights made once per line.
struct line_penalty {
  double aa = 0;  ///< ||W_a||^2
  double ad = 0;  ///< W_a . (W_b - W_a)
  double dd = 0;  ///< ||W_b - W_a||^2

  double penalty(double lambda, double alpha) const {
    return 0.5 * lambda * (aa + 2 * alpha * ad + alpha * alpha * dd);
  }
};

/// `line_penalty` between two thetas of `shape`.
line_penalty line_terms(const model_shape& shape, Eigen::Ref<const Eigen::VectorXd> theta_a,
                        Eigen::Ref<const Eigen::VectorXd> theta_b);

/// Entries [begin, end) of a linear model's full vector from exact sums over `count` examples,
/// into out[i - first] for entry i: the sums / count, plus lambda times `weights` at the weights'
/// entries (theta for a gradient, v for a product; null: lambda itself, for the Hessian's
/// diagonal, whose entry i is the sums' first + i). Returns the squared norm of `weights`'
/// weight entries in the range (0 without them). One chunk (`vector_chunk`) of a pass that may run
/// on several threads; `finish_linear` runs them all in order.
double finish_part(const model_shape& shape, const exact_sum& sums, Eigen::Ref<Eigen::VectorXd> out,
                   Eigen::Index first, Eigen::Index begin, Eigen::Index end, double lambda,
                   std::int64_t count, const Eigen::VectorXd* weights);

/// `finish_part` over every chunk of out's range, on this thread; returns the squared norms added
/// chunk by chunk, as a driver adds them on several threads.
double finish_linear(const model_shape& shape, const exact_sum& sums, Eigen::Ref<Eigen::VectorXd> out,
                     Eigen::Index first, double lambda, std::int64_t count, const Eigen::VectorXd* weights);

/// Turns sums over `count` examples into the full objective, in place:
/// f = loss_sum / count + (lambda / 2) ||W||^2 and grad = grad_sum / count + lambda W, with W every
/// layer's weights (biases are not regularised). Returns f. `count` must be positive.
double finish_objective(const model_shape& shape, double lambda, std::int64_t count, double loss_sum,
                        Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad);

/// Scores z (rows x outputs) of the selected rows, in double (a network's output layer's).
Eigen::MatrixXd scores(const model_shape& shape, const dataset& data, row_range rows,
                       Eigen::Ref<const Eigen::VectorXd> theta);

/// The first row whose encoded label the model cannot use (not +1/-1 for binary models, not an
/// integer in 0..outputs-1 for multiclass ones, not finite for least squares); none when all are
/// valid. Data that crossed a network is checked with this before any evaluation indexes by label.
std::optional<std::int64_t> first_invalid_label(const model_shape& shape, const Eigen::VectorXd& labels);

/// Quality sums over the selected rows: for classifiers the number of correctly predicted examples,
/// for least squares the sum of squared errors. Turn them into accuracy or RMSE by dividing by `count`.
struct quality_sums {
  double correct = 0;       ///< classifiers: examples whose predicted class equals the label
  double squared_error = 0; ///< least squares: sum of (z - y)^2
  std::int64_t count = 0;   ///< examples visited

  quality_sums& operator+=(const quality_sums& other) {
    correct += other.correct;
    squared_error += other.squared_error;
    count += other.count;
    return *this;
  }
};

/// Computes `quality_sums` over a row range.
quality_sums quality(const model_shape& shape, const dataset& data, row_range rows,
                     Eigen::Ref<const Eigen::VectorXd> theta);

} // namespace shardopt::model
