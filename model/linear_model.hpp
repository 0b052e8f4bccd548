#pragma once

#include "model/dataset.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardopt::model {

/// The four linear models. Each maps an example's features x to K scores z = W^T x + b and charges a
/// per-example loss on (z, label):
/// - `linear`:   least squares, K = 1, loss 0.5 (z - y)^2, y real.
/// - `logistic`: K = 1, loss log(1 + exp(-t z)), t = +1/-1 (the larger/smaller label value).
/// - `softmax`:  K classes, cross-entropy log-sum-exp(z) - z_y, y in 0..K-1.
/// - `svm`:      squared hinge max(0, 1 - t z)^2; binary (K = 1, t = +1/-1) or one-vs-rest over
///               K classes (t_k = +1 for the example's class, -1 otherwise), summed over classes.
enum class model_kind : std::uint8_t { linear, logistic, softmax, svm };

/// The lower-case name of a kind ("linear", "logistic", "softmax", "svm").
std::string_view to_string(model_kind kind);

/// Parses a kind's name; nullopt for anything else.
std::optional<model_kind> parse_model_kind(std::string_view name);

/// True for the kinds that predict a class (all but `linear`).
bool is_classifier(model_kind kind);

/// The shape of a model, which fixes the layout of theta.
///
/// theta is one flat vector of `dimension()` doubles: first the weight matrix W (features x outputs)
/// in column-major order, so the weights of output k are the contiguous slice
/// theta[k*features, (k+1)*features), then the `outputs` biases. Biases are not regularised.
struct model_shape {
  model_kind kind = model_kind::linear;
  std::int64_t features = 0;
  std::int64_t outputs = 1;

  std::int64_t weight_count() const { return features * outputs; }
  std::int64_t dimension() const { return features * outputs + outputs; }
  friend bool operator==(const model_shape& a, const model_shape& b) {
    return a.kind == b.kind && a.features == b.features && a.outputs == b.outputs;
  }
};

/// Sum over the selected rows of the per-example loss, and its gradient with respect to theta.
///
/// Returns the loss *sum* (not the mean) and overwrites `grad_sum` (size `shape.dimension()`) with the
/// gradient sum: regularisation and division by the example count are the job of the owner of the full
/// objective (`finish_objective`), so that the objective does not depend on how data is split.
/// One fused pass: each chunk of rows is converted to double once and used for both matrix products.
/// Deterministic: the same inputs give the same bits. Preconditions (checked by callers): theta and
/// grad_sum have `shape.dimension()` entries, the dataset has `shape.features` columns, rows are in range.
double loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                     Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum);

/// Turns sums over `count` examples into the full objective, in place:
/// f = loss_sum / count + (lambda / 2) ||W||^2 and grad = grad_sum / count + lambda W (biases are not
/// regularised). Returns f. `count` must be positive.
double finish_objective(const model_shape& shape, double lambda, std::int64_t count, double loss_sum,
                        Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad);

/// Scores z (rows x outputs) of the selected rows, in double.
Eigen::MatrixXd scores(const model_shape& shape, const dataset& data, row_range rows,
                       Eigen::Ref<const Eigen::VectorXd> theta);

/// The first row whose encoded label the model cannot use (not +1/-1 for binary models, not an
/// integer in 0..outputs-1 for multiclass ones, not finite for least squares), or -1 when all are
/// valid. Data that crossed a network is checked with this before any evaluation indexes by label.
std::int64_t first_invalid_label(const model_shape& shape, const Eigen::VectorXd& labels);

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
