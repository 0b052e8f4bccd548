#pragma once

#include "model/dataset.hpp"
#include "model/exact_sum.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// The activation of a network's hidden layers.
enum class activation : std::uint8_t { relu, tanh };

/// "relu" or "tanh".
std::string_view to_string(activation act);

/// Parses an activation's name; nullopt for anything else.
std::optional<activation> parse_activation(std::string_view name);

/// Where one dense layer lives in theta: its weight matrix (in x out, column-major) starts at
/// `weights`, its `out` biases at `biases` = weights + in*out.
struct layer_span {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t weights = 0;
  std::int64_t biases = 0;
};

/// The shape of a model, which fixes the layout of theta.
///
/// A model is a stack of dense layers: features -> hidden[0] -> ... -> hidden[L-1] -> outputs, with
/// `act` after every hidden layer and the output layer's scores z fed to the loss of `kind`. The
/// linear models have no hidden layer; a multilayer perceptron (`--model mlp`) has at least one.
///
/// theta is one flat vector of `dimension()` doubles, layer by layer, each layer's weights then its
/// biases: W1 (features x hidden[0], column-major), b1, W2, b2, ..., W_out (last width x outputs),
/// b_out. For a linear model that is W (features x outputs, column-major, so output k's weights are
/// theta[k*features, (k+1)*features)) then the `outputs` biases. Biases are not regularised.
struct model_shape {
  model_kind kind = model_kind::linear;  ///< the loss on the output layer's scores
  std::int64_t features = 0;
  std::int64_t outputs = 1;
  std::vector<std::int64_t> hidden;      ///< hidden layer widths; empty for the linear models
  activation act = activation::relu;     ///< of every hidden layer

  model_shape() = default;
  model_shape(model_kind kind_, std::int64_t features_, std::int64_t outputs_,
              std::vector<std::int64_t> hidden_ = {}, activation act_ = activation::relu)
    : kind(kind_), features(features_), outputs(outputs_), hidden(std::move(hidden_)), act(act_) {}

  bool is_network() const { return !hidden.empty(); }
  /// The layers in order, with their place in theta.
  std::vector<layer_span> layers() const;
  /// Entries of theta that are weights (regularised), over all layers.
  std::int64_t weight_count() const;
  std::int64_t dimension() const;
  friend bool operator==(const model_shape& a, const model_shape& b) {
    return a.kind == b.kind && a.features == b.features && a.outputs == b.outputs &&
           a.hidden == b.hidden && (a.hidden.empty() || a.act == b.act);
  }
  friend bool operator!=(const model_shape& a, const model_shape& b) { return !(a == b); }
};

/// The largest network anyone may ask for, the same for the CLI, model files and nodes: a chunk of
/// 256 rows keeps each layer's activations (256 x width doubles) and two delta buffers, so the
/// hidden units bound an evaluation's working memory (65,536 units: about 400 MB).
constexpr std::size_t max_hidden_layers = 64;
constexpr std::int64_t max_hidden_units = 65536;  ///< the sum of the hidden widths

/// Why `shape`'s network is not allowed ("65 hidden layers, more than the 64 allowed", "a hidden
/// layer of 0 units", "70000 hidden units, more than the 65536 allowed"); empty when it is.
std::string check_architecture(const model_shape& shape);

/// A shape for messages: "softmax, 784 features x 10 outputs" or "mlp 784-100-10 (relu, softmax
/// output)".
std::string describe(const model_shape& shape);

/// The dimension of `shape` when every size is positive and the dimension is at most `limit`,
/// computed without overflow; nullopt otherwise.
std::optional<std::int64_t> checked_dimension(const model_shape& shape, std::int64_t limit);

/// A network's initial theta from `seed`, identical in every process and on every platform: each
/// weight matrix uniform in +-sqrt(6 / fan_in) for ReLU (He) or +-sqrt(6 / (fan_in + fan_out)) for
/// tanh (Glorot), biases zero. A linear model starts at zero (its objective is convex).
Eigen::VectorXd initial_theta(const model_shape& shape, std::uint64_t seed);

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

/// Whether a model's objective has the Hessian-vector products below (the linear models; not
/// networks).
bool has_hessian(const model_shape& shape);

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

/// Loss and gradient sums of a shard's canonical blocks (see exact_sum.hpp): `losses` gets one
/// loss sum per block, in order, and each block's gradient sum is rounded into `grad` (size
/// `shape.dimension()`). A block's sums are the bits `loss_grad_sum` gives over that block alone,
/// whichever shard owns it. With `keep` (linear models only), (*keep)[k] gets block k's curvature.
/// Sparse data costs one conversion per touched feature and output, not per entry of theta.
void block_loss_grad(const model_shape& shape, const dataset& data,
                     const std::vector<row_range>& blocks, Eigen::Ref<const Eigen::VectorXd> theta,
                     std::vector<double>& losses, exact_sum& grad,
                     std::vector<curvature>* keep = nullptr);

/// Each block's curvature at theta (see `curvature_at`).
std::vector<curvature> block_curvature(const model_shape& shape, const dataset& data,
                                       const std::vector<row_range>& blocks,
                                       Eigen::Ref<const Eigen::VectorXd> theta);

/// Hessian-vector sums of a shard's blocks at the curvature `at` kept for them, each block's sum
/// rounded into `hv` (see `block_loss_grad`). Preconditions: `has_hessian(shape)`, one curvature
/// per block.
void block_hessian_vector(const model_shape& shape, const dataset& data,
                          const std::vector<row_range>& blocks, const std::vector<curvature>& at,
                          Eigen::Ref<const Eigen::VectorXd> v, exact_sum& hv);

/// Turns a Hessian-vector sum over `count` examples into the full objective's product, in place:
/// hv = hv_sum / count + lambda v_W, with v_W the weights' entries of v (see `finish_objective`).
void finish_hessian_vector(const model_shape& shape, double lambda, std::int64_t count,
                           Eigen::Ref<const Eigen::VectorXd> v, Eigen::Ref<Eigen::VectorXd> hv);

/// Turns sums over `count` examples into the full objective, in place:
/// f = loss_sum / count + (lambda / 2) ||W||^2 and grad = grad_sum / count + lambda W, with W every
/// layer's weights (biases are not regularised). Returns f. `count` must be positive.
double finish_objective(const model_shape& shape, double lambda, std::int64_t count, double loss_sum,
                        Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad);

/// Scores z (rows x outputs) of the selected rows, in double (a network's output layer's).
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
